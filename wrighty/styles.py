"""Rich style names that every renderer (the CLI, the inbox) shares, so a verdict looks the same
wherever it is shown. Plain strings: importing this loads neither rich nor the CLI."""

from __future__ import annotations

from wrighty.domain.health import Verdict

VERDICT_STYLES = {
    Verdict.UNHEALTHY: "bold red",
    Verdict.UNCHECKED: "bold yellow",
    Verdict.HEALTHY: "bold green",
}
