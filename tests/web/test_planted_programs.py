"""The console's item page and change page run no program an agent planted in the
repository (docs/work-product.md#what-git-runs): git runs inside the web server, as the
reviewer; plain git, run the same way, runs the plants. On each store."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_planted_programs import FILES, plant, ran
from tests.conftest import FakeClock
from tests.helpers import git
from tests.web.conftest import Console
from tests.web.test_item_page import worktree_item


def test_the_item_and_change_pages_run_no_planted_program(
    console: Console, clock: FakeClock, tmp_path: Path
) -> None:
    item_id, workspace = worktree_item(console, clock)
    for name in FILES:
        (workspace / name).write_text(f"{name} by the agent\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "the agent's files")
    for name in FILES:
        (workspace / name).write_text(f"{name} changed, not committed\n")
    markers = tmp_path / "markers"
    plant(workspace, markers)

    client = console.login()
    item_page = client.get(f"/items/{item_id}")
    assert item_page.status_code == 200
    diff_page = client.get(f"/items/{item_id}/diff")
    assert diff_page.status_code == 200
    assert "+clean.txt changed, not committed" in diff_page.text
    assert ran(markers) == set()

    git(workspace, "status")
    git(workspace, "diff", "HEAD")
    assert {"fsmonitor", "clean", "diff-command", "external-diff"} <= ran(markers)
