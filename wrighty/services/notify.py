"""The `wrighty notify` commands (docs/notifications.md): a test message through the sinks,
the notifications not delivered yet, and one delivery pass from the command line."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from wrighty.store.port import Store

if TYPE_CHECKING:  # the delivery is loaded only by the commands that deliver
    from wrighty.config import NotifySettings
    from wrighty.domain.notices import Source
    from wrighty.domain.outbox import StoredNotice
    from wrighty.notify.delivery import Attempt
    from wrighty.notify.sinks import Sink

UNDELIVERED = ("pending", "given-up")


@dataclass(frozen=True)
class Tried:
    """How the test message went through one sink: None, it went out; else why not."""

    label: str
    error: str | None


def send_test(sinks: list[Sink], source: Source, *, now: datetime) -> list[Tried]:
    """The test message through each sink, whatever its filter; nothing is stored."""
    from wrighty.domain.notices import trial_notice  # (listing the outbox makes no notice)

    notice = trial_notice(source, at=now)
    return [Tried(sink.label(), sink.deliver(notice)) for sink in sinks]


def undelivered(store: Store) -> list[StoredNotice]:
    """The notifications pending (due or waiting for a retry) and given up, oldest first."""
    return store.list_notices(UNDELIVERED)


@dataclass(frozen=True)
class Flushed:
    attempts: list[Attempt]
    quiet_workers: int  # worker-quiet notices added before the pass
    hastened: int  # pending notices that waited for a retry, tried now

    def count(self, state: str) -> int:
        return sum(attempt.outcome.state == state for attempt in self.attempts)


def flush(
    store: Store,
    settings: NotifySettings,
    sinks: list[Sink],
    *,
    source: Source,
    now: Callable[[], datetime],
    worker_max_age_seconds: float,
) -> Flushed:
    """Every pending notice now, like `postqueue -f`: those waiting for a retry are made due
    first (a person who fixed a sink need not wait out the backoff; given-up ones stay given
    up), then one delivery pass as a worker's (with the worker-quiet check when a sink wants
    it), under a deliverer id of its own. A notice that fails again waits for its next retry
    as usual."""
    from wrighty.notify.delivery import deliver_due, note_quiet_workers, wants_quiet_workers

    quiet = 0
    if wants_quiet_workers(sinks, now()):
        quiet = note_quiet_workers(
            store, now=now(), max_age_seconds=worker_max_age_seconds, source=source
        )
    hastened = store.make_notices_due(now=now())
    deliverer = f"cli-{secrets.token_hex(6)}"
    attempts = deliver_due(
        store, sinks, deliverer=deliverer, now=now, max_attempts=settings.max_attempts
    )
    return Flushed(attempts, quiet, hastened)
