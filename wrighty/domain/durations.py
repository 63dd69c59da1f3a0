"""Durations as people type them: 90s, 30m, 1.5h, 1h30m, and the bounds each one has.

Every duration a user can give, on the command line or in wrighty.json, has an upper bound:
a value past it is refused up front, so no later arithmetic on a time can overflow.
"""

import math
import re
from datetime import datetime, timedelta

from wrighty.domain.text import clip

DAY_SECONDS = 86400.0
MAX_FORMATTED_SECONDS = 1e12
# The bounds, shared by each option and its wrighty.json twin (docs/config.md).
MAX_ITEM_TIMEOUT_SECONDS = 7 * DAY_SECONDS  # create --timeout, worker.itemTimeoutMinutes
MAX_IDLE_TIMEOUT_SECONDS = 30 * DAY_SECONDS  # worker start --idle-timeout
# status --max-queue-wait, --max-notify-age, --max-review-wait and their status.* keys
MAX_QUEUE_WAIT_SECONDS = 365 * DAY_SECONDS
MAX_WORKER_AGE_SECONDS = DAY_SECONDS  # --worker-max-age, status.workerMaxAgeSeconds
MAX_CLEAN_AGE_SECONDS = 10 * 365 * DAY_SECONDS  # workspaces clean --older-than
MAX_RESET_SECONDS = 31 * DAY_SECONDS  # wrighty fail --resets-at: a month's window at most

_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def parse_duration(text: str, *, at_most: float) -> float:
    """Seconds in ``text``; ValueError with an example when it is not a positive duration of
    at most ``at_most`` seconds."""
    compact = text.strip().lower().replace(" ", "")
    if not compact:
        raise ValueError("empty duration: use for example 90s, 30m or 1h30m")
    position = 0
    total = 0.0
    for match in _PART.finditer(compact):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(compact):
        raise ValueError(
            f"cannot read duration {_echoed(text)}: use a number with a unit s, m, h or d "
            "(for example 90s, 30m or 1h30m)"
        )
    if total <= 0:
        raise ValueError(f"duration {_echoed(text)} must be greater than zero")
    if total > at_most:
        limit = format_duration(at_most)
        raise ValueError(f"duration {_echoed(text)} is too long: the limit is {limit}")
    return total


def format_duration(seconds: float) -> str:
    """A compact human form of ``seconds`` (the inverse of parse_duration for whole units)."""
    if not math.isfinite(seconds) or seconds > MAX_FORMATTED_SECONDS:
        return f"{seconds:g}s"  # only a value written past wrighty's bounds: shown as it is
    remaining = round(seconds)
    if remaining < 60:
        return f"{seconds:g}s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def parse_moment(text: str, *, now: datetime, at_most: float) -> datetime:
    """A moment as people give one: an RFC 3339 time with its offset (2026-12-03T14:00:00Z,
    2026-12-03T15:00+01:00), or a wait from ``now`` (45m, 2h); ValueError with an example
    when it is neither, names no offset, or lies more than a day before ``now`` or more than
    ``at_most`` seconds after it."""
    compact = text.strip()
    shown = _echoed(text)
    try:
        moment = datetime.fromisoformat(compact)
    except ValueError:
        if not _WAIT.fullmatch(compact.lower().replace(" ", "")):
            raise ValueError(
                f"cannot read time {shown}: use RFC 3339 with an offset "
                "(2026-12-03T14:00:00Z) or a wait from now (45m, 2h)"
            ) from None
        moment = now + timedelta(seconds=parse_duration(compact, at_most=at_most))
    else:
        if moment.tzinfo is None:
            raise ValueError(f"time {shown} names no offset: add Z or +01:00, for example")
        if not _RFC3339_OFFSET.search(compact):
            raise ValueError(
                f"time {shown} has an offset RFC 3339 does not allow: give Z or ±HH:MM (+01:00)"
            )
    if moment < now - timedelta(seconds=DAY_SECONDS):
        raise ValueError(f"time {shown} is more than a day ago")
    if moment > now + timedelta(seconds=at_most):
        raise ValueError(f"time {shown} is more than {format_duration(at_most)} away")
    return moment


# How much of a given text a message quotes.
MAX_ECHOED_CHARS = 60


def _echoed(text: str) -> str:
    """``text`` as a message quotes it: its start, bounded."""
    return repr(clip(text, MAX_ECHOED_CHARS))


_WAIT = re.compile(r"(?:\d+(?:\.\d+)?[smhd])+")
# What RFC 3339 allows after a time: Z, or hours and minutes (never seconds, never +0100).
_RFC3339_OFFSET = re.compile(r"(?:[0-9][Zz]|[0-9][+-][0-9]{2}:[0-9]{2})\Z")
