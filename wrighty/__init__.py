"""wrighty: a supervisor for unattended coding agents."""

__version__ = "0.1.0"
