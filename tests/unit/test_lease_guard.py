"""The lease guard's decisions and the patient store's retries, on an injected monotonic clock
with a fake agent and a fake store (docs/claims.md#the-lease-guard)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from wrighty.domain.claims import (
    LeaseTerms,
    RenewOutcome,
    RenewResult,
    Settlement,
    settle,
)
from wrighty.domain.leases import stop_margin
from wrighty.domain.model import Change, Item, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.errors import StoreError
from wrighty.store import deadlines
from wrighty.worker.lease import LeaseGuard, Reading, lease_end
from wrighty.worker.patient import LeaseGone, PatientStore

NOW = datetime(2026, 12, 2, 16, 0, tzinfo=UTC)
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=3600)
MARGIN = stop_margin(60)  # 10 s
CLAIMED = Item(
    id=7, title="t", body="b", agent=None, timeout_seconds=None, workspace=None,
    state=ItemState.RUNNING, generation=3, claimed_by="w-1",
    lease_expires_at=NOW + timedelta(seconds=60), queued_at=NOW, not_before=None,
    reason_code=None, reason=None, next_action=None, crash_retries=0, requeues=0,
    created_at=NOW, updated_at=NOW,
)  # fmt: skip


class Clock:
    """A monotonic clock that moves only when told; its wall clock moves with it."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def now(self) -> datetime:
        return NOW + timedelta(seconds=self.t - 1000.0)

    def sleep(self, seconds: float) -> None:
        self.t += seconds


class Agent:
    def __init__(self) -> None:
        self.exited = threading.Event()
        self.stops: list[float] = []

    def stop(self, grace_seconds: float) -> None:
        self.stops.append(grace_seconds)


def guarded(clock: Clock, lost: list[str] | None = None) -> LeaseGuard:
    """A guard for a claim taken at the clock's reading, with the store's 60 s lease."""
    reading = Reading(clock(), clock.now())
    told = lost if lost is not None else []
    return LeaseGuard(
        CLAIMED, ends_at=lease_end(reading, NOW + timedelta(seconds=60)), margin=MARGIN,
        on_lost=told.append, clock=clock,
    )  # fmt: skip


# -- the guard ------------------------------------------------------------------------------


def test_the_margin_is_a_quarter_of_the_lease_at_most_ten_seconds() -> None:
    assert (stop_margin(4), stop_margin(40), stop_margin(60), stop_margin(3600)) == (1, 10, 10, 10)


def test_the_lease_end_is_the_reading_before_the_call_plus_what_the_store_gave() -> None:
    reading = Reading(500.0, NOW)
    assert lease_end(reading, NOW + timedelta(seconds=60)) == 560.0


def test_the_guard_stops_the_agent_a_margin_before_the_lease_ends_and_gives_the_claim_up() -> None:
    clock, lost, agent = Clock(), [], Agent()
    guard = guarded(clock, lost)
    assert guard.attach(agent)
    clock.t += 60 - MARGIN - 0.001
    assert not guard.check()
    assert (agent.stops, lost) == ([], [])
    clock.t += 0.001
    assert guard.check()
    assert agent.stops == [MARGIN / 2]  # SIGTERM, half the margin, SIGKILL: inside the margin
    assert guard.lost
    assert lost == ["the lease was not renewed in time"]
    guard.check()  # once
    assert (len(agent.stops), len(lost)) == (1, 1)


def test_a_renewal_moves_the_moment_and_never_back() -> None:
    clock, agent = Clock(), Agent()
    guard = guarded(clock)
    guard.attach(agent)
    clock.t += 20
    guard.extend(Reading(clock(), clock.now()), clock.now() + timedelta(seconds=60))
    assert guard.stop_at == clock() + 60 - MARGIN
    guard.extend(Reading(clock(), clock.now()), clock.now() + timedelta(seconds=5))
    assert guard.stop_at == clock() + 60 - MARGIN  # a shorter lease is not taken
    clock.t += 60 - MARGIN - 1
    assert not guard.check()
    clock.t += 1
    assert guard.check()
    assert agent.stops


def test_the_cause_is_the_stores_last_error_or_the_call_it_did_not_answer() -> None:
    clock, lost = Clock(), []
    guard = guarded(clock, lost)
    guard.waiting_on = "renew"
    clock.t += 60
    guard.check()
    assert lost == ["renew: the store did not answer before the lease's end"]
    clock, lost = Clock(), []
    guard = guarded(clock, lost)
    guard.trouble = "connection refused"
    clock.t += 60
    guard.check()
    assert lost == ["connection refused"]


def test_an_agent_started_after_the_guard_fired_is_refused() -> None:
    clock = Clock()
    guard = guarded(clock)
    clock.t += 60
    guard.check()
    assert not guard.attach(Agent())
    assert not guard.outcome_known()


def test_an_agent_that_ended_on_its_own_keeps_its_outcome_and_its_leftovers_are_stopped() -> None:
    clock, lost, agent = Clock(), [], Agent()
    guard = guarded(clock, lost)
    guard.attach(agent)
    agent.exited.set()  # the run's thread has not looked yet (blocked in a store call)
    clock.t += 60
    assert guard.check()
    assert (guard.lost, guard.settling, lost) == (False, True, [])
    assert agent.stops == [MARGIN / 2]  # what it left behind
    assert guard.outcome_known()


def test_a_known_outcome_is_not_given_up_at_the_moment() -> None:
    clock, lost = Clock(), []
    guard = guarded(clock, lost)
    assert guard.outcome_known()
    clock.t += 60
    guard.check()
    assert (guard.lost, lost) == (False, [])


def test_a_check_after_a_known_outcome_is_watched_again_and_given_up_at_the_moment() -> None:
    clock, lost, agent, check = Clock(), [], Agent(), Agent()
    guard = guarded(clock, lost)
    guard.attach(agent)
    agent.exited.set()
    assert guard.outcome_known()  # the agent succeeded: its checks run under the claim
    assert guard.attach_check(check)
    assert not guard.settling
    clock.t += 60
    guard.check()
    assert guard.lost
    assert lost
    assert check.stops == [MARGIN / 2]
    assert agent.stops == []
    assert not guard.outcome_known()


def test_no_check_starts_once_the_moment_has_come() -> None:
    clock = Clock()
    guard = guarded(clock)
    assert guard.outcome_known()
    clock.t += 60
    guard.check()  # a known outcome: not given up, but no more time to run checks
    assert not guard.lost
    assert not guard.attach_check(Agent())


def test_the_renew_deadline_covers_the_checks_time_limits() -> None:
    terms = dataclasses.replace(TERMS, checks_seconds=600)
    assert terms.renew_deadline(NOW, None) == NOW + timedelta(seconds=3600 + 600 + 60)
    assert TERMS.renew_deadline(NOW, 100) == NOW + timedelta(seconds=100 + 60)
    with pytest.raises(ValueError, match="checks' time limits"):
        dataclasses.replace(TERMS, checks_seconds=float("nan"))


def test_the_guards_thread_fires_without_being_asked() -> None:
    """The thread, on the real clock: a lease that has already ended fires at once."""
    agent = Agent()
    fired = threading.Event()
    guard = LeaseGuard(CLAIMED, ends_at=0.0, margin=MARGIN, on_lost=lambda _: fired.set())
    guard.attach(agent)
    guard.start()
    assert fired.wait(10)
    assert agent.stops == [MARGIN / 2]


# -- the patient store ----------------------------------------------------------------------


class FakeStore:
    """Answers each call from a script: a value, an exception to raise, or a callable."""

    def __init__(self, **script: list[Any]) -> None:
        self.script = script
        self.deadlines: list[float | None] = []
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            self.deadlines.append(getattr(deadlines._local, "at", None))
            answers = self.script[name]
            answer = answers.pop(0) if len(answers) > 1 else answers[0]
            if isinstance(answer, Exception):
                raise answer
            return answer(*args, **kwargs) if callable(answer) else answer

        return call


def patient(
    store: FakeStore, clock: Clock, guard: LeaseGuard, events: list[dict[str, Any]],
    stop: threading.Event | None = None,
) -> PatientStore:  # fmt: skip
    return PatientStore(
        store, guard=guard, now=clock.now, stop_requested=stop or threading.Event(),  # type: ignore[arg-type]
        emit=lambda name, **fields: events.append({"event": name, **fields}),
        sleep=clock.sleep, clock=clock,
    )  # fmt: skip


DOWN = StoreError("the database is unreachable")


def test_each_call_gets_half_of_what_is_left_until_the_moment_never_past_it() -> None:
    clock, events = Clock(), []
    guard = guarded(clock)
    moment = guard.stop_at  # 50 s from now
    clock.t = moment - 1.5  # at least a second, never past the moment
    store = FakeStore(get_item=[DOWN, DOWN, CLAIMED])
    assert patient(store, clock, guard, events).get_item(7) == CLAIMED
    assert store.deadlines == [moment - 0.5, moment - 0.25, moment]
    assert [e["event"] for e in events] == ["store-unreachable", "store-unreachable"]
    clock, events = Clock(), []
    guard = guarded(clock)
    store = FakeStore(get_item=[CLAIMED])
    patient(store, clock, guard, events).get_item(7)
    assert store.deadlines == [clock() + 25]


def test_a_store_that_stays_down_is_retried_until_the_moment_then_the_claim_is_given_up() -> None:
    clock, events, lost, agent = Clock(), [], [], Agent()
    guard = guarded(clock, lost)
    guard.attach(agent)
    store = FakeStore(renew=[DOWN])
    with pytest.raises(LeaseGone, match="unreachable") as gone:
        patient(store, clock, guard, events).renew(CLAIMED, terms=TERMS)
    assert not gone.value.pending
    assert clock() == guard.stop_at  # the last wait ended at the moment, not after it
    assert agent.stops == [MARGIN / 2]
    assert lost == ["the database is unreachable"]
    assert {e["event"] for e in events} == {"store-unreachable"}


def test_a_renewal_measures_the_lease_from_a_reading_before_its_call() -> None:
    clock, events = Clock(), []
    guard = guarded(clock)

    def renew(claimed: Item, *, now: datetime, terms: LeaseTerms) -> RenewResult:
        clock.t += 3  # the call takes 3 s: the lease is measured from before it
        return RenewResult(RenewOutcome.RENEWED, now + timedelta(seconds=60))

    clock.t += 20
    started = clock()
    patient(FakeStore(renew=[renew]), clock, guard, events).renew(CLAIMED, terms=TERMS)
    assert guard.stop_at == started + 60 - MARGIN


def test_a_call_that_returns_after_the_guard_fired_gives_the_claim_up() -> None:
    clock, events, agent = Clock(), [], Agent()
    guard = guarded(clock)
    guard.attach(agent)

    def slow(*args: Any, **kwargs: Any) -> RenewResult:
        clock.t += 61
        guard.check()  # what the guard's thread does meanwhile
        return RenewResult(RenewOutcome.RENEWED, NOW + timedelta(seconds=121))

    with pytest.raises(LeaseGone, match="renew: the store did not answer"):
        patient(FakeStore(renew=[slow]), clock, guard, events).renew(CLAIMED, terms=TERMS)
    assert agent.stops


def done_change() -> Change:
    end = RunEnd(NOW, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, exit_code=0)
    return settle(CLAIMED, Settlement(ItemState.DONE, True, run_end=end), at=NOW)


class ClockStop(threading.Event):
    """The worker's stop request, waited on by the injected clock."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock

    def wait(self, timeout: float | None = None) -> bool:
        self.clock.t += timeout or 0
        return self.is_set()


def test_a_known_outcome_is_recorded_past_the_lease_saying_so_once() -> None:
    clock, events = Clock(), []
    guard = guarded(clock)
    guard.outcome_known()
    store = FakeStore(write_transition=[DOWN] * 40 + [True])
    written = patient(store, clock, guard, events, ClockStop(clock)).write_transition(done_change())
    assert written
    assert clock() >= guard.stop_at + 30  # it went on well past the lease
    names = [e["event"] for e in events]
    assert names.count("settle-pending") == 1
    pending = events[names.index("settle-pending")]
    assert (pending["item_id"], pending["cause"]) == (7, "the database is unreachable")
    assert names[-1] == "store-unreachable"
    assert store.deadlines[-1] is None  # past the moment: the store's own default deadline


def test_a_known_outcome_is_given_up_when_the_worker_is_stopped() -> None:
    clock, events = Clock(), []
    guard = guarded(clock)
    guard.outcome_known()
    stop = threading.Event()
    clock.t += 60
    store = FakeStore(write_transition=[DOWN])
    stop.set()
    with pytest.raises(LeaseGone) as gone:
        patient(store, clock, guard, events, stop).write_transition(done_change())
    assert gone.value.pending


def test_an_ambiguous_settlement_that_landed_counts_as_settled() -> None:
    clock, events = Clock(), []
    guard = guarded(clock)
    guard.outcome_known()
    change = done_change()
    # The first try's commit landed but its answer was lost; the retry is refused.
    store = FakeStore(write_transition=[DOWN, False], get_item=[change.after])
    assert patient(store, clock, guard, events).write_transition(change)


def test_a_refused_settlement_after_a_reap_is_not_mistaken_for_ours() -> None:
    clock, events = Clock(), []
    guard = guarded(clock)
    guard.outcome_known()
    change = done_change()
    reaped = dataclasses.replace(
        change.after, state=ItemState.RETRY_SCHEDULED, reason_code="worker-lost"
    )
    store = FakeStore(write_transition=[DOWN, False], get_item=[reaped])
    assert not patient(store, clock, guard, events).write_transition(change)
    store = FakeStore(write_transition=[False], get_item=[change.after])
    assert not patient(store, clock, guard, events).write_transition(change)
    assert "get_item" not in store.calls  # nothing failed: a refusal is a refusal
