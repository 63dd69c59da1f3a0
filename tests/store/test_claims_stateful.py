"""Random interleavings of workers, the reaper, operators and the clock against a real store.

After every step: one owner at most per item, generations never go back, a write from anyone
but the current owner never lands, histories replay, no item is lost, and open runs belong
only to a live claim.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from datetime import timedelta
from pathlib import Path

import psycopg
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tests.conftest import START, postgres_schema
from tests.store.test_contract import new_item
from wrighty import services
from wrighty.domain.claims import ClaimRequest, LeaseTerms, RenewOutcome, Settlement, settle
from wrighty.domain.model import Item, NewRun, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import replay
from wrighty.errors import IllegalTransitionError
from wrighty.store.port import Store
from wrighty.store.postgres import PostgresStore
from wrighty.store.sqlite import SqliteStore

WORKERS = ["w1", "w2", "w3"]
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=300)
SETTLE_TARGETS = [
    ItemState.DONE,
    ItemState.NEEDS_ATTENTION,
    ItemState.RETRY_SCHEDULED,
    ItemState.QUEUED,
    ItemState.CANCELLED,
]


class ClaimsMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = self.open_store()
        self.now = START
        self.created = 0
        self.held: dict[str, Item] = {}  # worker -> the claim as that worker last saw it
        self.started: dict[str, bool] = {}
        self.ghosts: list[Item] = []  # claims their workers no longer hold
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

    # -- rules ------------------------------------------------------------------------------

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
        request = ClaimRequest(worker, installation, TERMS, default_agent="claude")
        claimed = self.store.acquire(request, now=self.now)
        if claimed is None:
            return
        assert claimed.claimed_by == worker
        assert all(view.id != claimed.id or not self._owns(view) or view is claimed
                   for view in self.held.values())  # fmt: skip
        self.held[worker] = claimed
        self.started[worker] = False

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
        self.run_counter += 1
        run_id = f"run-{self.run_counter}"
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
    @rule(index=st.integers(min_value=0))
    def late_write_from_a_lost_claim(self, index: int) -> None:
        ghost = self.ghosts[index % len(self.ghosts)]
        assert not self._owns(ghost)  # a dropped claim is never held again
        end = RunEnd(self.now, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE)
        plan = Settlement(ItemState.DONE, process_started=True, run_end=end)
        before = self._current(ghost.id)
        assert self.store.write_transition(settle(ghost, plan, at=self.now)) is False
        assert self.store.renew(ghost, now=self.now, terms=TERMS).outcome is RenewOutcome.LOST
        assert self._current(ghost.id) == before

    @rule()
    def reap(self) -> None:
        services.reap_expired(self.store, now=self.now, max_requeues=2)

    @rule(
        item_index=st.integers(min_value=0), action=st.sampled_from(["cancel", "release", "queue"])
    )
    def operator(self, item_index: int, action: str) -> None:
        if not self.created:
            return
        item_id = item_index % self.created + 1
        act = {
            "cancel": services.cancel_item,
            "release": services.release_item,
            "queue": services.queue_item,
        }[action]
        with contextlib.suppress(IllegalTransitionError):
            act(self.store, item_id, now=self.now)

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


class PostgresClaimsMachine(ClaimsMachine):
    """The same machine on PostgreSQL: one schema for the test, emptied for each example."""

    url: str = ""

    def open_store(self) -> Store:
        store = PostgresStore.open(self.url, create=True)
        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(
                "TRUNCATE items, item_events, sessions, runs, workers RESTART IDENTITY CASCADE"
            )
        return store

    def teardown(self) -> None:
        self.store.close()


PostgresClaimsMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None
)


def test_claims_under_random_interleavings_on_postgresql() -> None:
    with postgres_schema() as url:
        PostgresClaimsMachine.url = url
        run_state_machine_as_test(
            PostgresClaimsMachine, settings=PostgresClaimsMachine.TestCase.settings
        )
