"""The board's tab title counts the items that wait for a person, live, in a real browser
(docs/web.md#what-it-shows): against a real `wrighty serve` and worker, an item that starts to
need attention while the board is open puts `(1) wrighty · board` in the title, one more in
review `(2)`, and once none waits the count goes, all without a reload; the page's icon is an
image the console serves."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_console import CONSOLE_PROJECT, console  # noqa: F401 (a fixture)
from tests.integration.worker_process import ProjectOnDisk

pytestmark = CONSOLE_PROJECT


def title_becomes(page: Any, title: str) -> None:
    page.wait_for_function("(title) => document.title === title", arg=title, timeout=20_000)


@pytest.mark.parametrize("size", [(390, 844), (1440, 900)], ids=["phone", "desktop"])
def test_the_tab_title_counts_what_waits_for_a_person_live(
    project: ProjectOnDisk,
    console: str,  # noqa: F811
    page: Any,
    size: tuple[int, int],
) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(console)
    assert page.title() == "wrighty · board"
    loaded = page.evaluate("() => performance.getEntriesByType('navigation').length")

    failing = project.plant("FAIL this one.", title="Doomed")
    assert project.worker("--once").returncode == 0
    assert project.get(failing).state.value == "needs-attention"
    title_becomes(page, "(1) wrighty · board")

    reviewed = project.plant("Write the answer.", title="Answer")
    assert project.worker("--once").returncode == 0
    assert project.get(reviewed).state.value == "review"
    title_becomes(page, "(2) wrighty · board")

    project.wrighty("cancel", str(failing))
    title_becomes(page, "(1) wrighty · board")
    project.wrighty("accept", str(reviewed))
    assert project.get(reviewed).state.value == "done"
    title_becomes(page, "wrighty · board")
    assert page.evaluate("() => performance.getEntriesByType('navigation').length") == loaded

    # the count comes with the page too, not only from its script
    project.plant("FAIL again.", title="Doomed again")
    assert project.worker("--once").returncode == 0
    page.reload()
    assert page.title() == "(1) wrighty · board"


def test_the_page_icon_is_an_image_it_serves(
    project: ProjectOnDisk,
    console: str,  # noqa: F811
    page: Any,
) -> None:
    page.goto(console)
    href = page.locator("link[rel=icon]").get_attribute("href")
    answer = page.request.get(console.split("?", 1)[0] + href.lstrip("/"))
    assert answer.status == 200
    assert answer.headers["content-type"].startswith("image/")
    decoded = page.evaluate(
        """(href) => new Promise((done) => {
          const image = new Image();
          image.onload = () => done("loaded");
          image.onerror = () => done("not an image");
          image.src = href;
        })""",
        href,
    )
    assert decoded == "loaded"
