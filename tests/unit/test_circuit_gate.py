"""The worker's side of a provider circuit, on a real SQLite store with an injected clock: when
a worker may claim, who probes, and what a run's end does to the circuit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FakeClock
from tests.store.test_contract import new_item
from wrighty.domain.claims import ClaimRequest, LeaseTerms, Settlement, settle
from wrighty.domain.model import Change, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.retry import UsagePolicy
from wrighty.domain.states import ItemState
from wrighty.store.sqlite import SqliteStore
from wrighty.worker.circuit import CircuitGate

NAME = "agent:claude@inst-a"
POLICY = UsagePolicy("retry", initial_seconds=60, max_seconds=3600, reset_grace_seconds=0)
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(current=datetime(2026, 12, 1, 9, 0, tzinfo=UTC))


@pytest.fixture
def store(tmp_path: Path):
    opened = SqliteStore.open(tmp_path / "w.db", create=True)
    yield opened
    opened.close()


class Worker:
    """One worker's gate and the events it told."""

    def __init__(self, store: SqliteStore, clock: FakeClock, worker_id: str) -> None:
        self.id = worker_id
        self.events: list[dict[str, Any]] = []
        self.store = store
        self.clock = clock
        self.gate = CircuitGate(
            store, NAME, worker_id=worker_id, policy=POLICY, now=clock, emit=self._emit
        )

    def _emit(self, event: str, **fields: Any) -> None:
        self.events.append({"event": event, **fields})

    def named(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == event]

    def claim(self) -> Any:
        """The claim loop's pass: ask the gate, claim, tell the gate; the claim or None."""
        if not self.gate.admit():
            return None
        taken = self.store.acquire(
            ClaimRequest(self.id, "inst-a", TERMS, "claude"), now=self.clock()
        )
        self.gate.claimed(taken)
        return taken

    def end(self, taken: Any, outcome: OutcomeClass, *, retry_in: float | None = None) -> Change:
        """Settle the claimed item as ``outcome`` (a retry in ``retry_in`` seconds) and tell
        the gate."""
        end = RunEnd(self.clock(), outcome, Confidence.AUTHORITATIVE, exit_code=1)
        if retry_in is None:
            to = ItemState.DONE if outcome is OutcomeClass.SUCCEEDED else ItemState.NEEDS_ATTENTION
            settlement = Settlement(to, process_started=True, run_end=end)
        else:
            settlement = Settlement(
                ItemState.RETRY_SCHEDULED,
                process_started=True,
                run_end=end,
                reason_code=outcome.value,
                not_before=self.clock() + timedelta(seconds=retry_in),
                counts_as_usage_retry=True,
            )
        change = settle(taken.item, settlement, at=self.clock())
        assert self.store.write_transition(change)
        self.gate.settled(change, outcome, run_started_at=taken.item.claimed_at, hint=None)
        return change


def queue(store: SqliteStore, clock: FakeClock, count: int) -> list[int]:
    return [
        store.create_item(new_item(f"item {n}", queued=True), at=clock(), actor="op").id
        for n in range(count)
    ]


def test_a_refusal_holds_every_worker_until_the_retry_is_due(
    store: SqliteStore, clock: FakeClock
) -> None:
    first, second = queue(store, clock, 2)
    a, b = Worker(store, clock, "w-a"), Worker(store, clock, "w-b")
    taken = a.claim()
    assert taken.item.id == first
    a.end(taken, OutcomeClass.RATE_LIMITED, retry_in=300)
    circuit = store.get_circuit(NAME)
    assert (circuit.until, circuit.failures) == (clock() + timedelta(seconds=300), 1)
    assert [e["until"] for e in a.named("circuit-open")] == ["2026-12-01T09:05:00.000Z"]
    assert b.claim() is None  # the second item stays queued
    assert a.claim() is None
    assert store.get_item(second).state is ItemState.QUEUED
    assert len(b.named("circuit-wait")) == 1
    b.claim()
    assert len(b.named("circuit-wait")) == 1  # told once per opening


def test_half_open_lets_exactly_one_probe_through_and_the_due_retry_goes_first(
    store: SqliteStore, clock: FakeClock
) -> None:
    first, second = queue(store, clock, 2)
    a, b = Worker(store, clock, "w-a"), Worker(store, clock, "w-b")
    a.end(a.claim(), OutcomeClass.RATE_LIMITED, retry_in=300)
    clock.advance(300)
    probe = b.claim()
    assert probe.item.id == first  # the refused item, due now, is the probe
    assert len(b.named("circuit-half-open")) == 1
    assert [e["item_id"] for e in b.named("circuit-probe")] == [first]
    assert a.claim() is None  # one probe at a time, across workers
    assert b.claim() is None  # and on the prober itself
    clock.advance(3600)  # a long probe run keeps its hold while its item runs
    assert a.claim() is None
    b.end(probe, OutcomeClass.SUCCEEDED)
    assert store.get_circuit(NAME).until is None
    assert b.named("circuit-closed")
    assert a.claim().item.id == second  # the queue flows again


def test_a_refused_probe_opens_the_circuit_again(store: SqliteStore, clock: FakeClock) -> None:
    queue(store, clock, 2)
    a = Worker(store, clock, "w-a")
    a.end(a.claim(), OutcomeClass.PROVIDER_UNAVAILABLE, retry_in=60)
    clock.advance(60)
    probe = a.claim()
    a.end(probe, OutcomeClass.PROVIDER_UNAVAILABLE, retry_in=120)
    circuit = store.get_circuit(NAME)
    assert (circuit.until, circuit.failures, circuit.probe_by) == (
        clock() + timedelta(seconds=120),
        2,
        None,
    )
    assert a.claim() is None


def test_a_probe_with_nothing_to_claim_is_given_back(store: SqliteStore, clock: FakeClock) -> None:
    [only] = queue(store, clock, 1)
    a, b = Worker(store, clock, "w-a"), Worker(store, clock, "w-b")
    a.end(a.claim(), OutcomeClass.RATE_LIMITED)  # refused for good: needs-attention
    circuit = store.get_circuit(NAME)
    assert circuit.until is not None  # open for the policy's first backoff, jitter included
    assert clock() + timedelta(seconds=48) <= circuit.until <= clock() + timedelta(seconds=60)
    clock.current = circuit.until
    assert a.claim() is None  # took the probe, found nothing, gave it back
    assert store.get_circuit(NAME).probe_by is None
    new = queue(store, clock, 1)
    assert b.claim().item.id == new[0]  # another worker may probe at once
    assert store.get_item(only).state is ItemState.NEEDS_ATTENTION


def test_a_run_that_began_before_the_refusal_does_not_close_the_circuit(
    store: SqliteStore, clock: FakeClock
) -> None:
    queue(store, clock, 3)
    a, b = Worker(store, clock, "w-a"), Worker(store, clock, "w-b")
    long_run = b.claim()
    clock.advance(10)
    a.end(a.claim(), OutcomeClass.RATE_LIMITED, retry_in=300)
    clock.advance(10)
    b.end(long_run, OutcomeClass.SUCCEEDED)  # its requests went out before the limit
    assert store.get_circuit(NAME).until is not None
    assert a.claim() is None


def test_other_endings_of_a_probe_give_it_back(store: SqliteStore, clock: FakeClock) -> None:
    queue(store, clock, 2)
    a, b = Worker(store, clock, "w-a"), Worker(store, clock, "w-b")
    a.end(a.claim(), OutcomeClass.RATE_LIMITED, retry_in=60)
    clock.advance(60)
    probe = a.claim()
    a.end(probe, OutcomeClass.AGENT_FAILURE)  # the provider's answer is unknown
    circuit = store.get_circuit(NAME)
    assert (circuit.until is not None, circuit.probe_by) == (True, None)
    assert b.claim() is not None  # the next probe


def test_a_late_refusal_during_a_probe_never_lets_a_second_probe_through(
    store: SqliteStore, clock: FakeClock
) -> None:
    queue(store, clock, 3)
    a, b, c = (Worker(store, clock, w) for w in ("w-a", "w-b", "w-c"))
    early = b.claim()  # launched while the circuit was closed
    a.end(a.claim(), OutcomeClass.RATE_LIMITED, retry_in=60)
    clock.advance(60)
    probe = a.claim()
    assert probe is not None
    b.end(early, OutcomeClass.RATE_LIMITED, retry_in=120)  # refused late, during the probe
    circuit = store.get_circuit(NAME)
    assert (circuit.probe_by, circuit.probe_item) == ("w-a", probe.item.id)
    clock.advance(120)  # past the new opening: half-open again, but the probe still runs
    assert c.claim() is None
    assert b.claim() is None
    a.end(probe, OutcomeClass.SUCCEEDED)
    assert store.get_circuit(NAME).until is None
    assert c.claim() is not None
