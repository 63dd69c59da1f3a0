"""`wrighty accept --all` and `accept ID...` with real git and real wrighty processes, on both
stores (docs/landing.md#accepting-every-ready-item): every item in review whose latest checks
passed is accepted, in the order they entered review, and lands; one whose checks failed is
left in review; none ready is one line, exit 2, nothing changed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import git
from tests.integration.test_landing import AGENT
from tests.integration.test_work_product_processes import make_project, worktree
from wrighty.domain.states import ItemState

# The check: no file of the worktree is named bad.txt.
CHECK = {"checks": [{"name": "tidy", "argv": ["test", "!", "-f", "bad.txt"]}]}


def _project(tmp_path: Path, store_url: str | None) -> Any:
    return make_project(
        tmp_path / "p", store_url, agent=AGENT, verify=CHECK,
        completion={"review": "person", "integrate": "merge"},
    )  # fmt: skip


def _run(project: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        project.command(*args), cwd=project.root, env=project.env, capture_output=True,
        text=True, check=False,
    )  # fmt: skip


def _three_in_review_the_middle_one_red(project: Any) -> list[int]:
    """Three items in review, entered in the order made; the second's latest checks (run by
    hand after a file appeared in its worktree) failed."""
    ids = [
        project.plant(f"FILE {name}.txt TEXT {name}", title=name.title())
        for name in ("one", "two", "three")
    ]
    for _ in ids:
        assert project.worker("--once").returncode == 0
    assert [project.get(i).state for i in ids] == [ItemState.REVIEW] * 3
    (worktree(project, ids[1]) / "bad.txt").write_text("x\n")
    assert _run(project, "verify", str(ids[1])).returncode != 0
    return ids


def _states(project: Any, ids: list[int]) -> list[ItemState]:
    return [project.get(i).state for i in ids]


def test_accept_all_lands_every_ready_item_in_order_and_leaves_the_red_one(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url)
    one, two, three = _three_in_review_the_middle_one_red(project)
    main_before = git(project.root, "rev-parse", "main")

    listed = _run(project, "accept", "--all", "--dry-run")

    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        f"would accept item {one}: One",
        f"would accept item {three}: Three",
    ]
    assert _states(project, [one, two, three]) == [ItemState.REVIEW] * 3
    assert git(project.root, "rev-parse", "main") == main_before

    accepted = _run(project, "accept", "--all")

    assert accepted.returncode == 0, accepted.stderr
    lines = accepted.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"accepted item {one} (One): landed on main as ")
    assert lines[1].startswith(f"accepted item {three} (Three): landed on main as ")
    assert _states(project, [one, two, three]) == [ItemState.DONE, ItemState.REVIEW, ItemState.DONE]
    # landed in that order: three's landing was brought up to date with one's
    line = git(project.root, "rev-list", "--first-parent", f"{main_before}..main").split()
    assert line[0] == git(project.root, "rev-parse", f"wrighty/{three}-three")
    assert (project.root / "one.txt").is_file()
    assert (project.root / "three.txt").is_file()
    assert not (project.root / "two.txt").exists()

    again = _run(project, "accept", "--all")

    assert again.returncode == 2
    assert again.stderr.strip().splitlines() == [
        "wrighty: nothing to accept: none of the 1 item in review is ready (its latest checks "
        "passed, and each item it comes after is done, landing or ready); `wrighty list "
        "--state review` shows them"
    ]
    assert again.stdout == ""
    assert project.get(two).state is ItemState.REVIEW


def test_accept_all_without_waiting_puts_them_in_line_and_says_so_in_json(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url)
    one, two, three = _three_in_review_the_middle_one_red(project)

    dry = json.loads(_run(project, "accept", "--all", "--dry-run", "--json").stdout)
    assert dry["dry_run"] is True
    assert [(i["id"], i["state"]) for i in dry["accepted"]] == [(one, "review"), (three, "review")]

    accepted = _run(project, "accept", "--all", "--wait", "0", "--json")

    assert accepted.returncode == 0, accepted.stderr
    document = json.loads(accepted.stdout)
    assert document["dry_run"] is False
    assert [(i["id"], i["state"], i["integrated"]) for i in document["accepted"]] == [
        (one, "landing", None),
        (three, "landing", None),
    ]
    assert _states(project, [one, two, three]) == [ItemState.LANDING, ItemState.REVIEW,
                                                   ItemState.LANDING]  # fmt: skip
    landed = _run(project, "land")
    assert landed.returncode == 0, landed.stderr
    assert _states(project, [one, three]) == [ItemState.DONE, ItemState.DONE]


def test_accept_of_several_ids_takes_them_in_the_order_given_and_refuses_all_up_front(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url)
    one, two, three = _three_in_review_the_middle_one_red(project)
    assert _run(project, "cancel", str(two)).returncode == 0

    refused = _run(project, "accept", str(three), str(two), str(one), "--wait", "0")

    assert refused.returncode == 2
    assert len(refused.stderr.strip().splitlines()) == 1
    assert f"item {two} is cancelled" in refused.stderr
    assert _states(project, [one, three]) == [ItemState.REVIEW, ItemState.REVIEW]

    accepted = _run(project, "accept", str(three), str(one))

    assert accepted.returncode == 0, accepted.stderr
    assert [line.split(":")[0] for line in accepted.stdout.splitlines()] == [
        f"accepted item {three} (Three)",
        f"accepted item {one} (One)",
    ]
    assert _states(project, [one, three]) == [ItemState.DONE, ItemState.DONE]
    tip = git(project.root, "rev-parse", "main")
    assert tip == git(project.root, "rev-parse", f"wrighty/{one}-one")  # three landed first
