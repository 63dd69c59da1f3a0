"""What every agent adapter shares: the adapter contract (`AgentAdapter`, which the vendor
adapters, the command adapter and a plugin's adapter implement), the stream reader contract,
and the helpers the vendor adapters use (one JSON record per line, the failure text patterns,
session ids, transcript paths that must stay inside the vendor's own folder).

An adapter knows how to start its program headless with the task on stdin, how its session id
is fixed or learned, how to resume, where the local transcript lives, and how to read the
output stream into an outcome (docs/vendors.md). Reading is incremental: a reader sees one line
at a time and keeps a few fields, never the stream.
"""

from __future__ import annotations

import json
import math
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from wrighty.domain.classify import Classification, describe_exit
from wrighty.domain.model import Stream
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.redact import redact
from wrighty.domain.retry import ResetHint
from wrighty.domain.text import clip
from wrighty.domain.usage import Usage

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
    except (ValueError, RecursionError):  # also UnicodeDecodeError; nesting too deep
        return None
    return value if isinstance(value, dict) else None


def stdout_record(stream: Stream, line: bytes) -> dict[str, Any] | None:
    """The JSON object on a line of standard output; None for stderr and anything else."""
    return json_record(line) if stream == "stdout" else None


def text_of(value: Any) -> str | None:
    """A string field, bounded; None when absent or not a string."""
    return value[:_KEPT_TEXT_CHARS] if isinstance(value, str) else None


def int_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- Usage: what a run spent, as its vendor reported it (docs/vendors.md, Usage) ---

# A count above this (tokens, milliseconds, turns) or a cost above MAX_COST_USD is taken for
# garbage and ignored, never clamped.
MAX_COUNT = 10**12
MAX_COST_USD = 10.0**6
MAX_MODELS = 16
_MODEL_CHARS = 200


def count_of(value: Any) -> int | None:
    """``value`` as a count: a whole, non-negative, finite number up to MAX_COUNT, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    count = int(value)
    return count if 0 <= count <= MAX_COUNT else None


def cost_of(value: Any) -> float | None:
    """``value`` as a cost in US dollars: a non-negative finite number up to MAX_COST_USD."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        cost = float(value)
    except OverflowError:
        return None
    return cost if math.isfinite(cost) and 0 <= cost <= MAX_COST_USD else None


def model_names(*names: Any) -> tuple[str, ...]:
    """The distinct model names among ``names`` (strings only), in order, bounded."""
    found: list[str] = []
    for name in names:
        if isinstance(name, str) and name and name[:_MODEL_CHARS] not in found:
            found.append(name[:_MODEL_CHARS])
    return tuple(found[:MAX_MODELS])


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
    text = clip(redact(" ".join(summary.split())), _SUMMARY_CHARS)
    return Classification(outcome_class, confidence, text)


def no_terminal_record(vendor: str, record: str, exit_code: int | None) -> Classification:
    """A process that ended without its vendor's terminal record crashed (docs/worker.md,
    "6. Classify")."""
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


# --- Reset signals: when a provider said its limit lifts (docs/vendors.md, Reset signals) ---

# A wait is accepted if it is finite and in (0, MAX_WAIT_SECONDS]; a moment if it lies in
# [_EARLIEST, _LATEST). Anything else is ignored, never clamped.
MAX_WAIT_SECONDS = 30 * 86400.0
_EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
_LATEST = datetime(2100, 1, 1, tzinfo=UTC)

_NUMBER = r"\d{1,12}(?:\.\d{1,12})?"
# Longest spellings first: "ms" before "m", "minutes" before "m", "months" matches nothing.
_UNIT = r"(?:milliseconds?|ms|minutes?|mins?|m|days?|d|hours?|hrs?|h|seconds?|secs?|s)(?![a-z])"
_PART = rf"({_NUMBER})\s*({_UNIT})"
# "23.5s", "8h44m7s", "2m0s", "2 hours", "2 days 3 hours 5 minutes", "1 hour and 30 minutes".
_DURATION = rf"{_PART}(?:(?:\s*,\s*|\s+and\s+|\s*){_PART}){{0,5}}"
_PART_RE = re.compile(_PART, re.IGNORECASE)
# A wait named in words: "try again in 2 hours", "Please retry in 23.5s", "Suggested retry
# after 23s", "Your quota will reset after 8h44m7s". Not "try again in a moment", nor the
# CLI's own "Retrying after 6173ms".
_WAIT_IN_WORDS = re.compile(
    rf"(?:try\s+again|\bretry|\breset(?:s)?)\s+(?:in|after)\s+(?:about\s+|approximately\s+|~\s*)?"
    rf"(?P<duration>{_DURATION})",
    re.IGNORECASE,
)
# A header or a field echoed into the text: "retry-after: 120", "retryDelay": "23s".
_RETRY_AFTER = re.compile(
    rf"retry[-_]after[\"']?\s*[:=]\s*[\"']?({_NUMBER})(?![\w.])", re.IGNORECASE
)
_RETRY_DELAY = re.compile(rf"retryDelay[\"']?\s*:\s*[\"']?({_NUMBER})(ms|s)\b", re.IGNORECASE)
# Claude Code 1.0.x: "Claude AI usage limit reached|1753441200" (the reset, in epoch seconds).
_LIMIT_EPOCH = re.compile(r"limit reached\|(\d{9,11})(?!\d)", re.IGNORECASE)
# A moment with a date and a zone, after a word that says it is when access returns: "You will
# regain access on 2027-01-10 at 00:00 UTC", "resets at 2026-12-01T15:00:00Z". Times without a
# date or a zone ("resets 3pm", "try again at 2:47 PM") are not read: see docs/vendors.md.
_MOMENT = re.compile(
    r"(?:reset(?:s)?|again|access|until|available)\b[^\n]{0,40}?"
    r"(?P<date>\d{4}-\d{2}-\d{2})(?:T|\s+at\s+|\s+)(?P<time>\d{1,2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)"
    r"\s*(?P<zone>Z|UTC|GMT|[+-]\d{2}:?\d{2})(?![\w:])",
    re.IGNORECASE,
)


def wait_of(value: Any) -> float | None:
    """``value`` as a wait in seconds, if it is a number in (0, MAX_WAIT_SECONDS]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return seconds if math.isfinite(seconds) and 0 < seconds <= MAX_WAIT_SECONDS else None


def moment_of_epoch(value: Any) -> datetime | None:
    """``value`` (seconds since the epoch) as a UTC moment, if it is a number in range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
        if not math.isfinite(seconds):
            return None
        moment = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment if _EARLIEST <= moment < _LATEST else None


def _unit_seconds(unit: str) -> float:
    unit = unit.lower()
    if unit == "ms" or unit.startswith("milli"):
        return 0.001
    return {"m": 60.0, "h": 3600.0, "d": 86400.0}.get(unit[0], 1.0)


def _duration_seconds(text: str) -> float | None:
    total = sum(float(number) * _unit_seconds(unit) for number, unit in _PART_RE.findall(text))
    return wait_of(total)


def _moment_in(match: re.Match[str]) -> datetime | None:
    zone = match["zone"].upper()
    offset = "+00:00" if zone in ("Z", "UTC", "GMT") else zone
    if len(offset) == 5:  # +0100
        offset = f"{offset[:3]}:{offset[3:]}"
    clock = match["time"]
    if len(clock.split(":")[0]) == 1:
        clock = f"0{clock}"
    try:
        moment = datetime.fromisoformat(f"{match['date']}T{clock}{offset}").astimezone(UTC)
    except ValueError:
        return None
    return moment if _EARLIEST <= moment < _LATEST else None


def hint_in_text(text: str | None, source: str) -> ResetHint | None:
    """The reset that a vendor's error text names, if any: a moment (an epoch after "limit
    reached|", a date with a zone), else the longest wait it names ("try again in 2 hours",
    "retry-after: 120", "retryDelay": "23s"). Never raises; a value out of range is ignored."""
    if not text:
        return None
    text = text[:_KEPT_TEXT_CHARS]
    moments = [moment_of_epoch(int(found)) for found in _LIMIT_EPOCH.findall(text)]
    moments += [_moment_in(found) for found in _MOMENT.finditer(text)]
    known = [moment for moment in moments if moment is not None]
    if known:
        return ResetHint(source, resets_at=max(known))
    waits = [_duration_seconds(found["duration"]) for found in _WAIT_IN_WORDS.finditer(text)]
    waits += [wait_of(float(found)) for found in _RETRY_AFTER.findall(text)]
    waits += [
        wait_of(float(number) / (1000 if unit.lower() == "ms" else 1))
        for number, unit in _RETRY_DELAY.findall(text)
    ]
    seconds = [wait for wait in waits if wait is not None]
    return ResetHint(source, after_seconds=max(seconds)) if seconds else None


# The most of an agent's last message a reader keeps (its end).
MAX_MESSAGE_CHARS = 8000


class Reader(ABC):
    """Reads one run's output, a line at a time, keeping only what classification needs."""

    session_id: str | None = None
    hint: ResetHint | None = None  # the last reset the output reported
    answered = False  # the provider answered at least once with model output
    # The agent's last message to the person (its last text answer), at most
    # MAX_MESSAGE_CHARS of it: what a handoff tells the next agent (docs/handoff.md).
    last_text: str | None = None

    def _said(self, text: str | None, *, more: bool = False) -> None:
        """The agent said ``text`` (``more``: it goes on its previous text)."""
        if not text:
            return
        joined = (self.last_text or "") + text if more else text
        self.last_text = joined[-MAX_MESSAGE_CHARS:]

    def reset_hint(self) -> ResetHint | None:
        """The last reset the run's output reported (when the provider's limit lifts), or
        None."""
        return self.hint

    def usage(self) -> Usage | None:
        """What the run spent as its output reported it so far: partial (``final`` False) until
        the vendor's end-of-run figures were read. None when nothing was reported (the
        default)."""
        return None

    @property
    def provider_answered(self) -> bool:
        """True once the output shows that the provider answered at least once with model
        output: a run refused before that did no work."""
        return self.answered

    @abstractmethod
    def feed(self, stream: Stream, line: bytes) -> None:
        """One complete output line. Never raises on bad input."""

    @abstractmethod
    def classify(self, exit_code: int | None) -> Classification:
        """The run's outcome from the vendor's records, for a process that exited by itself
        (wrighty's own facts and signals are judged before this is asked)."""


@dataclass(frozen=True)
class AgentProgram:
    """An agent's program as wrighty.json writes it (a relative path already taken from the
    project): a vendor CLI's ``executable`` (None: the adapter's usual one), or the command
    adapter's ``command`` and ``resume_command``."""

    executable: str | None = None
    command: tuple[str, ...] = ()
    resume_command: tuple[str, ...] | None = None


@runtime_checkable
class AgentAdapter(Protocol):
    """What wrighty asks of an adapter (docs/vendors.md, "An adapter of your own"). Its
    promises, which tests/contract/test_agent_adapters.py holds every adapter to:

    - the task and a follow-up prompt go on stdin, never in an argv;
    - ``resume_argv`` names the session it continues, unless the session id reaches the program
      otherwise (``preassigns_session``: wrighty also sets WRIGHTY_SESSION_ID);
    - a session id that could pass as a flag is refused (VendorError), never put in an argv;
    - the reader (if any) never raises on a line, and classifies a finished run.
    """

    name: str
    # True when wrighty chooses the session id before the start (Claude's --session-id, the
    # command adapter's WRIGHTY_SESSION_ID); otherwise the reader learns it from the output.
    preassigns_session: bool
    # The wrighty.json key that names the program (a refusal's fix names it).
    program_setting: str
    # Whether agents.<name>.permission means something to this adapter.
    takes_permission: bool

    def program(self, written: AgentProgram) -> str:
        """The program an agent started through this adapter runs (VendorError: none)."""
        ...

    def configured(self, written: AgentProgram) -> AgentAdapter:
        """This adapter as one agent's settings make it (VendorError when they cannot run)."""
        ...

    @property
    def resumable(self) -> bool:
        """Whether a run's session can be continued at all."""
        ...

    def flags(self, permission: Permission, *, enclosed: bool = False) -> tuple[str, ...]:
        """The permission profile's flags; ``enclosed``: wrighty's own sandbox encloses the
        program."""
        ...

    def budget_flags(self, max_cost_usd: float) -> tuple[str, ...]: ...

    def start_argv(
        self, executable: str, session_id: str | None, extra: Sequence[str]
    ) -> list[str]: ...

    def resume_argv(self, executable: str, session_id: str, extra: Sequence[str]) -> list[str]: ...

    def transcript_problem(
        self, session_id: str, workspace: Path, env: Mapping[str, str]
    ) -> str | None:
        """Why the session's local transcript cannot back a resume, or None when it can (or
        when the adapter keeps none)."""
        ...

    def reader(self) -> Reader | None:
        """A fresh reader of one run's output (None: the exit code alone tells the outcome)."""
        ...

    def version_argv(self, path: str) -> list[str] | None:
        """How `wrighty agents` asks the program's version (None: it does not)."""
        ...


@dataclass(frozen=True)
class PermissionFlags:
    """A vendor's own flags for each permission profile. ``enclosed_workspace`` replaces
    ``workspace`` when wrighty's own sandbox encloses the CLI (None: the same flags): a vendor
    whose own sandbox would nest inside wrighty's turns it off there (docs/vendors.md, "The
    vendors' own sandboxes")."""

    workspace: tuple[str, ...]
    full: tuple[str, ...]
    enclosed_workspace: tuple[str, ...] | None = None

    def of(self, permission: Permission, *, enclosed: bool = False) -> tuple[str, ...]:
        if permission == "full":
            return self.full
        if enclosed and self.enclosed_workspace is not None:
            return self.enclosed_workspace
        return self.workspace


@dataclass(frozen=True)
class StatePath:
    """A file or a folder that a vendor CLI writes for its sessions (its settings, its
    transcripts, its own databases), as the agent's environment places it: a sandbox leaves
    its folders writable for the CLI to start, resume and report usage."""

    path: Path
    # False: a single file, which the CLI replaces (it writes a new file beside it and renames
    # it over): a sandbox cannot leave it writable without its whole folder, and does not.
    folder: bool = True


class Vendor(ABC):
    """One vendor CLI (an AgentAdapter): how to start it, resume it, find its transcript, and
    read it."""

    name: str
    default_executable: str
    # True when wrighty chooses the session id before the start (Claude's --session-id).
    preassigns_session: bool = False
    permission_flags: PermissionFlags
    program_setting = "executable"
    takes_permission = True
    resumable = True
    # The variables the CLI reads for its authentication, its provider's endpoint and its
    # state folder (state_paths): wrighty's sandbox passes them into the CLI's runs by name,
    # those the worker has, beside the few every program gets (docs/sandbox.md#the-environment).
    sandbox_variables: tuple[str, ...] = ()

    def program(self, written: AgentProgram) -> str:
        return written.executable or self.default_executable

    def configured(self, written: AgentProgram) -> Vendor:
        return self  # the executable goes in each argv; nothing else is the agent's own

    def version_argv(self, path: str) -> list[str] | None:
        return [path, "--version"]

    def transcript_problem(
        self, session_id: str, workspace: Path, env: Mapping[str, str]
    ) -> str | None:
        try:
            found = self.transcript(session_id, workspace, env)
        except VendorError as error:
            return str(error)
        if found is None:
            return f"no {self.name} transcript of session {session_id} on this installation"
        return None

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

    def budget_flags(self, max_cost_usd: float) -> tuple[str, ...]:
        """Flags that make the CLI stop itself at ``max_cost_usd`` (none: it has no such
        stop, and wrighty's own watch is the only one)."""
        return ()

    def flags(self, permission: Permission, *, enclosed: bool = False) -> tuple[str, ...]:
        return self.permission_flags.of(permission, enclosed=enclosed)

    def state_paths(self, env: Mapping[str, str]) -> tuple[StatePath, ...]:
        """The files and folders the CLI writes for its sessions, under the agent's environment
        ``env`` (its HOME and the vendor's own variables); none by default."""
        return ()

    def sandbox_problem(
        self, permission: Permission, env: Mapping[str, str], *, enclosed: bool = False
    ) -> str | None:
        """Why the CLI's own sandbox cannot work under ``env`` with this permission profile
        (``enclosed``: inside wrighty's), or None: a worker refuses to start such an agent."""
        return None
