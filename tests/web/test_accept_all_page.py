"""Accept all ready in the web console, in process, on both stores
(docs/landing.md#accepting-every-ready-item): the board offers it when an item is ready; its
page lists what `wrighty accept --all --dry-run` would accept and why the others wait, and
changes nothing; its form accepts exactly the items the page showed, as the command does, or
nothing when one of them moved since; bad forms, read-only and a missing CSRF token are
refused with nothing changed."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from tests.conftest import FakeClock
from tests.web.conftest import Console, history, make_console, seeded
from tests.web.test_console import CSRF, cli, flash, in_review, post
from wrighty.domain.check_evidence import CheckEvidence, CheckRecord
from wrighty.domain.states import ItemState
from wrighty.operator.context import AppContext

FAILED = CheckEvidence("lint", ("ruff", "check", "."), 0.25, "E501\n", exit_code=1)


def red(app_ctx: AppContext, item_id: int, at: datetime) -> None:
    """A `wrighty verify` by hand on the item in review, its check failed: not ready."""
    with app_ctx.store() as store:
        item = store.get_item(item_id)
        assert item is not None
        record = CheckRecord(item_id, f"v-{item_id}", None, 0, "operator", at, FAILED)
        assert store.record_check(item, record)


def states(app_ctx: AppContext, *ids: int) -> list[ItemState]:
    with app_ctx.store() as store:
        return [store.get_item(i).state for i in ids]  # type: ignore[union-attr]


def listed(page: str, table: str) -> list[int]:
    """The item ids a table of the page lists, in its order."""
    found = re.search(rf'<table class="rows {table}">(.*?)</table>', page, re.S)
    if found is None:
        return []
    return [int(i) for i in re.findall(r'<td class="id"><a href="/items/(\d+)">', found.group(1))]


def test_the_page_lists_what_accept_all_would_take_and_changes_nothing(
    console: Console, clock: FakeClock
):
    seeded(console.app_ctx, clock)
    first, blocked, second = (in_review(console.app_ctx, clock, t) for t in ("A", "B", "C"))
    red(console.app_ctx, blocked, clock())
    client = console.login()

    board = client.get("/").text
    assert 'href="/accept-all">Accept all ready (2)</a>' in board

    page = client.get("/accept-all")

    assert page.status_code == 200
    assert listed(page.text, "ready") == [first, second]
    assert listed(page.text, "waiting") == [blocked]
    assert "its latest checks did not pass" in page.text
    assert f'name="ids" value="{first},{second}"' in page.text
    dry = cli(console.app_ctx, "accept", "--all", "--dry-run")
    assert [int(n) for n in re.findall(r"would accept item (\d+)", dry)] == [first, second]
    assert states(console.app_ctx, first, blocked, second) == [ItemState.REVIEW] * 3


def test_a_hostile_title_on_the_page_is_inert_text(console: Console, clock: FakeClock):
    seeded(console.app_ctx, clock)
    in_review(console.app_ctx, clock, "<script>alert(1)</script>\x1b[31mred")

    page = console.login().get("/accept-all").text

    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[31mred" in page


def test_the_form_accepts_the_items_it_showed_as_the_command_does(
    console: Console, clock: FakeClock
):
    seeded(console.app_ctx, clock)
    first, blocked, second = (in_review(console.app_ctx, clock, t) for t in ("A", "B", "C"))
    red(console.app_ctx, blocked, clock())
    later = in_review(console.app_ctx, clock, "ready after the page was shown")

    said = flash(post(console, "/accept-all", ids=f"{first},{second}").text)

    assert said == (
        f"ok: accepted item {first} (A): item {first} is done; "
        f"accepted item {second} (C): item {second} is done"
    )
    assert states(console.app_ctx, first, blocked, second, later) == [
        ItemState.DONE, ItemState.REVIEW, ItemState.DONE, ItemState.REVIEW]  # fmt: skip
    # the person did not see the later one: it waits for the next look
    assert 'href="/accept-all">Accept all ready (1)</a>' in console.client.get("/").text


def test_an_item_that_moved_since_the_page_refuses_them_all(console: Console, clock: FakeClock):
    seeded(console.app_ctx, clock)
    first, second = in_review(console.app_ctx, clock, "A"), in_review(console.app_ctx, clock, "B")
    cli(console.app_ctx, "reject", str(second), "--feedback", "not this way")
    before = history(console.app_ctx, first)

    said = flash(post(console, "/accept-all", ids=f"{first},{second}").text)

    assert said == (
        f"refused: wrighty: item {second} is no longer ready to accept (it is retry-scheduled "
        "now): nothing was accepted; look at the ready items again"
    )
    assert history(console.app_ctx, first) == before
    red(console.app_ctx, first, clock())  # its checks ran again by hand, and failed
    said = flash(post(console, "/accept-all", ids=f"{first}").text)
    assert said.startswith(f"refused: wrighty: item {first} is no longer ready to accept (its lat")
    assert history(console.app_ctx, first) == before


@pytest.mark.parametrize(
    "ids",
    ["", "x", "1,,2", "0", "-1", "1;2", "9" * 30, ",".join(["1"] * 1001), "1 ,2", "\uff11"],
    ids=["empty", "word", "hole", "zero", "negative", "semicolon", "huge", "too-many",
         "space", "fullwidth"],
)  # fmt: skip
def test_a_form_that_does_not_name_the_items_is_refused(
    console: Console, clock: FakeClock, ids: str
):
    seeded(console.app_ctx, clock)
    item_id = in_review(console.app_ctx, clock)
    before = history(console.app_ctx, item_id)

    said = flash(post(console, "/accept-all", ids=ids).text)

    assert said == (
        "refused: wrighty: accept all ready: the form does not name the items it showed (item "
        "ids separated by commas); open Accept all ready again"
    )
    assert history(console.app_ctx, item_id) == before


def test_none_ready_says_so_and_offers_no_form(console: Console, clock: FakeClock):
    seeded(console.app_ctx, clock)
    item_id = in_review(console.app_ctx, clock)
    red(console.app_ctx, item_id, clock())
    client = console.login()

    assert "/accept-all" not in client.get("/").text
    page = client.get("/accept-all").text

    assert "nothing to accept: none of the 1 item in review is ready" in page
    assert 'action="/accept-all"' not in page
    assert listed(page, "waiting") == [item_id]


def test_read_only_lists_but_refuses_and_a_post_without_csrf_is_403(
    project_ctx: AppContext, clock: FakeClock
):
    seeded(project_ctx, clock)
    item_id = in_review(project_ctx, clock)
    read_only = make_console(project_ctx, project_ctx.cwd, read_only=True)
    with read_only.client:
        client = read_only.login()
        assert "/accept-all" not in client.get("/").text
        page = client.get("/accept-all").text
        assert listed(page, "ready") == [item_id]
        assert '<form method="post"' not in page
        response = client.post(
            "/accept-all", data={"csrf": CSRF, "ids": str(item_id)}, follow_redirects=False
        )
        assert response.status_code == 403
    console = make_console(project_ctx, project_ctx.cwd)
    with console.client:
        client = console.login()
        response = client.post("/accept-all", data={"ids": str(item_id)}, follow_redirects=False)
        assert response.status_code == 403
    assert states(project_ctx, item_id) == [ItemState.REVIEW]
