"""What every vendor adapter shares: the adapter contract, the stream reader contract, and the
helpers they all use (one JSON record per line, the failure text patterns, session ids,
transcript paths that must stay inside the vendor's own folder).

An adapter knows how to start its CLI headless with the task on stdin, how its session id is
fixed or learned, how to resume, where the local transcript lives, and how to read the output
stream into an outcome (DESIGN.md, Vendors). Reading is incremental: a reader sees one line at a
time and keeps a few fields, never the stream.
"""

from __future__ import annotations

import json
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from wrighty.domain.classify import Classification, describe_exit
from wrighty.domain.model import Stream
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.redact import redact

Permission = Literal["workspace", "full"]

# Vendors' session ids are UUIDs or similar; anything else (above all a leading "-", which the
# CLI would read as a flag) is refused before it reaches an argv.
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_SUMMARY_CHARS = 400
_KEPT_TEXT_CHARS = 2000


class VendorError(Exception):
    """A vendor adapter refused its input (a session id, a transcript path)."""


def checked_session_id(session_id: str) -> str:
    """``session_id`` if it is safe to put in an argv; VendorError otherwise."""
    if not _SESSION_ID.fullmatch(session_id):
        raise VendorError(
            f"refusing session id {session_id[:40]!r}: expected letters, digits, '.', '_', ':' "
            "or '-', not starting with '-'"
        )
    return session_id


def inside(path: Path, folder: Path) -> Path:
    """``path`` resolved, if it lies inside ``folder`` (resolved); VendorError otherwise."""
    resolved = path.resolve()
    if not resolved.is_relative_to(folder.resolve()):
        raise VendorError(f"refusing transcript path {path}: it is outside {folder}")
    return resolved


def home_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


def json_record(line: bytes) -> dict[str, Any] | None:
    """The JSON object on ``line``, or None for anything else (text, a truncated line...)."""
    stripped = line.strip()
    if not stripped.startswith(b"{"):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:  # also UnicodeDecodeError
        return None
    return value if isinstance(value, dict) else None


def text_of(value: Any) -> str | None:
    """A string field, bounded; None when absent or not a string."""
    return value[:_KEPT_TEXT_CHARS] if isinstance(value, str) else None


def int_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# Inside a failed run only (a failure record, or beside a nonzero exit), in this order: the
# first class whose pattern matches the vendor's error text wins.
_FAILURE_PATTERNS: tuple[tuple[OutcomeClass, re.Pattern[str]], ...] = (
    (
        OutcomeClass.CONTEXT_LIMIT,
        re.compile(
            r"prompt is too long|context.(window|length)|maximum context|too many tokens|"
            r"exceeds the maximum number of tokens|context_length_exceeded",
            re.IGNORECASE,
        ),
    ),
    (
        OutcomeClass.BILLING,
        re.compile(
            r"credit balance|billing|insufficient.quota|exceeded your current quota|"
            r"payment required|\b402\b",
            re.IGNORECASE,
        ),
    ),
    (
        OutcomeClass.AUTH,
        re.compile(
            r"\b401\b|unauthori[sz]ed|unauthenticated|invalid.{0,10}api.?key|"
            r"api key not valid|authentication|not logged in|/login|"
            r"missing environment variable.{0,40}(api.?key|token)",
            re.IGNORECASE,
        ),
    ),
    (
        OutcomeClass.PERMISSION,
        re.compile(r"\b403\b|forbidden|permission.denied|does not have permission", re.IGNORECASE),
    ),
    (
        OutcomeClass.RATE_LIMITED,
        re.compile(
            r"\b429\b|rate.?limit|too many requests|resource.exhausted|usage limit", re.IGNORECASE
        ),
    ),
    (
        OutcomeClass.PROVIDER_UNAVAILABLE,
        re.compile(
            r"\b5\d\d\b|overloaded|unavailable|internal server error|bad gateway|high demand|"
            r"gateway timeout|stream disconnected|error sending request|fetch failed|"
            r"connection (refused|reset)",
            re.IGNORECASE,
        ),
    ),
)


def failure_class_from_text(text: str) -> OutcomeClass | None:
    """The class a failed run's error text points to, if any (confidence: inferred)."""
    for outcome_class, pattern in _FAILURE_PATTERNS:
        if pattern.search(text):
            return outcome_class
    return None


def status_class(status: int | None) -> OutcomeClass | None:
    """The class of a provider's HTTP status, when the vendor reports one."""
    if status is None:
        return None
    if status == 401:
        return OutcomeClass.AUTH
    if status == 402:
        return OutcomeClass.BILLING
    if status == 403:
        return OutcomeClass.PERMISSION
    if status == 413:
        return OutcomeClass.CONTEXT_LIMIT
    if status == 429:
        return OutcomeClass.RATE_LIMITED
    if 500 <= status <= 599:
        return OutcomeClass.PROVIDER_UNAVAILABLE
    return None


def verdict(outcome_class: OutcomeClass, confidence: Confidence, summary: str) -> Classification:
    """A classification with a short, redacted summary."""
    text = redact(" ".join(summary.split()))
    if len(text) > _SUMMARY_CHARS:
        text = text[: _SUMMARY_CHARS - 1] + "…"
    return Classification(outcome_class, confidence, text)


def no_terminal_record(vendor: str, record: str, exit_code: int | None) -> Classification:
    """A process that ended without its vendor's terminal record crashed (DESIGN.md)."""
    return verdict(
        OutcomeClass.PROCESS_CRASH,
        Confidence.INFERRED,
        f"{vendor} ended ({describe_exit(exit_code, None)}) without its {record}",
    )


def failed_with_text(
    vendor: str, text: str, exit_code: int | None, *, otherwise: OutcomeClass
) -> Classification:
    """A failed run whose only clue is its error text."""
    found = failure_class_from_text(text)
    how = describe_exit(exit_code, None)
    return verdict(found or otherwise, Confidence.INFERRED, f"{vendor} failed ({how}): {text}")


class Reader(ABC):
    """Reads one run's output, a line at a time, keeping only what classification needs."""

    session_id: str | None = None

    @abstractmethod
    def feed(self, stream: Stream, line: bytes) -> None:
        """One complete output line. Never raises on bad input."""

    @abstractmethod
    def classify(self, exit_code: int | None) -> Classification:
        """The run's outcome from the vendor's records, for a process that exited by itself
        (wrighty's own facts and signals are judged before this is asked)."""


@dataclass(frozen=True)
class PermissionFlags:
    """A vendor's own flags for each permission profile."""

    workspace: tuple[str, ...]
    full: tuple[str, ...]


class Vendor(ABC):
    """One vendor CLI: how to start it, resume it, find its transcript, and read it."""

    name: str
    default_executable: str
    # True when wrighty chooses the session id before the start (Claude's --session-id).
    preassigns_session: bool = False
    permission_flags: PermissionFlags

    @abstractmethod
    def start_argv(
        self, executable: str, session_id: str | None, extra: Sequence[str]
    ) -> list[str]:
        """A fresh headless run, task on stdin; ``session_id`` only if preassigned; ``extra``
        are the permission flags and the user's own arguments."""

    @abstractmethod
    def resume_argv(self, executable: str, session_id: str, extra: Sequence[str]) -> list[str]:
        """Continue ``session_id``, the follow-up prompt on stdin."""

    @abstractmethod
    def transcript(self, session_id: str, workspace: Path, env: Mapping[str, str]) -> Path | None:
        """The session's local transcript if it exists (VendorError for a path that would lie
        outside the vendor's folder)."""

    @abstractmethod
    def reader(self) -> Reader: ...

    def flags(self, permission: Permission) -> tuple[str, ...]:
        return (
            self.permission_flags.full if permission == "full" else self.permission_flags.workspace
        )
