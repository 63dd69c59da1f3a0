"""The store port on a SQL database, shared by the SQLite and PostgreSQL adapters.

A dialect supplies its transactions (`_write`, `_snapshot`), its plain reads (`_rows`) and its
named queries; everything else — guarded compare-and-set writes, claims, the reaper, row
conversion — is written once here. Times are stored as fixed-width UTC text in both, so that
comparing strings compares times and the same parameters serve both dialects.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any, Literal, Protocol, TypeVar, cast

from wrighty.domain.board import OpenItem
from wrighty.domain.circuits import Circuit
from wrighty.domain.claims import (
    CLAIMABLE_STATES,
    Claim,
    ClaimRequest,
    LeaseTerms,
    ReapFacts,
    RenewOutcome,
    RenewResult,
    claim,
    lease_expired,
    reap,
)
from wrighty.domain.health import QueueFigures, WorkerRow, WorkerState
from wrighty.domain.model import (
    DEFAULT_PRIORITY,
    Change,
    Dependency,
    Event,
    Item,
    NewItem,
    NewRun,
    Run,
    RunEnd,
    Session,
)
from wrighty.domain.notices import (
    Delivered,
    Notice,
    OutboxFigures,
    Source,
    StoredNotice,
    notices_for,
)
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.scheduling import EDITED, PRIORITIES
from wrighty.domain.states import ItemState
from wrighty.domain.text import first_unprintable_in_line, printable_line
from wrighty.domain.transitions import creation_event
from wrighty.domain.usage import LedgerEntry, Usage
from wrighty.errors import AlreadyImported, NotFoundError, UnreadableError, WrightyError
from wrighty.store.port import Rows, Salvaged, WorkListener
from wrighty.store.sqlfiles import migrations, read_sql

# Before every run: the ledger read from the start.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_E = TypeVar("_E", bound=Enum)
_T = TypeVar("_T")


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
    it). Rows are read through _Fields, which says which field did not read."""
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
_SHOWN_CHARS = 40
_MAX_NOTED = 100  # rows left out that a store keeps to tell (a long-lived worker's is bounded)
_REASON_CODE = re.compile(r"[^\s]{1,64}")


def _shown(value: Any) -> str:
    """A stored value as a message may show it: neutralised and shortened."""
    text = repr(value)
    if len(text) > _SHOWN_CHARS:
        text = text[:_SHOWN_CHARS] + "..."
    return printable_line(text)


class _Fields:
    """One stored row, each value checked as it is read: times parse, numbers are finite and
    in range, JSON parses, states and codes are known. A value that does not read raises
    UnreadableError naming the row and the field; when ``salvaged`` is given (a set-aside or a
    reset, which must read a poisoned row to write it right), it is noted there instead and a
    safe value stands in for it."""

    def __init__(
        self,
        row: Any,
        what: str,
        key: object,
        *,
        item_id: int | None = None,
        salvaged: list[UnreadableError] | None = None,
    ) -> None:
        self._row = row
        self._what = what
        self._key = key
        self._item_id = item_id
        self._salvaged = salvaged

    def _bad(self, name: str, problem: str, stand_in: Any) -> Any:
        error = UnreadableError(self._what, self._key, name, problem, item_id=self._item_id)
        if self._salvaged is None:
            raise error
        self._salvaged.append(error)
        return stand_in

    def raw(self, name: str) -> Any:
        return self._row[name]

    def text(self, name: str, stand_in: str = "") -> str:
        value = self._row[name]
        if not isinstance(value, str):
            return str(self._bad(name, f"{_shown(value)} is not text", stand_in))
        return value

    def optional_text(self, name: str) -> str | None:
        value = self._row[name]
        return None if value is None else self.text(name)

    def time(self, name: str) -> datetime | None:
        value = self._row[name]
        try:
            return from_db_time(value)
        except (ValueError, TypeError, OverflowError):
            bad: datetime | None = self._bad(name, f"{_shown(value)} is not a time", None)
            return bad

    def required_time(self, name: str, stand_in: datetime = _EPOCH) -> datetime:
        moment = self.time(name)
        if moment is None:
            if self._row[name] is None:
                moment = self._bad(name, "it is empty", stand_in)
            return stand_in if moment is None else moment
        return moment

    def integer(
        self, name: str, low: int = 0, high: int = MAX_STORED_COUNT, stand_in: int = 0
    ) -> int:
        value = self._row[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return int(self._bad(name, f"{_shown(value)} is not a whole number {low}..{high}",
                                 stand_in))  # fmt: skip
        return value

    def optional_integer(self, name: str, low: int = 0, high: int = MAX_STORED_COUNT) -> int | None:
        return None if self._row[name] is None else self.integer(name, low, high)

    def number(self, name: str, high: float, *, low: float = 0.0) -> float | None:
        """A stored figure that may be absent: a number ``low``..``high``, never NaN (and
        finite unless a bound is infinite)."""
        value = self._row[name]
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
        value = self._row[name]
        try:
            return kind(value)
        except ValueError:
            known = ", ".join(member.value for member in kind)
            return cast(_E, self._bad(name, f"{_shown(value)} is none of {known}", stand_in))

    def optional_choice(self, name: str, kind: type[_E]) -> _E | None:
        value = self._row[name]
        if value is None or value == "":
            return None
        return self.choice(name, kind, cast(_E, None))

    def code(self, name: str) -> str | None:
        """A reason code: one short word (``internal-error``), nothing a terminal obeys."""
        value = self._row[name]
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
        value = self._row[name]
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


def _state_or_none(value: Any) -> ItemState | None:
    """The state of an item depended on; None when there is no such item (or its state is not
    one wrighty knows): such a dependency is never met (docs/scheduling.md)."""
    return ItemState(value) if value in _STATE_NAMES else None


def _aggregate(row: Any) -> _Fields:
    """A row of figures over many rows: a time among them that does not read counts as
    unknown (the rows themselves say which one does not read)."""
    return _Fields(row, "figures", "", salvaged=[])


def _ledger_entry_from_row(row: Any) -> LedgerEntry:
    read = _Fields(row, "run", row["run_id"], item_id=row["item_id"])
    return LedgerEntry(
        run_id=read.text("run_id"),
        item_id=read.integer("item_id", 1),
        agent=read.optional_text("agent"),
        started_at=read.required_time("started_at"),
        usage=_usage_from_row(row, read) or Usage(),
    )


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Any: ...


class Tx(Protocol):
    """An open transaction that runs the dialect's named queries."""

    def run(self, name: str, params: Mapping[str, Any] | None = None, /) -> Cursor: ...


# What opening found: a store it created, one it migrated, or one already up to date.
Opening = Literal["created", "migrated", "opened"]


class SqlStore(ABC):
    """The Store port, given a dialect's transactions and named queries."""

    opened: Opening = "opened"
    _skipped: dict[tuple[str, str], UnreadableError] | None = None

    def _read_all(self, rows: Iterable[Any], read: Callable[[Any], _T]) -> Rows[_T]:
        """Each row read, in order; a row that does not read is left out, listed in
        ``unreadable`` and kept for ``unreadable_rows`` (docs/storage.md)."""
        found: Rows[_T] = Rows()
        for row in rows:
            try:
                found.append(read(row))
            except UnreadableError as error:
                found.unreadable.append(error)
                self._note_unreadable(error)
        return found

    def _note_unreadable(self, error: UnreadableError) -> None:
        if self._skipped is None:
            self._skipped = {}
        if len(self._skipped) < _MAX_NOTED:
            self._skipped.setdefault((error.row, error.field), error)

    def unreadable_rows(self) -> list[UnreadableError]:
        return list((self._skipped or {}).values())

    @abstractmethod
    def _write(self) -> AbstractContextManager[Tx]:
        """One write transaction; an exception inside rolls it back."""

    @abstractmethod
    def _snapshot(self) -> AbstractContextManager[Tx]:
        """One read-only transaction: every query inside sees the same data."""

    @abstractmethod
    def _rows(self, name: str, params: Mapping[str, Any]) -> list[Any]:
        """The rows of one named query, outside any transaction of ours."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def schema_version(self) -> int: ...

    def store_time(self) -> datetime | None:
        """None: the machine's clock is the store's (SQLite); PostgreSQL reads its own."""
        return None

    def _migrate_in(self, tx: Tx, dialect: str, run_script: Callable[[str], None]) -> None:
        """Bring the schema up to date inside ``tx``: a new database gets schema.sql in one
        go, an older one the migrations it lacks; each is recorded."""
        tx.run("create_migrations_table")
        applied = [int(row["version"]) for row in tx.run("select_applied_migrations").fetchall()]
        known = migrations(dialect)
        if not applied:
            run_script(read_sql(dialect, "schema.sql"))
            pending = known
        else:
            pending = tuple(m for m in known if m.version > max(applied))
            for migration in pending:
                run_script(migration.sql)
        now = to_db_time(datetime.now(UTC))
        for migration in pending:
            tx.run(
                "insert_migration",
                {"version": migration.version, "name": migration.name, "applied_at": now},
            )

    def create_item(self, new: NewItem, *, at: datetime, actor: str) -> Item:
        with self._write() as tx:
            cursor = tx.run(
                "insert_item",
                {
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
                },
            )
            inserted = cursor.fetchone()
            if inserted is None:  # another import made the item of this key first
                raise AlreadyImported(new.import_key or "")
            item_id = int(inserted["id"])
            for depends_on in dict.fromkeys(new.after):
                try:
                    self._add_dependency(tx, item_id, depends_on)
                except _Refused:  # a new item closes no cycle, unless it names its own id
                    raise WrightyError(
                        f"--after {depends_on}: an item cannot come after itself"
                    ) from None
            for label in dict.fromkeys(new.labels):
                tx.run("insert_label", {"item_id": item_id, "label": label})
            event = creation_event(new, item_id, at=at, actor=actor)
            tx.run("insert_event", _event_params(event))
            row = tx.run("select_item", {"id": item_id}).fetchone()
            item = _item_from_row(row)
            if item.state in CLAIMABLE_STATES:
                self._work_eligible(tx, item)
        return item

    @staticmethod
    def _add_dependency(tx: Tx, item_id: int, depends_on: int) -> None:
        """Write one dependency through its guard (the item depended on exists; no cycle), or
        raise NotFoundError / _Refused (rolled back) when it is refused."""
        cursor = tx.run("insert_dependency_guarded", {"item_id": item_id, "depends_on": depends_on})
        if cursor.rowcount == 1:
            return
        if tx.run("select_item", {"id": depends_on}).fetchone() is None:
            raise NotFoundError(f"--after {depends_on}: no item {depends_on}")
        raise _Refused  # a cycle, or already there: the caller reads again and decides

    def list_dependencies(self, item_id: int | None = None) -> list[Dependency]:
        rows = self._rows("select_dependencies", {"item_id": item_id})
        return [
            Dependency(row["item_id"], row["depends_on"], _state_or_none(row["depends_on_state"]))
            for row in rows
        ]

    def list_labels(self, item_id: int | None = None) -> dict[int, tuple[str, ...]]:
        found: dict[int, list[str]] = {}
        for row in self._rows("select_labels", {"item_id": item_id}):
            found.setdefault(row["item_id"], []).append(row["label"])
        return {key: tuple(labels) for key, labels in found.items()}

    def find_imported(self, keys: Collection[str]) -> dict[str, Item]:
        rows = self._rows("select_imported", {"keys": json.dumps(sorted(set(keys)))})
        return {item.import_key or "": item for item in self._read_all(rows, _item_from_row)}

    def get_item(self, item_id: int) -> Item | None:
        rows = self._rows("select_item", {"id": item_id})
        return _item_from_row(rows[0]) if rows else None

    def list_items(self, states: Collection[ItemState] = ()) -> Rows[Item]:
        if not states:
            return self._read_all(self._rows("select_all_items", {}), _item_from_row)
        wanted = json.dumps(sorted(s.value for s in states))
        return self._read_all(self._rows("select_items", {"states": wanted}), _item_from_row)

    def salvage_item(self, item_id: int) -> Salvaged[Item] | None:
        rows = self._rows("select_item", {"id": item_id})
        if not rows:
            return None
        problems: list[UnreadableError] = []
        item = _item_from_row(rows[0], problems)
        return Salvaged(item, tuple(problems))

    def list_events(self, item_id: int) -> list[Event]:
        return [_event_from_row(row) for row in self._rows("select_events", {"item_id": item_id})]

    def list_runs(self, item_id: int) -> Rows[Run]:
        return self._read_all(self._rows("select_runs", {"item_id": item_id}), _run_from_row)

    def get_session(self, item_id: int) -> Session | None:
        rows = self._rows("select_session", {"item_id": item_id})
        return _session_from_row(rows[0]) if rows else None

    def list_open_items(self, *, limit: int) -> Rows[OpenItem]:
        if limit < 0:
            raise ValueError(f"limit must not be negative (got {limit})")
        with self._snapshot() as tx:  # one snapshot: the items, their latest runs, their edges
            rows = tx.run("select_open_items", {"limit": limit, "edited": EDITED}).fetchall()
            wanted = [row["last_run_id"] for row in rows if row["last_run_id"] is not None]
            found = (
                tx.run("select_runs_by_id", {"run_ids": json.dumps(wanted)}).fetchall()
                if wanted
                else []
            )
        runs: dict[str, Run | UnreadableError] = {}
        for row in found:
            try:
                runs[row["run_id"]] = _run_from_row(row)
            except UnreadableError as error:
                runs[row["run_id"]] = error
        return self._read_all(rows, lambda row: _open_item_from_row(row, runs))

    def write_transition(self, change: Change) -> bool:
        try:
            with self._write() as tx:
                self._apply(tx, change)
        except _Refused:
            return False
        return True

    def _apply(
        self,
        tx: Tx,
        change: Change,
        *,
        expired_before: datetime | None = None,
    ) -> None:
        """Write ``change`` inside the open transaction, or raise _Refused (rolled back)."""
        before, after, event = change.before, change.after, change.event
        if before.id != after.id or event.item_id != before.id:
            raise ValueError("a change must describe one item")
        cursor = tx.run(
            "update_item_guarded",
            {
                **_item_mutable_params(after),
                "expected_state": before.state.value,
                "expected_generation": before.generation,
                "expected_claimed_by": before.claimed_by,
                "expired_before": to_db_time(expired_before),
            },
        )
        if cursor.rowcount != 1:
            raise _Refused
        if change.run_end is not None:
            tx.run(
                "end_open_runs",
                _run_end_params(change.run_end, before.id, before.generation),
            )
        if change.after_added:
            tx.run("lock_dependencies")
            for depends_on in change.after_added:
                self._add_dependency(tx, before.id, depends_on)
        for depends_on in change.after_removed:
            tx.run("delete_dependency", {"item_id": before.id, "depends_on": depends_on})
        tx.run("insert_event", _event_params(event))
        for notice in change.notices:
            tx.run("insert_notice", _notice_params(notice))
        if after.state in CLAIMABLE_STATES:
            self._work_eligible(tx, after)

    # -- claims -----------------------------------------------------------------------------

    def acquire(self, request: ClaimRequest, *, now: datetime) -> Claim | None:
        limits = request.limits
        params = {
            "now": to_db_time(now),
            "installation_id": request.installation_id,
            "item_id": request.item_id,
            "agent": request.agent,
            "default_agent": request.default_agent,
            "agent_limits": json.dumps(dict(limits.agents)) if limits.agents else None,
            "label_limits": json.dumps(dict(limits.labels)) if limits.labels else None,
        }
        for _ in range(_CLAIM_ATTEMPTS):
            try:
                with self._write() as tx:
                    budget = request.budget
                    if budget is not None and request.agent is not None:
                        spent = self._agent_spend(tx, request.agent, budget.since)
                        if spent.over(budget.limit):
                            return None  # the agent's period budget is spent: nothing launches
                    if limits.any:
                        tx.run("lock_claim_limits")  # before counting (see queries.sql)
                    row = tx.run("select_next_claimable", params).fetchone()
                    if row is None:
                        return None
                    item = _item_from_row(row)
                    change = claim(item, request, at=now)
                    # The row is this transaction's (SQLite: the write lock; PostgreSQL: the
                    # row lock). The guard fails only on PostgreSQL, when an edit made the item
                    # come after another one after this transaction's choice read the
                    # dependencies: then choose again.
                    self._apply(tx, change)
                    return Claim(change.after, item.state, _claimed_session(row), item.reason_code)
            except _Refused:
                continue
        return None

    @staticmethod
    def _agent_spend(tx: Tx, agent: str, since: datetime) -> Usage:
        row = tx.run("select_agent_spend", {"agent": agent, "since": to_db_time(since)}).fetchone()
        read = _Fields(row, "spend of agent", agent)
        cost = read.number("cost_usd", math.inf)  # a sum: finite, whatever its size
        return Usage(
            input_tokens=int(row["input_tokens"]),
            output_tokens=int(row["output_tokens"]),
            cache_read_tokens=int(row["cache_read_tokens"]),
            cache_write_tokens=int(row["cache_write_tokens"]),
            cost_usd=cost,
            cost_source=None if cost is None else ("estimated" if row["estimated"] else "reported"),
        )

    def agent_spend(self, agent: str, *, since: datetime) -> Usage:
        with self._snapshot() as tx:
            return self._agent_spend(tx, agent, since)

    def renew(self, claimed: Item, *, now: datetime, terms: LeaseTerms) -> RenewResult:
        guard = {
            "id": claimed.id,
            "generation": claimed.generation,
            "claimed_by": claimed.claimed_by,
        }
        with self._write() as tx:
            proposed = to_db_time(terms.lease_from(now))
            renewed = tx.run("renew_lease", {**guard, "proposed": proposed})
            row = tx.run("select_claim", guard).fetchone()
        if row is None:
            return RenewResult(RenewOutcome.LOST)
        lease = _Fields(row, "item", claimed.id, item_id=claimed.id).time("lease_expires_at")
        if renewed.rowcount != 1:
            return RenewResult(RenewOutcome.BUDGET_EXHAUSTED, lease)
        return RenewResult(RenewOutcome.RENEWED, lease)

    def start_run(
        self, claimed: Item, run: NewRun, *, session: Session | None = None
    ) -> Run | None:
        with self._write() as tx:
            cursor = tx.run(
                "insert_run_guarded",
                {
                    **_claim_guard(claimed),
                    "run_id": run.run_id,
                    "kind": run.kind.value,
                    "worker_id": run.worker_id,
                    "installation_id": run.installation_id,
                    "started_at": to_db_time(run.started_at),
                    "session_id": run.session_id,
                    "claim_token": run.claim_token,
                    "agent": run.agent,
                },
            )
            rows = cursor.fetchall()  # every row, so that the statement is done
            row = rows[0] if rows else None
            if row is not None and session is not None:
                self._upsert_session(tx, claimed, session, at=run.started_at)
        return _run_from_row(row) if row is not None else None

    def record_process(
        self, claimed: Item, run_id: str, *, pid: int, process_started_at: float
    ) -> bool:
        with self._write() as tx:
            cursor = tx.run(
                "record_process_guarded",
                {
                    **_claim_guard(claimed),
                    "run_id": run_id,
                    "pid": pid,
                    "process_started_at": process_started_at,
                },
            )
        return cursor.rowcount == 1

    def record_agent_report(
        self, run_id: str, *, claim_token: str, report: str, reason: str | None
    ) -> bool:
        with self._write() as tx:
            cursor = tx.run(
                "record_agent_report_guarded",
                {"run_id": run_id, "claim_token": claim_token, "report": report, "reason": reason},
            )
        return cursor.rowcount == 1

    def record_usage(self, claimed: Item, run_id: str, usage: Usage) -> bool:
        with self._write() as tx:
            cursor = tx.run(
                "record_usage_guarded",
                {**_claim_guard(claimed), "run_id": run_id, **_usage_params(usage)},
            )
        return cursor.rowcount == 1

    def report_usage(self, run_id: str, *, claim_token: str, usage: Usage) -> bool:
        with self._write() as tx:
            cursor = tx.run(
                "report_usage_guarded",
                {"run_id": run_id, "claim_token": claim_token, **_usage_params(usage)},
            )
        return cursor.rowcount == 1

    def list_ledger(
        self, *, default_agent: str, since: datetime | None = None, item_id: int | None = None
    ) -> Rows[LedgerEntry]:
        # No "IS NULL OR" in the queries: each keeps to its index (runs_by_start, runs_by_item).
        params = {"since": to_db_time(since or _EPOCH), "default_agent": default_agent}
        if item_id is None:
            rows = self._rows("select_ledger", params)
        else:
            rows = self._rows("select_item_ledger", {**params, "item_id": item_id})
        return self._read_all(rows, _ledger_entry_from_row)

    def get_run(self, run_id: str) -> Run | None:
        rows = self._rows("select_run", {"run_id": run_id})
        return _run_from_row(rows[0]) if rows else None

    def record_session(
        self, claimed: Item, session: Session, *, at: datetime, run_id: str | None = None
    ) -> bool:
        with self._write() as tx:
            if not self._upsert_session(tx, claimed, session, at=at):
                return False
            if run_id is not None:
                tx.run(
                    "record_run_session",
                    {**_claim_guard(claimed), "run_id": run_id, "session_id": session.session_id},
                )
            return True

    def _upsert_session(self, tx: Tx, claimed: Item, session: Session, *, at: datetime) -> bool:
        cursor = tx.run(
            "upsert_session_guarded",
            {
                **_claim_guard(claimed),
                "vendor": session.vendor,
                "session_id": session.session_id,
                "workspace": session.workspace,
                "installation_id": session.installation_id,
                "updated_at": to_db_time(at),
            },
        )
        return cursor.rowcount == 1

    # -- health -------------------------------------------------------------------------------

    def queue_figures(self, *, now: datetime) -> QueueFigures:
        with self._snapshot() as tx:  # one snapshot for the counts and the figures
            counted = tx.run("select_state_counts").fetchall()
            row = tx.run("select_queue_figures", {"now": to_db_time(now)}).fetchone()
            by_agent = tx.run("select_waiting_by_agent").fetchall()
        counts = {state: 0 for state in ItemState}
        counts.update(
            {ItemState(r["state"]): r["n"] for r in counted if r["state"] in _STATE_NAMES}
        )
        figures = _aggregate(row)
        return QueueFigures(
            counts=counts,
            waiting=row["waiting"],
            oldest_queued_at=figures.time("oldest_queued_at"),
            unknown_queue_wait=row["unknown_queue_wait"],
            expired_leases=row["expired_leases"],
            retry_next_due=figures.time("retry_next_due"),
            waiting_on_dependencies=row["waiting_on_dependencies"],
            blocked=row["blocked"],
            waiting_by_agent={r["agent"]: r["n"] for r in by_agent},
        )

    def upsert_worker(self, row: WorkerRow) -> None:
        with self._write() as tx:
            tx.run(
                "upsert_worker",
                {
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
                },
            )

    def remove_worker(self, worker_id: str) -> None:
        with self._write() as tx:
            tx.run("delete_worker", {"worker_id": worker_id})

    def prune_workers(self, *, older_than: datetime) -> int:
        with self._write() as tx:
            cursor = tx.run("prune_workers", {"older_than": to_db_time(older_than)})
            return cursor.rowcount

    def list_workers(self) -> Rows[WorkerRow]:
        return self._read_all(self._rows("select_workers", {}), _worker_from_row)

    def expired_claims(self, *, now: datetime, limit: int) -> Rows[Item]:
        rows = self._rows("select_expired_claims", {"now": to_db_time(now), "limit": limit})
        return self._read_all(rows, _item_from_row)

    def reap(
        self, item_id: int, *, now: datetime, max_requeues: int, notify: Source | None = None
    ) -> Change | None:
        try:
            with self._write() as tx:
                row = tx.run("select_item_to_reap", {"id": item_id}).fetchone()
                if row is None:
                    return None  # gone, or held by another transaction: never waited for
                item = _item_from_row(row)
                if item.state is not ItemState.RUNNING or not lease_expired(
                    item.lease_expires_at, now
                ):
                    return None  # renewed or settled meanwhile: the live worker wins
                facts = tx.run(
                    "select_reap_facts",
                    {"item_id": item.id, "generation": item.generation},
                ).fetchone()
                change = reap(
                    item,
                    ReapFacts(
                        run_recorded=facts["runs_recorded"] > 0,
                        has_resume_address=facts["session_id"] is not None,
                        claimed_from=ItemState(facts["claimed_from"] or ItemState.QUEUED),
                    ),
                    at=now,
                    max_requeues=max_requeues,
                )
                if notify is not None:
                    change = dataclasses.replace(change, notices=notices_for(change, notify))
                self._apply(tx, change, expired_before=now)
        except _Refused:
            return None
        return change

    # -- provider circuits ------------------------------------------------------------------

    def get_circuit(self, name: str) -> Circuit:
        rows = self._rows("select_circuit", {"name": name})
        return _circuit_from_row(rows[0]) if rows else Circuit(name)

    def list_circuits(self) -> Rows[Circuit]:
        return self._read_all(self._rows("select_circuits", {}), _circuit_from_row)

    def salvage_circuit(self, name: str) -> Salvaged[Circuit] | None:
        rows = self._rows("select_circuit", {"name": name})
        if not rows:
            return None
        problems: list[UnreadableError] = []
        circuit = _circuit_from_row(rows[0], problems)
        return Salvaged(circuit, tuple(problems))

    def write_circuit(
        self, before: Circuit, after: Circuit, *, at: datetime, notice: Notice | None = None
    ) -> bool:
        if after.name != before.name:
            raise ValueError("a circuit write must describe one circuit")
        params = {
            **_circuit_params(after),
            "version": before.version + 1,
            "expected_version": before.version,
            "updated_at": to_db_time(at),
        }
        query = "insert_circuit" if before.version == 0 else "update_circuit_guarded"
        try:
            with self._write() as tx:
                cursor = tx.run(query, params)
                if cursor.rowcount != 1:
                    raise _Refused
                if notice is not None:
                    tx.run("insert_notice", _notice_params(notice))
        except _Refused:
            return False
        return True

    # -- the notification outbox --------------------------------------------------------------

    def claim_notice(
        self, deliverer: str, *, now: datetime, lease_seconds: float
    ) -> StoredNotice | None:
        until = to_db_time(now + timedelta(seconds=lease_seconds))
        for _ in range(_MAX_NOTED):
            with self._write() as tx:
                rows = tx.run(
                    "claim_notice", {"deliverer": deliverer, "now": to_db_time(now), "until": until}
                ).fetchall()
                if not rows:
                    return None
                problems: list[UnreadableError] = []
                stored = _stored_notice_from_row(rows[0], problems)
                if not problems:
                    return stored
                # Undeliverable as stored: given up at once, saying why (docs/notifications.md).
                tx.run(
                    "finish_notice_guarded",
                    {
                        "id": rows[0]["id"],
                        "deliverer": deliverer,
                        "claimed_until": until,
                        "state": "given-up",
                        "attempts": stored.attempts,
                        "next_attempt_at": to_db_time(now),
                        "delivered_to": json.dumps(list(stored.delivered_to)),
                        "last_error": f"not delivered: {problems[0]}",
                        "finished_at": to_db_time(now),
                    },
                )
                self._note_unreadable(problems[0])
        return None

    def make_notices_due(self, *, now: datetime) -> int:
        with self._write() as tx:
            return tx.run("make_notices_due", {"now": to_db_time(now)}).rowcount

    def finish_notice(self, claimed: StoredNotice, outcome: Delivered) -> bool:
        with self._write() as tx:
            cursor = tx.run(
                "finish_notice_guarded",
                {
                    "id": claimed.notice.id,
                    "deliverer": claimed.claimed_by,
                    "claimed_until": to_db_time(claimed.claim_expires_at),
                    "state": outcome.state,
                    "attempts": outcome.attempts,
                    "next_attempt_at": to_db_time(outcome.next_attempt_at),
                    "delivered_to": json.dumps(list(outcome.delivered_to)),
                    "last_error": outcome.last_error,
                    "finished_at": to_db_time(outcome.finished_at),
                },
            )
        return cursor.rowcount == 1

    def renew_notice(
        self, claimed: StoredNotice, *, until: datetime, delivered_to: tuple[str, ...]
    ) -> StoredNotice | None:
        with self._write() as tx:
            cursor = tx.run(
                "renew_notice_claim",
                {
                    "id": claimed.notice.id,
                    "deliverer": claimed.claimed_by,
                    "claimed_until": to_db_time(claimed.claim_expires_at),
                    "until": to_db_time(until),
                    "delivered_to": json.dumps(list(delivered_to)),
                },
            )
        if cursor.rowcount != 1:
            return None
        return dataclasses.replace(claimed, claim_expires_at=until, delivered_to=delivered_to)

    def list_notices(self, states: Collection[str], *, limit: int = 1000) -> Rows[StoredNotice]:
        rows = self._rows("select_notices", {"states": json.dumps(sorted(states)), "limit": limit})
        return self._read_all(rows, _stored_notice_from_row)

    def prune_notices(self, *, before: datetime) -> int:
        with self._write() as tx:
            return tx.run("prune_notices", {"before": to_db_time(before)}).rowcount

    def add_notice_once(self, notice: Notice) -> bool:
        with self._write() as tx:
            cursor = tx.run("insert_notice_once", _notice_params(notice))
        return cursor.rowcount == 1

    def outbox_figures(self) -> OutboxFigures:
        [row] = self._rows("select_outbox_figures", {})
        return OutboxFigures(
            pending=row["pending"],
            oldest_pending_at=_aggregate(row).time("oldest_pending_at"),
            given_up=row["given_up"],
        )

    # -- wake-ups (worker.wakeUps) -------------------------------------------------------------

    @abstractmethod
    def _work_eligible(self, tx: Tx, item: Item) -> None:
        """``item`` became claimable in ``tx`` (it entered queued or retry-scheduled): the
        dialect tells the idle workers once ``tx`` commits (PostgreSQL: NOTIFY in ``tx``;
        SQLite: datagrams after the commit). Never told when ``tx`` rolls back."""

    @abstractmethod
    def listen_for_work(self, name: str) -> WorkListener: ...

    def next_retry_due(self, *, after: datetime) -> datetime | None:
        [row] = self._rows("select_next_retry_after", {"after": to_db_time(after)})
        return _aggregate(row).time("not_before")


def wake_params(item: Item) -> dict[str, Any]:
    """What a wake-up says about the item (for a person watching; listeners only wake)."""
    not_before = to_db_time(item.not_before)
    return {"item_id": item.id, "state": item.state.value, "not_before": not_before}


_CLAIM_ATTEMPTS = 3


class _Refused(Exception):
    """A guard failed inside a write transaction: roll it back and report False."""


def _claim_guard(claimed: Item) -> dict[str, Any]:
    return {
        "item_id": claimed.id,
        "generation": claimed.generation,
        "claimed_by": claimed.claimed_by,
    }


def _run_end_params(end: RunEnd, item_id: int, generation: int) -> dict[str, Any]:
    return {
        "item_id": item_id,
        "generation": generation,
        "ended_at": to_db_time(end.ended_at),
        "outcome_class": end.outcome_class.value,
        "confidence": end.confidence.value,
        "exit_code": end.exit_code,
        "signal": end.signal,
        "diagnostic": end.diagnostic,
        **_usage_params(end.usage),
    }


def _notice_params(notice: Notice) -> dict[str, Any]:
    return {
        "id": notice.id,
        "created_at": to_db_time(notice.at),
        "event": notice.event,
        "events": json.dumps(list(notice.events)),
        "item_id": notice.item_id,
        "reason_code": notice.reason_code,
        "payload": json.dumps(notice.payload, sort_keys=False),
    }


def _stored_notice_from_row(
    row: Any, salvaged: list[UnreadableError] | None = None
) -> StoredNotice:
    item_id = row["item_id"]
    read = _Fields(row, "notice", row["id"], item_id=item_id, salvaged=salvaged)
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


def _usage_params(usage: Usage | None) -> dict[str, Any]:
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


def _usage_from_row(row: Any, read: _Fields) -> Usage | None:
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


# -- rows -------------------------------------------------------------------------------------


def _worker_from_row(row: Any) -> WorkerRow:
    read = _Fields(row, "worker", row["worker_id"])
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


def _circuit_from_row(row: Any, salvaged: list[UnreadableError] | None = None) -> Circuit:
    read = _Fields(row, "circuit", row["name"], salvaged=salvaged)
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


def _circuit_params(circuit: Circuit) -> dict[str, Any]:
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


def _item_from_row(row: Any, salvaged: list[UnreadableError] | None = None) -> Item:
    """The item in ``row``; UnreadableError for the first value that does not read (with
    ``salvaged``, each one is noted there and a safe value stands in for it)."""
    read = _Fields(row, "item", row["id"], item_id=row["id"], salvaged=salvaged)
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
        created_at=read.required_time("created_at"),
        updated_at=read.required_time("updated_at"),
        claimed_at=read.time("claimed_at"),
        renew_deadline=read.time("renew_deadline"),
    )


def _open_item_from_row(row: Any, runs: Mapping[str, Run | UnreadableError]) -> OpenItem:
    """A row of select_open_items, with its latest run from ``runs`` (by id; a run that did not
    read makes the item's line unreadable)."""
    last_run_id = row["last_run_id"]
    last_run = None if last_run_id is None else runs[last_run_id]
    if isinstance(last_run, UnreadableError):
        raise last_run
    read = _Fields(row, "item", row["id"], item_id=row["id"])
    item = _item_from_row(row)
    after = sorted(
        (int(depends_on), ItemState(state) if state in _STATE_NAMES else None)
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


def _item_mutable_params(item: Item) -> dict[str, Any]:
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
        "max_cost_usd": item.max_cost_usd,
        "max_tokens": item.max_tokens,
        "priority": item.priority,
        "updated_at": to_db_time(item.updated_at),
        "claimed_at": to_db_time(item.claimed_at),
        "renew_deadline": to_db_time(item.renew_deadline),
    }


def _event_params(event: Event) -> dict[str, Any]:
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


def _event_from_row(row: Any) -> Event:
    read = _Fields(row, "event of item", row["item_id"], item_id=row["item_id"])
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


def _run_from_row(row: Any) -> Run:
    read = _Fields(row, "run", row["run_id"], item_id=row["item_id"])
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
        usage=_usage_from_row(row, read),
    )


def _claimed_session(row: Any) -> Session | None:
    """The session columns that the claim queries join to the item, if it has one."""
    return _session_from_row(row, "session_") if row["session_vendor"] is not None else None


def _session_from_row(row: Any, prefix: str = "") -> Session:
    return Session(
        item_id=row[f"{prefix}item_id"],
        vendor=row[f"{prefix}vendor"],
        session_id=row[f"{prefix}session_id"],
        workspace=row[f"{prefix}workspace"],
        installation_id=row[f"{prefix}installation_id"],
    )
