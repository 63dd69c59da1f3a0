"""The claim contract: acquire, renew, run records, settle, reap, release — every guard."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

from tests.conftest import FakeClock
from tests.store.test_contract import new_item
from tests.store.txhooks import InjectedFault, execute_raw, fail_after, statements_hooked
from wrighty.domain.claims import (
    ClaimRequest,
    LeaseTerms,
    Renewal,
    RenewOutcome,
    RenewResult,
    Settlement,
    settle,
)
from wrighty.domain.model import Change, Item, NewRun, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import replay, transition
from wrighty.errors import UnreadableError
from wrighty.services import items as item_service
from wrighty.services import reaper
from wrighty.store import Store
from wrighty.store.fields import to_db_time
from wrighty.store.sqlbase import Tx

LEASE = 60.0
TIMEOUT = 600.0
TERMS = LeaseTerms(lease_seconds=LEASE, default_timeout_seconds=TIMEOUT)


def request(worker: str = "w1", installation: str = "inst-a", **filters) -> ClaimRequest:
    return ClaimRequest(
        worker_id=worker,
        installation_id=installation,
        terms=TERMS,
        default_agent="claude",
        **filters,
    )


def queued(store: Store, clock: FakeClock, title: str = "t", **changes) -> Item:
    return store.create_item(new_item(title, queued=True, **changes), at=clock(), actor="op")


def acquire(store: Store, clock: FakeClock, worker: str = "w1", **kw) -> Item:
    held = store.acquire(request(worker, **kw), now=clock())
    assert held is not None
    return held.item


def start(store: Store, claimed: Item, clock: FakeClock, *, session_id: str | None = None) -> str:
    run_id = f"run-{claimed.id}-{claimed.generation}"
    run = store.start_run(
        claimed,
        NewRun(run_id, RunKind.FRESH, claimed.claimed_by or "", "inst-a", clock(), None),
    )
    assert run is not None
    assert store.record_process(claimed, run_id, pid=4242, process_started_at=123.5)
    if session_id:
        session = Session(claimed.id, "claude", session_id, "/tmp/project", "inst-a")
        assert store.record_session(claimed, session, at=clock())
    return run_id


def settlement(to: ItemState, cls: OutcomeClass, clock: FakeClock, **kw) -> Settlement:
    end = RunEnd(clock(), cls, Confidence.AUTHORITATIVE, exit_code=0)
    return Settlement(to_state=to, process_started=True, run_end=end, **kw)


# -- acquire ----------------------------------------------------------------------------------


def test_nothing_to_claim_is_none(store: Store, clock: FakeClock) -> None:
    store.create_item(new_item(), at=clock(), actor="op")  # todo: not eligible
    assert store.acquire(request(), now=clock()) is None


def test_a_claim_moves_the_item_to_running_under_a_new_generation(
    store: Store, clock: FakeClock
) -> None:
    item = queued(store, clock)
    claimed = acquire(store, clock)
    assert claimed.id == item.id
    assert (claimed.state, claimed.generation, claimed.claimed_by) == (ItemState.RUNNING, 1, "w1")
    assert claimed.lease_expires_at == clock() + timedelta(seconds=LEASE)
    assert claimed.claimed_at == clock()
    assert claimed.renew_deadline == clock() + timedelta(seconds=TIMEOUT + LEASE)
    assert store.get_item(item.id) == claimed
    last = store.list_events(item.id)[-1]
    assert (last.from_state, last.to_state, last.actor, last.generation) == (
        ItemState.QUEUED,
        ItemState.RUNNING,
        "worker:w1",
        1,
    )
    assert store.acquire(request("w2"), now=clock()) is None


def test_the_renewal_budget_uses_the_items_own_timeout(store: Store, clock: FakeClock) -> None:
    queued(store, clock, timeout_seconds=120.0)
    claimed = acquire(store, clock)
    assert claimed.renew_deadline == clock() + timedelta(seconds=120 + LEASE)


def test_oldest_queue_entry_first(store: Store, clock: FakeClock) -> None:
    first = queued(store, clock, "first")
    clock.advance(1)
    second = store.create_item(new_item("second"), at=clock(), actor="op")
    third = queued(store, clock, "third")
    # `second` enters the queue last although it was created before `third`.
    assert store.write_transition(
        transition(second, ItemState.QUEUED, at=clock.advance(1), actor="op")
    )
    order = [acquire(store, clock, f"w{n}").id for n in range(3)]
    assert order == [first.id, third.id, second.id]


def _retry_scheduled(store: Store, clock: FakeClock, *, due_in: float, session_id: str | None,
                     installation: str = "inst-a") -> Item:  # fmt: skip
    item = queued(store, clock, "crashed before")
    claimed = acquire(store, clock, "w-old", installation=installation, item_id=item.id)
    start(store, claimed, clock)
    if session_id:
        session = Session(claimed.id, "claude", session_id, "/tmp/p", installation)
        assert store.record_session(claimed, session, at=clock())
    change = settle(
        claimed,
        settlement(
            ItemState.RETRY_SCHEDULED,
            OutcomeClass.PROCESS_CRASH,
            clock,
            not_before=clock() + timedelta(seconds=due_in),
            counts_as_crash_retry=True,
        ),
        at=clock(),
    )
    assert store.write_transition(change)
    return change.after


def test_due_retries_come_before_older_fresh_work(store: Store, clock: FakeClock) -> None:
    fresh = queued(store, clock, "fresh")
    clock.advance(1)
    retry = _retry_scheduled(store, clock, due_in=30, session_id="s-1")
    assert retry.crash_retries == 1
    assert acquire(store, clock).id == fresh.id  # retry not due yet
    clock.advance(29)
    assert store.acquire(request(), now=clock()) is None
    clock.advance(1)  # not_before == now: due
    claimed = acquire(store, clock)
    assert claimed.id == retry.id
    assert claimed.generation == 2


def test_a_claim_tells_the_state_it_was_claimed_from_and_the_session(
    store: Store, clock: FakeClock
) -> None:
    fresh = queued(store, clock, "fresh")
    taken = store.acquire(request(), now=clock())
    assert taken is not None
    assert (taken.item.id, taken.claimed_from, taken.session) == (fresh.id, ItemState.QUEUED, None)
    retry = _retry_scheduled(store, clock, due_in=0, session_id="s-1")
    again = store.acquire(request("w-next"), now=clock())
    assert again is not None
    assert (again.item.id, again.claimed_from) == (retry.id, ItemState.RETRY_SCHEDULED)
    assert again.session == Session(retry.id, "claude", "s-1", "/tmp/p", "inst-a")
    assert again.session == store.get_session(retry.id)
    assert again.item == store.get_item(retry.id)


def test_a_claim_from_the_queue_brings_the_session_an_earlier_run_left(
    store: Store, clock: FakeClock
) -> None:
    retry = _retry_scheduled(store, clock, due_in=3600, session_id="s-1")
    item_service.requeue_item(store, retry.id, resume=False, now=clock())  # start over, same place
    taken = store.acquire(request(), now=clock())
    assert taken is not None
    assert (taken.claimed_from, taken.session) == (ItemState.QUEUED, store.get_session(retry.id))


def test_a_retry_with_a_local_session_stays_on_its_installation(
    store: Store, clock: FakeClock
) -> None:
    retry = _retry_scheduled(store, clock, due_in=0, session_id="s-1", installation="inst-a")
    assert store.acquire(request("w-b", installation="inst-b"), now=clock()) is None
    assert acquire(store, clock, "w-a", installation="inst-a").id == retry.id


def test_a_retry_without_a_session_id_may_go_anywhere(store: Store, clock: FakeClock) -> None:
    retry = _retry_scheduled(store, clock, due_in=0, session_id=None)
    assert acquire(store, clock, "w-b", installation="inst-b").id == retry.id


def test_claim_filters_by_item_and_agent(store: Store, clock: FakeClock) -> None:
    default = queued(store, clock, "default agent")
    codex = queued(store, clock, "codex", agent="codex")
    other = queued(store, clock, "other")
    assert acquire(store, clock, item_id=other.id).id == other.id
    assert acquire(store, clock, agent="codex").id == codex.id
    assert store.acquire(request(agent="gemini"), now=clock()) is None
    assert acquire(store, clock, agent="claude").id == default.id


# -- renew ------------------------------------------------------------------------------------


Renew = Callable[..., RenewResult]


def alone(store: Store, claimed: Item, *, now: datetime, terms: LeaseTerms) -> RenewResult:
    return store.renew(claimed, now=now, terms=terms)


def among_others(store: Store, claimed: Item, *, now: datetime, terms: LeaseTerms) -> RenewResult:
    """Renewed in a worker's batch, between two claims of another worker's."""
    others = [queued(store, FakeClock(now), f"other {n}") for n in range(2)]
    held = [acquire(store, FakeClock(now), "w-other", item_id=item.id) for item in others]
    batch = [
        Renewal(held[0], now, terms),
        Renewal(claimed, now, terms),
        Renewal(held[1], now, terms),
    ]
    results = store.renew_many(batch)
    assert [r.outcome for r in results[::2]] == [RenewOutcome.RENEWED] * 2
    return results[1]


@pytest.fixture(params=[alone, among_others], ids=["alone", "batched"])
def renew(request: pytest.FixtureRequest) -> Renew:
    return request.param  # type: ignore[no-any-return]


def test_renewal_extends_the_lease_from_now(store: Store, clock: FakeClock, renew: Renew) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    clock.advance(20)
    result = renew(store, claimed, now=clock(), terms=TERMS)
    assert result.outcome is RenewOutcome.RENEWED
    assert result.lease_expires_at == clock() + timedelta(seconds=LEASE)
    assert store.get_item(claimed.id).lease_expires_at == result.lease_expires_at  # type: ignore[union-attr]


def test_renewal_stops_at_the_budget_edge(store: Store, clock: FakeClock, renew: Renew) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    deadline = claimed.renew_deadline
    assert deadline is not None
    clock.current = deadline - timedelta(seconds=LEASE)  # now + lease == deadline exactly
    edge = renew(store, claimed, now=clock(), terms=TERMS)
    assert (edge.outcome, edge.lease_expires_at) == (RenewOutcome.RENEWED, deadline)
    clock.advance(1)
    spent = renew(store, claimed, now=clock(), terms=TERMS)
    assert (spent.outcome, spent.lease_expires_at) == (RenewOutcome.BUDGET_EXHAUSTED, deadline)


def test_a_renewal_past_the_edge_is_capped_at_the_deadline(
    store: Store, clock: FakeClock, renew: Renew
) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    clock.current = claimed.renew_deadline - timedelta(seconds=LEASE / 2)  # type: ignore[operator]
    result = renew(store, claimed, now=clock(), terms=TERMS)
    assert (result.outcome, result.lease_expires_at) == (
        RenewOutcome.RENEWED,
        claimed.renew_deadline,
    )


def test_a_renewal_never_shortens_a_lease(store: Store, clock: FakeClock, renew: Renew) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    result = renew(store, claimed, now=clock() - timedelta(seconds=30), terms=TERMS)
    assert result.lease_expires_at == claimed.lease_expires_at


@pytest.mark.parametrize(
    "stale", [{"generation": 0}, {"claimed_by": "w-impostor"}], ids=["generation", "claimed_by"]
)
def test_a_renewal_by_a_non_owner_is_lost_and_changes_nothing(
    store: Store, clock: FakeClock, stale: dict[str, object], renew: Renew
) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    clock.advance(30)
    result = renew(store, dataclasses.replace(claimed, **stale), now=clock(), terms=TERMS)
    assert result.outcome is RenewOutcome.LOST
    assert store.get_item(claimed.id) == claimed


def test_a_batch_tells_each_claim_its_own_outcome(store: Store, clock: FakeClock) -> None:
    """Renewed, out of budget, lost, and an item's earlier claim beside its current one: each
    gets the answer it would get alone, in the order asked."""
    fresh, spent, gone = (queued(store, clock, title) for title in ("fresh", "spent", "gone"))
    held = {item.title: acquire(store, clock, item_id=item.id) for item in (fresh, spent, gone)}
    clock.advance(20)
    edge = held["spent"].renew_deadline
    assert edge is not None
    assert renew_until_spent(store, held["spent"], edge)
    earlier = dataclasses.replace(held["fresh"], generation=held["fresh"].generation - 1)
    results = store.renew_many(
        [
            Renewal(held["fresh"], clock(), TERMS),
            Renewal(held["spent"], clock(), TERMS),
            Renewal(dataclasses.replace(held["gone"], claimed_by="w-impostor"), clock(), TERMS),
            Renewal(earlier, clock(), TERMS),
        ]
    )
    assert [r.outcome for r in results] == [
        RenewOutcome.RENEWED, RenewOutcome.BUDGET_EXHAUSTED, RenewOutcome.LOST, RenewOutcome.LOST,
    ]  # fmt: skip
    assert results[0].lease_expires_at == clock() + timedelta(seconds=LEASE)
    assert results[1].lease_expires_at == edge
    assert store.get_item(gone.id) == held["gone"]  # the impostor changed nothing


def renew_until_spent(store: Store, claimed: Item, edge: datetime) -> bool:
    """Carry the claim's lease to its renewal deadline: its next renewal finds it spent."""
    return store.renew(claimed, now=edge, terms=TERMS).lease_expires_at == edge


# -- runs and sessions under a claim -----------------------------------------------------------


def test_runs_and_sessions_are_recorded_only_under_the_held_claim(
    store: Store, clock: FakeClock
) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    run_id = start(store, claimed, clock, session_id="sess-1")
    [run] = store.list_runs(claimed.id)
    assert (run.run_id, run.attempt, run.generation, run.pid) == (run_id, 1, 1, 4242)
    assert run.process_started_at == 123.5
    session = store.get_session(claimed.id)
    assert session is not None
    assert session.session_id == "sess-1"
    stale = dataclasses.replace(claimed, generation=0)
    late = NewRun("run-late", RunKind.FRESH, "w1", "inst-a", clock(), None)
    assert store.start_run(stale, late) is None
    assert store.record_process(stale, run_id, pid=1, process_started_at=1.0) is False
    assert (
        store.record_session(
            stale, Session(claimed.id, "codex", "evil", "/x", "inst-b"), at=clock()
        )
        is False
    )
    assert [r.run_id for r in store.list_runs(claimed.id)] == [run_id]
    assert store.list_runs(claimed.id)[0].pid == 4242
    assert store.get_session(claimed.id) == session


@pytest.mark.parametrize(
    "moved",
    [
        {"state": ItemState.NEEDS_ATTENTION},
        {"generation": 2},
        {"claimed_by": "w2"},
    ],
    ids=["state", "generation", "claimed_by"],
)
def test_a_claim_that_moved_on_takes_no_write_from_its_old_holder(
    store: Store, clock: FakeClock, moved: dict[str, object]
) -> None:
    """Each write under a claim checks the item's state, generation and owner itself: with any
    one of them changed by another writer, the old holder's renewal, run records, session,
    agent report and settle all change nothing (invariant 2)."""
    queued(store, clock)
    claimed = acquire(store, clock)
    run = NewRun("r-1", RunKind.FRESH, "w1", "inst-a", clock(), None, claim_token="tok-1")
    assert store.start_run(claimed, run) is not None
    # Another writer changes exactly one of the three; the domain would not allow all of
    # these moves, so the change is made by hand: the store's guards alone must hold.
    other = dataclasses.replace(claimed, **moved, updated_at=clock.advance(1))
    claim_event = store.list_events(claimed.id)[-1]
    event = dataclasses.replace(claim_event, at=clock(), actor="another writer",
                                generation=other.generation, to_state=other.state)  # fmt: skip
    assert store.write_transition(Change(claimed, other, event))
    runs, events = store.list_runs(claimed.id), store.list_events(claimed.id)
    clock.advance(10)

    assert store.renew(claimed, now=clock(), terms=TERMS).outcome is RenewOutcome.LOST
    lost = RenewResult(RenewOutcome.LOST)
    assert store.renew_many([Renewal(claimed, clock(), TERMS)]) == [lost]
    late = NewRun("r-2", RunKind.FRESH, "w1", "inst-a", clock(), None)
    assert store.start_run(claimed, late) is None
    assert store.record_process(claimed, "r-1", pid=4242, process_started_at=1.5) is False
    session = Session(claimed.id, "claude", "s-1", "/tmp/project", "inst-a")
    assert store.record_session(claimed, session, at=clock()) is False
    assert (
        store.record_agent_report("r-1", claim_token="tok-1", report="done", reason=None) is False
    )
    done = settle(claimed, settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), at=clock())
    assert store.write_transition(done) is False

    assert store.get_item(claimed.id) == other
    assert store.list_runs(claimed.id) == runs
    assert store.get_session(claimed.id) is None
    assert store.list_events(claimed.id) == events


# -- settle -----------------------------------------------------------------------------------


def test_settling_ends_the_run_and_releases_the_claim_together(
    store: Store, clock: FakeClock
) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    start(store, claimed, clock)
    clock.advance(90)
    change = settle(claimed, settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), at=clock())
    assert store.write_transition(change)
    done = store.get_item(claimed.id)
    assert done is not None
    assert (done.state, done.claimed_by, done.lease_expires_at) == (ItemState.DONE, None, None)
    [run] = store.list_runs(claimed.id)
    assert (run.outcome_class, run.confidence, run.ended_at, run.exit_code) == (
        OutcomeClass.SUCCEEDED,
        Confidence.AUTHORITATIVE,
        clock(),
        0,
    )
    assert store.renew(claimed, now=clock(), terms=TERMS).outcome is RenewOutcome.LOST


def test_a_late_settle_from_an_old_generation_changes_nothing(
    store: Store, clock: FakeClock
) -> None:
    queued(store, clock)
    old = acquire(store, clock, "w-old")
    clock.advance(LEASE + 1)
    assert reaper.reap_expired(store, now=clock(), max_requeues=3)  # no run: back to queued
    new = acquire(store, clock, "w-new")
    assert new.generation == old.generation + 1
    start(store, new, clock)
    late = settle(old, settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), at=clock())
    assert store.write_transition(late) is False
    assert store.get_item(old.id) == new
    assert store.list_runs(old.id)[0].ended_at is None


def test_a_retry_settlement_counts_the_attempt_and_stamps_the_queue_entry(
    store: Store, clock: FakeClock
) -> None:
    retry = _retry_scheduled(store, clock, due_in=120, session_id="s")
    assert retry.state is ItemState.RETRY_SCHEDULED
    assert (retry.crash_retries, retry.not_before, retry.queued_at) == (
        1,
        clock() + timedelta(seconds=120),
        clock(),
    )
    assert replay(store.list_events(retry.id)) is ItemState.RETRY_SCHEDULED


def test_a_usage_retry_counts_on_its_own_counter_until_a_requeue(
    store: Store, clock: FakeClock
) -> None:
    item = queued(store, clock)
    claimed = acquire(store, clock)
    start(store, claimed, clock, session_id="s-1")
    limited = settlement(
        ItemState.RETRY_SCHEDULED,
        OutcomeClass.RATE_LIMITED,
        clock,
        reason_code="rate-limited",
        not_before=clock() + timedelta(hours=1),
        counts_as_usage_retry=True,
    )
    assert store.write_transition(settle(claimed, limited, at=clock()))
    waiting = store.get_item(item.id)
    assert waiting is not None
    assert (waiting.usage_retries, waiting.crash_retries) == (1, 0)
    again = store.acquire(request("w2"), now=clock.advance(3600))
    assert again is not None
    assert (again.item.usage_retries, again.claimed_reason_code) == (1, "rate-limited")
    assert store.write_transition(settle(again.item, limited, at=clock()))
    assert store.get_item(item.id).usage_retries == 2
    requeued = item_service.requeue_item(store, item.id, resume=True, now=clock())
    assert (requeued.usage_retries, store.get_item(item.id).usage_retries) == (0, 0)


def _settle_a_retry(store: Store, claimed: Item, clock: FakeClock) -> bool:
    retry = settlement(
        ItemState.RETRY_SCHEDULED,
        OutcomeClass.PROCESS_CRASH,
        clock,
        not_before=clock() + timedelta(seconds=30),
        counts_as_crash_retry=True,
    )
    return store.write_transition(settle(claimed, retry, at=clock()))


def _reap_to_a_retry(store: Store, claimed: Item, clock: FakeClock) -> bool:
    assert claimed.lease_expires_at is not None
    clock.current = max(clock(), claimed.lease_expires_at + timedelta(seconds=1))
    return store.reap(claimed.id, now=clock(), max_requeues=3) is not None


def _what_a_user_sees(store: Store, item_id: int) -> tuple[object, ...]:
    return (store.get_item(item_id), store.list_runs(item_id), store.list_events(item_id))


@pytest.mark.parametrize(
    "settling", [_settle_a_retry, _reap_to_a_retry], ids=["worker-settles", "reaper-settles"]
)
def test_a_settle_lands_whole_or_not_at_all(
    store: Store, clock: FakeClock, settling: Callable[[Store, Item, FakeClock], bool]
) -> None:
    """The retry, the run's outcome and the release of the claim commit in one transaction
    (invariant 6): a failure after any of its statements leaves none of them written."""
    queued(store, clock)
    claimed = acquire(store, clock)
    start(store, claimed, clock, session_id="s-1")
    clock.advance(10)
    before = _what_a_user_sees(store, claimed.id)
    for failing in itertools.count(1):
        with statements_hooked(store, fail_after(failing)) as statements:
            try:
                settled = settling(store, claimed, clock)
            except InjectedFault:
                # Still running under its claim, the run open, no new event.
                assert _what_a_user_sees(store, claimed.id) == before, (
                    f"a failure after {statements[-1]} left part of the settle written"
                )
                continue
        break
    assert settled
    assert len(statements) >= 3  # the item, the run and the event, at least
    assert failing == len(statements) + 1  # a failure was injected after every one of them
    item = store.get_item(claimed.id)
    assert item is not None
    assert (item.state, item.claimed_by, item.lease_expires_at) == (
        ItemState.RETRY_SCHEDULED,
        None,
        None,
    )
    [run] = store.list_runs(claimed.id)
    assert run.ended_at == clock()
    assert run.outcome_class in (OutcomeClass.PROCESS_CRASH, OutcomeClass.WORKER_LOST)
    events = store.list_events(claimed.id)
    assert events[:-1] == before[-1]
    assert (events[-1].from_state, events[-1].to_state) == (
        ItemState.RUNNING,
        ItemState.RETRY_SCHEDULED,
    )


# -- the reaper -------------------------------------------------------------------------------


def test_a_lease_ending_exactly_now_is_not_reaped(store: Store, clock: FakeClock) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    clock.current = claimed.lease_expires_at  # type: ignore[assignment]
    assert store.expired_claims(now=clock(), limit=10) == []
    assert store.reap(claimed.id, now=clock(), max_requeues=3) is None
    clock.advance(0.001)
    assert [i.id for i in store.expired_claims(now=clock(), limit=10)] == [claimed.id]


def test_reaped_before_any_run_goes_back_to_queued(store: Store, clock: FakeClock) -> None:
    item = queued(store, clock)
    claimed = acquire(store, clock)
    clock.advance(LEASE + 1)
    [change] = reaper.reap_expired(store, now=clock(), max_requeues=3)
    after = store.get_item(item.id)
    assert after == change.after
    assert (after.state, after.reason_code, after.claimed_by) == (  # type: ignore[union-attr]
        ItemState.QUEUED,
        "worker-lost",
        None,
    )
    assert after.queued_at == item.queued_at  # type: ignore[union-attr]
    assert after.requeues == 0  # type: ignore[union-attr]
    assert store.list_events(item.id)[-1].actor == "reaper"
    assert store.renew(claimed, now=clock(), terms=TERMS).outcome is RenewOutcome.LOST


def test_reaped_with_a_session_becomes_a_due_resume(store: Store, clock: FakeClock) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    start(store, claimed, clock, session_id="sess-1")
    clock.advance(LEASE + 1)
    [change] = reaper.reap_expired(store, now=clock(), max_requeues=3)
    after = change.after
    assert (after.state, after.not_before, after.requeues, after.crash_retries) == (
        ItemState.RETRY_SCHEDULED,
        clock(),
        1,
        0,
    )
    [run] = store.list_runs(claimed.id)
    assert (run.outcome_class, run.confidence, run.ended_at) == (
        OutcomeClass.WORKER_LOST,
        Confidence.INFERRED,
        clock(),
    )


def test_reaped_without_a_session_needs_attention(store: Store, clock: FakeClock) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    start(store, claimed, clock)
    clock.advance(LEASE + 1)
    [change] = reaper.reap_expired(store, now=clock(), max_requeues=3)
    assert change.after.state is ItemState.NEEDS_ATTENTION
    assert "no session was recorded" in (change.after.reason or "")
    assert change.after.next_action == f"wrighty requeue {claimed.id} --fresh"


def test_the_reclaim_budget_is_its_own_counter(store: Store, clock: FakeClock) -> None:
    queued(store, clock)
    states = []
    for _ in range(3):
        claimed = acquire(store, clock)
        start(store, claimed, clock, session_id="sess-1")
        clock.advance(LEASE + 1)
        [change] = reaper.reap_expired(store, now=clock(), max_requeues=2)
        states.append(change.after.state)
    assert states == [
        ItemState.RETRY_SCHEDULED,
        ItemState.RETRY_SCHEDULED,
        ItemState.NEEDS_ATTENTION,
    ]
    final = store.get_item(claimed.id)
    assert final is not None
    assert (final.requeues, final.crash_retries) == (2, 0)
    assert "reclaim budget (2) is spent" in (final.reason or "")


def test_a_reaped_due_retry_without_a_run_stays_a_due_retry(store: Store, clock: FakeClock) -> None:
    retry = _retry_scheduled(store, clock, due_in=0, session_id="s-1")
    acquire(store, clock)
    clock.advance(LEASE + 1)
    [change] = reaper.reap_expired(store, now=clock(), max_requeues=3)
    assert change.after.state is ItemState.RETRY_SCHEDULED
    assert change.after.requeues == 0
    assert change.after.crash_retries == retry.crash_retries


def test_a_renewal_that_lands_first_beats_the_reaper(store: Store, clock: FakeClock) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    clock.advance(LEASE + 1)
    [expired] = store.expired_claims(now=clock(), limit=10)
    # The owner renews between the reaper's scan and its write.
    assert store.renew(claimed, now=clock(), terms=TERMS).outcome is RenewOutcome.RENEWED
    assert store.reap(expired.id, now=clock(), max_requeues=3) is None
    assert store.get_item(claimed.id).state is ItemState.RUNNING  # type: ignore[union-attr]


def test_a_reaper_that_lands_first_makes_the_renewal_lost(store: Store, clock: FakeClock) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    clock.advance(LEASE + 1)
    assert store.reap(claimed.id, now=clock(), max_requeues=3) is not None
    assert store.renew(claimed, now=clock(), terms=TERMS).outcome is RenewOutcome.LOST


def test_a_renewal_between_the_reapers_read_and_its_write_wins(
    store: Store, clock: FakeClock
) -> None:
    """The reaper read the lease as expired; the owner's renewal lands before the reaper
    writes: the reaper's write re-checks the expiry and is refused (invariant 4)."""
    queued(store, clock)
    claimed = acquire(store, clock)
    clock.advance(LEASE + 1)
    renewals: list[int] = []

    def owner_renews(name: str, number: int, tx: Tx) -> None:
        # Neither store lets another transaction in here (the reaper holds SQLite's write lock,
        # and on PostgreSQL the row it read FOR UPDATE), so the renewal is made inside the
        # reaper's transaction, between its read and its write.
        if name == "select_reap_facts":
            proposed = to_db_time(TERMS.lease_from(clock()))
            guard = {"id": claimed.id, "generation": claimed.generation, "claimed_by": "w1"}
            renewals.append(tx.run("renew_lease", {**guard, "proposed": proposed}).rowcount)

    with statements_hooked(store, owner_renews):
        reaped = store.reap(claimed.id, now=clock(), max_requeues=3)
    assert renewals == [1]
    assert reaped is None
    item = store.get_item(claimed.id)
    assert item is not None
    assert (item.state, item.generation, item.claimed_by) == (
        ItemState.RUNNING,
        claimed.generation,
        "w1",
    )
    assert [e.actor for e in store.list_events(claimed.id)] == ["op", "worker:w1"]
    assert store.renew(claimed, now=clock(), terms=TERMS).outcome is RenewOutcome.RENEWED


# -- operator actions on running items --------------------------------------------------------


def test_release_fences_off_the_old_owner(store: Store, clock: FakeClock) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    start(store, claimed, clock)
    released = item_service.release_item(store, claimed.id, now=clock.advance(5))
    assert (released.state, released.reason_code, released.generation) == (
        ItemState.NEEDS_ATTENTION,
        "operator-released",
        claimed.generation + 1,
    )
    assert store.renew(claimed, now=clock(), terms=TERMS).outcome is RenewOutcome.LOST
    late = settle(claimed, settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), at=clock())
    assert store.write_transition(late) is False
    assert store.list_runs(claimed.id)[0].outcome_class is OutcomeClass.WORKER_LOST


def test_cancelling_a_running_item_ends_its_run_as_cancelled(
    store: Store, clock: FakeClock
) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    start(store, claimed, clock)
    item_service.cancel_item(store, claimed.id, now=clock.advance(5))
    assert store.renew(claimed, now=clock(), terms=TERMS).outcome is RenewOutcome.LOST
    [run] = store.list_runs(claimed.id)
    assert (run.outcome_class, run.confidence) == (OutcomeClass.CANCELLED, Confidence.AUTHORITATIVE)


def test_the_store_refuses_queued_after_an_agent_process_was_recorded(
    store: Store, clock: FakeClock
) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    start(store, claimed, clock)  # records a pid
    # A caller that wrongly claims no process started is still refused by the store.
    wrong = settle(claimed, Settlement(ItemState.QUEUED, process_started=False), at=clock())
    assert store.write_transition(wrong) is False
    assert store.get_item(claimed.id) == claimed


def test_a_claim_never_ends_with_its_run_left_open(store: Store, clock: FakeClock) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    start(store, claimed, clock)
    no_outcome = settle(claimed, Settlement(ItemState.NEEDS_ATTENTION, process_started=True),
                        at=clock())  # fmt: skip
    assert store.write_transition(no_outcome)
    [run] = store.list_runs(claimed.id)
    assert (run.ended_at, run.outcome_class) == (clock(), OutcomeClass.UNKNOWN)


def test_an_agent_report_lands_only_under_the_runs_live_claim(
    store: Store, clock: FakeClock
) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    run = NewRun("r-1", RunKind.FRESH, "w1", "inst-a", clock(), None, claim_token="tok-1")
    assert store.start_run(claimed, run) is not None
    assert not store.record_agent_report("r-1", claim_token="guess", report="failed", reason="x")
    assert store.record_agent_report("r-1", claim_token="tok-1", report="failed", reason="why")
    recorded = store.get_run("r-1")
    assert recorded is not None
    assert (recorded.agent_report, recorded.agent_reason) == ("failed", "why")
    clock.advance(LEASE + 1)
    reaper.reap_expired(store, now=clock(), max_requeues=3)
    assert not store.record_agent_report("r-1", claim_token="tok-1", report="finished", reason=None)
    assert store.get_run("r-1").agent_report == "failed"  # type: ignore[union-attr]


def test_a_run_and_its_session_are_recorded_together_or_not_at_all(
    store: Store, clock: FakeClock
) -> None:
    queued(store, clock)
    claimed = acquire(store, clock)
    session = Session(claimed.id, "command", "s-1", "/tmp/ws", "inst-a")
    stale = dataclasses.replace(claimed, generation=0)
    late = NewRun("r-stale", RunKind.FRESH, "w1", "inst-a", clock(), "s-1")
    assert store.start_run(stale, late, session=session) is None
    assert store.get_session(claimed.id) is None
    assert store.list_runs(claimed.id) == []
    run = NewRun("r-1", RunKind.FRESH, "w1", "inst-a", clock(), "s-1")
    recorded = store.start_run(claimed, run, session=session)
    assert recorded is not None
    assert recorded.run_id == "r-1"
    assert store.get_session(claimed.id) == session


# -- the work product's branch and base (docs/work-product.md) ---------------------------------

BASE = "0123456789abcdef0123456789abcdef01234567"


def test_a_sessions_branch_and_base_are_kept_and_a_resume_without_them_keeps_them(
    store: Store, clock: FakeClock
) -> None:
    item = queued(store, clock)
    claimed = acquire(store, clock)
    start(store, claimed, clock)
    made = Session(claimed.id, "claude", None, "/tmp/wt/1", "inst-a", "wrighty/1-t", BASE)
    assert store.record_session(claimed, made, at=clock())
    assert store.get_session(item.id) == made
    # a later run (a resume) records its session without them: the worktree's stay
    resumed = dataclasses.replace(made, session_id="s-1", branch=None, base_commit=None)
    assert store.record_session(claimed, resumed, at=clock())
    assert store.get_session(item.id) == dataclasses.replace(made, session_id="s-1")


@pytest.mark.parametrize(
    ("column", "value", "says"),
    [
        ("branch", "-x", "is not a branch wrighty makes"),
        ("branch", "a..b", "is not a branch wrighty makes"),
        ("branch", "a\x1bb", "is not a branch wrighty makes"),
        ("base_commit", "HEAD", "is not a commit id"),
        ("base_commit", BASE.upper(), "is not a commit id"),
    ],
)
def test_a_sessions_stored_branch_or_base_that_does_not_read_is_refused(
    store: Store, clock: FakeClock, column: str, value: str, says: str
) -> None:
    item = queued(store, clock)
    claimed = acquire(store, clock)
    start(store, claimed, clock)
    made = Session(claimed.id, "claude", None, "/tmp/wt/1", "inst-a", "wrighty/1-t", BASE)
    assert store.record_session(claimed, made, at=clock())
    execute_raw(store, f"UPDATE sessions SET {column} = '{value}'")
    with pytest.raises(UnreadableError) as refused:
        store.get_session(item.id)
    assert says in str(refused.value)
