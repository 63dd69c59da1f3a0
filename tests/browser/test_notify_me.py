"""The board's opt-in browser notification in a real browser (docs/web.md#what-it-shows):
Chromium, allowed to notify, against a real `wrighty serve` and worker. Nothing is told, and
no permission asked, until "Notify me" is clicked; then an item that starts to wait for a person
(needs attention, or review) is told of once, its title as plain text, and a click on the
notification opens its page; the choice survives a reload; turned off, nothing more is told."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_console import CONSOLE_PROJECT, HOSTILE, console
from tests.integration.worker_process import ProjectOnDisk
from wrighty.domain.text import printable_line

__all__ = ["console"]
pytestmark = CONSOLE_PROJECT

# The page's Notification, recorded: each one made is kept (window.__shown) with its title,
# body and tag (window.__notices); asking for permission is counted and answered by the
# browser's own Notification (the context grants it).
RECORD = """
(() => {
  const Real = window.Notification;
  window.__notices = [];
  window.__shown = [];
  window.__asked = 0;
  class Recorded extends EventTarget {
    constructor(title, options) {
      super();
      const given = options || {};
      this.title = title;
      this.body = given.body;
      this.tag = given.tag;
      window.__notices.push({ title: title, body: given.body, tag: given.tag });
      window.__shown.push(this);
    }
    static get permission() { return Real.permission; }
    static requestPermission() {
      window.__asked += 1;
      return Real.requestPermission();
    }
  }
  window.Notification = Recorded;
})();
"""
ON = "Notifications on (turn off)"
OFF = "Notify me"


@pytest.fixture
def allowed(chromium: Any) -> Iterator[Any]:
    """A page in a context that may show notifications."""
    context = chromium.new_context(permissions=["notifications"])
    context.add_init_script(RECORD)
    try:
        yield context.new_page()
    finally:
        context.close()


def waiting_count(page: Any, count: int) -> None:
    """The board was drawn again with ``count`` items waiting for a person (the tab title's
    count, set in the same step as the notifications)."""
    title = f"({count}) wrighty · board" if count else "wrighty · board"
    page.wait_for_function("(title) => document.title === title", arg=title, timeout=20_000)


def failed(project: ProjectOnDisk, title: str) -> int:
    """An item a real worker fails: it needs attention."""
    item_id = project.plant("FAIL this one.", title=title)
    assert project.worker("--once").returncode == 0
    assert project.get(item_id).state.value == "needs-attention"
    return item_id


def told(page: Any) -> list[dict[str, str]]:
    return list(page.evaluate("() => window.__notices"))


def notice(item_id: int, title: str) -> dict[str, str]:
    return {
        "title": f"wrighty: item {item_id} waits for you",
        "body": printable_line(title),  # as the board shows it: plain text
        "tag": f"wrighty-item-{item_id}",
    }


@pytest.mark.parametrize("size", [(390, 844), (1440, 900)], ids=["phone", "desktop"])
def test_notify_me_tells_of_each_item_that_starts_to_wait_once_asked(
    project: ProjectOnDisk, console: str, allowed: Any, size: tuple[int, int]
) -> None:
    page = allowed
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(console)
    base = console.split("?", 1)[0]
    button = page.locator("#notify-me")
    assert button.inner_text() == OFF
    assert button.get_attribute("aria-pressed") == "false"
    box = button.bounding_box()
    assert box is not None
    assert box["width"] >= 44
    assert box["height"] >= 44

    # not asked for: an item that starts to need attention is told of by nothing
    failed(project, "Before asking")
    waiting_count(page, 1)
    assert told(page) == []
    assert page.evaluate("() => window.__asked") == 0  # never on load

    button.click()
    page.wait_for_function("(on) => document.getElementById('notify-me').textContent === on",
                           arg=ON, timeout=20_000)  # fmt: skip
    assert page.evaluate("() => window.__asked") == 1
    assert button.get_attribute("aria-pressed") == "true"
    assert page.locator("#notify-note").is_visible()
    box = button.bounding_box()
    assert box is not None
    assert box["width"] >= 44
    assert box["height"] >= 44

    # asked for: the next one is told of once, its hostile title as plain text
    hostile = failed(project, HOSTILE)
    waiting_count(page, 2)
    assert told(page) == [notice(hostile, HOSTILE)]
    assert page.evaluate("() => window.__pwned") is None

    # one that waits in review counts too
    reviewed = project.plant("Write the answer.", title="Answer")
    assert project.worker("--once").returncode == 0
    assert project.get(reviewed).state.value == "review"
    waiting_count(page, 3)
    assert told(page)[1:] == [notice(reviewed, "Answer")]
    loaded = page.evaluate("() => performance.getEntriesByType('navigation').length")
    assert loaded == 1

    # kept in this browser: after a reload it is still on, and still tells
    page.reload()
    assert page.locator("#notify-me").inner_text() == ON
    assert told(page) == []  # a fresh page tells of nothing that waited already
    again = failed(project, "After the reload")
    waiting_count(page, 4)
    assert told(page) == [notice(again, "After the reload")]

    # turned off: nothing more is told
    page.locator("#notify-me").click()
    assert page.locator("#notify-me").inner_text() == OFF
    assert page.locator("#notify-me").get_attribute("aria-pressed") == "false"
    failed(project, "After turning it off")
    waiting_count(page, 5)
    assert len(told(page)) == 1

    # a click on the notification opens its item's page
    with page.expect_navigation(timeout=20_000):
        page.evaluate("() => window.__shown[0].dispatchEvent(new Event('click'))")
    assert page.url == f"{base}items/{again}"
