"""Random interleavings of workers, the reaper, operators and the clock against a real store.

After every step: one owner at most per item, generations never go back, a write from anyone
but the current owner never lands, histories replay, no item is lost, and open runs belong
only to a live claim. Worker ids are reused (a worker restarts under its id, or takes back an
item it lost), so a late write can carry the owner's own id with an older generation: the
generation alone must fence it.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import tempfile
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from tests.conftest import START
from tests.store.machines import run_on_postgresql
from tests.store.test_contract import new_item
from wrighty.domain.claims import (
    CLAIMABLE_STATES,
    ClaimRequest,
    LeaseTerms,
    RenewOutcome,
    Settlement,
    settle,
)
from wrighty.domain.model import Event, Item, NewRun, Run, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import replay
from wrighty.errors import IllegalTransitionError
from wrighty.services import items as item_service
from wrighty.services import reaper
from wrighty.store.port import Store
from wrighty.store.sqlite import SqliteStore

WORKERS = ["w1", "w2", "w3"]
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=300)
SETTLE_TARGETS = [
    ItemState.DONE,
    ItemState.REVIEW,
    ItemState.NEEDS_ATTENTION,
    ItemState.RETRY_SCHEDULED,
    ItemState.QUEUED,
    ItemState.CANCELLED,
]
# Late writes: the state a late settle names, and which of the item's runs (newest first) a
# late process or session record names.
LateWrite = tuple[ItemState, int]
LATE_WRITE = st.tuples(st.sampled_from(SETTLE_TARGETS), st.integers(min_value=0))
# What a write about an item can change: the item, its history, its runs, its session.
Footprint = tuple[Item, list[Event], list[Run], Session | None]


class ClaimsMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = self.open_store()
        self.now = START
        self.created = 0
        self.held: dict[str, Item] = {}  # worker -> the claim as that worker last saw it
        self.started: dict[str, bool] = {}
        self.ghosts: list[Item] = []  # claims lost, or left behind by a restart; newest last
        self.max_generation: dict[int, int] = {}
        self.run_counter = 0

    def open_store(self) -> Store:
        self.directory = Path(tempfile.mkdtemp(prefix="wrighty-claims-"))
        return SqliteStore.open(self.directory / "wrighty.db")

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _current(self, item_id: int) -> Item:
        item = self.store.get_item(item_id)
        assert item is not None
        return item

    def _owns(self, view: Item) -> bool:
        now = self._current(view.id)
        return (
            now.state is ItemState.RUNNING
            and now.generation == view.generation
            and now.claimed_by == view.claimed_by
        )

    def _drop(self, worker: str) -> None:
        self.ghosts.append(self.held.pop(worker))
        self.started.pop(worker, None)

    def _next_run_id(self) -> str:
        self.run_counter += 1
        return f"run-{self.run_counter}"

    def _ghost(self, index: int) -> Item:
        """Small indexes first name the handles whose item their own worker id holds again
        (only the generation tells them apart), then the others, newest first."""
        items = {item.id: item for item in self.store.list_items()}

        def same_id_holds_it_again(ghost: Item) -> bool:
            item = items[ghost.id]
            return item.state is ItemState.RUNNING and item.claimed_by == ghost.claimed_by

        newest_first = self.ghosts[::-1]
        ordered = sorted(newest_first, key=same_id_holds_it_again, reverse=True)
        return ordered[index % len(ordered)]

    def _take(self, request: ClaimRequest) -> Item | None:
        taken = self.store.acquire(request, now=self.now)
        if taken is None:
            return None
        claimed = taken.item
        assert claimed.claimed_by == request.worker_id
        assert all(view.id != claimed.id or not self._owns(view) or view is claimed
                   for view in self.held.values())  # fmt: skip
        self.held[request.worker_id] = claimed
        self.started[request.worker_id] = False
        return claimed

    def _footprint(self, item_id: int) -> Footprint:
        return (
            self._current(item_id),
            self.store.list_events(item_id),
            self.store.list_runs(item_id),
            self.store.get_session(item_id),
        )

    # -- rules ------------------------------------------------------------------------------

    @initialize(queued=st.lists(st.booleans(), min_size=1, max_size=3))
    def some_items_to_start_with(self, queued: list[bool]) -> None:
        for each in queued:
            self.create(each)

    @rule(queued=st.booleans())
    def create(self, queued: bool) -> None:
        self.store.create_item(new_item(queued=queued), at=self.now, actor="op")
        self.created += 1

    @rule(seconds=st.sampled_from([0, 1, 20, 59, 60, 61, 200, 400]))
    def advance_clock(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @rule(worker=st.sampled_from(WORKERS), installation=st.sampled_from(["inst-a", "inst-b"]))
    def acquire(self, worker: str, installation: str) -> None:
        if worker in self.held:
            return
        self._take(ClaimRequest(worker, installation, TERMS, default_agent="claude"))

    @rule(worker=st.sampled_from(WORKERS))
    def restart_under_the_same_id(self, worker: str) -> None:
        """The worker's process is replaced by one with the same id. The old claim is left to
        its lease; the old process's handle can still write late (it was only paused)."""
        if worker in self.held:
            self._drop(worker)

    @precondition(lambda self: self.held)
    @rule(index=st.integers(min_value=0), runs=st.booleans(), late=LATE_WRITE)
    def stall_past_the_lease(self, index: int, runs: bool, late: LateWrite) -> None:
        """A worker stalls past its lease, the reaper takes the item, a process under the
        same worker id claims it again (and, with ``runs``, starts its agent); a second
        later the stalled one wakes up and writes."""
        holders = sorted(self.held)
        worker = holders[index % len(holders)]
        stalled = self.held[worker]
        self._drop(worker)
        lease = self._current(stalled.id).lease_expires_at
        if lease is not None:
            self.now = max(self.now, lease + timedelta(seconds=1))
        self.reap()
        request = ClaimRequest(worker, "inst-a", TERMS, default_agent="claude", item_id=stalled.id)
        if self._take(request) is None:
            return
        if runs:
            self.start_run(worker, with_session=True)
        self.now += timedelta(seconds=1)
        self._write_late(stalled, late)

    @precondition(lambda self: self.ghosts)
    @rule(index=st.integers(min_value=0), late=LATE_WRITE)
    def take_back_a_lost_item(self, index: int, late: LateWrite) -> None:
        """A worker claims again an item it lost (or left behind by a restart); then its old
        handle writes late, with the new owner's own id and an older generation."""
        items = {item.id: item for item in self.store.list_items()}
        waiting = [
            ghost
            for ghost in self.ghosts
            if ghost.claimed_by not in self.held and items[ghost.id].state in CLAIMABLE_STATES
        ]
        if not waiting:
            return
        ghost = waiting[-1 - index % len(waiting)]
        assert ghost.claimed_by is not None
        request = ClaimRequest(
            ghost.claimed_by, "inst-a", TERMS, default_agent="claude", item_id=ghost.id
        )
        claimed = self._take(request)
        if claimed is not None:
            assert claimed.generation > ghost.generation
            self._write_late(ghost, late)

    @rule(worker=st.sampled_from(WORKERS))
    def renew(self, worker: str) -> None:
        if worker not in self.held:
            return
        view = self.held[worker]
        owned = self._owns(view)
        result = self.store.renew(view, now=self.now, terms=TERMS)
        assert (result.outcome is not RenewOutcome.LOST) == owned
        if result.outcome is RenewOutcome.LOST:
            self._drop(worker)

    @rule(worker=st.sampled_from(WORKERS), with_session=st.booleans())
    def start_run(self, worker: str, with_session: bool) -> None:
        if worker not in self.held or self.started.get(worker):
            return
        view = self.held[worker]
        owned = self._owns(view)
        run_id = self._next_run_id()
        new_run = NewRun(run_id, RunKind.FRESH, worker, "inst-a", self.now, None)
        run = self.store.start_run(view, new_run)
        assert (run is not None) == owned
        if run is None:
            self._drop(worker)
            return
        self.started[worker] = True
        assert self.store.record_process(view, run_id, pid=1000, process_started_at=1.0)
        if with_session:
            session = Session(view.id, "claude", f"s-{view.id}", "/tmp/w", "inst-a")
            assert self.store.record_session(view, session, at=self.now)

    @rule(worker=st.sampled_from(WORKERS), to_state=st.sampled_from(SETTLE_TARGETS))
    def settle(self, worker: str, to_state: ItemState) -> None:
        if worker not in self.held:
            return
        view = self.held[worker]
        started = self.started.get(worker, False)
        if to_state is ItemState.QUEUED and started:
            to_state = ItemState.NEEDS_ATTENTION
        end = RunEnd(self.now, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE)
        plan = Settlement(
            to_state=to_state,
            process_started=started,
            run_end=end,
            not_before=self.now + timedelta(seconds=30),
            counts_as_crash_retry=to_state is ItemState.RETRY_SCHEDULED,
        )
        owned = self._owns(view)
        landed = self.store.write_transition(settle(view, plan, at=self.now))
        assert landed == owned
        self._drop(worker)

    @precondition(lambda self: self.ghosts)
    @rule(index=st.integers(min_value=0), late=LATE_WRITE)
    def late_write_from_a_stale_claim(self, index: int, late: LateWrite) -> None:
        ghost = self._ghost(index)
        if not self._owns(ghost):  # else a restarted worker's old claim, still live
            self._write_late(ghost, late)

    def _write_late(self, ghost: Item, late: LateWrite) -> None:
        """Every write a worker makes about its item, under a claim no longer held: none
        lands, and none changes anything."""
        to_state, run_index = late
        assert ghost.claimed_by is not None
        assert not self._owns(ghost)
        before = self._footprint(ghost.id)
        runs = before[2]
        run_id = runs[-1 - run_index % len(runs)].run_id if runs else "run-never-started"
        assert self.store.renew(ghost, now=self.now, terms=TERMS).outcome is RenewOutcome.LOST
        worker = ghost.claimed_by
        new_run = NewRun(self._next_run_id(), RunKind.FRESH, worker, "inst-a", self.now, None)
        assert self.store.start_run(ghost, new_run) is None
        assert not self.store.record_process(ghost, run_id, pid=2000, process_started_at=2.0)
        session = Session(ghost.id, "claude", "s-late", "/tmp/late", "inst-b")
        assert not self.store.record_session(ghost, session, at=self.now, run_id=run_id)
        plan = Settlement(
            to_state=to_state,
            process_started=to_state is not ItemState.QUEUED,
            run_end=RunEnd(self.now, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE),
            not_before=self.now + timedelta(seconds=30),
        )
        assert self.store.write_transition(settle(ghost, plan, at=self.now)) is False
        assert self._footprint(ghost.id) == before

    @rule()
    def reap(self) -> None:
        reaper.reap_expired(self.store, now=self.now, max_requeues=2)

    @rule(
        item_index=st.integers(min_value=0),
        action=st.sampled_from(["cancel", "release", "queue", "requeue"]),
    )
    def operator(self, item_index: int, action: str) -> None:
        if not self.created:
            return
        item_id = item_index % self.created + 1
        actions: dict[str, Callable[..., Item]] = {
            "cancel": item_service.cancel_item,
            "release": item_service.release_item,
            "queue": item_service.queue_item,
            "requeue": functools.partial(item_service.requeue_item, resume=False),
        }
        with contextlib.suppress(IllegalTransitionError):
            actions[action](self.store, item_id, now=self.now)

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def no_item_is_lost_and_histories_replay(self) -> None:
        items = self.store.list_items()
        assert len(items) == self.created
        for item in items:
            assert replay(self.store.list_events(item.id)) is item.state
            if item.state is ItemState.RUNNING:
                assert item.claimed_by is not None
                assert item.lease_expires_at is not None
            else:
                assert item.claimed_by is None
                assert item.lease_expires_at is None

    @invariant()
    def generations_never_go_back(self) -> None:
        for item in self.store.list_items():
            assert item.generation >= self.max_generation.get(item.id, 0)
            self.max_generation[item.id] = item.generation

    @invariant()
    def at_most_one_worker_holds_a_live_claim(self) -> None:
        owners: dict[int, list[str]] = {}
        for worker, view in self.held.items():
            if self._owns(view):
                owners.setdefault(view.id, []).append(worker)
        assert all(len(names) == 1 for names in owners.values())

    @invariant()
    def open_runs_belong_to_live_claims(self) -> None:
        for item in self.store.list_items():
            open_runs = [r for r in self.store.list_runs(item.id) if r.ended_at is None]
            assert len(open_runs) <= 1
            for run in open_runs:
                assert item.state is ItemState.RUNNING
                assert run.generation == item.generation


ClaimsMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
test_claims_under_random_interleavings = ClaimsMachine.TestCase


def test_claims_under_random_interleavings_on_postgresql() -> None:
    run_on_postgresql(
        ClaimsMachine, settings(max_examples=80, stateful_step_count=30, deadline=None)
    )
