"""The crash retry policy, `worker.processCrash` (DESIGN.md): whether a crash is retried, and
how long each retry waits (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class CrashPolicy:
    """`worker.processCrash` (DESIGN.md): what a process crash leads to."""

    action: Literal["needs-attention", "retry"] = "needs-attention"
    initial_seconds: float = 120.0
    multiplier: float = 2.0
    max_seconds: float = 900.0
    max_attempts: int = 2  # retries after the first run

    def delay_seconds(self, retry: int) -> float:
        """The wait before retry number ``retry`` (1-based): initial x multiplier^(n-1),
        capped at the maximum; never zero, never unbounded."""
        if retry < 1:
            raise ValueError("retries are numbered from 1")
        # Attempts are at most 20 and the multiplier at most 100: the power stays finite.
        return min(self.initial_seconds * self.multiplier ** (retry - 1), self.max_seconds)
