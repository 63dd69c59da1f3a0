"""What the "Since you last looked" page shows (docs/web.md#since-you-last-looked), as plain
values for its template: the moment its ``since`` names (`wrighty list --since`'s forms, read
by domain/morning.parse_since; FIRST_LOOK_SECONDS back when none is given), and what moved
since then in the morning view's groups (domain/morning.Morning), each item with its state,
its reason in words and when it moved. Pure: no Starlette, no Jinja2, no store.

A person's last look is theirs and their browser's: the page's script keeps it
(static/wrighty.js, localStorage) and asks for the page since then; the server writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any

from wrighty.domain.board import age
from wrighty.domain.morning import FIRST_LOOK_SECONDS, SINCE_EXAMPLE, parse_since
from wrighty.domain.text import clip, printable_line
from wrighty.domain.times import rfc3339
from wrighty.web.views import reason_words

if TYPE_CHECKING:
    from wrighty.domain.model import Item
    from wrighty.domain.morning import Morning

# A longer ``since`` is refused without being read (a time is a few characters).
MAX_SINCE_CHARS = 100
# How much of a refused value the refusal repeats.
MAX_SHOWN_CHARS = 40


def since_moment(given: str | None, *, now: datetime, zone: tzinfo) -> datetime:
    """The moment the page looks back to: ``given`` as `wrighty list --since` reads it (a time
    without an offset in ``zone``), or FIRST_LOOK_SECONDS before ``now`` when it is absent or
    blank; ValueError with the page's one line when it names no moment the page can show."""
    if given is None or not given.strip():
        return now - timedelta(seconds=FIRST_LOOK_SECONDS)
    if len(given) > MAX_SINCE_CHARS:
        shown = printable_line(clip(given, MAX_SHOWN_CHARS))
        raise ValueError(
            f"since: '{shown}' is too long for a time: give for example {SINCE_EXAMPLE}"
        )
    try:
        return parse_since(given, now=now, zone=zone)
    except ValueError as error:
        raise ValueError(printable_line(f"since: {error}")) from None


@dataclass(frozen=True)
class MovedRow:
    """One item that moved, as the page lists it."""

    id: int
    title: str
    state: str
    why: str
    moved_at: str  # RFC 3339
    moved_ago: str  # 3h


@dataclass(frozen=True)
class Group:
    """One of the page's groups: its anchor, its heading, what its count says, its items
    (most recent first), and the line it shows when it has none."""

    key: str
    title: str
    counted: str
    rows: list[MovedRow]
    empty: str


def shown_time(moment: datetime) -> str:
    """A moment as the page writes it: UTC, to the minute (``2026-12-05 18:00 UTC``)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def since_values(morning: Morning, *, now: datetime) -> dict[str, Any]:
    """The page's values: the moment and how long ago it is, the four groups with their
    counts, how many items moved in all, and ``now`` (the moment a "Mark as seen" keeps)."""
    since = shown_time(morning.since)

    def rows(items: tuple[Item, ...]) -> list[MovedRow]:
        return [
            MovedRow(
                id=item.id,
                title=printable_line(item.title),
                state=item.state.value,
                why=reason_words(item.reason_code, item.reason),
                moved_at=rfc3339(item.updated_at) or "",
                moved_ago=age((now - item.updated_at).total_seconds()),
            )
            for item in items
        ]

    counts = morning.counts()
    groups = [
        Group("finished", "Finished", f"{counts['finished']} finished", rows(morning.finished),
              f"nothing finished since {since}"),
        Group("landed", "Landed", f"{counts['landed']} landed", rows(morning.landed),
              f"nothing landed since {since}"),
        Group("failed", "Failed: needs attention", f"{counts['failed']} failed",
              rows(morning.failed), f"nothing failed since {since}"),
        Group("waiting", "Waiting for your review", f"{counts['waiting']} waiting for you",
              rows(morning.waiting), f"nothing started waiting for your review since {since}"),
    ]  # fmt: skip
    return {
        "since": rfc3339(morning.since),
        "since_shown": since,
        "ago": age((now - morning.since).total_seconds()),
        "now": rfc3339(now),
        "groups": groups,
        "moved": counts["moved"],
    }
