"""The board's filters (docs/web.md#what-it-shows), in process, on both stores: the state is a
choice of the board's states; a filter no item could ever pass (a state that is not the
board's, a finished state, an agent wrighty.json does not name, a label no item may have) is
said in one line with status 400, on the page and on its live table, instead of an empty
board; a filter that can pass an item but passes none is an empty board, as before."""

from __future__ import annotations

import html
import re

import pytest

from tests.conftest import FakeClock
from tests.web.conftest import Console, seeded
from wrighty.web.views import BOARD_STATES


def refused(page: str) -> str | None:
    found = re.search(r'<p class="refused" role="alert" id="filter-refused">(.*?)</p>', page, re.S)
    return html.unescape(found.group(1)) if found else None


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("state=reviw", "no state reviw: the board's states are " + ", ".join(BOARD_STATES)),
        ("state=done", "no done item is on the board: it shows open items (wrighty list "
                       "--state done lists those)"),
        ("agent=robot", "no agent robot: wrighty.json names "),
        ("label=Has%20Space", "no label Has Space: "),
    ],
    ids=["unknown-state", "finished-state", "unknown-agent", "impossible-label"],
)  # fmt: skip
def test_a_filter_no_item_could_pass_is_said_on_the_page_and_its_table(
    console: Console, clock: FakeClock, query: str, says: str
):
    made = seeded(console.app_ctx, clock)
    client = console.login()

    for path in (f"/?{query}", f"/board?{query}"):
        response = client.get(path)
        assert response.status_code == 400, path
        said = refused(response.text)
        assert said is not None, path
        assert said.startswith(says), said
        assert f'href="/items/{made.attention}"' not in response.text  # no rows drawn


def test_a_filter_that_passes_none_now_is_an_empty_board_not_a_refusal(
    console: Console, clock: FakeClock
):
    seeded(console.app_ctx, clock)
    client = console.login()

    response = client.get("/?state=landing&text=nothing-has-this")

    assert response.status_code == 200
    assert refused(response.text) is None


def test_the_state_filter_offers_the_boards_states(console: Console, clock: FakeClock):
    seeded(console.app_ctx, clock)
    page = console.login().get("/?state=review").text

    select = re.search(r'<select name="state"[^>]*>(.*?)</select>', page, re.S)
    assert select is not None
    offered = re.findall(r"<option( selected)?>([^<]*)</option>", select.group(1))
    assert [state for _, state in offered] == list(BOARD_STATES)
    assert [state for chosen, state in offered if chosen] == ["review"]
