"""Accept all ready in a real browser (docs/landing.md#accepting-every-ready-item), on a
phone's screen and a desktop's: three items a real worker carried to review, the second's
checks red; the board offers to accept the two that are ready, its page names them and why
the third waits, and one tap accepts exactly those two into landing; `wrighty land` then
lands them on main, the red one left in review."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.browser.screen import sideways
from tests.browser.test_console import console  # noqa: F401 (a fixture, on this `project`)
from tests.integration.test_accept_all import CHECK
from tests.integration.test_landing import AGENT
from tests.integration.test_work_product_processes import make_project, worktree
from tests.integration.worker_process import ProjectOnDisk
from wrighty.domain.states import ItemState


@pytest.fixture
def project(tmp_path: Path) -> ProjectOnDisk:
    """A git project in worktree mode that lands what a person accepts (integrate merge)."""
    return make_project(
        tmp_path / "p", agent=AGENT, verify=CHECK,
        completion={"review": "person", "integrate": "merge"},
    )  # fmt: skip


@pytest.fixture
def three_in_review(project: ProjectOnDisk) -> list[int]:
    """Three items a worker carried to review; the second's checks, run again by hand after
    a file appeared in its worktree, failed."""
    ids = [
        project.plant(f"FILE {name}.txt TEXT {name}", title=name.title())
        for name in ("one", "two", "three")
    ]
    for _ in ids:
        assert project.worker("--once").returncode == 0
    (worktree(project, ids[1]) / "bad.txt").write_text("x\n")
    verified = subprocess.run(
        project.command("verify", str(ids[1])), cwd=project.root, env=project.env,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert verified.returncode == 1, verified.stderr
    return ids


@pytest.mark.parametrize("size", [(390, 844), (1440, 900)], ids=["phone", "desktop"])
def test_accept_all_ready_from_the_board_takes_exactly_what_it_showed(
    project: ProjectOnDisk,
    three_in_review: list[int],
    console: str,  # noqa: F811
    page: Any,
    size: tuple[int, int],
) -> None:
    one, two, three = three_in_review
    width = size[0]
    page.set_viewport_size({"width": width, "height": size[1]})
    page.goto(console)

    offer = page.get_by_role("link", name="Accept all ready (2)")
    offer.scroll_into_view_if_needed(timeout=5_000)
    box = offer.bounding_box()
    assert box["height"] >= 44  # a thumb's target
    assert box["x"] + box["width"] <= width  # on the screen
    offer.click()

    page.get_by_role("heading", name="Accept all ready").wait_for(timeout=10_000)
    ready = page.locator("table.ready td.id").all_inner_texts()
    waiting = page.locator("table.waiting tr", has_text="Two")
    assert ready == [str(one), str(three)]
    assert "its latest checks did not pass" in waiting.inner_text()
    assert sideways(page) == ""
    assert [project.get(i).state for i in (one, two, three)] == [ItemState.REVIEW] * 3

    page.get_by_role("button", name="Accept these 2 items").click()

    flash = page.locator("p.flash.ok")
    flash.wait_for(timeout=20_000)
    said = flash.inner_text()
    assert said.startswith(f"accepted item {one} (One): item {one} is landing")
    assert f"accepted item {three} (Three): item {three} is landing" in said
    assert [project.get(i).state for i in (one, two, three)] == [
        ItemState.LANDING, ItemState.REVIEW, ItemState.LANDING]  # fmt: skip
    landed = subprocess.run(
        project.command("land"), cwd=project.root, env=project.env, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert landed.returncode == 0, landed.stderr
    assert [project.get(i).state for i in (one, two, three)] == [
        ItemState.DONE, ItemState.REVIEW, ItemState.DONE]  # fmt: skip
    assert (project.root / "one.txt").is_file()
    assert (project.root / "three.txt").is_file()
