"""The morning view: what moved since a time a person gives (`wrighty list --since`, the
console's "Since you last looked" page, the `notify.digest` notice). Pure.

A time is given as a look back (12h), a full time with its offset (2026-12-05T18:00Z), a date
and time without one (2026-12-05T18:00), or a time of day (18:00); the last two are read in
the zone the caller passes (the person's machine's) and a time of day means its latest past
occurrence. An item moved since a time when its latest event (``updated_at``) is at or after
it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo

from wrighty.domain.durations import DAY_SECONDS, _echoed, format_duration, parse_duration
from wrighty.domain.model import LANDED, Item
from wrighty.domain.states import ItemState

# How far back a --since (or the console's ?since=) may look.
MAX_SINCE_SECONDS = 366 * DAY_SECONDS
# What the console looks back over on a first visit, before the browser keeps a time.
FIRST_LOOK_SECONDS = DAY_SECONDS

_TIME_OF_DAY = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])")
_OFFSET = re.compile(r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])", re.IGNORECASE)
_LOOK_BACK = re.compile(r"(?:\d+(?:\.\d+)?[smhd])+")
SINCE_EXAMPLE = "12h, 2026-12-05T18:00, 2026-12-05T18:00Z or 18:00"


def parse_since(text: str, *, now: datetime, zone: tzinfo) -> datetime:
    """The moment ``text`` names, at or before ``now``; ValueError saying how to give one when
    it names none, lies in the future, or lies more than MAX_SINCE_SECONDS back."""
    compact = text.strip()
    shown = _echoed(text)
    if _LOOK_BACK.fullmatch(compact.lower().replace(" ", "")):
        return now - timedelta(seconds=parse_duration(compact, at_most=MAX_SINCE_SECONDS))
    if _TIME_OF_DAY.fullmatch(compact):
        return _latest(time.fromisoformat(compact), now=now, zone=zone)
    try:
        moment = datetime.fromisoformat(compact)
    except ValueError:
        raise ValueError(f"cannot read {shown}: give for example {SINCE_EXAMPLE}") from None
    if "T" not in compact.upper():
        raise ValueError(f"{shown} names a day without a time: add one, as in 2026-12-05T18:00")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    elif not _OFFSET.search(compact[-6:]):
        raise ValueError(f"{shown} has an offset RFC 3339 does not allow: give Z or ±HH:MM")
    if moment > now:
        raise ValueError(f"{shown} is in the future: give a past time, as in 12h")
    if moment < now - timedelta(seconds=MAX_SINCE_SECONDS):
        limit = format_duration(MAX_SINCE_SECONDS)
        raise ValueError(f"{shown} is more than {limit} ago: give a later time, as in 24h")
    return moment


def _latest(at: time, *, now: datetime, zone: tzinfo) -> datetime:
    """The latest moment at or before ``now`` whose time of day in ``zone`` is ``at``."""
    local = now.astimezone(zone)
    moment = datetime.combine(local.date(), at, tzinfo=zone)
    return moment if moment <= now else moment - timedelta(days=1)


@dataclass(frozen=True)
class Morning:
    """The items that moved since ``since``, with their current state, in the four groups a
    person asks about first (the others moved too: ``moved`` holds every one)."""

    since: datetime
    moved: tuple[Item, ...]
    finished: tuple[Item, ...]  # done, but not by a landing
    landed: tuple[Item, ...]  # done by a landing
    failed: tuple[Item, ...]  # needs-attention
    waiting: tuple[Item, ...]  # review: waits for a person's accept or reject

    def counts(self) -> dict[str, int]:
        return {
            "moved": len(self.moved),
            "finished": len(self.finished),
            "landed": len(self.landed),
            "failed": len(self.failed),
            "waiting": len(self.waiting),
        }


def moved_since(items: Iterable[Item], since: datetime) -> list[Item]:
    """The items whose latest event is at or after ``since``, in the order given."""
    return [item for item in items if item.updated_at >= since]


def morning_of(items: Iterable[Item], since: datetime) -> Morning:
    """What moved since ``since`` among ``items``, grouped; each group most recent first."""
    moved = sorted(moved_since(items, since), key=lambda item: item.updated_at, reverse=True)

    def group(state: ItemState, landed: bool | None = None) -> tuple[Item, ...]:
        return tuple(
            item
            for item in moved
            if item.state is state and (landed is None or (item.reason_code == LANDED) == landed)
        )

    return Morning(
        since=since,
        moved=tuple(moved),
        finished=group(ItemState.DONE, landed=False),
        landed=group(ItemState.DONE, landed=True),
        failed=group(ItemState.NEEDS_ATTENTION),
        waiting=group(ItemState.REVIEW),
    )


# -- the morning digest (notify.digest) -------------------------------------------------------

DIGEST_EXAMPLE = '"07:30" (UTC) or "07:30+01:00"'
DIGEST_PATTERN = r"^[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})?$"
# A day's digest is added from its time on for this long at most (and for less than half
# notify.retentionHours: see `digest_due`). A day whose window passes with no worker running
# has no digest: the next day's covers its last 24 hours.
DIGEST_WINDOW_SECONDS = 20 * 3600.0


def parse_digest_time(text: str) -> time:
    """notify.digest: a time of day, HH:MM, UTC unless an offset follows (07:30+01:00)."""
    match = re.fullmatch(r"([0-9]{2}:[0-9]{2})(Z|[+-][0-9]{2}:[0-9]{2})?", text)
    if match is None or not _TIME_OF_DAY.fullmatch(match.group(1)):
        raise ValueError(f"cannot read it: give a time of day as {DIGEST_EXAMPLE}")
    offset = match.group(2) or "Z"
    if not _OFFSET.fullmatch(offset):
        raise ValueError("its offset must be Z or ±HH:MM, up to ±23:59")
    return time.fromisoformat(match.group(1) + ("+00:00" if offset in "Zz" else offset))


def digest_due(at: time, *, now: datetime, retention_seconds: float) -> date | None:
    """The day whose digest is due at ``now`` (None: none is). A day's digest is due from its
    time ``at`` for DIGEST_WINDOW_SECONDS, and for less than half ``retention_seconds``
    (notify.retentionHours): a delivered digest is pruned a retention after it was delivered
    (so after its time), by whichever deliverer's clock; within the window its id is still in
    the outbox, with half a retention to spare for clocks that differ, and no deliverer can
    add it twice."""
    zone = at.tzinfo
    assert zone is not None  # parse_digest_time gives every time its offset
    local = now.astimezone(zone)
    window = timedelta(seconds=min(DIGEST_WINDOW_SECONDS, retention_seconds / 2))
    for day in (local.date(), local.date() - timedelta(days=1)):
        start = datetime.combine(day, at.replace(tzinfo=None), tzinfo=zone)
        if start <= now < start + window:
            return day
    return None
