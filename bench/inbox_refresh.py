"""Inbox refresh: what one refresh of `wrighty inbox` costs, beside `wrighty status --json`.

One store of N items (default 100,000): about 99.5% done or cancelled, each with its history
events, its run (with usage) and its session, written in bulk with the rows the store itself
writes; and the open ones (default 500) made through the store port as workers and operators
leave them: needs-attention, retry-scheduled (due and not yet), running (usage recorded,
workers registered, one worker gone with its leases expired), queued (some after a
needs-attention item, so blocked; some after a running one; some labelled; some for an agent
whose day budget is spent) and todo. One day budget (``budgets.perDay`` for ``codex``, spent)
and one concurrency limit (``limits.labels.migrations.maxConcurrent``, reached) are set, in
the board's settings and in the status report's ledger scope, so that the held and budget
paths run too.

Timed in the same run, in turns (status, board, board + draw, status, ...), so that a slow
moment of the machine falls on all three alike:

- status: ``status_report`` with a ``LedgerScope`` and the JSON text of ``status_json``, what
  `wrighty status --json` does once it has started (bench/status.py measures the start);
- board: ``services.inbox.read_board``: the store reads and the domain's rows;
- board + draw: ``read_board``, then ``row_cells`` for every row, ``header_text`` and
  ``side_text``: what the inbox does per refresh besides Textual's own painting.

Per-call median and p95 (nearest rank) in ms, with each one's ratio to status. SQLite (the
default): a file in a temporary directory. PostgreSQL (``--store postgresql://...``): a fresh
schema, vacuumed and analysed after seeding (as autovacuum leaves a store of that size) and
dropped afterwards. The finished items were made over the 60 days before the bench's clock
(about 1,650 a day), so the ledger's last 24 hours, which both read, hold about 1,800 runs.

Usage: python bench/inbox_refresh.py [--items 100000] [--open 500] [--runs 30]
       [--store postgresql://...]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from claims import postgres_place, postgres_settings
from pickup import percentile
from psycopg import sql

from wrighty.domain.board import Section, section_counts
from wrighty.domain.budgets import Budgets
from wrighty.domain.claims import ClaimRequest, LeaseTerms, Settlement, settle
from wrighty.domain.health import Thresholds, WorkerRow, WorkerState
from wrighty.domain.model import Item, NewItem, NewRun, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.scheduling import ConcurrencyLimits
from wrighty.domain.states import ItemState
from wrighty.domain.text import json_printable
from wrighty.domain.usage import Limit, Usage
from wrighty.inbox.views import header_text, row_cells, side_text
from wrighty.operator.documents import status_json
from wrighty.services.inbox import Board, BoardSettings, read_board
from wrighty.services.status import LedgerScope, status_report
from wrighty.store.port import Store
from wrighty.store.postgres import PostgresStore
from wrighty.store.sqlite import SqliteStore, to_db_time

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
DAYS = 60  # the finished items were made over this many days before NOW
INSTALLATION = "inst-bench"
OTHER_INSTALLATION = "inst-fleet"  # the workers' (liveness by heartbeat: no pid is checked)
DEFAULT_AGENT = "claude-code"
BUDGETED = "codex"  # the agent with a day budget; its runs today spend more than it
BUDGETS = Budgets(per_day={BUDGETED: Limit(max_cost_usd=5.0)})
LIMITED = "migrations"  # the label with a concurrency limit, which the running items reach
LIMITS = ConcurrencyLimits(labels={LIMITED: 2})
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=3600)
WORKSPACE = "/srv/work/app"
ITEMS_PER_WORKER = 5
THRESHOLDS = Thresholds()
WORKER_MAX_AGE_SECONDS = 60.0
WARM_UP_ROUNDS = 3

SUBJECTS = (
    "the login page",
    "the importer",
    "the CLI",
    "the migration guide",
    "the cache",
    "the HTTP client",
    "the config keys",
    "the flaky test",
    "the README",
    "the API",
)
VERBS = ("Fix", "Port", "Profile", "Document", "Rename", "Tidy", "Upgrade", "Test", "Split")


def title(n: int) -> str:
    return f"{VERBS[n % len(VERBS)]} {SUBJECTS[n // len(VERBS) % len(SUBJECTS)]} (task {n})"


def body(n: int) -> str:
    return (
        f"Task {n}. Read the module, make the change, keep the tests green and write down in "
        "the pull request what changed and why; ask before touching the public API. "
        f"Context: ticket #{10_000 + n}, see the design notes in docs/."
    )


# -- the finished items, in bulk ----------------------------------------------------------------


@dataclass(frozen=True)
class Finished:
    """One done or cancelled item: what its rows are made from."""

    id: int
    agent: str | None  # its own agent (None: the default)
    cancelled: bool  # needs-attention after its run, then cancelled by an operator
    priority: int
    created: datetime
    ended: datetime  # its run's end
    final: datetime  # when it became done or cancelled
    worker: str
    run_id: str
    session_id: str
    claim_token: str
    pid: int
    usage: Usage


def finished_items(count: int, rng: random.Random) -> list[Finished]:
    """``count`` finished items, made one after another over DAYS days before NOW."""
    workers = [f"w-{rng.getrandbits(48):012x}" for _ in range(12)]
    step = timedelta(days=DAYS) / max(count, 1)
    start = NOW - timedelta(days=DAYS, hours=1)
    made = []
    for n in range(count):
        created = start + step * n
        ended = created + timedelta(seconds=rng.randrange(60, 1800))
        agent = BUDGETED if n % 8 == 0 else None
        cancelled = n % 10 == 3
        usage = Usage(
            input_tokens=rng.randrange(2_000, 40_000),
            output_tokens=rng.randrange(500, 8_000),
            cache_read_tokens=rng.randrange(10_000, 400_000),
            cache_write_tokens=rng.randrange(0, 40_000),
            cost_usd=round(rng.uniform(0.05, 2.0), 4),
            models=("gpt-5-codex",) if agent else ("claude-sonnet-4-5",),
            turns=rng.randrange(3, 40),
            api_ms=rng.randrange(5_000, 600_000),
            final=True,
            cost_source="reported",
        )
        final = ended + timedelta(minutes=rng.randrange(5, 600)) if cancelled else ended
        made.append(
            Finished(
                n + 1, agent, cancelled, rng.choice((1, 2, 2, 2, 3)), created, ended, final,
                workers[n % len(workers)], f"run-{rng.getrandbits(48):012x}",
                f"{rng.getrandbits(128):032x}", f"{rng.getrandbits(144):036x}",
                rng.randrange(1000, 4_000_000), usage,
            )
        )  # fmt: skip
    return made


# The rows as the store leaves them after `create_item`, `acquire`, `start_run` (with the
# session), `record_process`, `record_usage` and the settle (a cancelled one: then
# `cancel_item`), with the columns those leave at their defaults left out.


def item_rows(made: Sequence[Finished]) -> Iterator[dict[str, Any]]:
    for f in made:
        created = to_db_time(f.created)
        yield {
            "id": f.id, "title": title(f.id), "body": body(f.id), "agent": f.agent,
            "workspace": WORKSPACE, "state": "cancelled" if f.cancelled else "done",
            "generation": 1, "queued_at": created,
            "reason_code": "operator-cancelled" if f.cancelled else None,
            "reason": "cancelled by an operator" if f.cancelled else None,
            "created_at": created, "updated_at": to_db_time(f.final), "priority": f.priority,
        }  # fmt: skip


def event_rows(made: Sequence[Finished]) -> Iterator[dict[str, Any]]:
    """Each item's history: created queued, claimed, settled (a cancelled one: needs-attention
    after its run, then cancelled by an operator)."""
    event_id = 0
    for f in made:
        worker = f"worker:{f.worker}"
        created, ended, final = to_db_time(f.created), to_db_time(f.ended), to_db_time(f.final)
        events: list[tuple[str, int, str | None, str, str | None, str | None, str | None]] = [
            ("operator", 0, None, "queued", None, None, created),
            (worker, 1, "queued", "running", None, None, created),
        ]
        if f.cancelled:
            events += [
                (worker, 1, "running", "needs-attention", "agent-failure",
                 "the agent said it cannot finish", ended),
                ("operator", 1, "needs-attention", "cancelled", "operator-cancelled",
                 "cancelled by an operator", final),
            ]  # fmt: skip
        else:
            events.append((worker, 1, "running", "done", None, None, ended))
        for actor, generation, from_state, to_state, code, reason, at in events:
            event_id += 1
            yield {
                "id": event_id, "item_id": f.id, "at": at, "actor": actor,
                "generation": generation, "from_state": from_state, "to_state": to_state,
                "reason_code": code, "reason": reason,
            }  # fmt: skip


def run_rows(made: Sequence[Finished]) -> Iterator[dict[str, Any]]:
    for f in made:
        u = f.usage
        yield {
            "run_id": f.run_id, "item_id": f.id, "generation": 1, "attempt": 1,
            "kind": "fresh", "worker_id": f.worker, "installation_id": OTHER_INSTALLATION,
            "started_at": to_db_time(f.created), "ended_at": to_db_time(f.ended), "pid": f.pid,
            "process_started_at": f.created.timestamp(), "exit_code": 1 if f.cancelled else 0,
            "outcome_class": "agent-failure" if f.cancelled else "succeeded",
            "confidence": "authoritative", "session_id": f.session_id,
            "claim_token": f.claim_token, "agent": f.agent or DEFAULT_AGENT, "usage": "final",
            "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
            "cache_read_tokens": u.cache_read_tokens, "cache_write_tokens": u.cache_write_tokens,
            "cost_usd": u.cost_usd, "cost_source": u.cost_source,
            "models": json.dumps(list(u.models)), "turns": u.turns, "api_ms": u.api_ms,
        }  # fmt: skip


def session_rows(made: Sequence[Finished]) -> Iterator[dict[str, Any]]:
    for f in made:
        yield {
            "item_id": f.id, "vendor": f.agent or DEFAULT_AGENT, "session_id": f.session_id,
            "workspace": WORKSPACE, "installation_id": OTHER_INSTALLATION,
            "updated_at": to_db_time(f.created),
        }  # fmt: skip


ROWS: dict[str, Callable[[Sequence[Finished]], Iterator[dict[str, Any]]]] = {
    "items": item_rows,
    "item_events": event_rows,
    "runs": run_rows,
    "sessions": session_rows,
}


def sqlite_bulk(path: Path, made: Sequence[Finished]) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN")
    for table, rows in ROWS.items():
        columns = list(next(rows(made[:1])))
        connection.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) "
            f"VALUES ({', '.join(':' + c for c in columns)})",
            rows(made),
        )
    connection.execute("COMMIT")
    connection.close()


def postgres_bulk(url: str, made: Sequence[Finished]) -> None:
    with psycopg.connect(url, autocommit=True) as connection, connection.transaction():
        for table, rows in ROWS.items():
            columns = list(next(rows(made[:1])))
            statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
                sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
            )
            with connection.cursor().copy(statement) as copy:
                for row in rows(made):
                    copy.write_row(tuple(row.values()))
        # The explicit ids leave the identity sequences behind: move them past.
        for table in ("items", "item_events"):
            connection.execute(
                sql.SQL("SELECT setval(pg_get_serial_sequence(%s, 'id'), max(id)) FROM {}").format(
                    sql.Identifier(table)
                ),
                (table,),
            )


# -- the open items, through the store port ---------------------------------------------------

ATTENTION = (
    (OutcomeClass.AGENT_FAILURE, "the agent said it cannot finish: the test needs a database"),
    (OutcomeClass.AUTH, "the provider refused the key"),
    (OutcomeClass.TIMEOUT, "the run took longer than its timeout (3600 s)"),
    (OutcomeClass.CONTEXT_LIMIT, "the conversation no longer fits the model's context"),
    (OutcomeClass.PERMISSION, "the agent asked for a permission it was not given"),
)
RETRIES = (
    (OutcomeClass.PROCESS_CRASH, "killed by SIGKILL"),
    (OutcomeClass.RATE_LIMITED, "the provider said: rate limited, retry after 300 s"),
)


@dataclass
class OpenMix:
    """How many open items of each kind (from --open)."""

    attention: int
    retry: int
    running: int
    queued: int
    todo: int

    @classmethod
    def of(cls, total: int) -> OpenMix:
        attention, retry, running, todo = (
            max(1, total * share // 100) for share in (20, 10, 10, 10)
        )
        return cls(
            attention, retry, running, max(0, total - attention - retry - running - todo), todo
        )

    @property
    def total(self) -> int:
        return self.attention + self.retry + self.running + self.queued + self.todo

    def describe(self) -> str:
        return (
            f"{self.attention} needs-attention, {self.retry} retry-scheduled, {self.running} "
            f"running on {-(-self.running // ITEMS_PER_WORKER)} workers, {self.queued} queued, "
            f"{self.todo} todo"
        )


def new(n: int, *, state: ItemState = ItemState.QUEUED, **changes: Any) -> NewItem:
    item = NewItem(title(n), body(n), None, None, WORKSPACE, state, priority=2)
    return dataclasses.replace(item, **changes)


def run_item(
    store: Store, n: int, worker: str, *, at: datetime, **changes: Any
) -> tuple[Item, str, Usage]:
    """A queued item made, claimed by ``worker`` and its run started at ``at``, with usage."""
    made = store.create_item(
        new(n, **changes), at=at - timedelta(minutes=n % 50 + 1), actor="operator"
    )
    request = ClaimRequest(worker, OTHER_INSTALLATION, TERMS, DEFAULT_AGENT, item_id=made.id)
    claim = store.acquire(request, now=at)
    if claim is None:
        raise RuntimeError(f"item {made.id} could not be claimed")
    claimed = claim.item
    agent = claimed.agent or DEFAULT_AGENT
    run_id = f"run-{n:012x}"
    session = Session(claimed.id, agent, f"sess-{n:08x}", WORKSPACE, OTHER_INSTALLATION)
    new_run = NewRun(
        run_id,
        RunKind.FRESH,
        worker,
        OTHER_INSTALLATION,
        at,
        f"sess-{n:08x}",
        f"token-{n:08x}",
        agent=agent,
    )
    if store.start_run(claimed, new_run, session=session) is None:
        raise RuntimeError(f"item {made.id}: the run could not be recorded")
    store.record_process(claimed, run_id, pid=10_000 + n, process_started_at=at.timestamp())
    usage = Usage(
        input_tokens=8_000 + 37 * (n % 1000),
        output_tokens=2_000 + n % 1000,
        cost_usd=round(0.3 + n % 1000 / 1000, 4),
        models=("claude-sonnet-4-5",),
        turns=12,
        cost_source="reported",
    )
    if not store.record_usage(claimed, run_id, usage):
        raise RuntimeError(f"item {made.id}: the usage could not be recorded")
    return claimed, run_id, usage


def seed_open(store: Store, mix: OpenMix, first: int) -> None:
    """The open items, as workers and operators leave them; ``first``: the number their
    titles start from."""
    n = first
    attention: list[int] = []
    for k in range(mix.attention):
        n += 1
        at = NOW - timedelta(minutes=7 * k + 3)
        claimed, _, usage = run_item(store, n, "w-fleet-a", at=at - timedelta(minutes=20))
        outcome, reason = ATTENTION[k % len(ATTENTION)]
        end = RunEnd(
            at,
            outcome,
            Confidence.AUTHORITATIVE,
            exit_code=1,
            usage=dataclasses.replace(usage, final=True),
        )
        settlement = Settlement(
            ItemState.NEEDS_ATTENTION,
            process_started=True,
            run_end=end,
            reason_code=outcome.value,
            reason=reason,
            next_action=f"wrighty show {claimed.id}",
        )
        _settle(store, claimed, settlement, at=at)
        attention.append(claimed.id)
    for k in range(mix.retry):
        n += 1
        at = NOW - timedelta(minutes=3 * k + 1)
        claimed, _, usage = run_item(store, n, "w-fleet-b", at=at - timedelta(minutes=10))
        outcome, reason = RETRIES[k % len(RETRIES)]
        due = at + timedelta(minutes=10 if k % 2 else -2)  # half of them are due
        end = RunEnd(
            at,
            outcome,
            Confidence.AUTHORITATIVE,
            signal=9 if k % 2 == 0 else None,
            usage=dataclasses.replace(usage, final=True),
        )
        settlement = Settlement(
            ItemState.RETRY_SCHEDULED,
            process_started=True,
            run_end=end,
            reason_code=outcome.value,
            reason=reason,
            not_before=due,
            counts_as_crash_retry=outcome is OutcomeClass.PROCESS_CRASH,
            counts_as_usage_retry=outcome is OutcomeClass.RATE_LIMITED,
        )
        _settle(store, claimed, settlement, at=at)
    running = seed_running(store, mix.running, n)
    n += mix.running
    for k in range(mix.queued):
        n += 1
        changes: dict[str, Any] = {"priority": (1, 2, 2, 3, 0)[k % 5]}
        if k % 5 == 0 and attention:
            changes["after"] = (attention[k % len(attention)],)  # blocked
        elif k % 11 == 1 and running:
            changes["after"] = (running[k % len(running)],)  # waits for a running item
        if k % 7 == 2:
            changes["labels"] = (LIMITED,)
        elif k % 7 == 4:
            changes["labels"] = ("frontend", "small")
        if k % 6 == 3:
            changes["agent"] = BUDGETED
        store.create_item(new(n, **changes), at=NOW - timedelta(minutes=k % 240), actor="operator")
    for k in range(mix.todo):
        n += 1
        store.create_item(
            new(n, state=ItemState.TODO), at=NOW - timedelta(hours=k % 48), actor="operator"
        )


def _settle(store: Store, claimed: Item, settlement: Settlement, *, at: datetime) -> None:
    if not store.write_transition(settle(claimed, settlement, at=at)):
        raise RuntimeError(f"item {claimed.id} could not be settled")


def seed_running(store: Store, count: int, n: int) -> list[int]:
    """``count`` running items, ITEMS_PER_WORKER on each registered worker; the last worker
    stopped heartbeating ten minutes ago and its leases expired. Two items carry the limited
    label, one of them the budgeted agent."""
    workers: dict[str, list[int]] = {}
    ids = []
    for k in range(count):
        worker = f"w-{k // ITEMS_PER_WORKER:04d}fleet"
        gone = k // ITEMS_PER_WORKER == (count - 1) // ITEMS_PER_WORKER and count > 1
        started = NOW - timedelta(minutes=k % 45 + (15 if gone else 1))
        changes: dict[str, Any] = {"labels": (LIMITED,)} if k < LIMITS.labels[LIMITED] else {}
        if k % 9 == 0:
            changes["agent"] = BUDGETED
        claimed, _, _ = run_item(store, n + k + 1, worker, at=started, **changes)
        if not gone:  # a live worker renews its claims
            store.renew(claimed, now=NOW - timedelta(seconds=10), terms=TERMS)
        workers.setdefault(worker, []).append(claimed.id)
        ids.append(claimed.id)
    last = list(workers)[-1] if count > 1 else None
    for worker, items in workers.items():
        heartbeat = NOW - timedelta(minutes=10 if worker == last else 0, seconds=5)
        store.upsert_worker(
            WorkerRow(
                worker,
                f"fleet {worker[2:6]}",
                OTHER_INSTALLATION,
                4242,
                1.0e9,
                "0.9.0",
                WorkerState.RUNNING,
                tuple(items),
                NOW - timedelta(hours=6),
                heartbeat,
            )
        )
    return ids


# -- the stores ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seeded:
    store: Store
    where: str  # what the store is, for the output
    label: str  # the store as the inbox's header names it
    seconds: float  # how long seeding took
    target: str = ""  # the store as `--store` names it (bench/web_board.py starts commands on it)


@contextmanager
def sqlite_store(finished: int, mix: OpenMix) -> Iterator[Seeded]:
    """A SQLite file in a temporary directory, seeded (not analysed: wrighty never runs
    ANALYZE on its SQLite stores)."""
    with tempfile.TemporaryDirectory(prefix="wrighty-inbox-") as scratch:
        path = Path(scratch) / "wrighty.db"
        began = time.perf_counter()
        SqliteStore.open(path).close()  # the schema, as wrighty makes it
        # (no reference kept: the timed calls' garbage collections would walk them)
        sqlite_bulk(path, finished_items(finished, random.Random(7)))
        store = SqliteStore.open(path)
        try:
            seed_open(store, mix, first=finished)
            seconds = time.perf_counter() - began
            where = "SQLite file (WAL) in a temporary directory"
            yield Seeded(store, where, "wrighty.db", seconds, target=str(path))
        finally:
            store.close()


@contextmanager
def postgres_store(server: str, finished: int, mix: OpenMix) -> Iterator[Seeded]:
    """A fresh schema on ``server`` (dropped afterwards), seeded, vacuumed and analysed (as
    autovacuum would have left a store that grew to this size)."""
    with postgres_place(server, "inbox") as url:
        began = time.perf_counter()
        PostgresStore.open(url, create=True).close()
        postgres_bulk(url, finished_items(finished, random.Random(7)))
        store = PostgresStore.open(url)
        try:
            seed_open(store, mix, first=finished)
            with psycopg.connect(url, autocommit=True) as connection:
                for table in (*ROWS, "item_dependencies", "item_labels", "workers"):
                    connection.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))
            seconds = time.perf_counter() - began
            yield Seeded(store, postgres_settings(server), "postgresql", seconds, target=url)
        finally:
            store.close()


# -- what is timed ----------------------------------------------------------------------------


def settings() -> BoardSettings:
    return BoardSettings(
        installation_id=INSTALLATION,
        default_agent=DEFAULT_AGENT,
        thresholds=THRESHOLDS,
        worker_max_age_seconds=WORKER_MAX_AGE_SECONDS,
        budgets=BUDGETS,
        limits=LIMITS,
    )


def status_text(store: Store) -> str:
    """What `wrighty status --json` does once started: the report, then its JSON text (as
    print_json writes it)."""
    report = status_report(
        store,
        now=NOW,
        thresholds=THRESHOLDS,
        worker_max_age_seconds=WORKER_MAX_AGE_SECONDS,
        installation_id=INSTALLATION,
        default_agent=DEFAULT_AGENT,
        ledger=LedgerScope(BUDGETS, DEFAULT_AGENT),
    )
    return json_printable(json.dumps(status_json(report), indent=2, ensure_ascii=False))


def drawn(board: Board, label: str) -> list[object]:
    """What the inbox makes of a board besides Textual's painting: every row's cells, the
    header and the side panel."""
    now = board.checked_at
    return [
        *(row_cells(row, now) for row in board.rows),
        header_text(board, label=label, read_only=False),
        side_text(board),
    ]


def contenders(store: Store, label: str) -> dict[str, Callable[[], object]]:
    board_settings = settings()
    return {
        "status --json": lambda: status_text(store),
        "inbox board read": lambda: read_board(store, board_settings, now=NOW),
        "inbox board read + draw": lambda: drawn(read_board(store, board_settings, now=NOW), label),
    }


def print_ratios(times: dict[str, list[float]], base_name: str, runs: int, *, width: int) -> None:
    """Each call's median and p95, and their ratios to ``base_name``'s, a row each."""
    print(
        f"per call, {runs} calls of each in turns after {WARM_UP_ROUNDS} warm-up rounds; "
        "p95 nearest rank"
    )
    print(f"{'':<{width}}{'median':>11}{'p95':>12}{'median/status':>15}{'p95/status':>12}")
    base = times[base_name]
    base50, base95 = statistics.median(base), percentile(base, 0.95)
    for name, values in times.items():
        p50, p95 = statistics.median(values), percentile(values, 0.95)
        print(
            f"{name:<{width}}{p50 * 1000:8.2f} ms{p95 * 1000:9.2f} ms{p50 / base50:14.2f}x"
            f"{p95 / base95:11.2f}x"
        )


def timed(calls: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Each call ``runs`` times, in turns, after WARM_UP_ROUNDS untimed rounds."""
    for _ in range(WARM_UP_ROUNDS):
        for call in calls.values():
            call()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            began = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - began)
    return times


# What holds a held row, by words its reason always has.
HELD_BY = (
    ("blocked", "blocked:"),
    ("after", "waits for"),
    ("limit", "maxConcurrent"),
    ("budget", "budgets.perDay"),
    ("circuit", "provider circuit"),
)


def held_kinds(board: Board) -> dict[str, int]:
    """The held rows by what holds them."""
    kinds: dict[str, int] = {}
    for row in board.rows:
        if row.section is Section.HELD:
            kind = next((kind for kind, words in HELD_BY if words in row.why), "other")
            kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def report(seeded: Seeded, items: int, mix: OpenMix, runs: int) -> None:
    board = read_board(seeded.store, settings(), now=NOW)
    status = json.loads(status_text(seeded.store))
    open_total, finished = mix.total, items - mix.total
    counted = status["counts"]["done"] + status["counts"]["cancelled"]
    if board.open_total != open_total or counted != finished:
        raise RuntimeError(f"seeded {board.open_total} open and {counted} finished items")
    print(
        f"{items} items: {finished} done or cancelled (each with its events, a run with usage "
        f"and a session), {open_total} open: {mix.describe()}; seeded in "
        f"{seeded.seconds:.1f} s"
    )
    print(f"store: {seeded.where}")
    sections = section_counts(board.rows)
    spent = ", ".join(hold.agent for hold in board.holds.values()) or "none"
    print(
        f"board: {len(board.rows)} rows ("
        + ", ".join(f"{n} {section}" for section, n in sections.items())
        + f"); held by {held_kinds(board)}; budgets spent: {spent}"
    )
    print(
        f"settings (board and status): budgets.perDay {BUDGETED} "
        f"{BUDGETS.agent_limit(BUDGETED).describe()}, limits.labels.{LIMITED}.maxConcurrent "
        f"{LIMITS.labels[LIMITED]}; status: {status['blocked']} blocked, "
        f"{status['live_workers']} live workers, healthy {status['healthy']}"
    )
    times = timed(contenders(seeded.store, seeded.label), runs)
    print_ratios(times, "status --json", runs, width=26)


def profile(seeded: Seeded, runs: int) -> None:
    """Where a board read's time goes: cProfile over ``runs`` reads, by cumulative time."""
    import cProfile
    import pstats

    board_settings = settings()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        read_board(seeded.store, board_settings, now=NOW)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)


def seeded_from(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> tuple[OpenMix, AbstractContextManager[Seeded]]:
    """The mix of open items ``--open`` asks for, and the store of ``--items`` items seeded
    with it (``--store``: on that PostgreSQL server; a SQLite file when absent)."""
    mix = OpenMix.of(args.open)
    if args.items < mix.total:
        parser.error(f"--items must be at least the {mix.total} open items")
    finished = args.items - mix.total
    place = postgres_store(args.store, finished, mix) if args.store else sqlite_store(finished, mix)
    return mix, place


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000, help="every item, open or not")
    parser.add_argument("--open", type=int, default=500, help="how many of them are open")
    parser.add_argument("--runs", type=int, default=30, help="timed calls of each")
    parser.add_argument("--store", help="a PostgreSQL server URL; a SQLite file when absent")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="then profile the board read (cProfile, by cumulative time)",
    )
    args = parser.parse_args()
    mix, place = seeded_from(parser, args)
    with place as seeded:
        report(seeded, args.items, mix, args.runs)
        if args.profile:
            profile(seeded, args.runs)


if __name__ == "__main__":
    main()
