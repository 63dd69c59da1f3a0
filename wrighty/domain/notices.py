"""Notifications (docs/notifications.md): what a state change tells a person. Pure.

A notice is made from a change as it is written, and stored in the same transaction (the
outbox); delivering it is another matter, done after the commit. Its id is the dedupe key a
sink sees with every delivery of it. The records themselves (a notice, a stored one, a delivery's
result): wrighty/domain/outbox.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from wrighty.domain import suggestions
from wrighty.domain.links import item_link
from wrighty.domain.model import LANDED, PULL_OPEN, Change
from wrighty.domain.outbox import Delivered, Notice, StoredNotice
from wrighty.domain.states import ItemState
from wrighty.domain.text import clip, printable_line
from wrighty.domain.times import rfc3339

if TYPE_CHECKING:
    from wrighty.domain.check_evidence import CheckEvidence
    from wrighty.domain.health import WorkerRow
    from wrighty.domain.model import Item
    from wrighty.domain.morning import Morning

# An item a worker settled to review: it waits for a person to accept or reject it.
READY_FOR_REVIEW = "ready-for-review"
# An accepted item that did not land and came back to a person (docs/landing.md): to review
# (its integration refused or failed), or to needs-attention (its fix turns were spent).
NOT_LANDED = "not-landed"
# An accepted item that landed on its target (done by a lander).
LANDED_EVENT = "landed"
# Every event a notice can carry, in the order docs/notifications.md lists them.
EVENTS = (
    "needs-attention",
    "retries-exhausted",
    "budget-exceeded",
    "circuit-open",
    "worker-lost",
    READY_FOR_REVIEW,
    NOT_LANDED,
    "retry-scheduled",
    "done",
    LANDED_EVENT,
    "worker-quiet",
    "digest",
)
# What a sink gets when it names no events of its own: what waits for a person.
# (The digest is made only when notify.digest is set, and then every such sink gets it.)
DEFAULT_EVENTS = ("needs-attention", "retries-exhausted", "budget-exceeded", "circuit-open",
                  "worker-lost", READY_FOR_REVIEW, NOT_LANDED, "digest")  # fmt: skip

MAX_TITLE_CHARS = 120
MAX_REASON_CHARS = 500
MAX_BRANCH_CHARS = 200


@dataclass(frozen=True)
class Source:
    """Who writes the change: the installation and worker (None: an operator or the reaper
    outside a worker), and serve.publicUrl (None: not set), under which a notice about an
    item links to its page."""

    installation_id: str
    worker_id: str | None = None
    public_url: str | None = None


def _bounded(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    from wrighty.domain.redact import redact  # for a notice made: a read of the outbox needs none

    return clip(printable_line(redact(text)), limit)


def _events_of(change: Change) -> tuple[str, ...]:
    """The events a change counts as, the most specific first (none: nothing to tell)."""
    after, before = change.after, change.before
    lost = change.run_end is not None and change.run_end.outcome_class.value == "worker-lost"
    found: list[str] = []
    if before.state is ItemState.LANDING and after.state is not ItemState.LANDING:
        found += _landing_events(change)
    if after.state is ItemState.NEEDS_ATTENTION:
        if after.reason_code in ("retries-exhausted", "budget-exceeded"):
            found.append(after.reason_code)
        if lost:
            found.append("worker-lost")
        found.append("needs-attention")
    elif after.state is ItemState.RETRY_SCHEDULED and before.state is ItemState.RUNNING:
        if lost:
            found.append("worker-lost")
        found.append("retry-scheduled")
    elif after.state is ItemState.REVIEW and before.state is not ItemState.REVIEW:
        found.append(READY_FOR_REVIEW)
    elif after.state is ItemState.DONE:
        found.append("done")
    return tuple(found)


def _landing_events(change: Change) -> list[str]:
    """What a move out of landing counts as beside its state's events: landed (done), or not
    landed, back with a person (review, needs-attention). A fix turn (retry-scheduled) is
    the agent's, not a person's."""
    after = change.after
    if after.state is ItemState.DONE and after.reason_code == LANDED:
        return [LANDED_EVENT]
    if after.state is ItemState.REVIEW and after.reason_code == PULL_OPEN:
        return []  # its pull request is open: a review on GitHub, not a failure to land
    if after.state in (ItemState.REVIEW, ItemState.NEEDS_ATTENTION):
        return [NOT_LANDED]
    return []


def notices_for(
    change: Change,
    source: Source,
    *,
    new_id: str | None = None,
    checks: Sequence[CheckEvidence] = (),
    branch: str | None = None,
    diff_stat: str | None = None,
) -> tuple[Notice, ...]:
    """The notice of one item's change (none when it tells nobody anything); ``checks``: the
    evidence of the checks that decided it, whose failures it names. An item ready for review
    carries its ``branch``, the ``diff_stat`` of its change (git's ``--stat``; None: not
    known), every check with how it ended and how long it took, and the commands a person
    runs next."""
    events = _events_of(change)
    if not events:
        return ()
    after = change.after
    notice_id = new_id or f"ntc-{_random_hex()}"
    at = change.event.at
    payload: dict[str, Any] = {
        "id": notice_id,
        "event": events[0],
        "events": list(events),
        "at": rfc3339(at),
        "item": {"id": after.id, "title": _bounded(after.title, MAX_TITLE_CHARS)},
        "state": after.state.value,
        "reason_code": after.reason_code,
        "reason": _bounded(after.reason, MAX_REASON_CHARS),
        "next_action": after.next_action,
        "not_before": rfc3339(after.not_before) if after.not_before else None,
        "installation_id": source.installation_id,
        "worker_id": source.worker_id,
    }
    if source.public_url is not None:
        payload["link"] = item_link(source.public_url, after.id)
    failing = [check for check in checks if not check.passed]
    if failing:
        payload["failing_checks"] = [
            {"name": printable_line(check.name), "ending": check.ending()} for check in failing
        ]
    if READY_FOR_REVIEW in events:
        payload.update(_review_facts(after.id, checks, branch=branch, diff_stat=diff_stat))
    notice = Notice(notice_id, events[0], events, at, after.id, after.reason_code, payload)
    return (notice,)


def _review_facts(
    item_id: int,
    checks: Sequence[CheckEvidence],
    *,
    branch: str | None,
    diff_stat: str | None,
) -> dict[str, Any]:
    """What a notice of an item ready for review carries beyond every item notice's keys."""
    return {
        "branch": _bounded(branch, MAX_BRANCH_CHARS),
        "diff_stat": None if diff_stat is None else _bounded_stat(diff_stat),
        "checks": [
            {
                "name": printable_line(check.name),
                "passed": check.passed,
                "ending": check.ending(),
                "duration_seconds": round(check.duration_seconds, 3),
                "fails_on_base": check.fails_on_base,
            }
            for check in checks
        ],
        "next_actions": [
            {"command": suggestion.command, "purpose": suggestion.purpose}
            for suggestion in suggestions.review_commands(item_id)
        ],
    }


def with_notices(
    change: Change,
    source: Source | None,
    *,
    checks: Sequence[CheckEvidence] = (),
    branch: str | None = None,
    diff_stat: str | None = None,
) -> Change:
    """``change`` carrying its notice, when notifications are on (``source`` given); for an
    item ready for review, with its ``branch`` and ``diff_stat`` (`notices_for`)."""
    if source is None:
        return change
    found = notices_for(change, source, checks=checks, branch=branch, diff_stat=diff_stat)
    return dataclasses.replace(change, notices=found)


def circuit_notice(
    circuit: str, *, until: datetime, reason: str | None, failures: int, at: datetime,
    source: Source,
) -> Notice:  # fmt: skip
    """A provider circuit opened (or stayed open longer): the agent's items wait."""
    notice_id = f"ntc-{_random_hex()}"
    payload: dict[str, Any] = {
        "id": notice_id,
        "event": "circuit-open",
        "events": ["circuit-open"],
        "at": rfc3339(at),
        "item": None,
        "circuit": circuit,
        "until": rfc3339(until),
        "reason": _bounded(reason, MAX_REASON_CHARS),
        "failures": failures,
        "next_action": suggestions.reset_circuit(circuit),
        "installation_id": source.installation_id,
        "worker_id": source.worker_id,
    }
    return Notice(notice_id, "circuit-open", ("circuit-open",), at, None, None, payload)


# -- delivery -------------------------------------------------------------------------------

DELIVERY_LEASE_SECONDS = 120  # how long one deliverer holds a notice before another may
RETRY_FIRST_SECONDS = 30
RETRY_MAX_SECONDS = 3600
MAX_ERROR_CHARS = 300


def after_attempt(
    stored: StoredNotice,
    failures: dict[str, str],
    reached: tuple[str, ...],
    *,
    now: datetime,
    max_attempts: int,
) -> Delivered:
    """The notice after one attempt: ``reached`` are the sinks it reached this time,
    ``failures`` the sinks that failed (sink id -> why). Delivered once no sink is left to
    reach; otherwise retried with backoff, then given up after ``max_attempts``."""

    delivered_to = tuple(dict.fromkeys((*stored.delivered_to, *reached)))
    attempts = stored.attempts + 1
    if not failures:
        return Delivered("delivered", attempts, now, delivered_to, None, now)
    error = _bounded(
        "; ".join(f"{sink}: {why}" for sink, why in sorted(failures.items())), MAX_ERROR_CHARS
    )
    if attempts >= max_attempts:
        return Delivered("given-up", attempts, now, delivered_to, error, now)
    wait = min(RETRY_FIRST_SECONDS * 2 ** (attempts - 1), RETRY_MAX_SECONDS)
    return Delivered("pending", attempts, now + timedelta(seconds=wait), delivered_to, error, None)


def released(stored: StoredNotice, reached: tuple[str, ...]) -> Delivered:
    """The notice let go by a deliverer that stopped during its attempt: the sinks it reached
    keep it, the attempt is not counted, and it is due again as it was (any deliverer may
    take it at once)."""
    delivered_to = tuple(dict.fromkeys((*stored.delivered_to, *reached)))
    return Delivered(
        "pending", stored.attempts, stored.next_attempt_at, delivered_to, stored.last_error, None
    )


# -- notices that no item's change makes ------------------------------------------------------

TEST_EVENT = "test"  # `wrighty notify test`: never stored, sent to every sink whatever its filter


def trial_notice(source: Source, *, at: datetime) -> Notice:
    """The message `wrighty notify test` sends through each sink."""
    notice_id = f"ntc-test-{_random_hex()}"
    payload: dict[str, Any] = {
        "id": notice_id,
        "event": TEST_EVENT,
        "events": [TEST_EVENT],
        "at": rfc3339(at),
        "item": None,
        "reason": "a test message from `wrighty notify test`: this sink works",
        "next_action": None,
        "installation_id": source.installation_id,
        "worker_id": source.worker_id,
    }
    return Notice(notice_id, TEST_EVENT, (TEST_EVENT,), at, None, None, payload)


def quiet_notice_id(worker_id: str) -> str:
    """One notice per quiet worker, however many deliverers see it (inserted once)."""
    return f"ntc-quiet-{worker_id}"


def quiet_worker_notice(
    row: WorkerRow, *, now: datetime, max_age_seconds: float, source: Source
) -> Notice | None:
    """The notice of a registered worker whose last heartbeat is older than
    ``max_age_seconds`` (status.workerMaxAgeSeconds); None while it is not."""
    age = (now - row.last_heartbeat_at).total_seconds()
    if age <= max_age_seconds:
        return None
    notice_id = quiet_notice_id(row.worker_id)
    name = row.worker_id + (f" ({row.label})" if row.label else "")
    items = ", ".join(str(item) for item in row.items)
    payload: dict[str, Any] = {
        "id": notice_id,
        "event": "worker-quiet",
        "events": ["worker-quiet"],
        "at": rfc3339(now),
        "item": None,
        "quiet_worker": {
            "worker_id": row.worker_id,
            "label": row.label,
            "installation_id": row.installation_id,
            "state": row.state.value,
            "items": list(row.items),
            "last_heartbeat_at": rfc3339(row.last_heartbeat_at),
        },
        "reason": _bounded(
            f"worker {name} sent no heartbeat for {age:.0f} s (more than {max_age_seconds:g} s)"
            + (f"; it was running items {items}" if items else ""),
            MAX_REASON_CHARS,
        ),
        "next_action": suggestions.list_workers(),
        "installation_id": source.installation_id,
        "worker_id": source.worker_id,
    }
    return Notice(notice_id, "worker-quiet", ("worker-quiet",), now, None, None, payload)


# -- the morning digest (notify.digest) --------------------------------------------------------

DIGEST_EVENT = "digest"
# The items a digest names, at most (its counts count them all).
MAX_DIGEST_ITEMS = 50


def digest_notice_id(day: date) -> str:
    """One digest per day, however many deliverers see it due (inserted once)."""
    return f"ntc-digest-{day.isoformat()}"


def digest_notice(morning: Morning, *, day: date, now: datetime, source: Source) -> Notice:
    """The morning digest of ``day``: the counts of what finished, landed, failed and waits
    for review since ``morning.since``, and the items that wait for a person."""
    notice_id = digest_notice_id(day)
    counts = morning.counts()
    waiting = (*morning.failed, *morning.waiting)
    payload: dict[str, Any] = {
        "id": notice_id,
        "event": DIGEST_EVENT,
        "events": [DIGEST_EVENT],
        "at": rfc3339(now),
        "item": None,
        "day": day.isoformat(),
        "since": rfc3339(morning.since),
        "counts": counts,
        "waiting": [_digest_entry(item, source) for item in waiting[:MAX_DIGEST_ITEMS]],
        "reason": (
            f"since {rfc3339(morning.since)}: {counts['finished']} finished, "
            f"{counts['landed']} landed, {counts['failed']} need attention, "
            f"{counts['waiting']} wait for review"
        ),
        "next_action": suggestions.list_since("24h"),
        "installation_id": source.installation_id,
        "worker_id": source.worker_id,
    }
    return Notice(notice_id, DIGEST_EVENT, (DIGEST_EVENT,), now, None, None, payload)


def _digest_entry(item: Item, source: Source) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": item.id,
        "title": _bounded(item.title, MAX_TITLE_CHARS),
        "state": item.state.value,
        "reason": _bounded(item.reason, MAX_REASON_CHARS),
    }
    if source.public_url is not None:
        entry["link"] = item_link(source.public_url, item.id)
    return entry


def _random_hex() -> str:
    """A new notice's random part (uuid loads `platform`: not for the readers of notices)."""
    import uuid

    return uuid.uuid4().hex


def _bounded_stat(diff_stat: str) -> str:
    from wrighty.domain.work_product import bounded_stat  # for the notices a worker writes

    return bounded_stat(diff_stat)
