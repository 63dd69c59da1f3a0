"""The morning view (pure, wrighty/domain/morning.py): a --since time as a person gives it,
what moved since then in its groups, when the day's digest is due; and the digest notice and
an item's link (wrighty/domain/notices.py, links.py)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta, timezone

import pytest

from tests.factories import make_item
from wrighty.domain.links import check_public_url, item_link, public_host
from wrighty.domain.model import LANDED, Item
from wrighty.domain.morning import (
    DIGEST_WINDOW_SECONDS,
    digest_due,
    morning_of,
    parse_digest_time,
    parse_since,
)
from wrighty.domain.notices import Source, digest_notice, digest_notice_id
from wrighty.domain.states import ItemState

NOW = datetime(2026, 12, 6, 7, 0, tzinfo=UTC)
PARIS = timezone(timedelta(hours=1))  # (in December)


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("12h", NOW - timedelta(hours=12)),
        ("1h30m", NOW - timedelta(minutes=90)),
        ("2026-12-05T18:00Z", datetime(2026, 12, 5, 18, 0, tzinfo=UTC)),
        ("2026-12-05T18:00+01:00", datetime(2026, 12, 5, 17, 0, tzinfo=UTC)),
        # without an offset: the zone given (the person's machine's)
        ("2026-12-05T18:00", datetime(2026, 12, 5, 17, 0, tzinfo=UTC)),
        # a time of day: its latest past one; 07:00 in Paris is 06:00 UTC, today
        ("07:00", datetime(2026, 12, 6, 6, 0, tzinfo=UTC)),
        # 18:00 in Paris has not come yet today (it is 08:00 there): yesterday's
        ("18:00", datetime(2026, 12, 5, 17, 0, tzinfo=UTC)),
    ],
)
def test_a_since_time_reads_as_a_person_means_it(given: str, meant: datetime) -> None:
    assert parse_since(given, now=NOW, zone=PARIS) == meant


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("yesterday", "cannot read 'yesterday': give for example 12h"),
        ("", "cannot read ''"),
        ("0h", "must be greater than zero"),
        ("400d", "the limit is 366d"),
        ("2026-12-05", "names a day without a time"),
        ("2026-12-07T00:00Z", "is in the future"),
        ("2025-01-01T00:00Z", "is more than 366d ago"),
        ("24:00", "cannot read '24:00'"),
        ("2026-12-05T18:00+0100", "an offset RFC 3339 does not allow"),
    ],
)
def test_a_since_time_that_names_no_past_moment_is_refused(given: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        parse_since(given, now=NOW, zone=PARIS)


def moved(item_id: int, state: ItemState, minutes_ago: float, **changes: object) -> Item:
    at = NOW - timedelta(minutes=minutes_ago)
    return make_item(state, id=item_id, title=f"item {item_id}", updated_at=at, **changes)


def test_what_moved_since_is_grouped_by_what_a_person_asks_first() -> None:
    since = NOW - timedelta(hours=12)
    items = [
        moved(1, ItemState.DONE, 60),
        moved(2, ItemState.DONE, 30, reason_code=LANDED),
        moved(3, ItemState.NEEDS_ATTENTION, 90),
        moved(4, ItemState.REVIEW, 10),
        moved(5, ItemState.REVIEW, 20),
        moved(6, ItemState.RUNNING, 5),  # moved, in none of the four groups
        moved(7, ItemState.REVIEW, 13 * 60),  # waits, but moved before then
        moved(8, ItemState.DONE, 12 * 60),  # exactly at the time: counts
    ]
    morning = morning_of(items, since)
    assert [item.id for item in morning.moved] == [6, 4, 5, 2, 1, 3, 8]
    assert [item.id for item in morning.finished] == [1, 8]
    assert [item.id for item in morning.landed] == [2]
    assert [item.id for item in morning.failed] == [3]
    assert [item.id for item in morning.waiting] == [4, 5]
    assert morning.counts() == {"moved": 7, "finished": 2, "landed": 1, "failed": 1, "waiting": 2}


def test_the_digest_time_is_utc_unless_it_names_its_offset() -> None:
    assert parse_digest_time("07:30") == time(7, 30, tzinfo=UTC)
    assert parse_digest_time("07:30+01:00") == time(7, 30, tzinfo=PARIS)
    for bad in ("7:30", "25:00", "07:60", "07:30+24:00", " 07:30", "07:30:00", "morning"):
        with pytest.raises(ValueError, match=r"a time of day|its offset"):
            parse_digest_time(bad)


def test_a_days_digest_is_due_from_its_time_within_its_window() -> None:
    at = parse_digest_time("07:30+01:00")  # 06:30 UTC
    week = 168 * 3600.0
    # yesterday's (from 06:30 UTC) is open for 20 hours, to 02:30 today; then none is due
    yesterday = date(2026, 12, 5)
    assert digest_due(at, now=NOW.replace(hour=2, minute=29), retention_seconds=week) == yesterday
    assert digest_due(at, now=NOW.replace(hour=6, minute=29), retention_seconds=week) is None
    start = datetime(2026, 12, 6, 6, 30, tzinfo=UTC)
    assert digest_due(at, now=start, retention_seconds=week) == date(2026, 12, 6)
    end = start + timedelta(seconds=DIGEST_WINDOW_SECONDS)
    assert digest_due(at, now=end - timedelta(seconds=1), retention_seconds=week) == date(
        2026, 12, 6
    )
    assert digest_due(at, now=end, retention_seconds=week) is None
    # never after a delivered digest may have been pruned (a retention after it was delivered,
    # by a clock that may be a little ahead): its id could be added again; half a retention
    hour = 3600.0
    assert digest_due(at, now=start + timedelta(minutes=29), retention_seconds=hour) is not None
    assert digest_due(at, now=start + timedelta(minutes=30), retention_seconds=hour) is None


def test_a_day_no_worker_saw_is_made_late_within_its_window_then_left_to_the_next() -> None:
    at = parse_digest_time("07:30")
    week = 168 * 3600.0
    day = date(2026, 12, 6)
    # no worker ran at 07:30: the first pass at 15:00, or at 03:29 the next night, makes it
    assert (
        digest_due(at, now=datetime(2026, 12, 6, 15, 0, tzinfo=UTC), retention_seconds=week) == day
    )
    assert (
        digest_due(at, now=datetime(2026, 12, 7, 3, 29, tzinfo=UTC), retention_seconds=week) == day
    )
    # from 03:30 the next night, none: that day's is not made a day late; the next is at 07:30
    assert (
        digest_due(at, now=datetime(2026, 12, 7, 3, 30, tzinfo=UTC), retention_seconds=week) is None
    )
    assert digest_due(
        at, now=datetime(2026, 12, 7, 7, 30, tzinfo=UTC), retention_seconds=week
    ) == date(2026, 12, 7)


def test_a_digest_time_with_an_offset_names_its_own_day() -> None:
    # 23:30 in New York (-05:00) is 04:30 UTC the next day: it is New York's day
    at = parse_digest_time("23:30-05:00")
    week = 168 * 3600.0
    assert digest_due(
        at, now=datetime(2026, 12, 7, 4, 30, tzinfo=UTC), retention_seconds=week
    ) == date(2026, 12, 6)
    # a minute before, none: the 5th's window closed at 00:30 UTC, 20 hours after its time
    assert (
        digest_due(at, now=datetime(2026, 12, 7, 4, 29, tzinfo=UTC), retention_seconds=week) is None
    )
    assert digest_due(
        at, now=datetime(2026, 12, 7, 0, 29, tzinfo=UTC), retention_seconds=week
    ) == date(2026, 12, 5)


def test_the_digest_counts_and_names_what_waits_for_a_person_with_links() -> None:
    morning = morning_of(
        [
            moved(1, ItemState.DONE, 60),
            moved(3, ItemState.NEEDS_ATTENTION, 90, reason="checks failed\x1b[31m"),
            moved(4, ItemState.REVIEW, 10),
        ],
        NOW - timedelta(hours=24),
    )
    source = Source("inst", "w-1", "https://wrighty.example.net:8443")
    day = date(2026, 12, 6)
    notice = digest_notice(morning, day=day, now=NOW, source=source)
    assert notice.id == digest_notice_id(day) == "ntc-digest-2026-12-06"
    assert notice.payload["counts"]["waiting"] == 1
    assert notice.payload["counts"]["failed"] == 1
    assert [entry["id"] for entry in notice.payload["waiting"]] == [3, 4]
    assert notice.payload["waiting"][1]["link"] == "https://wrighty.example.net:8443/items/4"
    title, body = notice.text()
    assert title == "wrighty: digest"
    assert "1 finished, 0 landed, 1 need attention, 1 wait for review" in body
    assert "item 4 (review) item 4 https://wrighty.example.net:8443/items/4" in body
    assert "\x1b" not in str(notice.payload)


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("https://wrighty.example.net", "https://wrighty.example.net"),
        ("https://wrighty.example.net/", "https://wrighty.example.net"),
        ("http://10.0.0.5:8765/", "http://10.0.0.5:8765"),
    ],
)
def test_a_public_url_is_kept_without_its_trailing_slash(given: str, kept: str) -> None:
    assert check_public_url(given) == kept
    assert item_link(kept, 7) == kept + "/items/7"


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("ftp://example.net", "must start with https://"),
        ("wrighty.example.net", "must start with https://"),
        ("https://", "names no host"),
        ("https://me:pw@example.net", "user name or password"),
        ("https://example.net/?token=abc", "must not hold a query"),
        ("https://example.net/#x", "must not hold a fragment"),
        ("https://example.net/wrighty", "must not hold a path (/wrighty)"),
        ("https://example.net/a/b/", "must not hold a path (/a/b/)"),
        ("https://example.net:99999", "is not a URL"),
        ("https://exa mple.net", "a space or a control character"),
        ("https://" + "a" * 300 + ".net", "longer than 300"),
    ],
)
def test_a_public_url_that_could_leak_or_mislead_is_refused(given: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        check_public_url(given)


@pytest.mark.parametrize(
    ("given", "host"),
    [
        ("https://Wrighty.Example.net", "wrighty.example.net"),
        ("https://wrighty.example.net:443", "wrighty.example.net"),
        ("http://10.0.0.5:80", "10.0.0.5"),
        ("https://wrighty.example.net:8443", "wrighty.example.net:8443"),
        ("http://10.0.0.5:8765/", "10.0.0.5:8765"),
        ("http://[fd00::5]:8765", "[fd00::5]:8765"),
    ],
)
def test_a_public_url_s_host_is_the_host_header_a_browser_sends(given: str, host: str) -> None:
    assert public_host(check_public_url(given)) == host


def test_the_digest_docs_show_is_the_one_made() -> None:
    """docs/notifications.md's digest payload and chat text are what digest_notice makes of
    such items."""
    import json
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "notifications.md").read_text()
    section = page.split("## The morning digest", 1)[1]
    blocks = re.findall(r"```(json)?\n(.*?)```", section, re.S)
    shown = json.loads(blocks[1][1])
    chat = blocks[2][1]
    at = datetime.fromisoformat(shown["at"])
    ago = timedelta(hours=1)
    items = [
        make_item(ItemState.DONE, id=1, title="Rename the config keys", updated_at=at - 3 * ago),
        make_item(ItemState.DONE, id=2, title="Fix the flaky checkout test", reason_code=LANDED,
                  updated_at=at - 2 * ago),
        make_item(ItemState.NEEDS_ATTENTION, id=3, title="Upgrade the HTTP client",
                  reason=shown["waiting"][0]["reason"], updated_at=at - ago),
        make_item(ItemState.REVIEW, id=4, title="Port the CLI to typer",
                  reason=shown["waiting"][1]["reason"], updated_at=at - ago / 2),
        make_item(ItemState.DONE, id=5, title="older", updated_at=at - 25 * ago),
    ]  # fmt: skip
    source = Source(shown["installation_id"], shown["worker_id"], "https://wrighty.example.net")
    morning = morning_of(items, at - timedelta(hours=24))
    notice = digest_notice(morning, day=date.fromisoformat(shown["day"]), now=at, source=source)
    assert notice.payload == shown
    head, body = notice.text()
    assert f"{head}\n\n{body}\n" == chat
