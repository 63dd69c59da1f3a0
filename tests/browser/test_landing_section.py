"""The console's Landing section in a real browser (docs/landing.md#where-it-shows): an item a
person accepted shows in a section of its own, after review, its row saying where its landing
is, on a phone's screen and a desktop's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_console import CONSOLE_PROJECT, console  # noqa: F401 (a fixture)
from tests.conftest import FakeClock
from tests.integration.worker_process import ProjectOnDisk
from tests.store.test_landings import accepted, in_review

pytestmark = CONSOLE_PROJECT


@pytest.fixture
def landing_item(project: ProjectOnDisk) -> Iterator[int]:
    """An item accepted (in landing, waiting in line to land on main), and one in review."""
    store = project.store()
    try:
        clock = FakeClock()
        in_review(store, clock, "still in review")
        yield accepted(store, clock, in_review(store, clock, "accepted and landing")).id
    finally:
        store.close()


@pytest.mark.parametrize("size", [(390, 844), (1440, 900)], ids=["phone", "desktop"])
def test_a_landing_item_shows_in_its_section_saying_where_it_is(
    landing_item: int,
    console: str,  # noqa: F811
    page: Any,
    size: tuple[int, int],
) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(console)
    section = page.locator("section#landing")
    assert section.locator("h2").inner_text().startswith("Landing")
    row = section.locator(f'tr:has(a[href="/items/{landing_item}"])')
    row.scroll_into_view_if_needed(timeout=5_000)
    assert row.is_visible()
    reason, state = row.locator("td:nth-child(5)"), row.locator("td:nth-child(2)")
    assert reason.inner_text() == "waiting in line to land on main"
    assert state.inner_text() == "landing"
    assert section.locator("tbody tr").count() == 1  # the item in review is in its own
    review = page.locator("section#review")
    assert "still in review" in review.inner_text()
    # after review, before the rest
    order = page.evaluate("[...document.querySelectorAll('section.section')].map(s => s.id)")
    assert order.index("landing") == order.index("review") + 1
