"""`wrighty workspaces` and `wrighty workspaces clean` on a real git project: worktrees made
with `git worktree add` on a branch of their own, their sessions written to the store as a
worker would (docs/work-product.md)."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import TERMS, Started, create_queued, open_store, settle
from tests.conftest import START, FakeClock
from tests.helpers import git, git_repo
from wrighty.cli.workspaces import size_text
from wrighty.domain.claims import ClaimRequest
from wrighty.domain.model import NewRun, Session
from wrighty.domain.outcomes import OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.workspaces import Mode, Workspace
from wrighty.installation import installation_id
from wrighty.services.workspaces import disk_usage


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An initialised wrighty project in a git repository with one commit on main."""
    root = git_repo(tmp_path / "project")
    monkeypatch.chdir(root)
    assert wrighty("init").exit_code == 0
    return root


def record_run(project: Path, item_id: int, clock: FakeClock, session: Session) -> Started:
    """Claim the queued item and record its run with ``session``, as a worker would."""
    store = open_store(project)
    try:
        request = ClaimRequest("w-test", installation_id(), TERMS, "claude", item_id=item_id)
        held = store.acquire(request, now=clock())
        assert held is not None
        run = store.start_run(
            held.item,
            NewRun(f"run-{item_id}", RunKind.FRESH, "w-test", installation_id(), clock(), "s-1"),
            session=session,
        )
        assert run is not None
        return Started(held.item, run)
    finally:
        store.close()


def worktree_item(
    project: Path,
    clock: FakeClock,
    state: ItemState,
    *,
    commit: bool = True,
    merge: bool = False,
    dirty: bool = False,
) -> int:
    """An item whose run worked in a worktree on branch wrighty/<id>-task, left in ``state``:
    with a commit on that branch (merged into main when ``merge``), and an uncommitted
    change when ``dirty``."""
    item_id = create_queued()
    path = project / ".wrighty" / "worktrees" / str(item_id)
    branch = f"wrighty/{item_id}-task"
    base = git(project, "rev-parse", "HEAD")
    git(project, "worktree", "add", "-q", "-b", branch, str(path), "HEAD")
    if commit:
        (path / f"change-{item_id}.txt").write_text("work\n")
        git(path, "add", ".")
        git(path, "commit", "-q", "-m", f"item {item_id}")
    if merge:
        git(project, "merge", "-q", "--ff-only", branch)
    if dirty:
        (path / "README").write_text("edited, not committed\n")
    session = Session(item_id, "command", "s-1", str(path), installation_id(), branch, base)
    _leave_in(project, clock, record_run(project, item_id, clock, session), state)
    return item_id


def directory_item(project: Path, clock: FakeClock, state: ItemState) -> int:
    item_id = create_queued()
    path = project / ".wrighty" / "workspaces" / str(item_id)
    (path / "deep").mkdir(parents=True)
    (path / "deep" / "data.bin").write_bytes(bytes(range(256)) * 400)
    outside = project.parent / f"outside-{item_id}"
    outside.mkdir()
    (outside / "big.bin").write_bytes(b"x" * 2_000_000)
    (path / "outside").symlink_to(outside)  # never followed: not counted, not removed through
    session = Session(item_id, "command", "s-1", str(path), installation_id())
    _leave_in(project, clock, record_run(project, item_id, clock, session), state)
    return item_id


def pinned_item(project: Path, clock: FakeClock, folder: Path) -> int:
    folder.mkdir()
    made = wrighty("create", "--title", "t", "--body", "b", "--workspace", str(folder), "--queue")
    assert made.exit_code == 0, made.output
    item_id = int(json.loads(wrighty("list", "--json").stdout)[-1]["id"])
    session = Session(item_id, "command", "s-1", str(folder), installation_id())
    _leave_in(project, clock, record_run(project, item_id, clock, session), ItemState.DONE)
    return item_id


def _leave_in(project: Path, clock: FakeClock, started: Started, state: ItemState) -> None:
    if state is ItemState.RUNNING:
        return
    outcome = OutcomeClass.SUCCEEDED if state is ItemState.DONE else OutcomeClass.AGENT_FAILURE
    later = clock() + timedelta(hours=1) if state is ItemState.RETRY_SCHEDULED else None
    settle(project, started, state, at=clock(), outcome=outcome, not_before=later)


def listed(*args: str) -> dict[int, dict[str, Any]]:
    result = wrighty("workspaces", "--json", *args)
    assert result.exit_code == 0, result.output
    return {row["item_id"]: row for row in json.loads(result.stdout)}


def clean(*args: str) -> tuple[int, dict[int, dict[str, Any]]]:
    result = wrighty("workspaces", "clean", "--json", *args)
    assert result.exit_code in (0, 1), result.output
    document = json.loads(result.stdout)
    return result.exit_code, {row["item_id"]: row for row in document["results"]}


def branches(project: Path) -> set[str]:
    return set(git(project, "branch", "--format=%(refname:short)").split())


def test_the_list_says_what_git_says_of_each_worktree(repo: Path, clock: FakeClock) -> None:
    merged = worktree_item(repo, clock, ItemState.DONE, merge=True)
    ahead = worktree_item(repo, clock, ItemState.NEEDS_ATTENTION, dirty=True)
    folder = directory_item(repo, clock, ItemState.DONE)
    rows = listed()
    assert rows[merged] | {"size_bytes": 0} == rows[merged] | {
        "state": "done",
        "mode": "worktree",
        "path": str(repo / ".wrighty" / "worktrees" / str(merged)),
        "exists": True,
        "branch": f"wrighty/{merged}-task",
        "branch_exists": True,
        "ahead": 1,
        "behind": 0,
        "dirty": False,
        "merged": True,
        "size_bytes": 0,
    }
    assert rows[merged]["size_bytes"] > 0
    assert (rows[ahead]["state"], rows[ahead]["dirty"], rows[ahead]["merged"]) == (
        "needs-attention",
        True,
        False,
    )
    assert (rows[ahead]["ahead"], rows[ahead]["behind"]) == (1, 0)
    assert rows[folder]["mode"] == "directory"
    assert rows[folder]["branch"] is rows[folder]["dirty"] is rows[folder]["merged"] is None
    # the data file, not the big one the link leads to
    assert 256 * 400 <= rows[folder]["size_bytes"] < 1_000_000
    table = wrighty("workspaces")
    assert table.exit_code == 0, table.output
    assert f"wrighty/{ahead}-task" in table.stdout
    [line] = [line for line in table.stdout.splitlines() if line.startswith(f"{ahead} ")]
    assert line.split()[:8] == [
        str(ahead), "needs-attention", "worktree", f"wrighty/{ahead}-task", "1", "0", "dirty", "no"
    ]  # fmt: skip


def test_a_branch_without_commits_of_its_own_is_not_called_merged(
    repo: Path, clock: FakeClock
) -> None:
    idle = worktree_item(repo, clock, ItemState.NEEDS_ATTENTION, commit=False, dirty=True)
    table = wrighty("workspaces")
    assert table.exit_code == 0, table.output
    [line] = [line for line in table.stdout.splitlines() if line.startswith(f"{idle} ")]
    # nothing of it was merged: its work is uncommitted (CHANGES says so)
    assert line.split()[4:8] == ["0", "0", "dirty", "-"]


def test_no_workspace_is_said_plainly(repo: Path) -> None:
    create_queued()
    result = wrighty("workspaces")
    assert (result.exit_code, result.stdout) == (0, "no workspaces on this installation\n")
    assert listed() == {}


def test_a_finished_merged_worktree_goes_with_its_branch(repo: Path, clock: FakeClock) -> None:
    item_id = worktree_item(repo, clock, ItemState.DONE, merge=True)
    path = repo / ".wrighty" / "worktrees" / str(item_id)
    code, results = clean(str(item_id), "--branches")
    assert code == 0
    assert results[item_id]["outcome"] == "removed"
    assert not path.exists()
    assert f"wrighty/{item_id}-task" not in branches(repo)
    assert str(path) not in git(repo, "worktree", "list")  # git's record of it pruned
    shown = wrighty("show", str(item_id))  # the session still names the path: show copes
    assert shown.exit_code == 0, shown.output
    assert listed()[item_id]["exists"] is False


def test_without_branches_the_branch_and_its_commits_stay(repo: Path, clock: FakeClock) -> None:
    item_id = worktree_item(repo, clock, ItemState.DONE)  # not merged: the branch keeps it
    code, results = clean("--done")
    assert (code, results[item_id]["outcome"]) == (0, "removed")
    assert f"wrighty/{item_id}-task" in branches(repo)
    assert not (repo / ".wrighty" / "worktrees" / str(item_id)).exists()
    again = listed()[item_id]
    assert (again["exists"], again["branch_exists"], again["merged"]) == (False, True, False)


def test_uncommitted_or_unmerged_work_needs_force(repo: Path, clock: FakeClock) -> None:
    dirty = worktree_item(repo, clock, ItemState.DONE, merge=True, dirty=True)
    unmerged = worktree_item(repo, clock, ItemState.CANCELLED)
    code, results = clean("--done", "--branches")
    assert code == 1
    assert results[dirty]["outcome"] == results[unmerged]["outcome"] == "refused"
    assert "uncommitted changes" in results[dirty]["reason"]
    assert "commits the project's HEAD lacks" in results[unmerged]["reason"]
    assert (
        (repo / ".wrighty" / "worktrees" / str(dirty) / "README").read_text().startswith("edited")
    )
    assert {f"wrighty/{dirty}-task", f"wrighty/{unmerged}-task"} <= branches(repo)
    text = wrighty("workspaces", "clean", "--done", "--branches")
    assert text.exit_code == 1
    assert f"refused: item {dirty}'s worktree has uncommitted changes" in text.stdout
    code, results = clean("--done", "--branches", "--force")
    assert code == 0
    assert {results[dirty]["outcome"], results[unmerged]["outcome"]} == {"removed"}
    assert not {f"wrighty/{dirty}-task", f"wrighty/{unmerged}-task"} & branches(repo)
    assert not (repo / ".wrighty" / "worktrees" / str(dirty)).exists()


def test_what_a_run_or_a_resume_needs_is_never_removed(repo: Path, clock: FakeClock) -> None:
    running = worktree_item(repo, clock, ItemState.RUNNING, merge=True)
    waiting = worktree_item(repo, clock, ItemState.NEEDS_ATTENTION, merge=True)
    retry = directory_item(repo, clock, ItemState.RETRY_SCHEDULED)
    pinned = pinned_item(repo, clock, repo.parent / "pinned")
    ids = (running, waiting, retry, pinned)
    code, results = clean(*map(str, ids), "--force", "--branches")
    assert code == 1
    assert {results[item_id]["outcome"] for item_id in ids} == {"refused"}
    assert "is running" in results[running]["reason"]
    assert "a retry, a resume or a run still needs" in results[waiting]["reason"]
    assert "--workspace" in results[pinned]["reason"]
    for item_id in (running, waiting):
        assert (repo / ".wrighty" / "worktrees" / str(item_id)).is_dir()
        assert f"wrighty/{item_id}-task" in branches(repo)
    assert (repo / ".wrighty" / "workspaces" / str(retry) / "deep" / "data.bin").exists()
    assert (repo.parent / "pinned").is_dir()
    code, results = clean("--merged", "--older-than", "1s", "--force", "--branches")
    assert (code, results) == (0, {})  # the filters never pick them


def test_the_filters_combine(repo: Path, clock: FakeClock) -> None:
    old = worktree_item(repo, clock, ItemState.DONE, merge=True)
    clock.advance(3 * 86400)
    unmerged = worktree_item(repo, clock, ItemState.DONE)
    recent = worktree_item(repo, clock, ItemState.DONE, merge=True)
    code, results = clean("--merged", "--older-than", "2d", "--dry-run")
    assert (code, list(results)) == (0, [old])
    code, results = clean("--merged", "--dry-run")
    assert (code, sorted(results)) == (0, sorted([old, recent]))
    assert unmerged not in results


def test_a_dry_run_changes_nothing(repo: Path, clock: FakeClock) -> None:
    item_id = worktree_item(repo, clock, ItemState.DONE, merge=True)
    folder = directory_item(repo, clock, ItemState.CANCELLED)
    before = listed()
    result = wrighty("workspaces", "clean", "--done", "--branches", "--dry-run")
    assert result.exit_code == 0, result.output
    assert f"would remove item {item_id}'s worktree" in result.stdout
    assert f"and its branch wrighty/{item_id}-task" in result.stdout
    assert f"would remove item {folder}'s directory" in result.stdout
    assert listed() == before
    assert f"wrighty/{item_id}-task" in branches(repo)


def test_a_directory_workspace_goes_without_following_its_links(
    repo: Path, clock: FakeClock
) -> None:
    item_id = directory_item(repo, clock, ItemState.DONE)
    code, results = clean(str(item_id))
    assert (code, results[item_id]["outcome"]) == (0, "removed")
    assert not (repo / ".wrighty" / "workspaces" / str(item_id)).exists()
    assert (repo.parent / f"outside-{item_id}" / "big.bin").stat().st_size == 2_000_000
    code, results = clean(str(item_id))  # again: nothing left
    assert (code, results[item_id]["outcome"]) == (0, "nothing-to-do")


def test_a_stored_branch_wrighty_would_not_name_is_not_deleted(
    repo: Path, clock: FakeClock
) -> None:
    item_id = worktree_item(repo, clock, ItemState.DONE, merge=True)
    git(repo, "branch", "precious")
    connection = sqlite3.connect(repo / ".wrighty" / "wrighty.db")
    connection.execute("UPDATE sessions SET branch = 'precious' WHERE item_id = ?", (item_id,))
    connection.commit()
    connection.close()
    code, results = clean(str(item_id), "--branches")
    assert (code, results[item_id]["outcome"]) == (1, "refused")
    assert "precious" in branches(repo)


def test_a_path_from_the_store_is_shown_neutralised_and_never_touched(
    repo: Path, clock: FakeClock
) -> None:
    item_id = create_queued()
    odd = str(repo.parent / "elsewhere\x1b[2J")
    Path(odd).mkdir()
    session = Session(item_id, "command", "s-1", odd, installation_id())
    _leave_in(repo, clock, record_run(repo, item_id, clock, session), ItemState.DONE)
    table = wrighty("workspaces")
    assert table.exit_code == 0, table.output
    assert "\x1b" not in table.stdout
    assert "elsewhere\\x1b[2J" in table.stdout
    document = wrighty("workspaces", "--json")
    assert "\x1b" not in document.stdout
    assert json.loads(document.stdout)[0]["mode"] == "other"
    result = wrighty("workspaces", "clean", str(item_id), "--force")
    assert result.exit_code == 1
    assert "is not one wrighty made in this project" in result.stdout
    assert "\x1b" not in result.stdout
    assert Path(odd).is_dir()


def test_without_git_the_facts_are_unknown_and_nothing_is_removed(
    repo: Path, clock: FakeClock
) -> None:
    item_id = worktree_item(repo, clock, ItemState.DONE, merge=True)
    no_git = {"PATH": str(repo / "no-programs-here")}
    document = wrighty("workspaces", "--json", env=no_git)
    assert document.exit_code == 0, document.output
    [row] = json.loads(document.stdout)
    assert (row["dirty"], row["merged"]) == (None, None)
    assert "git is not installed" in row["note"]
    refused = wrighty("workspaces", "clean", str(item_id), env=no_git)
    assert refused.exit_code == 1
    assert "cannot tell whether" in refused.stdout
    failed = wrighty("workspaces", "clean", str(item_id), "--force", env=no_git)
    assert failed.exit_code == 1
    assert f"could not clean item {item_id}: git is not installed" in failed.stdout
    assert (repo / ".wrighty" / "worktrees" / str(item_id)).is_dir()


def test_a_branch_git_will_not_delete_is_kept_and_said(repo: Path, clock: FakeClock) -> None:
    item_id = worktree_item(repo, clock, ItemState.DONE)
    branch = f"wrighty/{item_id}-task"
    git(repo, "checkout", "-q", "--ignore-other-worktrees", branch)  # the project is on it
    code, results = clean(str(item_id), "--branches")
    assert code == 1
    assert results[item_id] | {"reason": None} == results[item_id] | {
        "outcome": "failed",
        "removed_workspace": True,
        "deleted_branch": False,
        "reason": None,
    }
    assert (
        f"its workspace was removed, but the branch {branch} was kept"
        in (results[item_id]["reason"])
    )
    assert branch in branches(repo)
    assert not (repo / ".wrighty" / "worktrees" / str(item_id)).exists()


def test_a_size_walk_stops_at_its_bound_and_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    (folder / "a").mkdir(parents=True)
    for n in range(5):
        (folder / "a" / f"f{n}").write_bytes(b"x" * 5000)
    whole, looked_at, complete = disk_usage(folder, 100)
    assert (looked_at, complete) == (6, True)
    assert whole >= 5 * 5000
    part, looked_at, complete = disk_usage(folder, 3)
    assert (looked_at, complete) == (3, False)
    assert part < whole
    shown = Workspace(1, ItemState.DONE, START, Mode.DIRECTORY, str(folder), True,
                      size_bytes=2048, size_complete=False)  # fmt: skip
    assert size_text(shown) == ">= 2.0 KiB"


def test_listing_runs_no_program_the_repositorys_config_names(repo: Path, clock: FakeClock) -> None:
    dirty = worktree_item(repo, clock, ItemState.DONE, dirty=True)
    tidy = worktree_item(repo, clock, ItemState.DONE, merge=True)
    marker = repo.parent / "monitor-ran"
    monitor = repo.parent / "monitor.sh"
    monitor.write_text(f"#!/bin/sh\ntouch {marker}\n")
    monitor.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(monitor))
    assert listed()[dirty]["dirty"] is True
    assert not marker.exists()
    # `git worktree remove` (without --force) looks at the worktree's files too
    code, results = clean(str(tidy))
    assert (code, results[tidy]["outcome"]) == (0, "removed")
    assert not marker.exists()


def run_logs(project: Path, item_id: int) -> Path:
    """The item's run logs, as the worker leaves them (.wrighty/runs/<id>/<run>/)."""
    folder = project / ".wrighty" / "runs" / str(item_id) / "run-0123456789ab"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stdout.log").write_text("the agent said things\n")
    return folder.parent


def test_logs_go_with_a_finished_items_workspace_and_only_then(
    repo: Path, clock: FakeClock
) -> None:
    done = worktree_item(repo, clock, ItemState.DONE, merge=True)
    waiting = worktree_item(repo, clock, ItemState.NEEDS_ATTENTION, merge=True)
    done_logs, waiting_logs = run_logs(repo, done), run_logs(repo, waiting)

    code, results = clean(str(done), str(waiting), "--logs", "--dry-run")
    assert code == 1  # the item that needs attention is refused
    assert (results[done]["outcome"], results[done]["removed_logs"]) == ("would-remove", True)
    assert done_logs.exists()
    assert waiting_logs.exists()

    code, results = clean(str(done), str(waiting), "--logs")
    assert (results[done]["outcome"], results[done]["removed_logs"]) == ("removed", True)
    assert (results[waiting]["outcome"], results[waiting]["removed_logs"]) == ("refused", False)
    assert not done_logs.exists()
    assert waiting_logs.exists()  # a resume may need to be understood: kept with its workspace
    said = wrighty("workspaces", "clean", str(done), "--logs")  # the workspace is gone already
    assert said.exit_code == 0, said.output
    assert (
        said.stdout
        == f"item {done}: nothing left to remove ({repo}/.wrighty/worktrees/{done} is gone)\n"
    )


def test_logs_of_an_item_whose_workspace_was_cleaned_before_go_on_their_own(
    repo: Path, clock: FakeClock
) -> None:
    item_id = worktree_item(repo, clock, ItemState.DONE, merge=True)
    assert clean(str(item_id))[0] == 0  # the workspace, not the logs
    logs = run_logs(repo, item_id)
    said = wrighty("workspaces", "clean", str(item_id), "--logs")
    assert said.exit_code == 0, said.output
    assert said.stdout == f"item {item_id}: removed its run logs (its workspace is gone)\n"
    assert not logs.exists()
    assert wrighty("logs", str(item_id)).exit_code == 2  # said in one line, no traceback
