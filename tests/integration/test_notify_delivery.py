"""Delivering the outbox (wrighty/notify/delivery.py) on SQLite and PostgreSQL: one attempt per
claim, retries only to the sinks that failed, backoff and give-up, one deliverer at a time, the
worker-quiet notices, and the worker's delivery thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import FakeClock
from tests.helpers import wait_for
from tests.store.test_contract import new_item
from wrighty.config import NotifySettings
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.notices import (
    DELIVERY_LEASE_SECONDS,
    RETRY_FIRST_SECONDS,
    Source,
    quiet_notice_id,
)
from wrighty.domain.outbox import Notice
from wrighty.errors import StoreError
from wrighty.notify.delivery import (
    Attempt,
    DeliveryThread,
    deliver_due,
    lease_seconds,
    note_quiet_workers,
    wants_quiet_workers,
)
from wrighty.notify.sinks import Sink, sinks_of
from wrighty.store import Store

SOURCE = Source("inst-a", "w-0123456789ab")
ALL = ("pending", "delivered", "given-up")


@dataclass
class FakeSink:
    """A sink that records what it got and fails while ``failing`` says so."""

    name: str
    events: tuple[str, ...] = ("needs-attention",)
    failing: bool = False
    delay: float = 0.0
    got: list[str] = field(default_factory=list)
    during: Callable[[], None] | None = None

    @property
    def id(self) -> str:
        return f"fake:{self.name}"

    @property
    def time_bound_seconds(self) -> float:
        return 1.0

    def label(self) -> str:
        return f"fake {self.name}"

    def wants(self, notice: Notice) -> bool:
        return bool(set(notice.events) & set(self.events))

    def deliver(self, notice: Notice) -> str | None:
        if self.during is not None:
            self.during()
        time.sleep(self.delay)
        if self.failing:
            return "refused"
        self.got.append(notice.id)
        return None


def notice(number: int, at: datetime, event: str = "needs-attention") -> Notice:
    notice_id = f"ntc-test-{number}"
    payload = {"id": notice_id, "event": event, "events": [event], "item": {"id": number}}
    return Notice(notice_id, event, (event,), at, number, "agent-failure", payload)


def add(store: Store, *notices: Notice) -> None:
    for one in notices:
        assert store.add_notice_once(one)


def deliver(store: Store, sinks: list[FakeSink], clock: FakeClock) -> list[Attempt]:
    return deliver_due(store, list[Sink](sinks), deliverer="w-a", now=clock, max_attempts=3)


def another_deliverer(store: Store, sinks: list[FakeSink], clock: FakeClock) -> Attempt | None:
    """One attempt by another deliverer, w-b: None when it finds no notice to take."""
    attempts = deliver_due(store, list[Sink](sinks), deliverer="w-b", now=clock, max_attempts=3,
                           limit=1)  # fmt: skip
    return attempts[0] if attempts else None


def test_a_due_notice_goes_once_to_each_sink_that_wants_it(store: Store, clock: FakeClock) -> None:
    chat, done_only = FakeSink("chat"), FakeSink("done", events=("done",))
    add(store, notice(1, clock()), notice(2, clock()))
    attempts = deliver(store, [chat, done_only], clock)
    assert [a.outcome.state for a in attempts] == ["delivered", "delivered"]
    assert all(a.recorded and a.sent == ("fake chat",) for a in attempts)
    assert chat.got == ["ntc-test-1", "ntc-test-2"]  # oldest first
    assert done_only.got == []
    [first, _second] = store.list_notices(ALL)
    assert first.delivered_to == ("fake:chat",)
    assert first.attempts == 1
    assert deliver(store, [chat, done_only], clock) == []  # nothing due: none twice
    assert chat.got == ["ntc-test-1", "ntc-test-2"]


def test_a_notice_no_sink_wants_is_finished_with_nothing_sent(
    store: Store, clock: FakeClock
) -> None:
    add(store, notice(1, clock(), event="done"))
    [attempt] = deliver(store, [FakeSink("chat")], clock)
    assert (attempt.outcome.state, attempt.sent, attempt.outcome.delivered_to) == (
        "delivered", (), ())  # fmt: skip
    assert store.outbox_figures().pending == 0


def test_a_failing_sink_is_retried_alone_with_backoff_then_given_up(
    store: Store, clock: FakeClock
) -> None:
    good, bad = FakeSink("good"), FakeSink("bad", failing=True)
    add(store, notice(1, clock()))
    [first] = deliver(store, [good, bad], clock)
    assert first.outcome.state == "pending"
    assert first.failed == {"fake bad": "refused"}
    assert first.outcome.next_attempt_at == clock() + timedelta(seconds=RETRY_FIRST_SECONDS)
    assert deliver(store, [good, bad], clock) == []  # not due before its backoff
    clock.advance(RETRY_FIRST_SECONDS)
    [second] = deliver(store, [good, bad], clock)
    assert second.outcome.next_attempt_at == clock() + timedelta(seconds=2 * RETRY_FIRST_SECONDS)
    assert good.got == ["ntc-test-1"]  # it has it: the retry goes to the other sink only
    clock.advance(2 * RETRY_FIRST_SECONDS)
    [third] = deliver(store, [good, bad], clock)
    assert third.outcome.state == "given-up"
    [stored] = store.list_notices(["given-up"])
    assert stored.attempts == 3
    assert stored.last_error == "fake bad: refused"
    assert stored.delivered_to == ("fake:good",)
    figures = store.outbox_figures()
    assert (figures.pending, figures.given_up) == (0, 1)


def test_a_sink_that_recovers_finishes_the_notice(store: Store, clock: FakeClock) -> None:
    flaky = FakeSink("flaky", failing=True)
    add(store, notice(1, clock()))
    deliver(store, [flaky], clock)
    flaky.failing = False
    clock.advance(RETRY_FIRST_SECONDS)
    [attempt] = deliver(store, [flaky], clock)
    assert attempt.outcome.state == "delivered"
    assert attempt.outcome.last_error is None
    assert flaky.got == ["ntc-test-1"]


def test_one_deliverer_at_a_time_holds_a_notice(store: Store, clock: FakeClock) -> None:
    """While one deliverer sends a notice, another finds nothing to take."""
    seen: list[object] = []

    def other_deliverer() -> None:
        seen.append(another_deliverer(store, [], clock))

    add(store, notice(1, clock()))
    slow = FakeSink("slow", during=other_deliverer)
    [attempt] = deliver(store, [slow], clock)
    assert seen == [None]
    assert attempt.outcome.state == "delivered"


def test_a_claim_that_outlived_its_lease_writes_nothing(store: Store, clock: FakeClock) -> None:
    """The deliverer took longer than its claim: another took the notice over, and only that
    one's outcome stands (the sink may have it twice: at-least-once, the id to dedupe on)."""
    taken_over: list[object] = []

    def stall_then_lose_the_claim() -> None:
        clock.advance(DELIVERY_LEASE_SECONDS + 60)
        other = FakeSink("chat")
        taken_over.append(another_deliverer(store, [other], clock))

    add(store, notice(1, clock()))
    sink = FakeSink("chat", during=stall_then_lose_the_claim)
    [mine] = deliver(store, [sink], clock)
    [theirs] = taken_over
    assert theirs is not None
    assert theirs.recorded
    assert not mine.recorded
    [stored] = store.list_notices(ALL)
    assert stored.state == "delivered"
    assert stored.attempts == 1


def test_a_slow_sink_keeps_the_claim_and_the_others_notices_go_on(
    store: Store, clock: FakeClock
) -> None:
    """Each sink in its own lane: while one sink is still on the first notice, the other has
    every notice; the first notice's claim is renewed (with the sink that has it) so that no
    other deliverer takes it past its first expiry; then its outcome is written under it."""
    add(store, notice(1, clock()), notice(2, clock()))
    fast = FakeSink("fast")
    lease = lease_seconds([fast, FakeSink("slow")])
    seen: list[object] = []

    def hold_past_the_first_expiry() -> None:
        wait_for(
            lambda: fast.got == ["ntc-test-1", "ntc-test-2"], timeout=10, what="both sent"
        )  # not behind this sink
        held = [n.claim_expires_at for n in store.list_notices(ALL)]
        clock.advance(lease * 0.75)  # the deliverer's next turn renews both claims, in turn
        wait_for(
            lambda: all(
                n.claim_expires_at != was
                for n, was in zip(store.list_notices(ALL), held, strict=True)
            ),
            timeout=10,
            what="both claims renewed",
        )  # both: advancing past the first expiry after one alone let another take the second
        assert store.list_notices(ALL)[0].delivered_to == ("fake:fast",)  # recorded so far
        clock.advance(lease * 0.5)  # past the first expiry
        seen.append(another_deliverer(store, [FakeSink("other")], clock))

    slow = SlowOnce("slow", during_first=hold_past_the_first_expiry)
    attempts = deliver(store, [fast, slow], clock)
    assert seen == [None]  # nobody took the held notice
    assert [(a.claimed.notice.id, a.outcome.state, a.recorded) for a in attempts] == [
        ("ntc-test-1", "delivered", True), ("ntc-test-2", "delivered", True)]  # fmt: skip
    assert [n.delivered_to for n in store.list_notices(ALL)] == [
        ("fake:fast", "fake:slow"), ("fake:fast", "fake:slow")]  # fmt: skip


@dataclass
class SlowOnce(FakeSink):
    """A sink that runs ``during_first`` inside its first delivery only."""

    during_first: Callable[[], None] | None = None

    def deliver(self, notice: Notice) -> str | None:
        if self.during_first is not None:
            first, self.during_first = self.during_first, None
            first()
        return super().deliver(notice)


def test_a_notice_is_added_once_under_its_id(store: Store, clock: FakeClock) -> None:
    assert store.add_notice_once(notice(1, clock()))
    assert not store.add_notice_once(notice(1, clock.advance(5)))
    deliver(store, [FakeSink("chat")], clock)
    assert not store.add_notice_once(notice(1, clock()))  # delivered: still once
    assert len(store.list_notices(ALL)) == 1


def row(worker_id: str, heartbeat: datetime, **changes: object) -> WorkerRow:
    fields: dict[str, object] = {
        "worker_id": worker_id, "label": None, "installation_id": "inst-b", "pid": 1,
        "process_started_at": 0.0, "version": "0", "state": WorkerState.RUNNING,
        "items": (7,), "started_at": heartbeat, "last_heartbeat_at": heartbeat, **changes,
    }  # fmt: skip
    return WorkerRow(**fields)  # type: ignore[arg-type]


def test_a_quiet_worker_is_told_of_once(store: Store, clock: FakeClock) -> None:
    store.upsert_worker(row("w-quiet000000", clock(), label="night"))
    store.upsert_worker(row("w-fresh000000", clock.advance(100)))
    store.upsert_worker(row(SOURCE.worker_id or "", clock() - timedelta(hours=1)))  # itself
    assert note_quiet_workers(store, now=clock(), max_age_seconds=60, source=SOURCE) == 1
    assert note_quiet_workers(store, now=clock.advance(30), max_age_seconds=60, source=SOURCE) == 0
    [stored] = store.list_notices(ALL)
    assert stored.notice.id == quiet_notice_id("w-quiet000000")
    assert stored.notice.event == "worker-quiet"
    payload = stored.notice.payload
    assert payload["quiet_worker"]["worker_id"] == "w-quiet000000"
    assert payload["quiet_worker"]["items"] == [7]
    assert payload["reason"].startswith("worker w-quiet000000 (night) sent no heartbeat for 100 s")
    assert payload["next_action"] == "wrighty workers"
    assert payload["worker_id"] == SOURCE.worker_id  # who noticed


def test_workers_are_watched_only_when_a_sink_wants_it(clock: FakeClock) -> None:
    now = clock()
    assert not wants_quiet_workers(sinks_of(NotifySettings.model_validate(
        {"urls": ["json://h/a"]})), now)  # fmt: skip
    assert wants_quiet_workers(sinks_of(NotifySettings.model_validate(
        {"urls": [{"url": "json://h/a", "events": ["worker-quiet"]}]})), now)  # fmt: skip


def test_the_lease_covers_the_slowest_sinks() -> None:
    short = sinks_of(NotifySettings.model_validate({"command": ["x"]}))
    assert lease_seconds(short) == DELIVERY_LEASE_SECONDS
    slow = sinks_of(NotifySettings.model_validate(
        {"urls": ["json://h/a"], "command": {"argv": ["x"], "timeoutSeconds": 600}}))  # fmt: skip
    assert lease_seconds(slow) == 60 + 605 + 30


# -- the worker's thread ------------------------------------------------------------------------


class Thread:
    """A DeliveryThread over fake sinks, with its events."""

    def __init__(
        self,
        store: Store,
        sinks: list[FakeSink],
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        source: Source = SOURCE,
        **settings: object,
    ) -> None:
        self.events: list[tuple[str, dict]] = []
        self.thread = DeliveryThread(
            store,
            NotifySettings.model_validate({"command": ["unused"], **settings}),
            source=source,
            worker_max_age_seconds=60,
            now=now,
            emit=lambda name, **fields: self.events.append((name, fields)),
            interval_seconds=60,
        )
        self.thread._sinks = list[Sink](sinks)  # the fakes stand in for the file's sinks

    def named(self, name: str) -> list[dict]:
        return [fields for event, fields in self.events if event == name]


def test_the_thread_delivers_when_woken_and_before_it_stops(store: Store) -> None:
    chat = FakeSink("chat")
    runner = Thread(store, [chat])
    runner.thread.start()
    store.add_notice_once(notice(1, datetime.now(UTC)))
    runner.thread.wake()
    wait_for(
        lambda: chat.got == ["ntc-test-1"], timeout=5, what="the delivery"
    )  # not the 60 s interval
    store.add_notice_once(notice(2, datetime.now(UTC)))
    runner.thread.stop()
    assert chat.got == ["ntc-test-1", "ntc-test-2"]
    assert [f["notice_id"] for f in runner.named("notify-delivered")] == chat.got
    assert runner.named("notify-delivered")[0]["sent_to"] == ["fake chat"]


def test_a_slow_sink_never_holds_up_who_wakes_the_thread(store: Store) -> None:
    delivering, release = threading.Event(), threading.Event()

    def held() -> None:  # the sink holds its delivery until the test releases it
        delivering.set()
        release.wait(60)

    slow = FakeSink("slow", during=held)
    runner = Thread(store, [slow])
    runner.thread.start()
    store.add_notice_once(notice(1, datetime.now(UTC)))
    runner.thread.wake()
    wait_for(delivering.is_set, timeout=10, what="the sink to start")
    waker = threading.Thread(target=lambda: [runner.thread.wake(), runner.thread.wake()])
    waker.start()
    waker.join(30)
    assert not waker.is_alive(), "a wake waited for the sink"
    assert slow.got == []  # it was still holding
    release.set()
    runner.thread.stop()
    assert slow.got == ["ntc-test-1"]


def test_a_failed_attempt_is_said_with_its_error(store: Store) -> None:
    runner = Thread(store, [FakeSink("bad", failing=True)])
    store.add_notice_once(notice(1, datetime.now(UTC)))
    runner.thread.start()
    runner.thread.stop()
    [failed] = runner.named("notify-failed")
    assert failed["state"] == "pending"
    assert failed["error"] == "fake bad: refused"
    assert failed["attempts"] == 1
    assert failed["next_attempt_at"]


def test_the_thread_survives_the_store_failing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = {"n": 0}
    real = store.claim_notice

    def flaky(*args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == 1:
            raise StoreError("database is locked")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "claim_notice", flaky)
    chat = FakeSink("chat")
    runner = Thread(store, [chat])
    store.add_notice_once(notice(1, datetime.now(UTC)))
    runner.thread.start()
    wait_for(lambda: runner.named("store-unreachable"), timeout=10, what="store-unreachable")
    runner.thread.wake()
    wait_for(lambda: chat.got == ["ntc-test-1"], timeout=10, what="the delivery")
    runner.thread.stop()
    assert runner.named("store-unreachable")[0]["operation"] == "notify"


def test_delivered_notices_past_their_retention_are_pruned(store: Store) -> None:
    old = datetime.now(UTC) - timedelta(hours=30)
    store.add_notice_once(notice(1, old))
    deliver_due(store, [FakeSink("chat")], deliverer="w-a", now=lambda: old,  # type: ignore[list-item]
                max_attempts=3)  # fmt: skip
    assert len(store.list_notices(ALL)) == 1
    runner = Thread(store, [FakeSink("chat")], retentionHours=24)
    runner.thread.start()
    runner.thread.stop()
    assert store.list_notices(ALL) == []


def test_two_threads_on_one_store_deliver_each_notice_once(store: Store) -> None:
    lock = threading.Lock()
    got: list[str] = []

    def record(notice_id: str) -> None:
        with lock:
            got.append(notice_id)

    for number in range(20):
        store.add_notice_once(notice(number, datetime.now(UTC) - timedelta(seconds=30 - number)))

    class Shared(FakeSink):
        def deliver(self, one: Notice) -> str | None:
            time.sleep(0.01)
            record(one.id)
            return None

    a, b = Thread(store, [Shared("chat")]), Thread(store, [Shared("chat")])
    b.thread.deliverer = "w-other0000000"
    a.thread.start()
    b.thread.start()
    a.thread.stop()
    b.thread.stop()
    assert sorted(got) == sorted(f"ntc-test-{n}" for n in range(20))


# -- the morning digest (notify.digest) --------------------------------------------------------

DIGEST_DAY = datetime(2026, 12, 6, 7, 30, tzinfo=UTC)  # notify.digest "07:30" of that day


def digests(store: Store) -> list[str]:
    return sorted(s.notice.id for s in store.list_notices(ALL) if s.notice.event == "digest")


def one_pass(
    store: Store, clock: FakeClock, sink: FakeSink, worker: str, **settings: object
) -> Thread:
    """A worker's deliverer started at ``clock``'s time and stopped: its first pass, whose
    upkeep looks for the day's digest."""
    runner = Thread(store, [sink], now=clock, source=Source("inst-a", worker), **settings)
    runner.thread.start()
    runner.thread.stop()
    assert runner.named("notify-error") == []
    assert runner.named("store-unreachable") == []
    return runner


def test_the_digest_is_made_at_the_first_pass_from_its_time_once_a_day_across_deliverers(
    store: Store,
) -> None:
    clock = FakeClock(DIGEST_DAY - timedelta(hours=2))
    store.create_item(new_item("moved today"), at=clock(), actor="op")
    sink = FakeSink("phone", events=("digest",))
    clock.advance(2 * 3600 - 1)  # 07:29:59: not yet
    one_pass(store, clock, sink, "w-aaaaaaaaaaaa", digest="07:30")
    assert digests(store) == []
    clock.advance(1)  # 07:30:00: the first pass from its time makes it, and delivers it
    one_pass(store, clock, sink, "w-aaaaaaaaaaaa", digest="07:30")
    assert digests(store) == sink.got == ["ntc-digest-2026-12-06"]
    [stored] = store.list_notices(["delivered"])
    assert stored.notice.payload["counts"]["moved"] == 1
    assert stored.notice.payload["worker_id"] == "w-aaaaaaaaaaaa"
    # other workers' deliverers, later that day: none made again
    for worker, hours in (("w-bbbbbbbbbbbb", 0), ("w-cccccccccccc", 3), ("w-aaaaaaaaaaaa", 19)):
        clock.current = DIGEST_DAY + timedelta(hours=hours)
        one_pass(store, clock, sink, worker, digest="07:30")
    assert digests(store) == sink.got == ["ntc-digest-2026-12-06"]
    # the next day's, from its time
    clock.current = DIGEST_DAY + timedelta(days=1)
    one_pass(store, clock, sink, "w-bbbbbbbbbbbb", digest="07:30")
    assert digests(store) == sink.got == ["ntc-digest-2026-12-06", "ntc-digest-2026-12-07"]


def test_a_day_no_worker_saw_in_its_window_gets_no_digest(store: Store) -> None:
    sink = FakeSink("phone", events=("digest",))
    clock = FakeClock(DIGEST_DAY + timedelta(hours=20))  # 03:30 the next night: too late
    one_pass(store, clock, sink, "w-aaaaaaaaaaaa", digest="07:30")
    assert digests(store) == []
    clock.current = DIGEST_DAY + timedelta(hours=19, minutes=59)  # still in its window
    one_pass(store, clock, sink, "w-aaaaaaaaaaaa", digest="07:30")
    assert digests(store) == sink.got == ["ntc-digest-2026-12-06"]


def test_no_digest_without_notify_digest_or_a_sink_that_gets_it(store: Store) -> None:
    sink = FakeSink("phone", events=("digest", "needs-attention"))
    clock = FakeClock(DIGEST_DAY + timedelta(minutes=5))
    one_pass(store, clock, sink, "w-aaaaaaaaaaaa")  # notify.digest not set
    # set, but wrighty.json's sinks name their events, and not the digest
    one_pass(store, clock, sink, "w-aaaaaaaaaaaa", digest="07:30", events=["needs-attention"])
    assert digests(store) == []
    one_pass(store, clock, sink, "w-aaaaaaaaaaaa", digest="07:30")  # the default events have it
    assert digests(store) == ["ntc-digest-2026-12-06"]
