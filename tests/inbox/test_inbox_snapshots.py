"""Snapshots of the inbox's main screens (pytest-textual-snapshot), at 80x24 and a wide size.

A snapshot that differs fails the test, with a report (snapshot_report.html) that shows both;
after a change that is meant, `pytest tests/inbox --snapshot-update` writes them again (look
at each before committing it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.cli.run_helpers import write_logs
from tests.conftest import FakeClock
from tests.inbox.seed import Seeded, make_app, open_project_store, seed, settled
from tests.inbox.test_inbox_app import select

Compare = Callable[..., bool]

HOSTILE_TITLE = (
    "\x1b[2J\x1b]0;pwned\x07[bold red]not markup[/] 漢字の見出し "
    "a title long enough to run past the right edge of any terminal " * 2
)


def _snap(
    snap_compare: Compare,
    project: Path,
    clock: FakeClock,
    *,
    size: tuple[int, int] = (80, 24),
    keys: tuple[str, ...] = (),
    select_item: Callable[[Seeded], int] | None = None,
    title: str | None = None,
    logs: bool = False,
) -> bool:
    ids = seed(project, clock, title=title)
    if logs:
        store = open_project_store(project)
        run = store.list_runs(ids.running)[-1]
        store.close()
        write_logs(project, run, stdout=b"reading src/login.py\nrunning the tests\n")
    app, store = make_app(project)

    async def before(pilot: Any) -> None:
        await settled(app, pilot)
        if select_item is not None:
            await select(app, pilot, select_item(ids))
        for key in keys:
            await pilot.press(key)
        await settled(app, pilot)

    try:
        return snap_compare(app, terminal_size=size, run_before=before)
    finally:
        store.close()


def test_board_80x24(snap_compare: Compare, project: Path, clock: FakeClock) -> None:
    assert _snap(snap_compare, project, clock)


def test_board_wide_with_the_side_panel(
    snap_compare: Compare, project: Path, clock: FakeClock
) -> None:
    assert _snap(snap_compare, project, clock, size=(150, 45))


def test_running_item_log_80x24(snap_compare: Compare, project: Path, clock: FakeClock) -> None:
    assert _snap(
        snap_compare,
        project,
        clock,
        keys=("l",),
        select_item=lambda ids: ids.running,
        logs=True,
    )


def test_confirm_release_80x24(snap_compare: Compare, project: Path, clock: FakeClock) -> None:
    assert _snap(snap_compare, project, clock, keys=("x",), select_item=lambda ids: ids.gone)


def test_help_80x24(snap_compare: Compare, project: Path, clock: FakeClock) -> None:
    assert _snap(snap_compare, project, clock, keys=("question_mark",))


def test_hostile_title_80x24(snap_compare: Compare, project: Path, clock: FakeClock) -> None:
    assert _snap(snap_compare, project, clock, title=HOSTILE_TITLE[:200])
