"""The "Since you last looked" page (docs/web.md#since-you-last-looked), in process, on both
stores: the items that finished, landed, failed or started waiting for review since the time
asked (the last 24 hours when none is), in their groups with their counts; an empty group said
plainly; a `since` that names no moment the page can show refused in one line with 400, its
text inert; outside text escaped; never the token."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from tests.conftest import FakeClock
from tests.inbox.seed import claim, new, settle, start
from tests.web.conftest import TOKEN, Console
from tests.web.test_hostile import RAW_CONTROL
from wrighty.domain.model import LANDED
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339
from wrighty.domain.transitions import transition

GROUPS = ("finished", "landed", "failed", "waiting")


def moved_to(console: Console, clock: FakeClock, title: str, group: str) -> int:
    """An item a worker (and, for ``landed``, a lander) left in ``group``'s state, now."""
    settled = {
        "finished": (ItemState.DONE, OutcomeClass.SUCCEEDED, "the agent finished"),
        "failed": (ItemState.NEEDS_ATTENTION, OutcomeClass.AGENT_FAILURE, "the agent gave up"),
        "waiting": (ItemState.REVIEW, OutcomeClass.SUCCEEDED, "ready for review"),
        "landed": (ItemState.REVIEW, OutcomeClass.SUCCEEDED, "ready for review"),
        "queued": (ItemState.QUEUED, None, None),
    }[group]
    state, outcome, reason = settled
    with console.store() as store:
        item = store.create_item(new(title), at=clock(), actor="operator")
        if outcome is None:
            return item.id
        claimed = claim(store, item.id, at=clock())
        start(store, claimed, at=clock(), worker="w-live-0001")
        settle(store, claimed, state, at=clock(), outcome=outcome, reason=reason or "")
        if group == "landed":
            reviewed = store.get_item(item.id)
            assert reviewed is not None
            assert store.write_transition(
                transition(reviewed, ItemState.DONE, at=clock(), actor="lander:w",
                           reason_code=LANDED, reason="landed on main")
            )  # fmt: skip
    return item.id


@dataclass(frozen=True)
class Shown:
    """What the page shows: the counts' words, each group's item ids in order, its empty
    line, and the refusal."""

    counts: list[str]
    groups: dict[str, list[int]]
    empty: dict[str, str]
    refused: list[str]
    now: str | None


def shown(page: str) -> Shown:
    counts = re.findall(r'<a href="#\w+" class="count" data-group="\w+">([^<]*)</a>', page)
    groups: dict[str, list[int]] = {}
    empty: dict[str, str] = {}
    for key, body in re.findall(r'<section id="(\w+)" class="since-group">(.*?)</section>', page,
                                re.S):  # fmt: skip
        groups[key] = [int(n) for n in re.findall(r'<tr class="[^"]*" data-item="(\d+)">', body)]
        said = re.search(r'<p class="empty">([^<]*)</p>', body)
        if said:
            empty[key] = html.unescape(said.group(1))
    refused = [html.unescape(line) for line in re.findall(r'<p class="refused"[^>]*>(.*?)</p>',
                                                           page, re.S)]  # fmt: skip
    now = re.search(r'id="mark-seen" data-now="([^"]+)"', page)
    return Shown(counts, groups, empty, refused, now.group(1) if now else None)


def test_what_moved_since_the_time_asked_is_listed_in_its_groups_with_counts(
    console: Console, clock: FakeClock
):
    before = {group: moved_to(console, clock, f"old {group}", group) for group in GROUPS}
    clock.advance(25 * 3600)
    asked = clock()
    clock.advance(60)
    after = {group: moved_to(console, clock, f"new {group}", group) for group in GROUPS}
    clock.advance(60)
    second = moved_to(console, clock, "newer waiting", "waiting")
    moved_to(console, clock, "queued, in no group", "queued")
    clock.advance(600)
    client = console.login()

    for query in ({"since": rfc3339(asked)}, {"since": "15m"}, {}):  # {}: the last 24 hours
        response = client.get("/since", params=query)
        assert response.status_code == 200, query
        page = shown(response.text)
        assert page.counts == ["1 finished", "1 landed", "1 failed", "2 waiting for you"], query
        assert page.groups == {
            "finished": [after["finished"]],
            "landed": [after["landed"]],
            "failed": [after["failed"]],
            "waiting": [second, after["waiting"]],  # the latest first
        }, query
        assert page.empty == {}
        assert page.refused == []
        assert "6 moved in all" in response.text
        for group in GROUPS:
            assert f'href="/items/{before[group]}"' not in response.text
            assert f'<a href="/items/{after[group]}">{after[group]}</a>' in response.text
    # further back, the earlier ones too
    page = shown(client.get("/since", params={"since": "2d"}).text)
    assert page.groups["failed"] == [after["failed"], before["failed"]]


def test_a_row_says_the_state_the_reason_and_when_it_moved(console: Console, clock: FakeClock):
    failed = moved_to(console, clock, "Fix the login", "failed")
    clock.advance(3 * 3600 + 120)
    page = console.login().get("/since").text
    row = re.search(
        rf'<tr class="state-needs-attention" data-item="{failed}">(.*?)</tr>', page, re.S
    )
    assert row is not None
    cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]
    assert cells[1:4] == ["Fix the login", "needs-attention", "the agent gave up"]
    moved_at = rfc3339(clock() - timedelta(seconds=3 * 3600 + 120))
    assert cells[4] == f'<time datetime="{moved_at}" title="{moved_at}">3h ago</time>'


def test_empty_groups_are_said_plainly_and_mark_as_seen_keeps_the_servers_time(
    console: Console, clock: FakeClock
):
    moved_to(console, clock, "earlier", "finished")
    clock.advance(3600)
    asked = clock()
    clock.advance(60)
    response = console.login().get("/since", params={"since": rfc3339(asked)})
    page = shown(response.text)
    assert response.status_code == 200
    assert page.counts == ["0 finished", "0 landed", "0 failed", "0 waiting for you"]
    assert page.groups == {group: [] for group in GROUPS}
    when = asked.strftime("%Y-%m-%d %H:%M UTC")
    assert page.empty == {
        "finished": f"nothing finished since {when}",
        "landed": f"nothing landed since {when}",
        "failed": f"nothing failed since {when}",
        "waiting": f"nothing started waiting for your review since {when}",
    }
    # the moment Mark as seen keeps: the server's (the fleet's) time of the page
    assert page.now is not None
    kept = datetime.fromisoformat(page.now)
    assert abs((kept - clock()).total_seconds()) < 5  # the fleet's clock is the fake one
    assert '<button type="button" id="mark-seen"' in response.text


def test_the_board_links_to_the_page(console: Console):
    board = console.login().get("/").text
    assert '<a href="/since">Since you last looked</a>' in board
    page = console.login().get("/since").text
    assert '<a href="/since" aria-current="page">Since you last looked</a>' in page


HOSTILE_SINCE = "<script>alert(1)</script>\x1b[2J\x00\x7f"
BAD_SINCE = [
    ("yesterday", "since: cannot read 'yesterday': give for example 12h"),
    ("2999-01-01T00:00Z", "since: '2999-01-01T00:00Z' is in the future: give a past time"),
    ("400d", "since: duration '400d' is too long: the limit is 366d"),
    ("2025-11-01T09:00Z", "since: '2025-11-01T09:00Z' is more than 366d ago: give a later"),
    ("2026-11-29", "since: '2026-11-29' names a day without a time: add one"),
    ("0h", "since: duration '0h' must be greater than zero"),
    ("2026-11-29T18:00+0100", "since: '2026-11-29T18:00+0100' has an offset RFC 3339 does not"),
    (HOSTILE_SINCE, "since: cannot read '<script>alert(1)</script>\\x1b[2J\\x00\\x7f'"),
    ("1" * 101, "since: '" + "1" * 39 + "…' is too long for a time: give for example 12h"),
]


@pytest.mark.parametrize(
    ("given", "says"),
    BAD_SINCE,
    ids=["garbage", "future", "too-long-a-look-back", "too-far-back", "a-day-alone", "zero",
         "offset-without-colon", "hostile", "too-long"],
)  # fmt: skip
def test_a_since_that_names_no_moment_is_refused_in_one_line(
    console: Console, clock: FakeClock, given: str, says: str
):
    failed = moved_to(console, clock, "Fix the login", "failed")
    response = console.login().get("/since", params={"since": given})
    assert response.status_code == 400
    page = shown(response.text)
    assert len(page.refused) == 1
    assert page.refused[0].startswith(says), page.refused[0]
    assert "\n" not in page.refused[0]
    assert page.groups == {}  # nothing else: no group, no count
    assert page.counts == []
    assert page.now is None  # nothing to mark as seen
    assert f'href="/items/{failed}"' not in response.text
    assert RAW_CONTROL.search(response.text) is None
    assert response.text.count("<script") == 1  # the page's own script only
    assert TOKEN not in response.text


def test_hostile_titles_and_reasons_are_escaped_and_no_token_is_on_the_page(
    console: Console, clock: FakeClock
):
    from tests.web.test_hostile import HOSTILE, hostile_item, inert

    item_id = hostile_item(console, clock)
    response = console.login().get("/since")
    assert response.status_code == 200
    assert shown(response.text).groups["failed"] == [item_id]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.text
    inert(response.text)
    assert HOSTILE[:40] not in response.text
    assert TOKEN not in response.text
