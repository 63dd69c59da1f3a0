"""Hand off, queue and requeue done with taps on a phone (390x844, a touch screen) in a real
browser (docs/web.md#an-item), against a real `wrighty serve` and items a real worker left:
each action's bar button (and its opener and form) tapped, its question answered yes; the
store then holds the move and the page says it. (Accept and reject with feedback by taps:
test_review_page.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_console import AGENT, console  # noqa: F401 (a fixture)
from tests.browser.test_phone_sweep import two_agents
from tests.integration.worker_process import ProjectOnDisk
from wrighty.domain.states import ItemState

pytestmark = two_agents(AGENT)


@pytest.fixture
def phone(chromium: Any, console: str) -> Iterator[tuple[Any, str]]:  # noqa: F811
    """A page on a phone's touch screen, logged in, each action's question answered yes; and
    the console's address."""
    context = chromium.new_context(viewport={"width": 390, "height": 844}, has_touch=True)
    try:
        page = context.new_page()
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(console)
        yield page, console.split("?", 1)[0]
    finally:
        context.close()


def needing_attention(project: ProjectOnDisk, title: str) -> int:
    item_id = project.plant("FAIL this one.", title=title)
    assert project.worker("--once").returncode == 0
    assert project.get(item_id).state is ItemState.NEEDS_ATTENTION
    return item_id


def said(page: Any) -> str:
    """The page's answer to the action (the command's line)."""
    flash = page.locator("p.flash")
    flash.wait_for(timeout=20_000)
    return flash.inner_text()


def shown_state(page: Any) -> str:
    return page.locator("h1 .state").inner_text()


def test_hand_off_by_taps(project: ProjectOnDisk, phone: tuple[Any, str]) -> None:
    page, base = phone
    item_id = needing_attention(project, "Hand me over")
    page.goto(base + f"items/{item_id}")
    bar = page.locator("nav.action-bar")
    bar.locator("summary", has_text="Hand off…").tap()
    choice = bar.locator("select[name=to]")
    assert choice.locator("option").all_inner_texts() == ["helper"]  # not its own agent
    choice.select_option("helper")
    bar.locator("textarea[name=note]").fill("try the other one")
    bar.locator("button", has_text="Hand off").tap()
    answer = said(page)
    assert f"item {item_id} is retry-scheduled" in answer, answer
    assert "helper" in answer
    handed = project.get(item_id)
    assert (handed.state, handed.agent) == (ItemState.RETRY_SCHEDULED, "helper")
    assert handed.handoff_note == "try the other one"
    assert shown_state(page) == "retry-scheduled"


def test_queue_a_todo_item_by_a_tap(project: ProjectOnDisk, phone: tuple[Any, str]) -> None:
    page, base = phone
    item_id = project.plant("Later.", title="Not yet", state=ItemState.TODO)
    page.goto(base + f"items/{item_id}")
    page.locator("nav.action-bar button", has_text="Queue").tap()
    assert f"item {item_id} is queued" in said(page)
    assert project.get(item_id).state is ItemState.QUEUED
    assert shown_state(page) == "queued"
    assert page.locator("nav.action-bar button", has_text="Queue").count() == 0


def test_requeue_an_item_that_needs_attention_by_a_tap(
    project: ProjectOnDisk, phone: tuple[Any, str]
) -> None:
    page, base = phone
    item_id = needing_attention(project, "Try again")
    page.goto(base + f"items/{item_id}")
    page.locator("nav.action-bar button", has_text="Requeue (fresh)").tap()
    assert f"item {item_id} is queued" in said(page)
    assert project.get(item_id).state is ItemState.QUEUED
    assert shown_state(page) == "queued"
