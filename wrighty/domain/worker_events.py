"""The worker's events: every name `wrighty worker start` prints a line under
(docs/json.md#wrighty-worker-start---json lists each with its keys), and `Emit`, the one way
every part of the worker tells one. Pure.

Not to be confused with an item's history events (`model.Event`) or a notification's events
(`notices.EVENTS`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Protocol


class WorkerEvent(StrEnum):
    # The worker's life.
    STARTED = "started"
    CONCURRENCY_LIMITED = "concurrency-limited"
    IDLE = "idle"
    WAITING = "waiting"  # JSON only (PLAIN_SKIPS): a claim found nothing, the worker waits
    STOPPING = "stopping"
    # One item's run, in order (docs/worker.md#events).
    CLAIMED = "claimed"
    RESUMED = "resumed"
    SPAWNED = "spawned"
    SESSION = "session"
    CLAIM_LOST = "claim-lost"
    HEARTBEAT_LOST = "heartbeat-lost"  # claim-lost's old name, sent right after it
    EXITED = "exited"
    SETTLED = "settled"
    RETRY_SCHEDULED = "retry-scheduled"
    # A succeeded run's checks (docs/verify.md), between `exited` and `settled`.
    VERIFY_START = "verify-start"
    CHECK_PASSED = "check-passed"
    CHECK_FAILED = "check-failed"
    FIX_SCHEDULED = "fix-scheduled"
    BASE_CHECK_UNREADABLE = "base-check-unreadable"  # a check's kept result on a base
    SETTLE_PENDING = "settle-pending"
    # A done run's change on its branch (docs/work-product.md#commits), before `settled`.
    COMMITTED = "committed"
    UNCOMMITTED = "uncommitted"
    BRANCH_RENAMED = "branch-renamed"  # the item's branch name was taken: a fresh one
    BRANCH_RESTORED = "branch-restored"  # a detached HEAD brought back onto the item's branch
    # An accepted item's landing (docs/landing.md): claimed by this worker, and how it ended.
    LANDING = "landing"
    LANDING_ENDED = "landing-ended"
    LANDING_FAILED = "landing-failed"  # the landing thread met an error; it tries again later
    # The sources' periodic sync (docs/sources.md): a sync that changed items, a failure.
    SOURCE_SYNCED = "source-synced"
    SOURCE_FAILED = "source-failed"  # said once, until the source syncs again
    SOURCE_ANSWERED = "source-answered"  # answers acted on, pull requests that finished
    # When wrighty or the store fails.
    STORE_UNREACHABLE = "store-unreachable"
    CLAIM_FAILED = "claim-failed"
    INTERNAL_ERROR = "internal-error"
    # The worker's machine.
    MACHINE_FAILURE = "machine-failure"
    WORKER_HELD = "worker-held"
    WORKER_UNHELD = "worker-unheld"
    # The agent's provider circuit.
    CIRCUIT_OPEN = "circuit-open"
    CIRCUIT_WAIT = "circuit-wait"
    CIRCUIT_HALF_OPEN = "circuit-half-open"
    CIRCUIT_PROBE = "circuit-probe"
    CIRCUIT_CLOSED = "circuit-closed"
    CIRCUIT_UNREADABLE = "circuit-unreadable"
    # The agent's day budget.
    BUDGET_HELD = "budget-held"
    BUDGET_RELEASED = "budget-released"
    BUDGET_UNREADABLE = "budget-unreadable"
    # The notification deliverer.
    NOTIFY_DELIVERED = "notify-delivered"
    NOTIFY_RELEASED = "notify-released"
    NOTIFY_FAILED = "notify-failed"
    NOTIFY_PAUSED = "notify-paused"
    NOTIFY_ERROR = "notify-error"
    # Wake-ups and the fleet's clock.
    WAKE_UPS_ON = "wake-ups-on"
    WAKE_UPS_LOST = "wake-ups-lost"
    WAKE_UPS_OFF = "wake-ups-off"  # the store cannot tell of work here: polling, for good
    CLOCK_SKEWED = "clock-skewed"
    CLOCK_IN_STEP = "clock-in-step"


# Events the plain form leaves out: they say when the worker waits, which a program (a test)
# reading the JSON form needs and a person reading the lines does not.
PLAIN_SKIPS = frozenset({WorkerEvent.WAITING})


class Emit(Protocol):
    """Tell the worker's output of ``event``, with its keys (docs/json.md says which); the
    worker adds `event`, `at` and `worker_id` first."""

    def __call__(self, event: WorkerEvent, /, **fields: Any) -> None: ...
