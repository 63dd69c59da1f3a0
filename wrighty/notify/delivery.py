"""Delivering the outbox (docs/notifications.md#the-outbox): the deliverer, a pass, and the
worker's thread.

An attempt claims the oldest due notice for one deliverer (a guarded write: in a fleet, one
deliverer at a time holds a notice), hands it to the lane of each sink that wants it and does
not have it yet, and writes the outcome under that claim once they have all answered:
delivered once no sink is left to reach, otherwise retried with backoff, then given up
(wrighty/domain/notices.after_attempt). Each sink has a lane of its own, a thread that sends
its notices one at a time in the order they were claimed, so a sink that hangs holds up only
its own deliveries: the other sinks' lanes go on with the next notices, while the claim of a
notice a slow sink still holds is renewed (with the sinks that have it so far). A pass makes
attempts until no notice is due and none is under way. The worker runs its deliverer in a
thread of its own, woken after each settlement it commits, when a sink answers, and every few
seconds, so that a slow or failing sink never delays a renewal or a settle.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from datetime import time as time_of_day
from typing import Any, TypeVar

from wrighty.config import NotifySettings
from wrighty.config.translate import digest_time_of
from wrighty.domain.decisions import describe_error
from wrighty.domain.durations import DAY_SECONDS
from wrighty.domain.morning import digest_due, morning_of
from wrighty.domain.notices import (
    DELIVERY_LEASE_SECONDS,
    DIGEST_EVENT,
    Source,
    after_attempt,
    digest_notice,
    quiet_worker_notice,
    released,
)
from wrighty.domain.outbox import Delivered, Notice, StoredNotice
from wrighty.domain.worker_events import Emit, WorkerEvent
from wrighty.errors import StoreError
from wrighty.notify.sinks import Interruption, Sink, sinks_of
from wrighty.store.port import Store

# The test hook (docs/testing.md): with WRIGHTY_NOTIFY_PAUSE=1 a worker writes notices to the
# outbox and delivers none, so that a test can kill it between the commit and the delivery.
PAUSE_VARIABLE = "WRIGHTY_NOTIFY_PAUSE"
# How often the worker's thread looks for due notices when nothing wakes it.
DELIVERY_INTERVAL_SECONDS = 5.0
# How often it forgets delivered notices older than notify.retentionHours.
PRUNE_INTERVAL_SECONDS = 3600.0
# How often it looks for workers gone quiet, when a sink wants worker-quiet.
QUIET_INTERVAL_SECONDS = 30.0
# Attempts in one pass, at most (the next pass goes on).
MAX_ATTEMPTS_PER_PASS = 100
# Notices one deliverer sends at once, at most: while a slow sink's lane works through them,
# the other sinks' lanes go on with them.
MAX_SENDING = 100
# How often a deliverer with notices under way looks at them (renews their claims), at least.
TURN_SECONDS = 1.0
# A claim lasts the longest its sinks may take, and a margin, or DELIVERY_LEASE_SECONDS.
LEASE_MARGIN_SECONDS = 30.0
# How long a stopping worker gives its thread to finish the delivery it is in.
STOP_WAIT_SECONDS = 10.0
# Then, once its command sinks are killed, how long it gives it to let the notice go.
RELEASE_WAIT_SECONDS = 5.0

_T = TypeVar("_T")


def delivery_paused(environ: Mapping[str, str]) -> bool:
    return environ.get(PAUSE_VARIABLE) == "1"


def lease_seconds(sinks: list[Sink]) -> float:
    """How long a deliverer holds a notice: long enough for every sink to take its longest,
    so that no other deliverer takes it while it is being sent."""
    needed = sum(sink.time_bound_seconds for sink in sinks) + LEASE_MARGIN_SECONDS
    return max(float(DELIVERY_LEASE_SECONDS), needed)


@dataclass(frozen=True)
class Attempt:
    """One attempt at one notice: which sinks got it now and which failed (by label)."""

    claimed: StoredNotice
    outcome: Delivered
    sent: tuple[str, ...]
    failed: dict[str, str]
    # False when the claim had expired and another deliverer had taken the notice: the
    # outcome was not written (that deliverer's is).
    recorded: bool
    # True when the deliverer stopped during the attempt: the notice was let go (released).
    cut_short: bool = False


@dataclass
class _Sending:
    """A claimed notice while its sinks are sent to: who has answered, and how."""

    claimed: StoredNotice
    waiting: dict[str, Sink]  # by sink id: the sinks that have not answered yet
    started: set[str] = field(default_factory=set)  # of those, the ones whose lane began it
    reached: list[str] = field(default_factory=list)  # sink ids
    sent: list[str] = field(default_factory=list)  # labels
    failures: dict[str, str] = field(default_factory=dict)  # label -> why
    cut_short: bool = False
    lost: bool = False  # its claim expired and was taken again: nothing is written


class _Lane:
    """One sink's deliveries, one at a time in the order they were claimed, in a thread of its
    own: a sink that hangs holds up its own lane, never another sink's."""

    def __init__(
        self,
        sink: Sink,
        interruption: Interruption,
        began: Callable[[str, str], bool],
        answered: Callable[[str, str, str | None, bool], None],
    ) -> None:
        self.sink = sink
        self._interruption = interruption
        self._began = began
        self._answered = answered
        self._jobs: queue.SimpleQueue[Notice | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"notify {sink.id}", daemon=True)
        self._thread.start()

    def send(self, notice: Notice) -> None:
        self._jobs.put(notice)

    def close(self) -> None:
        self._jobs.put(None)

    def _run(self) -> None:
        while (notice := self._jobs.get()) is not None:
            sink_id = self.sink.id
            if not self._began(notice.id, sink_id):  # its deliverer stopped: let go
                self._answered(notice.id, sink_id, None, True)
                continue
            try:
                why = self.sink.deliver(notice)
            except Exception as error:  # a sink never raises; if one does, it failed
                why = f"failed ({type(error).__name__})"
            self._answered(notice.id, sink_id, why, why is not None and self._interruption.fired)


class Deliverer:
    """Delivers claimed notices through its sinks, each sink in a lane of its own
    (docs/notifications.md#the-outbox): a notice is claimed once for all its sinks, handed to
    the lane of each sink that wants it and lacks it, and its outcome is written under the
    claim once every one of them has answered. While a sink is slow, the claim is renewed (and
    the sinks reached so far recorded), and the other sinks' lanes go on with the next
    notices. Its calls to the store are made by the thread that calls ``turn``."""

    def __init__(
        self,
        store: Store,
        sinks: list[Sink],
        *,
        deliverer: str,
        now: Callable[[], datetime],
        max_attempts: int,
        interruption: Interruption | None = None,
        answered: Callable[[], None] = lambda: None,
    ) -> None:
        self._store = store
        self._deliverer = deliverer
        self._now = now
        self._max_attempts = max_attempts
        self._lease = lease_seconds(sinks)
        self._interruption = interruption or Interruption()
        self._lock = threading.Lock()
        self._answers = threading.Event()
        self._on_answer = answered
        self.claimed = 0  # notices claimed so far
        self._finished: list[Attempt] = []
        self.drained = False  # the last claim found no due notice
        self._sending: dict[str, _Sending] = {}  # by notice id, in the order claimed
        self._sinks = sinks
        self._lanes = {
            sink.id: _Lane(sink, self._interruption, self._began, self._answered) for sink in sinks
        }

    @property
    def busy(self) -> int:
        """How many claimed notices are still being sent."""
        with self._lock:
            return len(self._sending)

    def turn(self, *, claim: int) -> list[Attempt]:
        """Finish the notices whose sinks have all answered, renew the claims of those still
        being sent, then claim up to ``claim`` due notices and hand them to the lanes; the
        attempts finished in this turn (and in a turn the store failed)."""
        self._finish_answered()
        self._renew()
        for _ in range(max(0, min(claim, MAX_SENDING - self.busy))):
            self.drained = False
            claimed = self._store.claim_notice(
                self._deliverer, now=self._now(), lease_seconds=self._lease
            )
            if claimed is None:
                self.drained = True
                break
            self.claimed += 1
            self._hand_out(claimed)
            self._finish_answered()
        return self.take_finished()

    def take_finished(self) -> list[Attempt]:
        """The attempts finished since the last call."""
        finished, self._finished = self._finished, []
        return finished

    def wait(self, seconds: float) -> None:
        """Until a sink answers, or ``seconds``."""
        self._answers.wait(seconds)
        self._answers.clear()

    def let_go(self) -> list[Attempt]:
        """After the interruption: the notices whose every unanswered sink never began are let
        go (released, their reached sinks kept); one still inside a sink that cannot be cut
        (Apprise, in this process) is left to its claim, which expires."""
        with self._lock:
            for sending in self._sending.values():
                if not sending.waiting.keys() & sending.started:
                    sending.waiting.clear()
                    sending.cut_short = True
        self._finish_answered()
        return self.take_finished()

    def close(self) -> None:
        for lane in self._lanes.values():
            lane.close()

    def _hand_out(self, claimed: StoredNotice) -> None:
        notice = claimed.notice
        wanted = {
            sink.id: sink
            for sink in self._sinks
            if sink.id not in claimed.delivered_to and sink.wants(notice)
        }
        with self._lock:
            self._sending[notice.id] = _Sending(claimed, dict(wanted))
        for sink_id in wanted:
            self._lanes[sink_id].send(notice)

    def _began(self, notice_id: str, sink_id: str) -> bool:
        """Whether the lane may send: not once its deliverer stopped, nor a notice let go."""
        with self._lock:
            sending = self._sending.get(notice_id)
            if self._interruption.fired or sending is None or sink_id not in sending.waiting:
                return False
            sending.started.add(sink_id)
            return True

    def _answered(self, notice_id: str, sink_id: str, why: str | None, cut: bool) -> None:
        with self._lock:
            sending = self._sending.get(notice_id)
            if sending is None or sink_id not in sending.waiting:
                return  # let go already
            sink = sending.waiting.pop(sink_id)
            if cut:
                sending.cut_short = True
            elif why is None:
                sending.reached.append(sink_id)
                sending.sent.append(sink.label())
            else:
                sending.failures[sink.label()] = why
        self._answers.set()
        self._on_answer()

    def _finish_answered(self) -> None:
        with self._lock:
            done = [s for s in self._sending.values() if not s.waiting]
            for sending in done:
                del self._sending[sending.claimed.notice.id]
        for sending in done:  # if the store fails, these are left to their claims
            self._finished.append(self._finish(sending))

    def _finish(self, sending: _Sending) -> Attempt:
        claimed, reached = sending.claimed, tuple(sending.reached)
        if sending.cut_short:
            outcome = released(claimed, reached)
        else:
            outcome = after_attempt(
                claimed, sending.failures, reached, now=self._now(),
                max_attempts=self._max_attempts,
            )  # fmt: skip
        recorded = not sending.lost and self._store.finish_notice(claimed, outcome)
        failures = {} if sending.cut_short else sending.failures
        return Attempt(claimed, outcome, tuple(sending.sent), failures, recorded, sending.cut_short)

    def _renew(self) -> None:
        """Renew each claim that has used half its lease, with the sinks reached so far."""
        now = self._now()
        with self._lock:
            due = [
                s
                for s in self._sending.values()
                if not s.lost
                and s.claimed.claim_expires_at is not None
                and 0 < (s.claimed.claim_expires_at - now).total_seconds() < self._lease / 2
            ]  # a claim past its expiry is not renewed: another deliverer may hold it now
            progress = {s.claimed.notice.id: tuple(s.reached) for s in due}
        for sending in due:
            claimed = sending.claimed
            reached = progress[claimed.notice.id]
            delivered_to = tuple(dict.fromkeys((*claimed.delivered_to, *reached)))
            renewed = self._store.renew_notice(
                claimed, until=now + timedelta(seconds=self._lease), delivered_to=delivered_to
            )
            with self._lock:
                if renewed is None:
                    sending.lost = True
                else:
                    sending.claimed = renewed


def deliver_due(
    store: Store,
    sinks: list[Sink],
    *,
    deliverer: str,
    now: Callable[[], datetime],
    max_attempts: int,
    limit: int = MAX_ATTEMPTS_PER_PASS,
    on_attempt: Callable[[Attempt], None] = lambda attempt: None,
) -> list[Attempt]:
    """Attempt every due notice, up to ``limit``, each sink in its own lane, and wait for
    them all (`wrighty notify flush`; a notice that fails is not due again before its
    backoff, so a pass ends)."""
    engine = Deliverer(store, sinks, deliverer=deliverer, now=now, max_attempts=max_attempts)
    attempts: list[Attempt] = []
    try:
        while True:
            done = engine.turn(claim=limit - engine.claimed)
            for attempt in done:
                on_attempt(attempt)
            attempts += done
            if engine.busy == 0 and (engine.drained or engine.claimed >= limit):
                return attempts
            engine.wait(TURN_SECONDS)
    finally:
        engine.close()


def wants_event(sinks: list[Sink], event: str, now: datetime) -> bool:
    """Whether any sink gets ``event`` in a notice about no item."""
    probe = Notice("probe", event, (event,), now, None, None, {})
    return any(sink.wants(probe) for sink in sinks)


def wants_quiet_workers(sinks: list[Sink], now: datetime) -> bool:
    """Whether any sink gets worker-quiet (off by default): only then are workers watched."""
    return wants_event(sinks, "worker-quiet", now)


def note_quiet_workers(
    store: Store, *, now: datetime, max_age_seconds: float, source: Source
) -> int:
    """Add one worker-quiet notice per registered worker whose last heartbeat is older than
    ``max_age_seconds`` (once: its id is the worker's); how many were new."""
    added = 0
    for row in store.list_workers():
        if row.worker_id == source.worker_id:
            continue
        notice = quiet_worker_notice(row, now=now, max_age_seconds=max_age_seconds, source=source)
        if notice is not None and store.add_notice_once(notice):
            added += 1
    return added


def note_digest(
    store: Store, at: time_of_day, *, now: datetime, retention_seconds: float, source: Source
) -> date | None:
    """Add the morning digest (notify.digest at ``at``) when one is due now, once a day across
    the fleet: its id is its day's, so a second deliverer's insert adds nothing. The day looked
    at (whether this call added it or another deliverer had), or None when none is due."""
    day = digest_due(at, now=now, retention_seconds=retention_seconds)
    if day is None:
        return None
    since = now - timedelta(seconds=DAY_SECONDS)
    store.add_notice_once(
        digest_notice(
            morning_of(store.list_items_moved_since(since), since), day=day, now=now, source=source
        )
    )
    return day


@dataclass
class _Every:
    """Whether ``seconds`` have passed since the last time it said yes (yes the first time)."""

    seconds: float
    _last: float | None = field(default=None)

    def due(self) -> bool:
        moment = time.monotonic()
        if self._last is not None and moment - self._last < self.seconds:
            return False
        self._last = moment
        return True


class DeliveryThread:
    """The worker's deliverer: a thread of its own, with its own calls to the store, so that
    no delivery waits on a run and no run waits on a delivery. Its deliverer id is the
    worker's id."""

    def __init__(
        self,
        store: Store,
        settings: NotifySettings,
        *,
        source: Source,
        worker_max_age_seconds: float,
        now: Callable[[], datetime],
        emit: Emit,
        interval_seconds: float = DELIVERY_INTERVAL_SECONDS,
    ) -> None:
        if source.worker_id is None:
            raise ValueError("a worker's deliverer needs the worker's id")
        self.deliverer = source.worker_id
        self._store = store
        self._settings = settings
        self._interruption = Interruption()
        self._sinks = sinks_of(settings, interruption=self._interruption)
        self._source = source
        self._worker_max_age = worker_max_age_seconds
        self._now = now
        self._emit = emit
        self._interval = interval_seconds
        self._wake = threading.Event()  # a turn now: woken, a sink answered, the stop
        self._look = threading.Event()  # and in it, a look for due notices
        self._stopping = threading.Event()
        self._stop_by: float | None = None  # after the stop: no new attempt past this moment
        self._prune = _Every(PRUNE_INTERVAL_SECONDS)
        self._quiet = _Every(QUIET_INTERVAL_SECONDS)
        self._digest_check = _Every(QUIET_INTERVAL_SECONDS)
        self._watch_quiet = wants_quiet_workers(self._sinks, now())
        # notify.digest (None: off, or no sink gets the digest: then no summary is read)
        wanted = wants_event(self._sinks, DIGEST_EVENT, now())
        self._digest_at = digest_time_of(settings) if wanted else None
        self._digested: date | None = None  # the day whose digest this worker saw to
        self._thread = threading.Thread(target=self._run, name="notify", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Look for due notices now (a settlement just committed one)."""
        self._look.set()
        self._wake.set()

    def stop(self, wait_seconds: float = STOP_WAIT_SECONDS) -> None:
        """Deliver what is due within ``wait_seconds``, then stop. A delivery still under way
        then is cut short: its command sinks' process trees are killed and the notice is let
        go, due again for the next deliverer. One still inside Apprise (a call that takes up to
        APPRISE_TIMEOUT_SECONDS, in this process) is left to its claim, which expires."""
        self._stop_by = time.monotonic() + wait_seconds
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(wait_seconds)
        if self._thread.is_alive():
            self._interruption.fire()
            self._wake.set()
            self._thread.join(RELEASE_WAIT_SECONDS)

    def _in_time(self) -> bool:
        return self._stop_by is None or time.monotonic() < self._stop_by

    def _run(self) -> None:
        engine = Deliverer(
            self._store,
            self._sinks,
            deliverer=self.deliverer,
            now=self._now,
            max_attempts=self._settings.max_attempts,
            interruption=self._interruption,
            answered=self._wake.set,
        )
        try:
            self._deliver(engine)
        finally:
            engine.close()

    def _deliver(self, engine: Deliverer) -> None:
        """Turns until the stop: after it, what is due is still delivered until nothing is
        due and nothing under way, or until the interruption, after which what can be let go
        is, for up to RELEASE_WAIT_SECONDS."""
        let_go_by: float | None = None
        next_look = 0.0
        while True:
            self._wake.clear()
            stopping = self._stopping.is_set()
            if self._interruption.fired:
                let_go_by = let_go_by or time.monotonic() + RELEASE_WAIT_SECONDS
                self._turn(engine, engine.let_go)
                if engine.busy == 0 or time.monotonic() >= let_go_by:
                    return
            else:
                # Due notices are looked for when woken, after the stop, and every interval;
                # the other turns finish what the sinks answered and renew claims.
                look = self._look.is_set() or stopping or time.monotonic() >= next_look
                if look:
                    self._look.clear()
                    next_look = time.monotonic() + self._interval
                self._pass(engine, claim=look and self._in_time())
                if stopping and engine.busy == 0 and (engine.drained or not self._in_time()):
                    return
            self._wake.wait(TURN_SECONDS if engine.busy else self._interval)

    def _pass(self, engine: Deliverer, *, claim: bool) -> None:
        """One turn, and the outbox's upkeep."""
        if self._watch_quiet and self._quiet.due():
            self._guarded(
                lambda: note_quiet_workers(
                    self._store,
                    now=self._now(),
                    max_age_seconds=self._worker_max_age,
                    source=self._source,
                )
            )
        if self._digest_at is not None and self._digest_check.due():
            self._guarded(self._note_digest)
        self._turn(engine, lambda: engine.turn(claim=MAX_ATTEMPTS_PER_PASS if claim else 0))
        if self._prune.due():
            retention = timedelta(hours=self._settings.retention_hours)
            self._guarded(lambda: self._store.prune_notices(before=self._now() - retention))

    def _note_digest(self) -> None:
        """The day's digest, unless this worker saw to it already (then its summary is not
        read again that day)."""
        assert self._digest_at is not None
        now = self._now()
        due = digest_due(
            self._digest_at, now=now, retention_seconds=self._settings.retention_hours * 3600
        )
        if due is None or due == self._digested:
            return
        self._digested = note_digest(
            self._store, self._digest_at, now=now,
            retention_seconds=self._settings.retention_hours * 3600, source=self._source,
        )  # fmt: skip

    def _turn(self, engine: Deliverer, step: Callable[[], list[Attempt]]) -> None:
        for attempt in self._guarded(step) or engine.take_finished():
            self._report(attempt)

    def _guarded(self, step: Callable[[], _T]) -> _T | None:
        """``step``; nothing that goes wrong in it stops the thread (the next turn tries
        again)."""
        try:
            return step()
        except StoreError as error:
            if self._in_time():  # past the stop, the worker's output may be gone
                self._emit(
                    WorkerEvent.STORE_UNREACHABLE, operation="notify", error=type(error).__name__,
                    cause=str(error),
                )  # fmt: skip
        except Exception as error:  # a bug: said, and the next turn tries again
            if self._in_time():
                self._emit(
                    WorkerEvent.NOTIFY_ERROR,
                    error=type(error).__name__,
                    cause=describe_error(error),
                )
        return None

    def _report(self, attempt: Attempt) -> None:
        name, fields = attempt_event(attempt)
        self._emit(name, **fields)


def attempt_event(attempt: Attempt) -> tuple[WorkerEvent, dict[str, Any]]:
    """The worker's event for an attempt: notify-delivered, notify-failed, or
    notify-released (the worker stopped during it)."""
    notice, outcome = attempt.claimed.notice, attempt.outcome
    fields: dict[str, Any] = {
        "notice_id": notice.id,
        "notice_event": notice.event,
        "item_id": notice.item_id,
        "attempts": outcome.attempts,
        "sent_to": list(attempt.sent),
        "recorded": attempt.recorded,
    }
    if attempt.cut_short:
        return WorkerEvent.NOTIFY_RELEASED, fields
    if outcome.state == "delivered":
        return WorkerEvent.NOTIFY_DELIVERED, fields
    fields["state"] = outcome.state
    fields["error"] = outcome.last_error
    if outcome.state == "pending":
        from wrighty.domain.times import rfc3339

        fields["next_attempt_at"] = rfc3339(outcome.next_attempt_at)
    return WorkerEvent.NOTIFY_FAILED, fields
