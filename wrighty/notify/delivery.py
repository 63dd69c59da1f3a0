"""Delivering the outbox (docs/notifications.md#the-outbox): one pass, and the worker's thread.

One attempt claims the oldest due notice for one deliverer (a guarded write: in a fleet, one
deliverer at a time holds a notice), sends it to each sink that wants it and does not have it
yet, and writes the outcome under that claim: delivered once no sink is left to reach,
otherwise retried with backoff, then given up (wrighty/domain/notices.after_attempt). A pass
makes attempts until no notice is due. The worker runs passes in a thread of its own, woken
after each settlement it commits and every few seconds, so that a slow or failing sink delays
other notices only, never a renewal or a settle.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from wrighty.config import NotifySettings
from wrighty.domain.decisions import describe_error
from wrighty.domain.notices import (
    DELIVERY_LEASE_SECONDS,
    Delivered,
    Notice,
    Source,
    StoredNotice,
    after_attempt,
    quiet_worker_notice,
    released,
)
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
# A claim lasts the longest its sinks may take, and a margin, or DELIVERY_LEASE_SECONDS.
LEASE_MARGIN_SECONDS = 30.0
# How long a stopping worker gives its thread to finish the delivery it is in.
STOP_WAIT_SECONDS = 10.0
# Then, once its command sinks are killed, how long it gives it to let the notice go.
RELEASE_WAIT_SECONDS = 5.0

Emit = Callable[..., None]


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


def attempt_next(
    store: Store,
    sinks: list[Sink],
    *,
    deliverer: str,
    now: Callable[[], datetime],
    max_attempts: int,
    interrupted: Callable[[], bool] = lambda: False,
) -> Attempt | None:
    """Claim the oldest due notice and deliver it; None when none is due. When
    ``interrupted`` turns true during the attempt (its deliverer stops), the sinks not tried
    yet are skipped, a sink cut short counts as no failure, and the notice is let go."""
    claimed = store.claim_notice(deliverer, now=now(), lease_seconds=lease_seconds(sinks))
    if claimed is None:
        return None
    reached: list[str] = []
    sent: list[str] = []
    failures: dict[str, str] = {}
    cut_short = False
    for sink in sinks:
        if sink.id in claimed.delivered_to or not sink.wants(claimed.notice):
            continue
        if interrupted():
            cut_short = True
            break
        label = sink.label()
        why = sink.deliver(claimed.notice)
        if why is None:
            reached.append(sink.id)
            sent.append(label)
        elif interrupted():
            cut_short = True
            break
        else:
            failures[label] = why
    if cut_short:
        outcome = released(claimed, tuple(reached))
    else:
        outcome = after_attempt(
            claimed, failures, tuple(reached), now=now(), max_attempts=max_attempts
        )
    recorded = store.finish_notice(claimed, outcome)
    return Attempt(
        claimed, outcome, tuple(sent), {} if cut_short else failures, recorded, cut_short
    )


def deliver_due(
    store: Store,
    sinks: list[Sink],
    *,
    deliverer: str,
    now: Callable[[], datetime],
    max_attempts: int,
    limit: int = MAX_ATTEMPTS_PER_PASS,
    keep_going: Callable[[], bool] = lambda: True,
    on_attempt: Callable[[Attempt], None] = lambda attempt: None,
    interrupted: Callable[[], bool] = lambda: False,
) -> list[Attempt]:
    """Attempt every due notice, one after the other, up to ``limit`` (a notice that fails is
    not due again before its backoff, so a pass ends)."""
    attempts: list[Attempt] = []
    while len(attempts) < limit and keep_going() and not interrupted():
        attempt = attempt_next(
            store, sinks, deliverer=deliverer, now=now, max_attempts=max_attempts,
            interrupted=interrupted,
        )  # fmt: skip
        if attempt is None:
            break
        attempts.append(attempt)
        on_attempt(attempt)
    return attempts


def wants_quiet_workers(sinks: list[Sink], now: datetime) -> bool:
    """Whether any sink gets worker-quiet (off by default): only then are workers watched."""
    probe = Notice("probe", "worker-quiet", ("worker-quiet",), now, None, None, {})
    return any(sink.wants(probe) for sink in sinks)


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
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._stop_by: float | None = None  # after the stop: no new attempt past this moment
        self._prune = _Every(PRUNE_INTERVAL_SECONDS)
        self._quiet = _Every(QUIET_INTERVAL_SECONDS)
        self._watch_quiet = wants_quiet_workers(self._sinks, now())
        self._thread = threading.Thread(target=self._run, name="notify", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Look for due notices now (a settlement just committed one)."""
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
            self._thread.join(RELEASE_WAIT_SECONDS)

    def _in_time(self) -> bool:
        return self._stop_by is None or time.monotonic() < self._stop_by

    def _run(self) -> None:
        while True:
            self._wake.clear()
            last = self._stopping.is_set()  # the pass that starts after the stop is the last
            self._pass()
            if last:
                return
            self._wake.wait(self._interval)

    def _pass(self) -> None:
        """One pass; nothing that goes wrong in it stops the thread."""
        try:
            if self._watch_quiet and self._quiet.due():
                note_quiet_workers(
                    self._store,
                    now=self._now(),
                    max_age_seconds=self._worker_max_age,
                    source=self._source,
                )
            deliver_due(
                self._store,
                self._sinks,
                deliverer=self.deliverer,
                now=self._now,
                max_attempts=self._settings.max_attempts,
                keep_going=self._in_time,
                on_attempt=self._report,
                interrupted=lambda: self._interruption.fired,
            )
            if self._prune.due():
                retention = timedelta(hours=self._settings.retention_hours)
                self._store.prune_notices(before=self._now() - retention)
        except StoreError as error:
            if self._in_time():  # past the stop, the worker's output may be gone
                self._emit(
                    "store-unreachable", operation="notify", error=type(error).__name__,
                    cause=str(error),
                )  # fmt: skip
        except Exception as error:  # a bug: said, and the next pass tries again
            if self._in_time():
                self._emit("notify-error", error=type(error).__name__, cause=describe_error(error))

    def _report(self, attempt: Attempt) -> None:
        name, fields = attempt_event(attempt)
        self._emit(name, **fields)


def attempt_event(attempt: Attempt) -> tuple[str, dict[str, Any]]:
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
        return "notify-released", fields
    if outcome.state == "delivered":
        return "notify-delivered", fields
    fields["state"] = outcome.state
    fields["error"] = outcome.last_error
    if outcome.state == "pending":
        from wrighty.domain.times import rfc3339

        fields["next_attempt_at"] = rfc3339(outcome.next_attempt_at)
    return "notify-failed", fields
