"""The notification outbox in the store (docs/notifications.md): a notice is written in the
transaction of the change it reports (a worker's settlement, the reaper's rescue, a provider
circuit opening) or not at all; a deliverer claims the oldest due notice no live claim holds,
and writes the attempt's outcome only under that claim; delivered notices are pruned — on
SQLite and on PostgreSQL, with racing deliverers each delivering a notice exactly once."""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import FakeClock, open_postgres, open_sqlite, postgres_schema
from tests.store.older_store import store_before
from tests.store.test_claims import LEASE, acquire, queued, settlement, start
from tests.store.txhooks import InjectedFault, fail_after, statements_hooked
from wrighty.domain import suggestions
from wrighty.domain.circuits import opened
from wrighty.domain.claims import settle
from wrighty.domain.model import Change, Item
from wrighty.domain.notices import Source, after_attempt, circuit_notice, with_notices
from wrighty.domain.outbox import Delivered, Notice, OutboxFigures, StoredNotice
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.store import Store
from wrighty.store.sqlfiles import migrations

SOURCE = Source("inst-a", "w1")
STATES = ("pending", "delivered", "given-up")
DELIVERY_LEASE = 120.0
MAX_ATTEMPTS = 3
CIRCUIT = "agent:claude@inst-a"


def outbox(store: Store) -> list[StoredNotice]:
    return store.list_notices(STATES)


def attention_change(claimed: Item, clock: FakeClock) -> Change:
    """The worker's settlement of ``claimed`` to needs-attention, carrying its notice."""
    failed = settlement(
        ItemState.NEEDS_ATTENTION,
        OutcomeClass.AGENT_FAILURE,
        clock,
        reason_code="agent-failure",
        reason="the agent failed (exit code 3); the workspace is kept",
        next_action=suggestions.requeue(claimed.id, resume=True),
    )
    return with_notices(settle(claimed, failed, at=clock()), SOURCE)


def running(store: Store, clock: FakeClock, title: str = "t", worker: str = "w1") -> Item:
    """A queued item claimed by ``worker``, its run and process recorded."""
    made = queued(store, clock, title)
    claimed = acquire(store, clock, worker, item_id=made.id)
    start(store, claimed, clock)
    return claimed


def notice_of_a_settlement(store: Store, clock: FakeClock, title: str = "t") -> Notice:
    """An item settled to needs-attention now, its notice written with it; the clock then
    moves on a second, so that every notice has a time of its own."""
    change = attention_change(running(store, clock, title), clock)
    assert store.write_transition(change)
    [notice] = change.notices
    clock.advance(1)
    return notice


def pending(notice: Notice) -> StoredNotice:
    """A notice as the outbox holds it once written: pending, never tried, due at once."""
    return StoredNotice(notice, "pending", 0, notice.at, (), None, None, None, None)


def claim(
    store: Store, clock: FakeClock, deliverer: str = "d1", lease: float = DELIVERY_LEASE
) -> StoredNotice | None:
    return store.claim_notice(deliverer, now=clock(), lease_seconds=lease)


def claimed_one(store: Store, clock: FakeClock, deliverer: str = "d1") -> StoredNotice:
    taken = claim(store, clock, deliverer)
    assert taken is not None
    return taken


def delivered(taken: StoredNotice, clock: FakeClock, *sinks: str) -> Delivered:
    return after_attempt(taken, {}, sinks or ("slack",), now=clock(), max_attempts=MAX_ATTEMPTS)


def failed(taken: StoredNotice, clock: FakeClock, max_attempts: int = MAX_ATTEMPTS) -> Delivered:
    return after_attempt(
        taken, {"webhook": "HTTP 500"}, ("slack",), now=clock(), max_attempts=max_attempts
    )


# -- written with the change, or not at all ------------------------------------------------------


def test_a_settlement_with_its_notice_puts_exactly_that_notice_in_the_outbox(
    store: Store, clock: FakeClock
) -> None:
    claimed = running(store, clock)
    assert outbox(store) == []  # neither creating, queueing nor claiming tells anyone
    change = attention_change(claimed, clock)
    [notice] = change.notices
    assert store.write_transition(change)
    assert outbox(store) == [pending(notice)]
    assert store.get_item(claimed.id) == change.after
    assert store.outbox_figures() == OutboxFigures(pending=1, oldest_pending_at=clock(), given_up=0)


def test_a_settlement_without_notices_writes_none(store: Store, clock: FakeClock) -> None:
    claimed = running(store, clock)
    change = dataclasses.replace(attention_change(claimed, clock), notices=())
    assert store.write_transition(change)
    assert outbox(store) == []


@pytest.mark.parametrize(
    "stale", [{"generation": 0}, {"claimed_by": "w-other"}], ids=["generation", "owner"]
)
def test_a_refused_settlement_writes_no_notice(
    store: Store, clock: FakeClock, stale: dict[str, object]
) -> None:
    claimed = running(store, clock)
    impostor = dataclasses.replace(claimed, **stale)  # type: ignore[arg-type]
    change = attention_change(impostor, clock)
    assert change.notices
    assert store.write_transition(change) is False
    assert outbox(store) == []
    assert store.get_item(claimed.id) == claimed
    # The claim's own settlement still lands, with its own notice only.
    own = attention_change(claimed, clock)
    assert store.write_transition(own)
    assert [s.notice for s in outbox(store)] == list(own.notices)


def _settle_with_notice(store: Store, claimed: Item, clock: FakeClock) -> tuple[bool, Change]:
    change = attention_change(claimed, clock)
    return store.write_transition(change), change


def _reap_with_notice(store: Store, claimed: Item, clock: FakeClock) -> tuple[bool, Change]:
    assert claimed.lease_expires_at is not None
    clock.current = max(clock(), claimed.lease_expires_at + timedelta(seconds=1))
    change = store.reap(claimed.id, now=clock(), max_requeues=3, notify=SOURCE)
    assert change is not None
    return True, change


def _what_a_user_sees(store: Store, item_id: int) -> tuple[object, ...]:
    return (store.get_item(item_id), store.list_runs(item_id), store.list_events(item_id),
            outbox(store))  # fmt: skip


@pytest.mark.parametrize(
    "settling",
    [_settle_with_notice, _reap_with_notice],
    ids=["worker-settles", "reaper-settles"],
)
def test_a_settle_and_its_notice_land_whole_or_not_at_all(
    store: Store,
    clock: FakeClock,
    settling: Callable[[Store, Item, FakeClock], tuple[bool, Change]],
) -> None:
    """A failure after any statement of the settle's transaction (the item's update, the run's
    end, the event, the notice itself) leaves neither the move nor the notice."""
    claimed = running(store, clock)
    clock.advance(10)
    before = _what_a_user_sees(store, claimed.id)
    for failing in itertools.count(1):
        with statements_hooked(store, fail_after(failing)) as statements:
            try:
                landed, change = settling(store, claimed, clock)
            except InjectedFault:
                assert _what_a_user_sees(store, claimed.id) == before, (
                    f"a failure after {statements[-1]} left part of the settle written"
                )
                continue
        break
    assert landed
    assert "update_item_guarded" in statements
    assert statements[-1] == "insert_notice"
    assert failing == len(statements) + 1  # a failure was injected after every one of them
    [notice] = change.notices
    assert outbox(store) == [pending(notice)]
    assert store.get_item(claimed.id) == change.after


def test_the_reaper_with_notify_writes_a_worker_lost_notice(store: Store, clock: FakeClock) -> None:
    claimed = running(store, clock)
    clock.advance(LEASE + 1)
    change = store.reap(claimed.id, now=clock(), max_requeues=3, notify=Source("inst-b"))
    assert change is not None
    assert change.after.state is ItemState.NEEDS_ATTENTION  # no session to resume
    [notice] = change.notices
    assert notice.events == ("worker-lost", "needs-attention")
    assert (notice.payload["installation_id"], notice.payload["worker_id"]) == ("inst-b", None)
    assert outbox(store) == [pending(notice)]


def test_the_reaper_without_notify_writes_none(store: Store, clock: FakeClock) -> None:
    claimed = running(store, clock)
    clock.advance(LEASE + 1)
    change = store.reap(claimed.id, now=clock(), max_requeues=3)
    assert change is not None
    assert change.notices == ()
    assert store.get_item(claimed.id) == change.after
    assert outbox(store) == []


def test_a_reap_that_finds_a_live_claim_writes_no_notice(store: Store, clock: FakeClock) -> None:
    claimed = running(store, clock)
    assert store.reap(claimed.id, now=clock(), max_requeues=3, notify=SOURCE) is None
    assert outbox(store) == []
    assert store.get_item(claimed.id) == claimed


def test_a_circuit_write_with_a_notice_writes_both_or_neither(
    store: Store, clock: FakeClock
) -> None:
    absent = store.get_circuit(CIRCUIT)
    first = opened(absent, at=clock(), until=clock() + timedelta(minutes=5), reason="429")
    assert first.until is not None
    notice = circuit_notice(CIRCUIT, until=first.until, reason="429", failures=first.failures,
                            at=clock(), source=SOURCE)  # fmt: skip
    assert store.write_circuit(absent, first, at=clock(), notice=notice)
    assert outbox(store) == [pending(notice)]
    stored = store.get_circuit(CIRCUIT)
    assert stored.version == 1
    # A second first write (from the same empty read) loses, and so does its notice.
    clock.advance(1)
    late = circuit_notice(CIRCUIT, until=first.until, reason="503", failures=1, at=clock(),
                          source=SOURCE)  # fmt: skip
    assert store.write_circuit(absent, first, at=clock(), notice=late) is False
    # A write on a version no longer stored changes nothing either.
    later = opened(stored, at=clock(), until=clock() + timedelta(minutes=30), reason="503")
    assert store.write_circuit(stored, later, at=clock())  # lands: version 2, no notice
    assert store.write_circuit(stored, later, at=clock(), notice=late) is False
    assert store.get_circuit(CIRCUIT).version == 2
    assert outbox(store) == [pending(notice)]
    [only] = outbox(store)
    assert (only.notice.item_id, only.notice.event) == (None, "circuit-open")


# -- claiming ---------------------------------------------------------------------------------


def test_a_claim_takes_the_oldest_due_notice_for_its_deliverer(
    store: Store, clock: FakeClock
) -> None:
    first = notice_of_a_settlement(store, clock, "first")
    second = notice_of_a_settlement(store, clock, "second")
    taken = claimed_one(store, clock, "d1")
    assert taken == dataclasses.replace(
        pending(first), claimed_by="d1", claim_expires_at=clock() + timedelta(seconds=120)
    )
    assert claimed_one(store, clock, "d2").notice == second
    assert claim(store, clock, "d3") is None
    assert [s.claimed_by for s in outbox(store)] == ["d1", "d2"]
    assert store.outbox_figures().pending == 2  # claimed, still pending until finished


def test_a_notice_is_not_claimed_before_it_is_due(store: Store, clock: FakeClock) -> None:
    first = notice_of_a_settlement(store, clock, "first")
    # A deliverer whose clock is before the notice's time finds nothing due yet.
    assert store.claim_notice("d1", now=first.at - timedelta(seconds=1), lease_seconds=60) is None
    taken = claimed_one(store, clock)
    assert store.finish_notice(taken, failed(taken, clock))  # retried in 30 s
    second = notice_of_a_settlement(store, clock, "second")
    # The first is older but not due: the second comes first, then nothing.
    assert claimed_one(store, clock, "d2").notice == second
    assert claim(store, clock, "d3") is None
    [retried] = store.list_notices(["pending"], limit=1)
    assert retried.notice == first
    clock.current = retried.next_attempt_at - timedelta(microseconds=1)
    assert claim(store, clock, "d3") is None
    clock.current = retried.next_attempt_at  # due exactly then
    again = claimed_one(store, clock, "d3")
    assert (again.notice, again.attempts, again.delivered_to) == (first, 1, ("slack",))
    assert again.last_error == "webhook: HTTP 500"


def test_a_notice_held_by_a_live_claim_is_not_claimed_again(store: Store, clock: FakeClock) -> None:
    notice_of_a_settlement(store, clock)
    taken = claimed_one(store, clock, "d1")
    assert claim(store, clock, "d2") is None
    assert claim(store, clock, "d1") is None  # its own deliverer's either
    assert taken.claim_expires_at is not None
    clock.current = taken.claim_expires_at  # a claim ending exactly now still holds
    assert claim(store, clock, "d2") is None
    assert outbox(store) == [taken]


def test_a_notice_whose_claim_expired_can_be_claimed_by_another(
    store: Store, clock: FakeClock
) -> None:
    notice = notice_of_a_settlement(store, clock)
    taken = claimed_one(store, clock, "d1")
    assert taken.claim_expires_at is not None
    clock.current = taken.claim_expires_at + timedelta(microseconds=1)
    again = claimed_one(store, clock, "d2")
    assert again.notice == notice
    assert (again.claimed_by, again.claim_expires_at) == ("d2", clock() + timedelta(seconds=120))
    assert again.attempts == 0


def test_delivered_and_given_up_notices_are_never_claimed_again(
    store: Store, clock: FakeClock
) -> None:
    notice_of_a_settlement(store, clock, "delivered")
    notice_of_a_settlement(store, clock, "given up")
    first, second = claimed_one(store, clock, "d1"), claimed_one(store, clock, "d1")
    assert store.finish_notice(first, delivered(first, clock))
    assert store.finish_notice(second, failed(second, clock, max_attempts=1))
    assert [s.state for s in outbox(store)] == ["delivered", "given-up"]
    for wait in (0, DELIVERY_LEASE + 1, 86_400 * 30):
        clock.advance(wait)
        assert claim(store, clock, "d2") is None
    assert store.outbox_figures() == OutboxFigures(pending=0, oldest_pending_at=None, given_up=1)


# -- finishing under the claim ------------------------------------------------------------------


def test_a_finish_under_the_claim_lands_and_releases_it(store: Store, clock: FakeClock) -> None:
    notice = notice_of_a_settlement(store, clock)
    taken = claimed_one(store, clock)
    clock.advance(2)
    outcome = failed(taken, clock)
    assert store.finish_notice(taken, outcome)
    [after] = outbox(store)
    assert after == StoredNotice(notice, "pending", 1, clock() + timedelta(seconds=30),
                                 ("slack",), "webhook: HTTP 500", None, None, None)  # fmt: skip
    assert store.finish_notice(taken, outcome) is False  # the claim is spent
    clock.current = after.next_attempt_at
    again = claimed_one(store, clock, "d2")
    done = delivered(again, clock, "webhook")
    assert store.finish_notice(again, done)
    [final] = outbox(store)
    assert (final.state, final.attempts, final.delivered_to, final.last_error) == (
        "delivered",
        2,
        ("slack", "webhook"),
        None,
    )
    assert (final.finished_at, final.claimed_by, final.claim_expires_at) == (clock(), None, None)


def test_a_finish_after_the_claim_expired_and_was_taken_again_changes_nothing(
    store: Store, clock: FakeClock
) -> None:
    notice_of_a_settlement(store, clock)
    first = claimed_one(store, clock, "d1")
    assert first.claim_expires_at is not None
    clock.current = first.claim_expires_at + timedelta(seconds=1)
    second = claimed_one(store, clock, "d2")
    held = outbox(store)
    assert store.finish_notice(first, delivered(first, clock)) is False
    assert outbox(store) == held
    assert store.finish_notice(second, delivered(second, clock))
    assert [s.state for s in outbox(store)] == ["delivered"]


def test_a_finish_by_another_deliverer_changes_nothing(store: Store, clock: FakeClock) -> None:
    """The same claim expiry under another deliverer's name is not the claim."""
    notice_of_a_settlement(store, clock)
    taken = claimed_one(store, clock, "d1")
    impostor = dataclasses.replace(taken, claimed_by="d2")
    assert store.finish_notice(impostor, delivered(impostor, clock)) is False
    assert outbox(store) == [taken]
    unclaimed = dataclasses.replace(taken, claimed_by=None, claim_expires_at=None)
    assert store.finish_notice(unclaimed, delivered(unclaimed, clock)) is False
    assert outbox(store) == [taken]


def test_a_finish_under_the_deliverers_own_earlier_claim_changes_nothing(
    store: Store, clock: FakeClock
) -> None:
    """A deliverer that stalled past its claim and claimed the notice again: only the newer
    claim writes (the claim is the deliverer and its expiry)."""
    notice_of_a_settlement(store, clock)
    earlier = claimed_one(store, clock, "d1")
    assert earlier.claim_expires_at is not None
    clock.current = earlier.claim_expires_at + timedelta(seconds=1)
    newer = claimed_one(store, clock, "d1")
    assert newer.claim_expires_at != earlier.claim_expires_at
    assert store.finish_notice(earlier, delivered(earlier, clock)) is False
    assert outbox(store) == [newer]
    assert store.finish_notice(newer, delivered(newer, clock))


def test_a_finish_after_expiry_lands_while_nobody_took_the_claim(
    store: Store, clock: FakeClock
) -> None:
    """Only a claim taken again fences the first deliverer off: a late finish of a claim
    that nobody took meanwhile still records what that delivery did."""
    notice_of_a_settlement(store, clock)
    taken = claimed_one(store, clock, "d1")
    clock.advance(DELIVERY_LEASE * 3)
    assert store.finish_notice(taken, delivered(taken, clock))
    assert [s.state for s in outbox(store)] == ["delivered"]


# -- reading, pruning, figures ------------------------------------------------------------------


def test_list_notices_filters_by_state_oldest_first(store: Store, clock: FakeClock) -> None:
    notices = [notice_of_a_settlement(store, clock, f"n{n}") for n in range(4)]
    first = claimed_one(store, clock)
    assert store.finish_notice(first, delivered(first, clock))
    second = claimed_one(store, clock)
    assert store.finish_notice(second, failed(second, clock, max_attempts=1))

    def ids(states: tuple[str, ...], limit: int = 1000) -> list[str]:
        return [s.notice.id for s in store.list_notices(states, limit=limit)]

    assert ids(("pending",)) == [notices[2].id, notices[3].id]
    assert ids(("delivered",)) == [notices[0].id]
    assert ids(("given-up",)) == [notices[1].id]
    assert ids(("pending", "given-up")) == [n.id for n in notices[1:]]
    assert ids(STATES) == [n.id for n in notices]
    assert ids(STATES, limit=2) == [notices[0].id, notices[1].id]
    assert ids(()) == []
    assert ids(("no-such-state",)) == []


def test_prune_forgets_only_delivered_notices_finished_before_the_cutoff(
    store: Store, clock: FakeClock
) -> None:
    for n in range(5):
        notice_of_a_settlement(store, clock, f"n{n}")
    finished: list[datetime] = []
    for _ in range(3):  # three delivered, a second apart
        taken = claimed_one(store, clock)
        assert store.finish_notice(taken, delivered(taken, clock))
        finished.append(clock())
        clock.advance(1)
    given_up = claimed_one(store, clock)
    assert store.finish_notice(given_up, failed(given_up, clock, max_attempts=1))
    # n4 stays pending. Before the second delivery's finish: only the first goes.
    assert store.prune_notices(before=finished[1]) == 1
    assert [s.state for s in outbox(store)] == ["delivered", "delivered", "given-up", "pending"]
    assert [s.finished_at for s in store.list_notices(["delivered"])] == finished[1:]
    assert store.prune_notices(before=finished[1]) == 0
    clock.advance(86_400 * 365)
    assert store.prune_notices(before=clock()) == 2
    assert [s.state for s in outbox(store)] == ["given-up", "pending"]


def test_outbox_figures_count_pending_the_oldest_pending_and_given_up(
    store: Store, clock: FakeClock
) -> None:
    assert store.outbox_figures() == OutboxFigures(pending=0, oldest_pending_at=None, given_up=0)
    notices = [notice_of_a_settlement(store, clock, f"n{n}") for n in range(4)]
    assert store.outbox_figures() == OutboxFigures(4, notices[0].at, 0)
    first = claimed_one(store, clock)
    assert store.finish_notice(first, delivered(first, clock))
    assert store.outbox_figures() == OutboxFigures(3, notices[1].at, 0)
    second = claimed_one(store, clock)
    assert store.finish_notice(second, failed(second, clock, max_attempts=1))
    third = claimed_one(store, clock)
    assert store.finish_notice(third, failed(third, clock))  # retried: still pending
    assert store.outbox_figures() == OutboxFigures(2, notices[2].at, 1)


def test_a_notice_reads_back_exactly(store: Store, clock: FakeClock) -> None:
    """Unicode, controls, nesting and microseconds survive the outbox on both stores."""
    base = circuit_notice(CIRCUIT, until=clock() + timedelta(minutes=5), reason="429",
                          failures=1, at=clock(), source=SOURCE)  # fmt: skip
    at = clock() + timedelta(microseconds=123_457)
    payload = {
        **base.payload,
        "title": "Réparer le test — 日本語 🚀 \\n",
        "nested": {"list": [1, 2.5, None, True, {"deep": ["ä", "\u202e", "\x00", "\ud83d"]}],
                   "empty": {}, "zero": 0, "big": 2**53},
        "quote": "'; DROP TABLE notices; --",
    }  # fmt: skip
    notice = dataclasses.replace(base, at=at, payload=payload, item_id=None, reason_code="x-é",
                                 events=("circuit-open", "needs-attention"))  # fmt: skip
    before = store.get_circuit(CIRCUIT)
    after = opened(before, at=clock(), until=clock() + timedelta(minutes=5), reason="429")
    assert store.write_circuit(before, after, at=clock(), notice=notice)
    [read] = outbox(store)
    assert read.notice == notice
    assert read.notice.payload["nested"]["list"][4]["deep"] == ["ä", "\u202e", "\x00", "\ud83d"]
    assert read.notice.at == at
    assert read.next_attempt_at == at
    clock.current = at
    taken = claimed_one(store, clock)
    assert taken.notice == notice
    sinks = ("slack:é", "command")
    assert store.finish_notice(taken, after_attempt(taken, {"ntfy": "refusé 🚫"}, sinks,
                                                    now=clock(), max_attempts=5))  # fmt: skip
    [tried] = outbox(store)
    assert (tried.delivered_to, tried.last_error) == (sinks, "ntfy: refusé 🚫")


# -- racing deliverers --------------------------------------------------------------------------

DELIVERERS = 4
NOTICES = 30
SINK_SECONDS = 0.002  # how long a delivery takes: the others claim meanwhile


@pytest.fixture(params=["sqlite", "postgresql"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Opens a store of its own on one database, for each racer."""
    if request.param == "sqlite":
        path = tmp_path / "wrighty.db"
        yield lambda: open_sqlite(path)
        return
    with postgres_schema() as url:
        yield lambda: open_postgres(url)


class Claims:
    """What the racers hold: a notice under two live claims at once is an error."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.live: dict[str, str] = {}
        self.taken: list[tuple[str, str]] = []
        self.errors: list[str] = []

    def hold(self, notice_id: str, deliverer: str) -> None:
        with self._lock:
            if notice_id in self.live:
                self.errors.append(f"{notice_id}: claimed by {deliverer} while "
                                   f"{self.live[notice_id]} held it")  # fmt: skip
            self.live[notice_id] = deliverer
            self.taken.append((notice_id, deliverer))

    def release(self, notice_id: str) -> None:
        with self._lock:
            del self.live[notice_id]

    def error(self, text: str) -> None:
        with self._lock:
            self.errors.append(text)


def _deliverer(name: str, open_store: Callable[[], Store], now: datetime,
               start: threading.Barrier, claims: Claims) -> None:  # fmt: skip
    store = open_store()
    try:
        start.wait()
        while (held := store.claim_notice(name, now=now, lease_seconds=600)) is not None:
            claims.hold(held.notice.id, name)
            time.sleep(SINK_SECONDS)
            outcome = after_attempt(held, {}, (f"sink-of-{name}",), now=now, max_attempts=5)
            if not store.finish_notice(held, outcome):
                claims.error(f"{name}: the finish of {held.notice.id} under its claim lost")
            claims.release(held.notice.id)
    except Exception as caught:  # reported to the test
        claims.error(f"{name}: {type(caught).__name__}: {caught}")
    finally:
        store.close()


@pytest.mark.slow
def test_racing_deliverers_deliver_each_notice_exactly_once(
    opener: Callable[[], Store], clock: FakeClock
) -> None:
    store = opener()
    try:
        notices = [notice_of_a_settlement(store, clock, f"n{n}") for n in range(NOTICES)]
        start = threading.Barrier(DELIVERERS)
        claims = Claims()
        threads = [
            threading.Thread(target=_deliverer, args=(f"d{n}", opener, clock(), start, claims))
            for n in range(DELIVERERS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in threads)
        assert claims.errors == []
        # Claimed once each (never under two live claims), and none was left.
        assert sorted(notice_id for notice_id, _ in claims.taken) == sorted(n.id for n in notices)
        by = dict(claims.taken)
        assert len(set(by.values())) > 1  # they did race: more than one delivered
        final = outbox(store)
        assert [s.notice.id for s in final] == [n.id for n in notices]
        for row in final:
            assert (row.state, row.attempts, row.claimed_by) == ("delivered", 1, None)
            assert row.delivered_to == (f"sink-of-{by[row.notice.id]}",)
        assert store.outbox_figures() == OutboxFigures(0, None, 0)
    finally:
        store.close()


def test_a_claim_skips_a_notice_row_another_transaction_holds(clock: FakeClock) -> None:
    """PostgreSQL: a racer does not wait for the row another one has locked (SKIP LOCKED); it
    takes the next due notice, or none."""
    import psycopg

    with postgres_schema() as url:
        store = open_postgres(url)
        try:
            first = notice_of_a_settlement(store, clock, "first")
            second = notice_of_a_settlement(store, clock, "second")
            with psycopg.connect(url) as other, ThreadPoolExecutor(max_workers=1) as pool:
                # Another deliverer's claim, still inside its transaction: the row is locked.
                other.execute("SELECT id FROM notices WHERE id = %s FOR UPDATE", (first.id,))
                try:
                    racing = pool.submit(claim, store, clock, "d2")
                    taken = racing.result(timeout=5)  # waiting on the row would time out
                    assert taken is not None
                    assert taken.notice == second
                    assert pool.submit(claim, store, clock, "d3").result(timeout=5) is None
                finally:
                    other.rollback()
            assert claimed_one(store, clock, "d3").notice == first  # released: claimable
        finally:
            store.close()


# -- a store from before the outbox --------------------------------------------------------------

OLD_ITEM = (
    "INSERT INTO items (title, body, state, generation, reason_code, reason, next_action, "
    "created_at, updated_at) VALUES ('stuck', 'task', 'needs-attention', 1, 'agent-failure', "
    "'the agent failed', 'wrighty requeue 1 --resume', '2026-01-01T00:00:00.000000Z', "
    "'2026-01-01T00:05:00.000000Z')"
)


def store_before_the_outbox(backend: str, tmp_path: Path) -> AbstractContextManager[Store]:
    """A store at the schema just before the outbox's migration (SQLite 0001-0007, PostgreSQL
    0001-0004) holding an item that needs attention, then opened by this wrighty (which
    migrates it)."""
    return store_before(backend, tmp_path, "notices", [OLD_ITEM])


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_store_from_before_the_outbox_migrates_to_an_empty_one(
    backend: str, tmp_path: Path, clock: FakeClock
) -> None:
    with store_before_the_outbox(backend, tmp_path) as store:
        assert store.opened == "migrated"  # type: ignore[attr-defined]
        assert store.schema_version() == migrations(backend)[-1].version
        [old] = store.list_items()
        assert (old.title, old.state) == ("stuck", ItemState.NEEDS_ATTENTION)
        # Nothing is made up for what happened before: the outbox starts empty.
        assert outbox(store) == []
        assert store.outbox_figures() == OutboxFigures(pending=0, oldest_pending_at=None,
                                                       given_up=0)  # fmt: skip
        assert claim(store, clock) is None
        # And it works from then on.
        notice = notice_of_a_settlement(store, clock)
        taken = claimed_one(store, clock)
        assert taken.notice == notice
        assert store.finish_notice(taken, delivered(taken, clock))
        assert [s.state for s in outbox(store)] == ["delivered"]


# -- renewing a claim while a slow sink still sends ------------------------------------------------


def test_a_renewed_claim_holds_the_notice_and_records_the_sinks_reached(
    store: Store, clock: FakeClock
) -> None:
    notice_of_a_settlement(store, clock)
    taken = claimed_one(store, clock, "d1")
    assert taken.claim_expires_at is not None
    until = taken.claim_expires_at + timedelta(seconds=DELIVERY_LEASE)
    renewed = store.renew_notice(taken, until=until, delivered_to=("slack",))
    assert renewed is not None
    [held] = outbox(store)
    assert (held.claimed_by, held.claim_expires_at, held.delivered_to) == ("d1", until, ("slack",))
    assert held.state == "pending"
    clock.current = taken.claim_expires_at + timedelta(seconds=1)  # the first expiry passed
    assert claim(store, clock, "d2") is None  # the renewed claim still holds it
    assert store.finish_notice(taken, delivered(taken, clock)) is False  # the old claim is spent
    assert store.finish_notice(renewed, delivered(renewed, clock, "webhook"))
    [final] = outbox(store)
    assert (final.state, final.delivered_to) == ("delivered", ("slack", "webhook"))


def test_a_claim_taken_again_is_not_renewed(store: Store, clock: FakeClock) -> None:
    """Only the claim itself renews: not the deliverer's own earlier claim, nor the same
    expiry under another deliverer's name, nor a finished notice (its claim is gone)."""
    notice_of_a_settlement(store, clock)
    earlier = claimed_one(store, clock, "d1")
    assert earlier.claim_expires_at is not None
    clock.current = earlier.claim_expires_at + timedelta(seconds=1)
    newer = claimed_one(store, clock, "d1")
    later = clock() + timedelta(seconds=DELIVERY_LEASE)
    impostor = dataclasses.replace(newer, claimed_by="d2")
    for stale in (earlier, impostor):
        assert store.renew_notice(stale, until=later, delivered_to=("slack",)) is None
        assert outbox(store) == [newer]
    assert store.finish_notice(newer, delivered(newer, clock))
    finished = outbox(store)
    assert store.renew_notice(newer, until=later, delivered_to=("slack",)) is None
    assert outbox(store) == finished
