"""What one check did (`CheckEvidence`) and one check's evidence as stored (`CheckRecord`):
the records that verification's rules (wrighty/domain/verify.py), the notices, an
integration's summary and the store pass around, below them all. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class CheckEvidence:
    """What one check did. ``output_tail`` is already redacted and bounded by whoever ran the
    check; ``start_failure`` says why it could not start (then it has no exit code or
    signal); a check that started has exactly one of them."""

    name: str
    argv: tuple[str, ...]
    duration_seconds: float
    output_tail: str = ""
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False  # stopped at its timeout (its signal is the one that stopped it)
    start_failure: str | None = None

    def __post_init__(self) -> None:
        if self.start_failure is not None:
            if self.exit_code is not None or self.signal is not None:
                raise ValueError(f"check {self.name} did not start: no exit code or signal")
        elif (self.exit_code is None) == (self.signal is None):
            raise ValueError(f"check {self.name}: exactly one of exit code and signal")

    @property
    def started(self) -> bool:
        return self.start_failure is None

    @property
    def passed(self) -> bool:
        return self.started and self.exit_code == 0

    @property
    def failed(self) -> bool:
        """It ran and did not pass (a check that could not start neither passed nor failed)."""
        return self.started and not self.passed

    def ending(self) -> str:
        """How it ended, in a few words."""
        if self.start_failure is not None:
            return "could not start"
        if self.timed_out:
            return f"stopped at its time limit (signal {self.signal})"
        if self.signal is not None:
            return f"killed by signal {self.signal}"
        return f"exit code {self.exit_code}"


@dataclass(frozen=True)
class CheckRecord:
    """One check's evidence as stored, never rewritten: the verification it was part of
    (every check of one verification shares its id), the agent run it verified (None: run by
    hand, `wrighty verify`), its place in that verification, who ran it and when it started."""

    item_id: int
    verification_id: str
    run_id: str | None
    position: int
    actor: str
    started_at: datetime
    evidence: CheckEvidence
