"""What one check did (`CheckEvidence`), one check's evidence as stored (`CheckRecord`) and a
check's result on an item's base (`BaseCheck`):
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
    # it failed, and it fails on the item's base too: not the agent's doing (docs/verify.md)
    fails_on_base: bool = False

    def __post_init__(self) -> None:
        if self.start_failure is not None:
            if self.exit_code is not None or self.signal is not None:
                raise ValueError(f"check {self.name} did not start: no exit code or signal")
        elif (self.exit_code is None) == (self.signal is None):
            raise ValueError(f"check {self.name}: exactly one of exit code and signal")
        if self.fails_on_base and self.exit_code == 0:
            raise ValueError(f"check {self.name} passed: it cannot fail on the base too")

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

    @property
    def agents_failure(self) -> bool:
        """It failed, and not as it fails on the item's base: the agent's to fix."""
        return self.failed and not self.fails_on_base

    def ending(self) -> str:
        """How it ended, in a few words."""
        if self.start_failure is not None:
            return "could not start"
        return self._ended() + (", fails on the base too" if self.fails_on_base else "")

    def _ended(self) -> str:
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


@dataclass(frozen=True)
class BaseCheck:
    """A check's result on a base commit, run once and kept (docs/verify.md): the commit, the
    check's name and ``key`` (what identifies its command: domain/verify.check_key), whether it
    failed there (ran and did not pass), how it ended and the end of its output."""

    base_commit: str
    name: str
    key: str
    failed: bool
    ending: str
    output_tail: str
    checked_at: datetime
