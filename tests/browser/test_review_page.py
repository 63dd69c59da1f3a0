"""The item page as a review in a real browser (docs/web.md#an-item): a long change with its
actions in a bar that stays on screen, tap targets of 44 px, nothing wider than the screen,
and accept and reject done with taps on a phone, against a real `wrighty serve` and worker."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.screen import sideways
from tests.browser.test_console import CONSOLE_PROJECT, console  # noqa: F401 (a fixture)
from tests.integration.worker_process import ProjectOnDisk

pytestmark = CONSOLE_PROJECT
SIZES = [(390, 844), (1440, 900)]
LONG = "".join(f"line {n} of a long change, <b>not bold</b> \x1b[31m\n" for n in range(1, 801))


def in_review_with_a_long_change(project: ProjectOnDisk, title: str) -> int:
    """An item a real worker left in review, with 800 more lines in its worktree."""
    item_id = project.plant("Write the answer.", title=title)
    assert project.worker("--once").returncode == 0
    worktree = project.root / ".wrighty" / "worktrees" / str(item_id)
    (worktree / "long <i>name.txt").write_text(LONG)
    return item_id


def bar_buttons_fit(page: Any) -> list[str]:
    """The action bar's buttons and openers that are shown: each one's label, after checking
    it is at least 44x44 and inside the viewport."""
    size = page.viewport_size
    shown = []
    targets = page.locator("nav.action-bar button:visible, nav.action-bar summary:visible")
    for index in range(targets.count()):
        box = targets.nth(index).bounding_box()
        label = targets.nth(index).inner_text()
        assert box is not None, label
        assert box["width"] >= 44, label
        assert box["height"] >= 44, label
        assert box["x"] >= 0, label
        assert box["y"] >= 0, label
        assert box["x"] + box["width"] <= size["width"], label
        assert box["y"] + box["height"] <= size["height"], label
        shown.append(label)
    return shown


@pytest.mark.parametrize("size", SIZES, ids=["phone", "desktop"])
def test_the_actions_stay_on_screen_over_a_long_change(
    project: ProjectOnDisk,
    console: str,  # noqa: F811
    chromium: Any,
    size: tuple[int, int],
) -> None:
    item_id = in_review_with_a_long_change(project, "Long")
    context = chromium.new_context(viewport={"width": size[0], "height": size[1]})
    try:
        page = context.new_page()
        page.goto(console)
        base = console.split("?", 1)[0]
        for path in (f"items/{item_id}", f"items/{item_id}/diff"):
            page.goto(base + path)
            assert page.locator("tr.d-add").count() >= 800  # the change, inline
            assert page.locator("nav.action-bar b, nav.file-list i, table.diff b").count() == 0
            assert sideways(page) == ""
            middle = page.evaluate("document.documentElement.scrollHeight / 2")
            page.evaluate(f"window.scrollTo(0, {middle})")
            assert page.evaluate("window.scrollY") > 1000  # the middle of a long page
            assert bar_buttons_fit(page)[:2] == ["Accept", "Reject…"], path
        # the file list jumps to the file
        page.goto(base + f"items/{item_id}")
        page.locator("nav.file-list a", has_text="long <i>name.txt").first.click()
        assert page.evaluate("location.hash") == "#file-2"
    finally:
        context.close()


def test_accept_and_reject_with_feedback_by_taps_on_a_phone(
    project: ProjectOnDisk,
    console: str,  # noqa: F811
    chromium: Any,
) -> None:
    rejected = in_review_with_a_long_change(project, "Reject me")
    accepted = in_review_with_a_long_change(project, "Accept me")
    context = chromium.new_context(viewport={"width": 390, "height": 844}, has_touch=True)
    try:
        page = context.new_page()
        page.on("dialog", lambda dialog: dialog.accept())  # each action's confirm: yes
        page.goto(console)
        base = console.split("?", 1)[0]
        page.goto(base + f"items/{rejected}")
        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight / 2)")
        page.locator("nav.action-bar summary", has_text="Reject…").tap()
        page.locator("nav.action-bar textarea[name=feedback]").fill("say it twice")
        assert "Reject" in bar_buttons_fit(page)
        page.locator("nav.action-bar button", has_text="Reject").tap()
        page.get_by_text(f"item {rejected}").first.wait_for(timeout=20_000)
        assert project.get(rejected).state.value == "retry-scheduled"
        assert project.get(rejected).feedback == "say it twice"

        page.goto(base + f"items/{accepted}")
        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight / 2)")
        page.locator("nav.action-bar button", has_text="Accept").tap()
        page.locator("p.flash").wait_for(timeout=30_000)
        assert project.get(accepted).state.value in ("landing", "done")
    finally:
        context.close()
