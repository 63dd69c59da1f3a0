"""Random interleavings of workers sharing one provider circuit, against a real store.

Workers read the circuit, decide with the domain's functions (wrighty/domain/circuits.py) and
write back with the store's compare-and-set, from reads that other workers' writes may have
made stale; they claim real items, launch runs, and end them answered, refused or neither way;
the clock advances and the reaper takes items whose lease ran out. The machine keeps its own
model of the row and checks every write against it: a write lands exactly when the version it
was read at is the stored one, and a refused write changes nothing.

After every step: the store holds the model's circuit, with the probe's running fact read from
the items; every run launched since the circuit last opened or closed is allowed by the circuit
as it stands (a run launched while closed finds it still closed, a probe run finds itself the
circuit's probe, so at most one probe runs); no launch happens while the circuit is open; and
after a closing lands the circuit is closed.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
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
from wrighty.domain.circuits import (
    Circuit,
    CircuitState,
    closed,
    give_back_probe,
    opened,
    probing,
    take_probe,
)
from wrighty.domain.claims import ClaimRequest, LeaseTerms, Settlement, settle
from wrighty.domain.model import Item, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.services import reaper
from wrighty.store.port import Store
from wrighty.store.sqlite import SqliteStore

NAME = "account:team"
BYSTANDER = "agent:claude@inst-b"  # another circuit: no write to NAME may touch it
WORKERS = ["w1", "w2", "w3"]
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=300)
PROBE_LEASE = timedelta(seconds=30)
DELAYS = st.sampled_from([1, 30, 60, 300])
WORKER_INDEX = st.integers(min_value=0, max_value=len(WORKERS) - 1)


def pick(workers: list[str], index: int) -> str:
    return workers[index % len(workers)]


@dataclass(frozen=True)
class Launch:
    """A run a worker launched: under which claim, how it was allowed, and in which episode
    (the circuit's openings and closings that had landed by then)."""

    claimed: Item
    as_probe: bool
    episode: int


class CircuitMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = self.open_store()
        self.now = START
        self.model = Circuit(NAME)  # what the row must hold (version 0: no row)
        self.episode = 0  # landed openings and closings
        self.seen: dict[str, Circuit] = {w: Circuit(NAME) for w in WORKERS}  # each one's read
        self.pending: dict[str, Item] = {}  # claimed while closed, not launched yet
        self.launched: dict[str, Launch] = {}
        self.items = 0
        self.bystander = Circuit(BYSTANDER)

    def open_store(self) -> Store:
        self.directory = Path(tempfile.mkdtemp(prefix="wrighty-circuits-"))
        return SqliteStore.open(self.directory / "wrighty.db")

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    # -- helpers ----------------------------------------------------------------------------

    def _read(self, worker: str) -> Circuit:
        self.seen[worker] = self.store.get_circuit(NAME)
        return self.seen[worker]

    def _write(self, worker: str, before: Circuit, after: Circuit) -> bool:
        """One compare-and-set; it must land exactly when ``before`` is the stored version."""
        stored = self.store.get_circuit(NAME)
        landed = self.store.write_circuit(before, after, at=self.now)
        assert landed == (before.version == self.model.version)
        if landed:
            self.model = dataclasses.replace(after, version=before.version + 1, probe_running=False)
        else:
            assert self.store.get_circuit(NAME) == stored
        self._read(worker)  # after a refusal a worker reads again; after a landing it knows
        return landed

    def _until_landed(self, worker: str, change: Callable[[Circuit], Circuit]) -> None:
        """A worker's write loop: first from its last read (stale, maybe), then from a fresh
        read, which nothing can pass here before the write."""
        if not self._write(worker, self.seen[worker], change(self.seen[worker])):
            assert self._write(worker, self.seen[worker], change(self.seen[worker]))

    def _owns(self, claimed: Item) -> bool:
        item = self.store.get_item(claimed.id)
        assert item is not None
        return (
            item.state is ItemState.RUNNING
            and item.generation == claimed.generation
            and item.claimed_by == claimed.claimed_by
        )

    def _settle(
        self,
        claimed: Item,
        to_state: ItemState,
        *,
        started: bool,
        not_before: datetime | None = None,
    ) -> None:
        """End the claim, if the worker still holds it (the reaper may have taken it)."""
        owned = self._owns(claimed)
        end = RunEnd(self.now, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE)
        plan = Settlement(to_state, process_started=started, run_end=end, not_before=not_before)
        assert self.store.write_transition(settle(claimed, plan, at=self.now)) == owned

    def _claim(self, worker: str) -> Item | None:
        taken = self.store.acquire(
            ClaimRequest(worker, "inst-a", TERMS, default_agent="claude"), now=self.now
        )
        return taken.item if taken is not None else None

    def _launch(self, worker: str, claimed: Item, *, as_probe: bool) -> None:
        """The moment an agent would start: the circuit as stored must allow it."""
        circuit = self.store.get_circuit(NAME)
        assert circuit.state(self.now) is not CircuitState.OPEN
        self.launched[worker] = Launch(claimed, as_probe, self.episode)
        self._check_launch(worker, self.launched[worker], circuit)

    def _check_launch(self, worker: str, launch: Launch, circuit: Circuit) -> None:
        state = circuit.state(self.now)
        if not launch.as_probe:
            assert state is CircuitState.CLOSED
            return
        assert state is CircuitState.HALF_OPEN
        assert (circuit.probe_by, circuit.probe_item) == (worker, launch.claimed.id)
        assert circuit.probe_running
        assert circuit.probe_held(self.now)

    def _idle(self, worker: str) -> bool:
        return worker not in self.pending and worker not in self.launched

    # -- rules ------------------------------------------------------------------------------

    def _idle_workers(self) -> list[str]:
        return [w for w in WORKERS if self._idle(w)]

    def _probe_holders(self) -> list[str]:
        """Idle workers whose last read says they hold the probe and name no item yet."""
        return [
            w
            for w in self._idle_workers()
            if self.seen[w].probe_by == w and self.seen[w].probe_item is None
        ]

    @initialize(
        items=st.integers(min_value=1, max_value=3),
        open_for=st.sampled_from([None, 1, 30, 300]),
    )
    def start(self, items: int, open_for: int | None) -> None:
        """A few queued items, another circuit that stays open, and this one closed (no row)
        or opened by a refusal just now."""
        for _ in range(items):
            self.create_item()
        until = self.now + timedelta(days=1)
        after = opened(self.bystander, at=self.now, until=until, reason="other")
        assert self.store.write_circuit(self.bystander, after, at=self.now)
        self.bystander = self.store.get_circuit(BYSTANDER)
        if open_for is not None:
            until = self.now + timedelta(seconds=open_for)
            self._until_landed(
                "w1", lambda seen: opened(seen, at=self.now, until=until, reason="rate-limited")
            )
            self.episode += 1

    @precondition(lambda self: self.items < 8)
    @rule()
    def create_item(self) -> None:
        self.store.create_item(new_item(queued=True), at=self.now, actor="op")
        self.items += 1

    @rule(seconds=st.sampled_from([0, 1, 10, 29, 30, 31, 61, 300, 600]))
    def advance_clock(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @rule(worker=st.sampled_from(WORKERS))
    def look(self, worker: str) -> None:
        self._read(worker)

    @rule()
    def reap(self) -> None:
        """A worker stopped renewing (it stalled or died): its lease runs out and the reaper
        settles the claim, probe or not."""
        reaper.reap_expired(self.store, now=self.now, max_requeues=2)

    @precondition(lambda self: self._idle_workers())
    @rule(index=WORKER_INDEX)
    def claim_while_closed(self, index: int) -> None:
        worker = pick(self._idle_workers(), index)
        if self._read(worker).state(self.now) is CircuitState.CLOSED:
            claimed = self._claim(worker)
            if claimed is not None:
                self.pending[worker] = claimed

    @precondition(lambda self: self.pending)
    @rule(index=WORKER_INDEX)
    def launch_or_give_up(self, index: int) -> None:
        """Before launching a claim taken while closed, a worker reads the circuit again: if
        it opened meanwhile the claim goes back untouched."""
        worker = pick(sorted(self.pending), index)
        claimed = self.pending.pop(worker)
        if not self._owns(claimed):
            return  # reaped meanwhile
        if self._read(worker).state(self.now) is CircuitState.CLOSED:
            self._launch(worker, claimed, as_probe=False)
        else:
            self._settle(claimed, ItemState.QUEUED, started=False)

    @precondition(lambda self: self._idle_workers())
    @rule(index=WORKER_INDEX, fresh=st.booleans())
    def take_the_probe(self, index: int, fresh: bool) -> None:
        """From a fresh read, or from the worker's last one, which may be stale: the store
        decides."""
        worker = pick(self._idle_workers(), index)
        seen = self._read(worker) if fresh else self.seen[worker]
        taken = take_probe(seen, now=self.now, worker_id=worker, lease_until=self.now + PROBE_LEASE)
        if taken is not None:
            self._write(worker, seen, taken)

    @precondition(lambda self: len(self._idle_workers()) >= 2)
    @rule(index=WORKER_INDEX)
    def race_for_the_probe(self, index: int) -> None:
        """Two workers read the circuit, then each tries to take the probe from its read."""
        idle = self._idle_workers()
        first = pick(idle, index)
        second = pick([w for w in idle if w != first], index)
        reads = {worker: self._read(worker) for worker in (first, second)}
        for worker, seen in reads.items():
            taken = take_probe(
                seen, now=self.now, worker_id=worker, lease_until=self.now + PROBE_LEASE
            )
            if taken is not None:
                self._write(worker, seen, taken)

    @precondition(lambda self: self._probe_holders())
    @rule(index=WORKER_INDEX)
    def claim_the_probe_item(self, index: int) -> None:
        """The probe's holder (by its last read) claims an item and names it as the probe's;
        only if that write lands does it launch. Nothing to claim: it gives the probe back."""
        worker = pick(self._probe_holders(), index)
        seen = self.seen[worker]
        claimed = self._claim(worker)
        if claimed is None:
            self._write(worker, seen, give_back_probe(seen))
        elif self._write(worker, seen, probing(seen, item_id=claimed.id)):
            self._launch(worker, claimed, as_probe=True)
        else:
            self._settle(claimed, ItemState.QUEUED, started=False)

    @precondition(lambda self: self.launched)
    @rule(index=WORKER_INDEX)
    def run_answered(self, index: int) -> None:
        """The provider answered the run: the item is done, and the circuit closes."""
        worker = pick(sorted(self.launched), index)
        launch = self.launched.pop(worker)
        self._settle(launch.claimed, ItemState.DONE, started=True)
        self._until_landed(worker, closed)
        self.episode += 1
        after = self.store.get_circuit(NAME)
        assert after.state(self.now) is CircuitState.CLOSED
        assert after == Circuit(NAME, version=after.version)

    @precondition(lambda self: self.launched)
    @rule(index=WORKER_INDEX, delay=DELAYS)
    def run_refused(self, index: int, delay: int) -> None:
        """The provider refused the run: the item retries at its reset, and the circuit opens
        until then."""
        worker = pick(sorted(self.launched), index)
        launch = self.launched.pop(worker)
        until = self.now + timedelta(seconds=delay)
        self._settle(launch.claimed, ItemState.RETRY_SCHEDULED, started=True, not_before=until)
        self._until_landed(
            worker, lambda seen: opened(seen, at=self.now, until=until, reason="rate-limited")
        )
        self.episode += 1
        assert self.store.get_circuit(NAME).state(self.now) is CircuitState.OPEN

    @precondition(lambda self: self.launched)
    @rule(index=WORKER_INDEX)
    def run_ended_neither_way(self, index: int) -> None:
        """The run ended without the provider's word (it crashed, say): a probe goes back,
        from the worker's last read first, then from a fresh one if it still holds it."""
        worker = pick(sorted(self.launched), index)
        launch = self.launched.pop(worker)
        self._settle(launch.claimed, ItemState.NEEDS_ATTENTION, started=True)
        if not launch.as_probe:
            return
        holds = (worker, launch.claimed.id)
        seen = self.seen[worker]
        if (seen.probe_by, seen.probe_item) == holds and not self._write(
            worker, seen, give_back_probe(seen)
        ):
            seen = self.seen[worker]  # read again after the refusal
            if (seen.probe_by, seen.probe_item) == holds:
                assert self._write(worker, seen, give_back_probe(seen))

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def the_store_holds_the_model(self) -> None:
        stored = self.store.get_circuit(NAME)
        running = False
        if self.model.probe_item is not None:
            item = self.store.get_item(self.model.probe_item)
            assert item is not None
            running = item.state is ItemState.RUNNING and item.claimed_by == self.model.probe_by
        assert stored == dataclasses.replace(self.model, probe_running=running)
        assert self.store.get_circuit(BYSTANDER) == self.bystander
        listed = [self.bystander] + ([stored] if stored.version else [])
        assert self.store.list_circuits() == sorted(listed, key=lambda c: c.name)

    @invariant()
    def every_live_run_of_this_episode_is_allowed(self) -> None:
        """No run launched since the circuit last opened or closed runs against it: one
        launched while closed finds it closed, a probe finds itself the circuit's probe (so
        at most one probe runs, and nothing launched runs while the circuit is open)."""
        circuit = self.store.get_circuit(NAME)
        probes = []
        for worker, launch in self.launched.items():
            if launch.episode == self.episode and self._owns(launch.claimed):
                self._check_launch(worker, launch, circuit)
                probes += [worker] if launch.as_probe else []
        assert len(probes) <= 1


CircuitMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
test_circuits_under_random_interleavings = CircuitMachine.TestCase


def test_circuits_under_random_interleavings_on_postgresql() -> None:
    run_on_postgresql(
        CircuitMachine, settings(max_examples=40, stateful_step_count=30, deadline=None)
    )
