"""The command-line interface: parse arguments, call services, render."""
