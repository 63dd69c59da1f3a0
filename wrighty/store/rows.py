"""The one boundary between stored rows and the domain: every row the store reads becomes a
domain object here, each value checked as it is read (`Fields`), and every object the store
writes becomes its query's parameters here. Times are stored as fixed-width UTC text in both
dialects, so that comparing strings compares times and the same parameters serve both."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass
from datetime import UTC, datetime
from decimal import Decimal
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar, cast

from wrighty.domain.model import (
    BRANCH_NAME,
    CHECK_NAME,
    COMMIT_ID,
    DEFAULT_PRIORITY,
    Dependency,
    Event,
    Item,
    NewItem,
    NewRun,
    Run,
    RunEnd,
    Session,
)
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.scheduling import PRIORITIES
from wrighty.domain.states import ItemState
from wrighty.domain.text import first_unprintable_in_line, printable_line
from wrighty.domain.usage import LedgerEntry, Usage
from wrighty.errors import UnreadableError

# The board, claims, workers, circuits and the outbox are read by the commands that show them;
# their mappers import them, so that a read of items (`wrighty list`) loads none of them.
if TYPE_CHECKING:
    from wrighty.domain.board import OpenItem
    from wrighty.domain.circuits import Circuit
    from wrighty.domain.claims import ClaimRequest, ReapFacts
    from wrighty.domain.health import QueueFigures, WorkerRow
    from wrighty.domain.notices import Delivered, Notice, OutboxFigures, StoredNotice
    from wrighty.domain.verify import CheckRecord

# Before every run: the ledger read from the start.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_E = TypeVar("_E", bound=Enum)


def to_db_time(moment: datetime | None) -> str | None:
    """Fixed-width UTC text (``2026-11-30T09:00:00.000000Z``): comparing strings compares
    times."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        raise ValueError("naive datetime given to the store; use an aware UTC time")
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def from_db_time(text: str | None) -> datetime | None:
    """A stored time; ValueError when ``text`` is not one (an aware time, as to_db_time wrote
    it). Rows are read through Fields, which says which field did not read."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError("not text")
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("no time zone")
    return moment.astimezone(UTC)


# -- the boundary every stored value is read through (docs/storage.md) ----------------------

# Bounds of stored figures: far beyond any real one, so that sums stay finite.
MAX_STORED_COUNT = 10**15
# A worker clock this far from the store's (about 115 days) is a value that does not read.
MAX_CLOCK_OFFSET_SECONDS = 10**7
MAX_STORED_COST_USD = 10.0**9
# A process's exit code or signal number as a check's evidence stores it (a C int).
_C_INT = 2**31 - 1
_SHOWN_CHARS = 40
_REASON_CODE = re.compile(r"[^\s]{1,64}")


def _shown(value: Any) -> str:
    """A stored value as a message may show it: neutralised and shortened."""
    text = repr(value)
    if len(text) > _SHOWN_CHARS:
        text = text[:_SHOWN_CHARS] + "..."
    return printable_line(text)


@dataclass(eq=False)
class Fields:
    """One stored row, each value checked as it is read: times parse, numbers are finite and
    in range, JSON parses, states and codes are known. A value that does not read raises
    UnreadableError naming the row and the field; when ``salvaged`` is given (a set-aside or a
    reset, which must read a poisoned row to write it right), it is noted there instead and a
    safe value stands in for it."""

    row: Any
    what: str
    key: object
    _: KW_ONLY
    item_id: int | None = None
    salvaged: list[UnreadableError] | None = None

    def _bad(self, name: str, problem: str, stand_in: Any) -> Any:
        error = UnreadableError(self.what, self.key, name, problem, item_id=self.item_id)
        if self.salvaged is None:
            raise error
        self.salvaged.append(error)
        return stand_in

    def refuse(self, name: str, problem: str) -> None:
        """A rule across values of the row that they break: the row does not read."""
        self._bad(name, problem, None)

    def raw(self, name: str) -> Any:
        return self.row[name]

    def text(self, name: str, stand_in: str = "") -> str:
        value = self.row[name]
        if not isinstance(value, str):
            return str(self._bad(name, f"{_shown(value)} is not text", stand_in))
        return value

    def optional_text(self, name: str) -> str | None:
        value = self.row[name]
        return None if value is None else self.text(name)

    def time(self, name: str) -> datetime | None:
        value = self.row[name]
        try:
            return from_db_time(value)
        except (ValueError, TypeError, OverflowError):
            bad: datetime | None = self._bad(name, f"{_shown(value)} is not a time", None)
            return bad

    def required_time(self, name: str, stand_in: datetime = EPOCH) -> datetime:
        moment = self.time(name)
        if moment is None:
            if self.row[name] is None:
                moment = self._bad(name, "it is empty", stand_in)
            return stand_in if moment is None else moment
        return moment

    def integer(
        self, name: str, low: int = 0, high: int = MAX_STORED_COUNT, stand_in: int = 0
    ) -> int:
        value = self.row[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return int(self._bad(name, f"{_shown(value)} is not a whole number {low}..{high}",
                                 stand_in))  # fmt: skip
        return value

    def optional_integer(self, name: str, low: int = 0, high: int = MAX_STORED_COUNT) -> int | None:
        return None if self.row[name] is None else self.integer(name, low, high)

    def flag(self, name: str) -> bool:
        """A yes or no: PostgreSQL's boolean, SQLite's 0 or 1."""
        value = self.row[name]
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        return bool(self._bad(name, f"{_shown(value)} is not a yes or no", False))

    def check_names(self, name: str) -> tuple[str, ...] | None:
        """The verification checks an item chose (docs/verify.md): null follows wrighty.json
        (the stand-in: its checks all run); else a JSON list of check names, [] for none."""
        if self.row[name] is None:
            return None
        found = self._json(name, list, "a JSON list of check names")
        if found is None:
            return None
        if not all(isinstance(item, str) and CHECK_NAME.fullmatch(item) for item in found):
            bad: tuple[str, ...] | None = self._bad(
                name, f"{_shown(self.row[name])} is not a JSON list of check names", None
            )
            return bad
        return tuple(found)

    def number(self, name: str, high: float, *, low: float = 0.0) -> float | None:
        """A stored figure that may be absent: a number ``low``..``high``, never NaN (and
        finite unless a bound is infinite)."""
        value = self.row[name]
        if value is None:
            return None
        if isinstance(value, Decimal):
            value = float(value)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or math.isnan(value)
            or not low <= value <= high
        ):
            shown = f"{_shown(value)} is not a number {low:g}..{high:g}"
            bad: float | None = self._bad(name, shown, None)
            return bad
        return float(value)

    def choice(self, name: str, kind: type[_E], stand_in: _E) -> _E:
        value = self.row[name]
        try:
            return kind(value)
        except ValueError:
            known = ", ".join(member.value for member in kind)
            return cast(_E, self._bad(name, f"{_shown(value)} is none of {known}", stand_in))

    def optional_choice(self, name: str, kind: type[_E]) -> _E | None:
        value = self.row[name]
        if value is None or value == "":
            return None
        return self.choice(name, kind, cast(_E, None))

    def code(self, name: str) -> str | None:
        """A reason code: one short word (``internal-error``), nothing a terminal obeys."""
        value = self.row[name]
        if value is None:
            return None
        if (
            not isinstance(value, str)
            or not _REASON_CODE.fullmatch(value)
            or first_unprintable_in_line(value) is not None
        ):
            bad: str | None = self._bad(name, f"{_shown(value)} is not a reason code", None)
            return bad
        return value

    def json_list(self, name: str, stand_in: list[Any] | None = None) -> list[Any]:
        found = self._json(name, list, "a JSON list")
        return (stand_in or []) if found is None else cast(list[Any], found)

    def json_object(self, name: str) -> dict[str, Any]:
        found = self._json(name, dict, "a JSON object")
        return {} if found is None else cast(dict[str, Any], found)

    def _json(self, name: str, kind: type, what: str) -> Any:
        value = self.row[name]
        try:
            found = json.loads(value, parse_constant=_no_constant)
        except (ValueError, TypeError, RecursionError):
            return self._bad(name, f"{_shown(value)} is not {what}", None)
        if not isinstance(found, kind):
            return self._bad(name, f"{_shown(value)} is not {what}", None)
        return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_STATE_NAMES = frozenset(state.value for state in ItemState)


def state_or_none(value: Any) -> ItemState | None:
    """The state of an item depended on; None when there is no such item (or its state is not
    one wrighty knows): such a dependency is never met (docs/scheduling.md)."""
    return ItemState(value) if value in _STATE_NAMES else None


def aggregate(row: Any) -> Fields:
    """A row of figures over many rows: a time among them that does not read counts as
    unknown (the rows themselves say which one does not read)."""
    return Fields(row, "figures", "", salvaged=[])


# -- items ------------------------------------------------------------------------------------


def new_item_params(new: NewItem, *, at: datetime) -> dict[str, Any]:
    return {
        "title": new.title,
        "body": new.body,
        "agent": new.agent,
        "timeout_seconds": new.timeout_seconds,
        "workspace": new.workspace,
        "state": new.initial_state.value,
        "queued_at": to_db_time(at) if new.initial_state is ItemState.QUEUED else None,
        "created_at": to_db_time(at),
        "max_cost_usd": new.max_cost_usd,
        "max_tokens": new.max_tokens,
        "priority": new.priority,
        "import_key": new.import_key,
        "import_fingerprint": new.import_fingerprint,
        "verify_checks": check_names_json(new.verify_checks),
    }


def check_names_json(names: tuple[str, ...] | None) -> str | None:
    """An item's chosen checks as stored: null (follow wrighty.json) or a JSON list."""
    return None if names is None else json.dumps(list(names))


def item_from_row(row: Any, salvaged: list[UnreadableError] | None = None) -> Item:
    """The item in ``row``; UnreadableError for the first value that does not read (with
    ``salvaged``, each one is noted there and a safe value stands in for it)."""
    read = Fields(row, "item", row["id"], item_id=row["id"], salvaged=salvaged)
    # Any number but NaN: the claim bounds one no clock can hold (docs/worker.md).
    timeout = read.number("timeout_seconds", math.inf, low=-math.inf)
    return Item(
        id=read.integer("id", 1),
        title=read.text("title"),
        body=read.text("body"),
        agent=read.optional_text("agent"),
        timeout_seconds=timeout,
        workspace=read.optional_text("workspace"),
        state=read.choice("state", ItemState, ItemState.NEEDS_ATTENTION),
        generation=read.integer("generation"),
        claimed_by=read.optional_text("claimed_by"),
        lease_expires_at=read.time("lease_expires_at"),
        queued_at=read.time("queued_at"),
        not_before=read.time("not_before"),
        reason_code=read.code("reason_code"),
        reason=read.optional_text("reason"),
        next_action=read.optional_text("next_action"),
        crash_retries=read.integer("crash_retries"),
        usage_retries=read.integer("usage_retries"),
        requeues=read.integer("requeues"),
        max_cost_usd=read.number("max_cost_usd", MAX_STORED_COST_USD),
        max_tokens=read.optional_integer("max_tokens"),
        priority=read.integer("priority", PRIORITIES[0], PRIORITIES[-1], DEFAULT_PRIORITY),
        import_key=read.optional_text("import_key"),
        import_fingerprint=read.optional_text("import_fingerprint"),
        verify_checks=read.check_names("verify_checks"),
        fix_turns=read.integer("fix_turns"),
        rejections=read.integer("rejections"),
        feedback=read.optional_text("feedback"),
        handoffs=read.integer("handoffs"),
        handoff_note=read.optional_text("handoff_note"),
        created_at=read.required_time("created_at"),
        updated_at=read.required_time("updated_at"),
        claimed_at=read.time("claimed_at"),
        renew_deadline=read.time("renew_deadline"),
    )


def item_mutable_params(item: Item) -> dict[str, Any]:
    return {
        "id": item.id,
        "state": item.state.value,
        "generation": item.generation,
        "claimed_by": item.claimed_by,
        "lease_expires_at": to_db_time(item.lease_expires_at),
        "queued_at": to_db_time(item.queued_at),
        "not_before": to_db_time(item.not_before),
        "reason_code": item.reason_code,
        "reason": item.reason,
        "next_action": item.next_action,
        "crash_retries": item.crash_retries,
        "usage_retries": item.usage_retries,
        "requeues": item.requeues,
        "fix_turns": item.fix_turns,
        "rejections": item.rejections,
        "feedback": item.feedback,
        "agent": item.agent,
        "handoffs": item.handoffs,
        "handoff_note": item.handoff_note,
        "verify_checks": check_names_json(item.verify_checks),
        "max_cost_usd": item.max_cost_usd,
        "max_tokens": item.max_tokens,
        "priority": item.priority,
        "updated_at": to_db_time(item.updated_at),
        "claimed_at": to_db_time(item.claimed_at),
        "renew_deadline": to_db_time(item.renew_deadline),
    }


def open_item_from_row(row: Any, runs: Mapping[str, Run | UnreadableError]) -> OpenItem:
    """A row of select_open_items, with its latest run from ``runs`` (by id; a run that did not
    read makes the item's line unreadable)."""
    from wrighty.domain.board import OpenItem

    last_run_id = row["last_run_id"]
    last_run = None if last_run_id is None else runs[last_run_id]
    if isinstance(last_run, UnreadableError):
        raise last_run
    read = Fields(row, "item", row["id"], item_id=row["id"])
    item = item_from_row(row)
    after = sorted(
        (int(depends_on), state_or_none(state))
        for depends_on, state in read.json_list("after_json")
    )
    return OpenItem(
        item=item,
        since=read.time("since"),
        runs=int(row["run_count"]),
        last_run=last_run,
        labels=tuple(sorted(str(label) for label in read.json_list("labels_json"))),
        after=tuple(Dependency(item.id, depends_on, state) for depends_on, state in after),
    )


def event_params(event: Event) -> dict[str, Any]:
    return {
        "item_id": event.item_id,
        "at": to_db_time(event.at),
        "actor": event.actor,
        "generation": event.generation,
        "from_state": event.from_state.value if event.from_state else None,
        "to_state": event.to_state.value,
        "reason_code": event.reason_code,
        "reason": event.reason,
    }


def event_from_row(row: Any) -> Event:
    read = Fields(row, "event of item", row["item_id"], item_id=row["item_id"])
    return Event(
        item_id=row["item_id"],
        at=read.required_time("at"),
        actor=read.text("actor"),
        generation=read.integer("generation"),
        from_state=read.optional_choice("from_state", ItemState),
        to_state=read.choice("to_state", ItemState, ItemState.NEEDS_ATTENTION),
        reason_code=read.code("reason_code"),
        reason=read.optional_text("reason"),
    )


def dependency_from_row(row: Any) -> Dependency:
    return Dependency(row["item_id"], row["depends_on"], state_or_none(row["depends_on_state"]))


def labels_from_rows(rows: Iterable[Any]) -> dict[int, tuple[str, ...]]:
    """Each item's labels, in the order of the rows."""
    found: dict[int, list[str]] = {}
    for row in rows:
        found.setdefault(row["item_id"], []).append(row["label"])
    return {key: tuple(labels) for key, labels in found.items()}


def queue_figures_from_rows(
    counted: Iterable[Any], row: Any, by_agent: Iterable[Any]
) -> QueueFigures:
    """The queue's figures from its three reads: the items by state, the figures, and the
    items waiting by agent."""
    from wrighty.domain.health import QueueFigures, VerificationFigures

    counts = {state: 0 for state in ItemState}
    counts.update({ItemState(r["state"]): r["n"] for r in counted if r["state"] in _STATE_NAMES})
    figures = aggregate(row)
    return QueueFigures(
        counts=counts,
        waiting=row["waiting"],
        oldest_queued_at=figures.time("oldest_queued_at"),
        unknown_queue_wait=row["unknown_queue_wait"],
        expired_leases=row["expired_leases"],
        retry_next_due=figures.time("retry_next_due"),
        oldest_review_at=figures.time("oldest_review_at"),
        waiting_on_dependencies=row["waiting_on_dependencies"],
        blocked=row["blocked"],
        waiting_by_agent={r["agent"]: r["n"] for r in by_agent},
        verification=VerificationFigures(
            checks_passed=row["checks_passed"],
            checks_failed=row["checks"] - row["checks_passed"] - row["checks_not_started"],
            checks_not_started=row["checks_not_started"],
            fix_turns=row["fix_turns"],
        ),
    )


# -- claims, runs and sessions ----------------------------------------------------------------


def claim_params(request: ClaimRequest, *, now: datetime) -> dict[str, Any]:
    """What select_next_claimable is asked: the claimant, and the limits it claims under."""
    limits = request.limits
    return {
        "now": to_db_time(now),
        "installation_id": request.installation_id,
        "item_id": request.item_id,
        "agent": request.agent,
        "default_agent": request.default_agent,
        "agent_limits": json.dumps(dict(limits.agents)) if limits.agents else None,
        "label_limits": json.dumps(dict(limits.labels)) if limits.labels else None,
    }


def claim_guard(claimed: Item) -> dict[str, Any]:
    """The claim a write lands under: the item, its generation and its holder."""
    return {
        "item_id": claimed.id,
        "generation": claimed.generation,
        "claimed_by": claimed.claimed_by,
    }


def lease_from_row(row: Any, item_id: int) -> datetime | None:
    """The lease end select_claim read."""
    return Fields(row, "item", item_id, item_id=item_id).time("lease_expires_at")


def reap_facts_from_row(row: Any) -> ReapFacts:
    from wrighty.domain.claims import ReapFacts

    return ReapFacts(
        run_recorded=row["runs_recorded"] > 0,
        has_resume_address=row["session_id"] is not None,
        claimed_from=ItemState(row["claimed_from"] or ItemState.QUEUED),
    )


def new_run_params(claimed: Item, run: NewRun) -> dict[str, Any]:
    return {
        **claim_guard(claimed),
        "run_id": run.run_id,
        "kind": run.kind.value,
        "worker_id": run.worker_id,
        "installation_id": run.installation_id,
        "started_at": to_db_time(run.started_at),
        "session_id": run.session_id,
        "claim_token": run.claim_token,
        "agent": run.agent,
    }


def run_end_params(end: RunEnd, item_id: int, generation: int) -> dict[str, Any]:
    return {
        "item_id": item_id,
        "generation": generation,
        "ended_at": to_db_time(end.ended_at),
        "outcome_class": end.outcome_class.value,
        "confidence": end.confidence.value,
        "exit_code": end.exit_code,
        "signal": end.signal,
        "diagnostic": end.diagnostic,
        **usage_params(end.usage),
    }


def run_from_row(row: Any) -> Run:
    read = Fields(row, "run", row["run_id"], item_id=row["item_id"])
    return Run(
        run_id=read.text("run_id"),
        item_id=read.integer("item_id", 1),
        generation=read.integer("generation"),
        attempt=read.integer("attempt"),
        kind=read.choice("kind", RunKind, RunKind.FRESH),
        worker_id=read.text("worker_id"),
        installation_id=read.text("installation_id"),
        started_at=read.required_time("started_at"),
        ended_at=read.time("ended_at"),
        pid=read.optional_integer("pid"),
        process_started_at=read.number("process_started_at", float(MAX_STORED_COUNT)),
        exit_code=row["exit_code"],
        signal=row["signal"],
        outcome_class=read.optional_choice("outcome_class", OutcomeClass),
        confidence=read.optional_choice("confidence", Confidence),
        session_id=read.optional_text("session_id"),
        diagnostic=read.optional_text("diagnostic"),
        agent_report=read.optional_text("agent_report"),
        agent_reason=read.optional_text("agent_reason"),
        agent=read.optional_text("agent"),
        usage=usage_from_row(row, read),
        agent_resets_at=read.time("agent_resets_at"),
    )


def session_params(claimed: Item, session: Session, *, at: datetime) -> dict[str, Any]:
    return {
        **claim_guard(claimed),
        "vendor": session.vendor,
        "session_id": session.session_id,
        "workspace": session.workspace,
        "installation_id": session.installation_id,
        "branch": session.branch,
        "base_commit": session.base_commit,
        "updated_at": to_db_time(at),
    }


def claimed_session(row: Any) -> Session | None:
    """The session columns that the claim queries join to the item, if it has one."""
    return session_from_row(row, "session_") if row["session_vendor"] is not None else None


def session_from_row(row: Any, prefix: str = "") -> Session:
    item_id = row[f"{prefix}item_id"]
    read = Fields(row, "session", item_id, item_id=item_id)
    branch = read.optional_text(f"{prefix}branch")
    if branch is not None and (BRANCH_NAME.fullmatch(branch) is None or ".." in branch):
        read.refuse(f"{prefix}branch", f"{_shown(branch)} is not a branch wrighty makes")
    base = read.optional_text(f"{prefix}base_commit")
    if base is not None and COMMIT_ID.fullmatch(base) is None:
        read.refuse(f"{prefix}base_commit", f"{_shown(base)} is not a commit id")
    return Session(
        item_id=item_id,
        vendor=row[f"{prefix}vendor"],
        session_id=row[f"{prefix}session_id"],
        workspace=row[f"{prefix}workspace"],
        installation_id=row[f"{prefix}installation_id"],
        branch=branch,
        base_commit=base,
    )


def wake_params(item: Item) -> dict[str, Any]:
    """What a wake-up says about the item (for a person watching; listeners only wake)."""
    not_before = to_db_time(item.not_before)
    return {"item_id": item.id, "state": item.state.value, "not_before": not_before}


# -- verification -----------------------------------------------------------------------------


def check_params(item: Item, record: CheckRecord) -> dict[str, Any]:
    """One check's evidence, to be written under ``item`` as the caller read it (its state,
    generation and owner are the write's guard)."""
    evidence = record.evidence
    return {
        "item_id": item.id,
        "state": item.state.value,
        "generation": item.generation,
        "claimed_by": item.claimed_by,
        "verification_id": record.verification_id,
        "run_id": record.run_id,
        "position": record.position,
        "actor": record.actor,
        "started_at": to_db_time(record.started_at),
        "name": evidence.name,
        "argv": json.dumps(list(evidence.argv)),
        "exit_code": evidence.exit_code,
        "signal": evidence.signal,
        "timed_out": evidence.timed_out,
        "start_failure": evidence.start_failure,
        "duration_seconds": evidence.duration_seconds,
        "output_tail": evidence.output_tail,
    }


def check_from_row(row: Any) -> CheckRecord:
    """A stored check's evidence; UnreadableError for a value that does not read, or for a
    row that breaks CheckEvidence's rule (one that did not start has no exit code or signal;
    one that started has exactly one of them)."""
    from wrighty.domain.verify import CheckEvidence, CheckRecord

    key = f"{row['verification_id']}/{row['position']}"
    read = Fields(row, "check", key, item_id=row["item_id"])
    name = read.text("name")
    if CHECK_NAME.fullmatch(name) is None:
        read.refuse("name", f"{_shown(name)} is not a check name")
    argv = read.json_list("argv")
    if not all(isinstance(argument, str) for argument in argv):
        read.refuse("argv", f"{_shown(row['argv'])} is not a JSON list of text")
    exit_code = read.optional_integer("exit_code", -_C_INT - 1, _C_INT)
    signal = read.optional_integer("signal", 1, _C_INT)
    start_failure = read.optional_text("start_failure")
    if start_failure is not None and (exit_code, signal) != (None, None):
        read.refuse("start_failure", "a check that did not start has no exit code or signal")
    if start_failure is None and (exit_code is None) == (signal is None):
        read.refuse("exit_code", "a check that ran has exactly one of exit code and signal")
    evidence = CheckEvidence(
        name=name,
        argv=tuple(argv),
        duration_seconds=read.number("duration_seconds", float(MAX_STORED_COUNT)) or 0.0,
        output_tail=read.text("output_tail"),
        exit_code=exit_code,
        signal=signal,
        timed_out=read.flag("timed_out"),
        start_failure=start_failure,
    )
    return CheckRecord(
        item_id=read.integer("item_id", 1),
        verification_id=read.text("verification_id"),
        run_id=read.optional_text("run_id"),
        position=read.integer("position"),
        actor=read.text("actor"),
        started_at=read.required_time("started_at"),
        evidence=evidence,
    )


# -- the usage ledger -------------------------------------------------------------------------


def usage_params(usage: Usage | None) -> dict[str, Any]:
    """The ledger columns of a run (``has_usage`` False: leave those recorded)."""
    known = usage or Usage()
    return {
        "has_usage": usage is not None,
        "usage": None if usage is None else ("final" if usage.final else "partial"),
        "input_tokens": known.input_tokens,
        "output_tokens": known.output_tokens,
        "cache_read_tokens": known.cache_read_tokens,
        "cache_write_tokens": known.cache_write_tokens,
        "cost_usd": known.cost_usd,
        "cost_source": known.cost_source if known.cost_usd is not None else None,
        "models": json.dumps(list(known.models)),
        "turns": known.turns,
        "api_ms": known.api_ms,
    }


def usage_from_row(row: Any, read: Fields) -> Usage | None:
    if row["usage"] is None:
        return None
    models = read.json_list("models") if row["models"] is not None else []
    cost = read.number("cost_usd", MAX_STORED_COST_USD)
    return Usage(
        input_tokens=read.integer("input_tokens"),
        output_tokens=read.integer("output_tokens"),
        cache_read_tokens=read.integer("cache_read_tokens"),
        cache_write_tokens=read.integer("cache_write_tokens"),
        cost_usd=cost,
        models=tuple(str(m) for m in models),
        turns=read.optional_integer("turns"),
        api_ms=read.optional_integer("api_ms"),
        final=row["usage"] == "final",
        cost_source=row["cost_source"] if cost is not None else None,
    )


def ledger_entry_from_row(row: Any) -> LedgerEntry:
    read = Fields(row, "run", row["run_id"], item_id=row["item_id"])
    return LedgerEntry(
        run_id=read.text("run_id"),
        item_id=read.integer("item_id", 1),
        agent=read.optional_text("agent"),
        started_at=read.required_time("started_at"),
        usage=usage_from_row(row, read) or Usage(),
    )


def spend_from_row(row: Any, agent: str) -> Usage:
    """What select_agent_spend summed for ``agent``."""
    read = Fields(row, "spend of agent", agent)
    cost = read.number("cost_usd", math.inf)  # a sum: finite, whatever its size
    return Usage(
        input_tokens=int(row["input_tokens"]),
        output_tokens=int(row["output_tokens"]),
        cache_read_tokens=int(row["cache_read_tokens"]),
        cache_write_tokens=int(row["cache_write_tokens"]),
        cost_usd=cost,
        cost_source=None if cost is None else ("estimated" if row["estimated"] else "reported"),
    )


# -- the worker registry ----------------------------------------------------------------------


def worker_params(row: WorkerRow) -> dict[str, Any]:
    return {
        "worker_id": row.worker_id,
        "label": row.label,
        "installation_id": row.installation_id,
        "pid": row.pid,
        "process_started_at": row.process_started_at,
        "version": row.version,
        "state": row.state.value,
        "items": ",".join(str(item) for item in row.items),
        "started_at": to_db_time(row.started_at),
        "last_heartbeat_at": to_db_time(row.last_heartbeat_at),
        "agent": row.agent,
        "clock_offset_seconds": row.clock_offset_seconds,
        "held_reason": row.held_reason,
    }


def worker_from_row(row: Any) -> WorkerRow:
    from wrighty.domain.health import WorkerRow, WorkerState

    read = Fields(row, "worker", row["worker_id"])
    return WorkerRow(
        worker_id=read.text("worker_id"),
        label=read.optional_text("label"),
        installation_id=read.text("installation_id"),
        pid=read.integer("pid"),
        process_started_at=read.number("process_started_at", float(MAX_STORED_COUNT)) or 0.0,
        version=read.text("version"),
        state=read.choice("state", WorkerState, WorkerState.IDLE),
        items=tuple(int(item) for item in read.text("items").split(",") if item.isdecimal()),
        started_at=read.required_time("started_at"),
        last_heartbeat_at=read.required_time("last_heartbeat_at"),
        agent=read.optional_text("agent"),
        clock_offset_seconds=read.number(
            "clock_offset_seconds", MAX_CLOCK_OFFSET_SECONDS, low=-MAX_CLOCK_OFFSET_SECONDS
        ),
        held_reason=read.optional_text("held_reason"),
    )


# -- provider circuits ------------------------------------------------------------------------


def circuit_params(circuit: Circuit) -> dict[str, Any]:
    """The stored fields of ``circuit``; its version is the write's to set."""
    return {
        "name": circuit.name,
        "opened_at": to_db_time(circuit.opened_at),
        "until": to_db_time(circuit.until),
        "reason": circuit.reason,
        "failures": circuit.failures,
        "probe_by": circuit.probe_by,
        "probe_item": circuit.probe_item,
        "probe_expires_at": to_db_time(circuit.probe_expires_at),
    }


def circuit_from_row(row: Any, salvaged: list[UnreadableError] | None = None) -> Circuit:
    from wrighty.domain.circuits import Circuit

    read = Fields(row, "circuit", row["name"], salvaged=salvaged)
    return Circuit(
        name=read.text("name"),
        version=read.integer("version", 1, MAX_STORED_COUNT, stand_in=1),
        opened_at=read.time("opened_at"),
        until=read.time("until"),
        reason=read.optional_text("reason"),
        failures=read.integer("failures"),
        probe_by=read.optional_text("probe_by"),
        probe_item=read.optional_integer("probe_item"),
        probe_expires_at=read.time("probe_expires_at"),
        probe_running=bool(row["probe_running"]),
    )


# -- the notification outbox ------------------------------------------------------------------


def notice_params(notice: Notice) -> dict[str, Any]:
    return {
        "id": notice.id,
        "created_at": to_db_time(notice.at),
        "event": notice.event,
        "events": json.dumps(list(notice.events)),
        "item_id": notice.item_id,
        "reason_code": notice.reason_code,
        "payload": json.dumps(notice.payload, sort_keys=False),
    }


def finish_params(
    notice_id: str, deliverer: str | None, claimed_until: str | None, outcome: Delivered
) -> dict[str, Any]:
    """An attempt's outcome, to be written under the claim (``deliverer`` until
    ``claimed_until``, as stored) that made it."""
    return {
        "id": notice_id,
        "deliverer": deliverer,
        "claimed_until": claimed_until,
        "state": outcome.state,
        "attempts": outcome.attempts,
        "next_attempt_at": to_db_time(outcome.next_attempt_at),
        "delivered_to": json.dumps(list(outcome.delivered_to)),
        "last_error": outcome.last_error,
        "finished_at": to_db_time(outcome.finished_at),
    }


def stored_notice_from_row(row: Any, salvaged: list[UnreadableError] | None = None) -> StoredNotice:
    from wrighty.domain.notices import Notice, StoredNotice

    item_id = row["item_id"]
    read = Fields(row, "notice", row["id"], item_id=item_id, salvaged=salvaged)
    notice = Notice(
        id=read.text("id"),
        event=read.text("event"),
        events=tuple(str(event) for event in read.json_list("events")),
        at=read.required_time("created_at"),
        item_id=read.optional_integer("item_id"),
        reason_code=read.code("reason_code"),
        payload=read.json_object("payload"),
    )
    return StoredNotice(
        notice=notice,
        state=read.text("state"),
        attempts=read.integer("attempts"),
        next_attempt_at=read.required_time("next_attempt_at"),
        delivered_to=tuple(str(sink) for sink in read.json_list("delivered_to")),
        last_error=read.optional_text("last_error"),
        claimed_by=read.optional_text("claimed_by"),
        claim_expires_at=read.time("claim_expires_at"),
        finished_at=read.time("finished_at"),
    )


def outbox_figures_from_row(row: Any) -> OutboxFigures:
    from wrighty.domain.notices import OutboxFigures

    return OutboxFigures(
        pending=row["pending"],
        oldest_pending_at=aggregate(row).time("oldest_pending_at"),
        given_up=row["given_up"],
    )
