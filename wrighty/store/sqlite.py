"""The embedded store: one SQLite file, WAL, BEGIN IMMEDIATE for every write.

Durability: ``synchronous = FULL``. In WAL mode NORMAL already survives a crash of any
process; FULL also survives power loss and OS crashes, at the price of one fsync per commit.
wrighty commits a handful of times per run (claim, heartbeats, settle), so the cost is small and
a settled outcome is never rolled back by a power cut (docs/storage.md).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wrighty.domain.claims import (
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
from wrighty.domain.model import Change, Event, Item, NewItem, NewRun, Run, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import creation_event
from wrighty.errors import StoreError
from wrighty.store.sqlfiles import migrations, queries, read_sql

DIALECT = "sqlite"
BUSY_TIMEOUT_MS = 10_000
SQLITE_HEADER = b"SQLite format 3\x00"


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
    return None if text is None else datetime.fromisoformat(text)


def _required_time(text: str) -> datetime:
    moment = from_db_time(text)
    assert moment is not None
    return moment


class SqliteStore:
    """The Store port on one SQLite database file."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._connection = connection
        self._path = path
        self._lock = threading.RLock()
        self._sql = queries(DIALECT)

    @classmethod
    def open(cls, path: Path) -> SqliteStore:
        """Open (creating and migrating if needed) the store at ``path``.

        Everything that could refuse the file is checked before anything is written to it.
        """
        _refuse_unusable_file(path)
        _create_private_file(path)
        try:
            connection = sqlite3.connect(
                path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise StoreError(f"{path}: cannot open the store ({_describe(error)})") from None
        store = cls(connection, path)
        try:
            with _as_store_error(path):
                connection.row_factory = sqlite3.Row
                connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                _refuse_foreign_or_newer(connection, path)
                mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if mode != "wal":
                    raise StoreError(f"{path}: cannot switch the store to WAL mode (got {mode})")
                connection.execute("PRAGMA synchronous = FULL")
                connection.execute("PRAGMA foreign_keys = ON")
                store._migrate()
        except BaseException:
            connection.close()
            raise
        return store

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    # -- transactions -----------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken with BEGIN IMMEDIATE so it never upgrades mid-way."""
        with self._lock, _as_store_error(self._path):
            self._connection.execute("BEGIN IMMEDIATE")
            try:
                yield self._connection
            except BaseException:
                self._connection.execute("ROLLBACK")
                raise
            self._connection.execute("COMMIT")

    def _read(self, name: str, params: dict[str, Any]) -> list[sqlite3.Row]:
        with self._lock, _as_store_error(self._path):
            return list(self._connection.execute(self._sql[name], params))

    def _migrate(self) -> None:
        known = migrations(DIALECT)
        if self._applied_versions() == [m.version for m in known]:
            return  # up to date: opening takes no write lock
        with self._write() as connection:
            connection.execute(self._sql["create_migrations_table"])
            applied = [row[0] for row in connection.execute(self._sql["select_applied_migrations"])]
            if not applied:
                # A new database: build the current schema in one go.
                _run_script(connection, read_sql(DIALECT, "schema.sql"))
                pending = known
            else:
                pending = tuple(m for m in known if m.version > max(applied))
                for migration in pending:
                    _run_script(connection, migration.sql)
            now = to_db_time(datetime.now(UTC))
            for migration in pending:
                connection.execute(
                    self._sql["insert_migration"],
                    {"version": migration.version, "name": migration.name, "applied_at": now},
                )

    def _applied_versions(self) -> list[int]:
        with self._lock, _as_store_error(self._path):
            has_table = self._connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'wrighty_migrations'"
            ).fetchone()
            if not has_table:
                return []
            rows = self._connection.execute(self._sql["select_applied_migrations"])
            return [int(row[0]) for row in rows]

    # -- the port ---------------------------------------------------------------------------

    def schema_version(self) -> int:
        applied = self._applied_versions()
        return applied[-1] if applied else 0

    def create_item(self, new: NewItem, *, at: datetime, actor: str) -> Item:
        with self._write() as connection:
            cursor = connection.execute(
                self._sql["insert_item"],
                {
                    "title": new.title,
                    "body": new.body,
                    "agent": new.agent,
                    "timeout_seconds": new.timeout_seconds,
                    "workspace": new.workspace,
                    "state": new.initial_state.value,
                    "queued_at": to_db_time(at) if new.initial_state is ItemState.QUEUED else None,
                    "created_at": to_db_time(at),
                },
            )
            item_id = cursor.lastrowid
            assert item_id is not None
            event = creation_event(new, item_id, at=at, actor=actor)
            connection.execute(self._sql["insert_event"], _event_params(event))
            row = connection.execute(self._sql["select_item"], {"id": item_id}).fetchone()
        return _item_from_row(row)

    def get_item(self, item_id: int) -> Item | None:
        rows = self._read("select_item", {"id": item_id})
        return _item_from_row(rows[0]) if rows else None

    def list_items(self, states: Collection[ItemState] = ()) -> list[Item]:
        wanted = json.dumps(sorted(s.value for s in states)) if states else None
        return [_item_from_row(row) for row in self._read("select_items", {"states": wanted})]

    def list_events(self, item_id: int) -> list[Event]:
        return [_event_from_row(row) for row in self._read("select_events", {"item_id": item_id})]

    def list_runs(self, item_id: int) -> list[Run]:
        return [_run_from_row(row) for row in self._read("select_runs", {"item_id": item_id})]

    def get_session(self, item_id: int) -> Session | None:
        rows = self._read("select_session", {"item_id": item_id})
        return _session_from_row(rows[0]) if rows else None

    def write_transition(self, change: Change) -> bool:
        try:
            with self._write() as connection:
                self._apply(connection, change)
        except _Refused:
            return False
        return True

    def _apply(
        self,
        connection: sqlite3.Connection,
        change: Change,
        *,
        expired_before: datetime | None = None,
    ) -> None:
        """Write ``change`` inside the open transaction, or raise _Refused (rolled back)."""
        before, after, event = change.before, change.after, change.event
        if before.id != after.id or event.item_id != before.id:
            raise ValueError("a change must describe one item")
        cursor = connection.execute(
            self._sql["update_item_guarded"],
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
            connection.execute(
                self._sql["end_open_runs"],
                _run_end_params(change.run_end, before.id, before.generation),
            )
        connection.execute(self._sql["insert_event"], _event_params(event))

    # -- claims -----------------------------------------------------------------------------

    def acquire(self, request: ClaimRequest, *, now: datetime) -> Item | None:
        params = {
            "now": to_db_time(now),
            "installation_id": request.installation_id,
            "item_id": request.item_id,
            "agent": request.agent,
            "default_agent": request.default_agent,
        }
        with self._write() as connection:
            for query in ("select_next_due_retry", "select_next_queued"):
                row = connection.execute(self._sql[query], params).fetchone()
                if row is not None:
                    change = claim(_item_from_row(row), request, at=now)
                    # BEGIN IMMEDIATE serialises claimers: the guard cannot fail here.
                    self._apply(connection, change)
                    return change.after
        return None

    def renew(self, claimed: Item, *, now: datetime, terms: LeaseTerms) -> RenewResult:
        guard = {
            "id": claimed.id,
            "generation": claimed.generation,
            "claimed_by": claimed.claimed_by,
        }
        with self._write() as connection:
            proposed = to_db_time(terms.proposed_lease(now))
            renewed = connection.execute(self._sql["renew_lease"], {**guard, "proposed": proposed})
            row = connection.execute(self._sql["select_claim"], guard).fetchone()
        if row is None:
            return RenewResult(RenewOutcome.LOST)
        lease = from_db_time(row["lease_expires_at"])
        if renewed.rowcount != 1:
            return RenewResult(RenewOutcome.BUDGET_EXHAUSTED, lease)
        return RenewResult(RenewOutcome.RENEWED, lease)

    def start_run(
        self, claimed: Item, run: NewRun, *, session: Session | None = None
    ) -> Run | None:
        with self._write() as connection:
            cursor = connection.execute(
                self._sql["insert_run_guarded"],
                {
                    **_claim_guard(claimed),
                    "run_id": run.run_id,
                    "kind": run.kind.value,
                    "worker_id": run.worker_id,
                    "installation_id": run.installation_id,
                    "started_at": to_db_time(run.started_at),
                    "session_id": run.session_id,
                    "claim_token": run.claim_token,
                },
            )
            if cursor.rowcount == 1 and session is not None:
                self._upsert_session(connection, claimed, session, at=run.started_at)
        return self.get_run(run.run_id) if cursor.rowcount == 1 else None

    def record_process(
        self, claimed: Item, run_id: str, *, pid: int, process_started_at: float
    ) -> bool:
        with self._write() as connection:
            cursor = connection.execute(
                self._sql["record_process_guarded"],
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
        with self._write() as connection:
            cursor = connection.execute(
                self._sql["record_agent_report_guarded"],
                {"run_id": run_id, "claim_token": claim_token, "report": report, "reason": reason},
            )
        return cursor.rowcount == 1

    def get_run(self, run_id: str) -> Run | None:
        rows = self._read("select_run", {"run_id": run_id})
        return _run_from_row(rows[0]) if rows else None

    def record_session(
        self, claimed: Item, session: Session, *, at: datetime, run_id: str | None = None
    ) -> bool:
        with self._write() as connection:
            if not self._upsert_session(connection, claimed, session, at=at):
                return False
            if run_id is not None:
                connection.execute(
                    self._sql["record_run_session"],
                    {**_claim_guard(claimed), "run_id": run_id, "session_id": session.session_id},
                )
            return True

    def _upsert_session(
        self, connection: sqlite3.Connection, claimed: Item, session: Session, *, at: datetime
    ) -> bool:
        cursor = connection.execute(
            self._sql["upsert_session_guarded"],
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
        with self._lock, _as_store_error(self._path):
            self._connection.execute("BEGIN")  # one snapshot for the counts and the figures
            try:
                counted = self._connection.execute(self._sql["select_state_counts"]).fetchall()
                row = self._connection.execute(
                    self._sql["select_queue_figures"], {"now": to_db_time(now)}
                ).fetchone()
            finally:
                self._connection.execute("COMMIT")
        counts = {state: 0 for state in ItemState}
        counts.update({ItemState(r["state"]): r["n"] for r in counted})
        return QueueFigures(
            counts=counts,
            waiting=row["waiting"],
            oldest_queued_at=from_db_time(row["oldest_queued_at"]),
            unknown_queue_wait=row["unknown_queue_wait"],
            expired_leases=row["expired_leases"],
            retry_next_due=from_db_time(row["retry_next_due"]),
        )

    def upsert_worker(self, row: WorkerRow) -> None:
        with self._write() as connection:
            connection.execute(
                self._sql["upsert_worker"],
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
                },
            )

    def remove_worker(self, worker_id: str) -> None:
        with self._write() as connection:
            connection.execute(self._sql["delete_worker"], {"worker_id": worker_id})

    def prune_workers(self, *, older_than: datetime) -> int:
        with self._write() as connection:
            cursor = connection.execute(
                self._sql["prune_workers"], {"older_than": to_db_time(older_than)}
            )
            return cursor.rowcount

    def list_workers(self) -> list[WorkerRow]:
        return [_worker_from_row(row) for row in self._read("select_workers", {})]

    def expired_claims(self, *, now: datetime, limit: int) -> list[Item]:
        rows = self._read("select_expired_claims", {"now": to_db_time(now), "limit": limit})
        return [_item_from_row(row) for row in rows]

    def reap(self, item_id: int, *, now: datetime, max_requeues: int) -> Change | None:
        try:
            with self._write() as connection:
                row = connection.execute(self._sql["select_item"], {"id": item_id}).fetchone()
                if row is None:
                    return None
                item = _item_from_row(row)
                if item.state is not ItemState.RUNNING or not lease_expired(
                    item.lease_expires_at, now
                ):
                    return None  # renewed or settled meanwhile: the live worker wins
                facts = connection.execute(
                    self._sql["select_reap_facts"],
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
                self._apply(connection, change, expired_before=now)
        except _Refused:
            return None
        return change


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
    }


# -- opening ----------------------------------------------------------------------------------


def _refuse_unusable_file(path: Path) -> None:
    """Refuse, without touching it, a path that is not (and cannot become) a wrighty store."""
    if path.is_dir():
        raise StoreError(f"{path}: is a directory; point the store at a file inside it")
    if not path.exists():
        return
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as error:
        raise StoreError(f"{path}: cannot read the store ({_describe(error)})") from None
    if header and header != SQLITE_HEADER:
        raise StoreError(
            f"{path}: is not a SQLite database; move it away or point --store elsewhere"
        )
    if not os.access(path, os.R_OK | os.W_OK):
        raise StoreError(f"{path}: the store is not writable by this user; fix its permissions")


def _create_private_file(path: Path) -> None:
    """Create the directory (0700) and an empty database file (0600) if they do not exist."""
    if path.exists():
        return
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        if path.is_file():
            return  # another process created it first
        raise StoreError(_cannot_create(path, "a path component is not a directory")) from None
    except OSError as error:
        raise StoreError(_cannot_create(path, _describe(error))) from None
    os.close(descriptor)


def _cannot_create(path: Path, why: str) -> str:
    return (
        f"{path}: cannot create the store ({why}); "
        "choose a writable location with --store or store.url"
    )


def _refuse_foreign_or_newer(connection: sqlite3.Connection, path: Path) -> None:
    """Refuse a database that belongs to another program or to a newer wrighty."""
    tables = {
        row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
    }
    if not tables:
        return
    if "wrighty_migrations" not in tables:
        raise StoreError(
            f"{path}: is a SQLite database but not a wrighty store; point --store elsewhere"
        )
    newest_known = migrations(DIALECT)[-1].version
    newest_applied = connection.execute("SELECT max(version) FROM wrighty_migrations").fetchone()[0]
    if newest_applied is not None and newest_applied > newest_known:
        raise StoreError(
            f"{path}: was written by a newer wrighty (schema {newest_applied}, this one knows "
            f"up to {newest_known}); upgrade wrighty — it never migrates a store down"
        )


def _run_script(connection: sqlite3.Connection, script: str) -> None:
    """Execute every statement of ``script`` inside the current transaction.

    (sqlite3's executescript would COMMIT first.)
    """
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            connection.execute(statement)
            statement = ""
    if statement.strip() and not _only_comments(statement):
        raise ValueError(f"incomplete SQL statement at the end of a script: {statement[:80]!r}")


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())


@contextmanager
def _as_store_error(path: Path) -> Iterator[None]:
    """Turn environmental SQLite failures (locked, read-only, corrupt) into one clear line."""
    try:
        yield
    except (sqlite3.OperationalError, sqlite3.DatabaseError) as error:
        if isinstance(error, sqlite3.IntegrityError | sqlite3.ProgrammingError):
            raise
        raise StoreError(f"{path}: {_describe(error)}") from None


def _describe(error: BaseException) -> str:
    text = str(error)
    if "locked" in text or "busy" in text:
        return "the store stayed busy; another wrighty process holds a long write — try again"
    if "readonly" in text or "read-only" in text:
        return "the store is read-only for this user; fix its permissions or move it"
    if "not a database" in text:
        return "the file is not a SQLite database"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    return text


# -- rows -------------------------------------------------------------------------------------


def _worker_from_row(row: sqlite3.Row) -> WorkerRow:
    return WorkerRow(
        worker_id=row["worker_id"],
        label=row["label"],
        installation_id=row["installation_id"],
        pid=row["pid"],
        process_started_at=row["process_started_at"],
        version=row["version"],
        state=WorkerState(row["state"]),
        items=tuple(int(item) for item in row["items"].split(",") if item),
        started_at=_required_time(row["started_at"]),
        last_heartbeat_at=_required_time(row["last_heartbeat_at"]),
    )


def _item_from_row(row: sqlite3.Row) -> Item:
    return Item(
        id=row["id"],
        title=row["title"],
        body=row["body"],
        agent=row["agent"],
        timeout_seconds=row["timeout_seconds"],
        workspace=row["workspace"],
        state=ItemState(row["state"]),
        generation=row["generation"],
        claimed_by=row["claimed_by"],
        lease_expires_at=from_db_time(row["lease_expires_at"]),
        queued_at=from_db_time(row["queued_at"]),
        not_before=from_db_time(row["not_before"]),
        reason_code=row["reason_code"],
        reason=row["reason"],
        next_action=row["next_action"],
        crash_retries=row["crash_retries"],
        requeues=row["requeues"],
        created_at=_required_time(row["created_at"]),
        updated_at=_required_time(row["updated_at"]),
        claimed_at=from_db_time(row["claimed_at"]),
        renew_deadline=from_db_time(row["renew_deadline"]),
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
        "requeues": item.requeues,
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


def _event_from_row(row: sqlite3.Row) -> Event:
    return Event(
        item_id=row["item_id"],
        at=_required_time(row["at"]),
        actor=row["actor"],
        generation=row["generation"],
        from_state=ItemState(row["from_state"]) if row["from_state"] else None,
        to_state=ItemState(row["to_state"]),
        reason_code=row["reason_code"],
        reason=row["reason"],
    )


def _run_from_row(row: sqlite3.Row) -> Run:
    return Run(
        run_id=row["run_id"],
        item_id=row["item_id"],
        generation=row["generation"],
        attempt=row["attempt"],
        kind=RunKind(row["kind"]),
        worker_id=row["worker_id"],
        installation_id=row["installation_id"],
        started_at=_required_time(row["started_at"]),
        ended_at=from_db_time(row["ended_at"]),
        pid=row["pid"],
        process_started_at=row["process_started_at"],
        exit_code=row["exit_code"],
        signal=row["signal"],
        outcome_class=OutcomeClass(row["outcome_class"]) if row["outcome_class"] else None,
        confidence=Confidence(row["confidence"]) if row["confidence"] else None,
        session_id=row["session_id"],
        diagnostic=row["diagnostic"],
        agent_report=row["agent_report"],
        agent_reason=row["agent_reason"],
    )


def _session_from_row(row: sqlite3.Row) -> Session:
    return Session(
        item_id=row["item_id"],
        vendor=row["vendor"],
        session_id=row["session_id"],
        workspace=row["workspace"],
        installation_id=row["installation_id"],
    )
