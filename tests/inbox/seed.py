"""A project whose store holds an item in every state the inbox shows (and the final ones it
leaves out), written as workers and operators would leave them; and a way to drive the inbox
headless against it."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from tests.conftest import FakeClock
from wrighty.cli.items import print_show
from wrighty.domain.claims import ClaimRequest, LeaseTerms
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.model import Item, NewItem, NewRun, Run, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition
from wrighty.domain.usage import Usage
from wrighty.inbox.app import InboxApp
from wrighty.installation import installation_id
from wrighty.operator.context import AppContext
from wrighty.operator.desk import OperatorDesk, board_settings
from wrighty.store.port import Store
from wrighty.store.sqlite import SqliteStore

TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)
WORKSPACE = "/srv/work/app"  # not the test's temporary directory: snapshots stay the same
LIVE_WORKER = "w-live-0001"
GONE_WORKER = "w-gone-0002"
OTHER_INSTALLATION = "other-installation"  # liveness by heartbeat alone: no pid checked here


def store_path(project: Path) -> Path:
    return project / ".wrighty" / "wrighty.db"


def open_project_store(project: Path) -> SqliteStore:
    return SqliteStore.open(store_path(project))


def new(title: str, *, queued: bool = True, **changes: object) -> NewItem:
    item = NewItem(
        title=title,
        body=f"The task of {title!r}.",
        agent=None,
        timeout_seconds=None,
        workspace=WORKSPACE,
        initial_state=ItemState.QUEUED if queued else ItemState.TODO,
    )
    return dataclasses.replace(item, **changes)


def claim(store: Store, item_id: int, *, at: datetime, worker: str = LIVE_WORKER) -> Item:
    held = store.acquire(
        ClaimRequest(worker, OTHER_INSTALLATION, TERMS, "claude-code", item_id=item_id), now=at
    )
    assert held is not None, f"item {item_id} could not be claimed"
    return held.item


def start(
    store: Store, claimed: Item, *, at: datetime, session_id: str | None = None, worker: str
) -> Run:
    attempt = len(store.list_runs(claimed.id)) + 1
    session = (
        Session(claimed.id, "claude-code", session_id, WORKSPACE, installation_id())
        if session_id
        else None
    )
    run = store.start_run(
        claimed,
        NewRun(
            f"run-{claimed.id}-{attempt}",
            RunKind.FRESH,
            worker,
            installation_id(),
            at,
            session_id,
            agent="claude-code",
        ),
        session=session,
    )
    assert run is not None
    return run


def settle(
    store: Store,
    claimed: Item,
    to_state: ItemState,
    *,
    at: datetime,
    outcome: OutcomeClass,
    reason: str,
    diagnostic: str | None = None,
    not_before: datetime | None = None,
) -> None:
    change = transition(
        claimed,
        to_state,
        at=at,
        actor=f"worker:{claimed.claimed_by}",
        reason_code=outcome.value,
        reason=reason,
        next_action=f"wrighty show {claimed.id}",
        not_before=not_before,
        run_end=RunEnd(at, outcome, Confidence.AUTHORITATIVE, 1, None, diagnostic),
    )
    assert store.write_transition(change)


def register(store: Store, worker: str, *, at: datetime, items: tuple[int, ...]) -> None:
    store.upsert_worker(
        WorkerRow(
            worker_id=worker,
            label=None,
            installation_id=OTHER_INSTALLATION,
            pid=1,
            process_started_at=0.0,
            version="0.0.0",
            state=WorkerState.RUNNING,
            items=items,
            started_at=at,
            last_heartbeat_at=at,
        )
    )


@dataclass(frozen=True)
class Seeded:
    """The ids of the seeded items, by what each stands for."""

    attention: int  # agent-failure, with a session it can resume
    auth: int  # needs attention for an auth failure, without a session
    retry: int  # a crash retry due in 10 minutes
    running: int  # on a live worker, with usage so far
    gone: int  # on a worker whose lease expired (release, reap)
    blocked: int  # queued after the agent-failure item
    queued: int
    todo: int
    done: int
    cancelled: int


DIAGNOSTIC = "Error: connection refused (127.0.0.1:5432)"


def seed(
    project: Path, clock: FakeClock, *, title: str | None = None, diagnostic: str = DIAGNOSTIC
) -> Seeded:
    """Items in every state; ``title`` replaces the first item's title, ``diagnostic`` its
    run's diagnostic (untrusted text)."""
    store = open_project_store(project)
    try:
        return _seed(store, clock, title, diagnostic)
    finally:
        store.close()


def seed_store(
    store: Store, clock: FakeClock, *, title: str | None = None, diagnostic: str = DIAGNOSTIC
) -> Seeded:
    """`seed` on an open store (of either backend)."""
    return _seed(store, clock, title, diagnostic)


def _seed(store: Store, clock: FakeClock, title: str | None, diagnostic: str) -> Seeded:
    now = clock()
    made = {
        name: store.create_item(new(text), at=now, actor="operator").id
        for name, text in (
            ("attention", title or "Fix the flaky login test"),
            ("auth", "Upgrade the HTTP client"),
            ("retry", "Port the CLI to typer"),
            ("running", "Write the migration guide"),
            ("gone", "Profile the importer"),
            ("done", "Rename the config keys"),
            ("cancelled", "Drop Python 3.10"),
        )
    }
    clock.advance(60)
    outcomes = {
        "attention": (
            ItemState.NEEDS_ATTENTION,
            OutcomeClass.AGENT_FAILURE,
            "the agent said it cannot finish: the test needs a database",
        ),
        "auth": (ItemState.NEEDS_ATTENTION, OutcomeClass.AUTH, "the provider refused the key"),
        "retry": (ItemState.RETRY_SCHEDULED, OutcomeClass.PROCESS_CRASH, "killed by SIGKILL"),
        "done": (ItemState.DONE, OutcomeClass.SUCCEEDED, "the agent finished"),
    }
    for name, (state, outcome, reason) in outcomes.items():
        claimed = claim(store, made[name], at=clock())
        session = f"sess-{made[name]}" if name in ("attention", "retry") else None
        start(store, claimed, at=clock(), session_id=session, worker=LIVE_WORKER)
        clock.advance(30)
        settle(
            store,
            claimed,
            state,
            at=clock(),
            outcome=outcome,
            reason=reason,
            diagnostic=diagnostic if name == "attention" else None,
            not_before=clock() + timedelta(minutes=10) if name == "retry" else None,
        )
    gone = claim(store, made["gone"], at=clock(), worker=GONE_WORKER)
    start(store, gone, at=clock(), worker=GONE_WORKER)
    clock.advance(120)  # its lease (60 s) expires; the live worker renews below
    running = claim(store, made["running"], at=clock())
    run = start(store, running, at=clock(), session_id="sess-live", worker=LIVE_WORKER)
    store.record_usage(running, run.run_id, Usage(input_tokens=12_000, output_tokens=3_400))
    cancel = store.get_item(made["cancelled"])
    assert cancel is not None
    assert store.write_transition(
        transition(cancel, ItemState.CANCELLED, at=clock(), actor="operator")
    )
    blocked = store.create_item(
        new("Ship the login page", after=(made["attention"],)), at=clock(), actor="operator"
    )
    queued = store.create_item(new("Tidy the README", priority=1), at=clock(), actor="operator")
    todo = store.create_item(new("Think about caching", queued=False), at=clock(), actor="o")
    register(store, LIVE_WORKER, at=clock(), items=(made["running"],))
    register(store, GONE_WORKER, at=clock() - timedelta(minutes=10), items=(made["gone"],))
    clock.advance(30)
    return Seeded(
        attention=made["attention"],
        auth=made["auth"],
        retry=made["retry"],
        running=made["running"],
        gone=made["gone"],
        blocked=blocked.id,
        queued=queued.id,
        todo=todo.id,
        done=made["done"],
        cancelled=made["cancelled"],
    )


def make_app(
    project: Path, *, read_only: bool = False, store: Store | None = None
) -> tuple[InboxApp, Store]:
    """The inbox on the project's store, as `wrighty inbox` starts it, without a timer: the
    tests refresh it themselves."""
    app_ctx = AppContext(config_option=None, store_option=None, cwd=project)
    opened = store or open_project_store(project)
    desk = OperatorDesk(app_ctx, opened, board_settings(app_ctx))
    return InboxApp(desk, show=print_show, read_only=read_only, interval=0), opened


Script = Callable[[InboxApp, object], Awaitable[None]]


def drive(app: InboxApp, script: Script, *, size: tuple[int, int] = (80, 24)) -> None:
    """Run the app headless at ``size`` and hand it and its pilot to ``script``."""

    async def run() -> None:
        async with app.run_test(size=size) as pilot:
            await settled(app, pilot)
            await script(app, pilot)

    asyncio.run(run())


async def settled(app: InboxApp, pilot: object) -> None:
    """Wait until the app's reads are done and their results drawn."""
    await pilot.pause()  # type: ignore[attr-defined]
    await app.workers.wait_for_complete()
    await pilot.pause()  # type: ignore[attr-defined]
