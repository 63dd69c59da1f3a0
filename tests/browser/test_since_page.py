""" "Since you last looked" in a real browser (docs/web.md#since-you-last-looked): Chromium
against a real `wrighty serve` and worker, on a phone and a desktop. The page counts what
moved; Mark as seen (a 44x44 target) keeps the page's time in this browser and the page then
shows nothing new; an item that moves after it is shown when the page is opened again; no page
is wider than the screen. Without JavaScript, the page shows the last 24 hours."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.screen import sideways
from tests.browser.test_console import CONSOLE_PROJECT, console
from tests.integration.worker_process import ProjectOnDisk

__all__ = ["console"]
pytestmark = CONSOLE_PROJECT
SIZES = [(390, 844), (1440, 900)]
NOTHING_NEW = ["0 finished", "0 landed", "0 failed", "0 waiting for you"]


def counts(page: Any) -> list[str]:
    return [text.strip() for text in page.locator("#since-counts a").all_inner_texts()]


def listed(page: Any, group: str) -> list[str]:
    return page.locator(f"section#{group} tr[data-item]").evaluate_all(
        "rows => rows.map(row => row.getAttribute('data-item'))"
    )


def fits(page: Any) -> None:
    """Nothing wider than the screen; Mark as seen at least 44x44 and on the screen."""
    assert sideways(page) == ""
    button = page.locator("#mark-seen")
    button.scroll_into_view_if_needed()
    box = button.bounding_box()
    assert box is not None
    assert box["width"] >= 44
    assert box["height"] >= 44
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= page.viewport_size["width"]


@pytest.mark.parametrize("size", SIZES, ids=["phone", "desktop"])
def test_mark_as_seen_then_only_what_moves_after_it_is_shown(
    project: ProjectOnDisk,
    console: str,
    chromium: Any,
    size: tuple[int, int],
) -> None:
    reviewed = project.plant("Write the answer.", title="Answer <b>it</b>")
    failed = project.plant("FAIL this one.", title="Doomed")
    assert project.worker("--once").returncode == 0  # review
    assert project.worker("--once").returncode == 0  # needs attention
    context = chromium.new_context(
        viewport={"width": size[0], "height": size[1]}, has_touch=size[0] < 700
    )
    try:
        page = context.new_page()
        page.goto(console)
        base = console.split("?", 1)[0]
        page.get_by_role("link", name="Since you last looked").click()
        page.locator("#since-counts").wait_for()
        assert counts(page) == ["0 finished", "0 landed", "1 failed", "1 waiting for you"]
        assert listed(page, "failed") == [str(failed)]
        assert listed(page, "waiting") == [str(reviewed)]
        assert page.locator("section#waiting b").count() == 0  # the title, as text
        fits(page)

        seen = page.locator("#mark-seen")
        shown_at = seen.get_attribute("data-now")  # the server's time of the page
        if size[0] < 700:
            seen.tap()
        else:
            seen.click()
        page.wait_for_url("**/since?since=*")
        assert page.evaluate("localStorage.getItem('wrighty.seen')") == shown_at
        assert counts(page) == NOTHING_NEW
        assert page.locator("p.empty").all_inner_texts()[0].startswith("nothing finished since")
        fits(page)

        # the item in review is accepted, a new one waits for review: only those are new
        project.wrighty("accept", str(reviewed))
        fresh = project.plant("Write the answer.", title="Fresh")
        assert project.worker("--once").returncode == 0
        page.goto(base + "since")  # as from the tab: this browser's time is asked for
        page.wait_for_url("**/since?since=*")
        assert counts(page) == ["1 finished", "0 landed", "0 failed", "1 waiting for you"]
        assert listed(page, "finished") == [str(reviewed)]
        assert listed(page, "waiting") == [str(fresh)]
        assert page.locator("#since-kept").is_visible()
        fits(page)
    finally:
        context.close()


def test_without_javascript_the_page_shows_the_last_day(
    project: ProjectOnDisk, console: str, chromium: Any
) -> None:
    failed = project.plant("FAIL this one.", title="Doomed")
    assert project.worker("--once").returncode == 0
    context = chromium.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(console)
        page.goto(console.split("?", 1)[0] + "since")
        assert "?" not in page.url
        assert listed(page, "failed") == [str(failed)]
        assert "(1d ago)" in page.locator("#since-summary").inner_text()
        assert not page.locator("#mark-seen").is_visible()  # it needs the script
    finally:
        context.close()


def test_a_kept_time_the_server_refuses_is_forgotten(
    project: ProjectOnDisk, console: str, page: Any
) -> None:
    page.goto(console)
    base = console.split("?", 1)[0]
    page.goto(base + "since")
    page.evaluate("localStorage.setItem('wrighty.seen', '2020-01-01T00:00:00.000Z')")
    page.goto(base + "since")  # asks for the kept time: more than a year ago
    page.locator("#since-refused").wait_for()
    assert "is more than 366d ago" in page.locator("#since-refused").inner_text()
    assert page.evaluate("localStorage.getItem('wrighty.seen')") is None
    page.goto(base + "since")
    page.locator("#since-counts").wait_for()
    assert "?" not in page.url  # the last 24 hours
