"""Branches and commits with real git and real `wrighty worker start` processes
(docs/work-product.md): a worktree item works on a branch of its own, made from the base, and
its done run's changes are committed there; on both stores."""

from __future__ import annotations

import json
import shutil
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

from tests.helpers import git
from tests.integration.worker_process import ProjectOnDisk
from tests.integration.worker_process import make_project as new_project
from wrighty.domain.states import ItemState

# An agent that writes feature.txt (and a build.log the project's .gitignore keeps out) in its
# workspace; a task that says FAIL FIRST fails its first run (told by a mark outside it).
AGENT = textwrap.dedent(
    """\
    import os, pathlib, sys
    task = sys.stdin.read()
    mark = pathlib.Path(os.environ["MARKS"]) / "failed-once"
    if "FAIL FIRST" in task and not mark.exists():
        mark.touch()
        pathlib.Path("half.txt").write_text("half done\\n")
        sys.exit(3)
    pathlib.Path("feature.txt").write_text("made by the agent\\n")
    pathlib.Path("build.log").write_text("noise\\n")
    """
)


def make_project(
    root: Path,
    store_url: str | None = None,
    *,
    completion: dict[str, Any] | None = None,
    commit_first: bool = True,
    agent: str = AGENT,
    verify: dict[str, Any] | None = None,
) -> ProjectOnDisk:
    """A git repository with one commit (unless not ``commit_first``) whose agent is ``agent``
    (a Python program), in worktree mode, with wrighty.json's ``completion`` and ``verify``;
    the agent's marks go to ``root/marks`` (its MARKS)."""
    sections = {"completion": completion, "verify": verify}
    (root / "marks").mkdir(parents=True)
    return new_project(
        root, programs={"maker": ("agent.py", agent)}, resumable=True,
        worker={"workspaceMode": "worktree"},
        store_url=store_url, git=True, committed=commit_first, env={"MARKS": str(root / "marks")},
        **{name: value for name, value in sections.items() if value is not None},
    )  # fmt: skip


def worktree(project: ProjectOnDisk, item_id: int) -> Path:
    return project.root / ".wrighty" / "worktrees" / str(item_id)


def test_a_done_item_is_committed_on_its_own_branch_made_from_the_base(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(tmp_path / "p", store_url)
    base = git(project.root, "rev-parse", "HEAD")
    item_id = project.plant("Add the feature.\nIn detail: more.", title="Add the Feature!")

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    done = project.get(item_id)
    assert done.state is ItemState.DONE, done.reason
    branch = f"wrighty/{item_id}-add-the-feature"
    store = project.store()
    try:
        session = store.get_session(item_id)
        [run] = store.list_runs(item_id)
    finally:
        store.close()
    assert session is not None
    assert (session.branch, session.base_commit) == (branch, base)
    tree = worktree(project, item_id)
    assert git(tree, "symbolic-ref", "--short", "HEAD") == branch
    [told] = finished.named("committed")
    tip = git(project.root, "rev-parse", branch)
    assert told == {**told, "item_id": item_id, "run_id": run.run_id, "branch": branch,
                    "commit": tip}  # fmt: skip
    # one commit on the base, holding the agent's file and not what .gitignore ignores
    assert git(project.root, "rev-parse", f"{branch}^") == base
    assert git(project.root, "show", "--name-only", "--format=", branch).split() == ["feature.txt"]
    assert (tree / "build.log").exists()
    message = git(project.root, "log", "-1", "--format=%B", branch)
    assert message.splitlines() == [
        "Add the Feature!",
        "",
        "Add the feature.",
        "",
        f"Wrighty-Item: {item_id}",
        f"Wrighty-Run: {run.run_id}",
    ]
    assert git(project.root, "log", "-1", "--format=%an <%ae>", branch) == (
        "Test Person <test@example.invalid>"
    )
    assert git(tree, "status", "--porcelain") == ""  # everything committed but the ignored
    assert git(project.root, "rev-parse", "main") == base  # the project's branch is untouched
    said = json.loads(project.wrighty("show", str(item_id), "--json"))["session"]
    assert (said["branch"], said["base_commit"]) == (branch, base)


def test_completion_author_signs_the_commit(tmp_path: Path) -> None:
    author = {"name": "Wrighty Bot", "email": "bot@example.invalid"}
    project = make_project(tmp_path / "p", completion={"author": author})
    item_id = project.plant("add it", title="add it")
    assert project.worker("--once").returncode == 0
    branch = f"wrighty/{item_id}-add-it"
    assert git(project.root, "log", "-1", "--format=%an <%ae> %cn <%ce>", branch) == (
        "Wrighty Bot <bot@example.invalid> Wrighty Bot <bot@example.invalid>"
    )


def test_a_failing_pre_commit_hook_leaves_the_item_for_a_person_and_the_change_in_place(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(tmp_path / "p", store_url, completion={"hooks": "run"})
    hook = project.root / ".git" / "hooks" / "pre-commit"
    hook.write_text(
        "#!/bin/sh\necho 'checking...'\necho 'lint: feature.txt is not formatted' >&2\nexit 1\n"
    )
    hook.chmod(0o755)
    item_id = project.plant("add it", title="add it")

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    waiting = project.get(item_id)
    assert (waiting.state, waiting.reason_code) == (ItemState.NEEDS_ATTENTION, "commit-failed")
    assert waiting.reason is not None
    assert "lint: feature.txt is not formatted" in waiting.reason
    assert waiting.next_action == f"wrighty requeue {item_id} --resume"
    assert not finished.named("committed")
    tree = worktree(project, item_id)
    assert (tree / "feature.txt").read_text() == "made by the agent\n"
    base = git(project.root, "rev-parse", "main")
    assert git(project.root, "rev-parse", f"wrighty/{item_id}-add-it") == base  # no commit

    # once the hook lets it through, resuming the item commits the change on the same branch
    hook.unlink()
    project.wrighty("requeue", str(item_id), "--resume")
    again = project.worker("--once")
    assert project.get(item_id).state is ItemState.DONE
    [told] = again.named("committed")
    assert told["branch"] == f"wrighty/{item_id}-add-it"


def test_a_repository_without_a_commit_is_refused_at_worker_start(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", commit_first=False)
    item_id = project.plant("add it", title="add it")

    finished = project.worker("--once")

    assert finished.returncode == 2
    assert finished.stderr.strip().splitlines() == [
        f"wrighty: the git repository at {project.root} has no commit yet; commit once "
        "(worktrees start from HEAD), or set completion.base in wrighty.json"
    ]
    assert not finished.named("claimed")
    assert project.get(item_id).state is ItemState.QUEUED


def test_a_base_that_names_no_commit_is_refused_at_worker_start(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", completion={"base": "release"})
    finished = project.worker("--once")
    assert finished.returncode == 2
    assert "completion.base 'release' names no commit" in finished.stderr
    assert "fix completion.base in wrighty.json" in finished.stderr


def test_a_resumed_run_keeps_the_branch(tmp_path: Path, store_url: str | None) -> None:
    project = make_project(tmp_path / "p", store_url)
    item_id = project.plant("FAIL FIRST then add it", title="add it")
    project.worker("--once")
    assert project.get(item_id).state is ItemState.NEEDS_ATTENTION
    branch = f"wrighty/{item_id}-add-it"
    base = git(project.root, "rev-parse", "main")
    # the project moves on meanwhile: the item's branch keeps its base
    (project.root / "later.txt").write_text("later\n")
    git(project.root, "add", "later.txt")
    git(project.root, "commit", "-qm", "later")
    project.wrighty("requeue", str(item_id), "--resume")

    again = project.worker("--once")

    assert project.get(item_id).state is ItemState.DONE
    assert again.named("resumed")
    [told] = again.named("committed")
    assert told["branch"] == branch
    store = project.store()
    try:
        session = store.get_session(item_id)
    finally:
        store.close()
    assert session is not None
    assert (session.branch, session.base_commit) == (branch, base)
    # the first run's half work and the second's, in one commit on the base
    assert git(project.root, "rev-parse", f"{branch}^") == base
    assert sorted(git(project.root, "show", "--name-only", "--format=", branch).split()) == [
        "feature.txt",
        "half.txt",
    ]


def test_completion_commit_agent_says_what_the_agent_left_uncommitted(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", completion={"commit": "agent"})
    item_id = project.plant("add it", title="add it")
    finished = project.worker("--once")
    done = project.get(item_id)
    assert done.state is ItemState.DONE
    assert done.reason is not None
    assert "the agent left uncommitted changes" in done.reason
    [told] = finished.named("uncommitted")
    assert told["branch"] == f"wrighty/{item_id}-add-it"
    assert not finished.named("committed")
    base = git(project.root, "rev-parse", "main")
    assert git(project.root, "rev-parse", f"wrighty/{item_id}-add-it") == base


def test_completion_commit_none_leaves_the_worktree_as_it_is(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", completion={"commit": "none"})
    item_id = project.plant("add it", title="add it")
    finished = project.worker("--once")
    done = project.get(item_id)
    assert done.state is ItemState.DONE
    assert done.reason is None or "uncommitted" not in done.reason
    assert not finished.named("committed")
    assert not finished.named("uncommitted")
    assert "feature.txt" in git(worktree(project, item_id), "status", "--porcelain")


def test_a_deleted_worktree_is_made_again_on_its_branch_as_it_stands(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    item_id = project.plant("FAIL FIRST then add it", title="add it")
    project.worker("--once")  # fails: its half work stays in the worktree
    branch = f"wrighty/{item_id}-add-it"
    tree = worktree(project, item_id)
    # someone commits the half work on the branch by hand, then deletes the worktree
    git(tree, "add", "half.txt")
    git(tree, "commit", "-qm", "half, by hand")
    by_hand = git(tree, "rev-parse", "HEAD")
    shutil.rmtree(tree)
    # a new branch prefix does not make the item a new branch: its session's is kept
    document = json.loads(project.config.read_text())
    project.config.write_text(json.dumps({**document, "completion": {"branchPrefix": "other/"}}))
    project.wrighty("requeue", str(item_id), "--fresh")

    again = project.worker("--once")

    assert project.get(item_id).state is ItemState.DONE
    assert git(tree, "symbolic-ref", "--short", "HEAD") == branch
    [told] = again.named("committed")
    assert git(project.root, "rev-parse", f"{told['commit']}^") == by_hand  # not reset


def test_a_detached_worktree_of_an_earlier_version_keeps_working_without_a_branch(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "p")
    item_id = project.plant("FAIL FIRST then add it", title="add it")
    project.worker("--once")  # fails; then its session is made as an earlier version made it
    tree = worktree(project, item_id)
    git(tree, "checkout", "-q", "--detach")
    git(project.root, "branch", "-D", f"wrighty/{item_id}-add-it")
    with sqlite3.connect(project.root / ".wrighty" / "wrighty.db") as db:
        db.execute("UPDATE sessions SET branch = NULL, base_commit = NULL")
    project.wrighty("requeue", str(item_id), "--resume")

    finished = project.worker("--once")

    assert project.get(item_id).state is ItemState.DONE
    assert (tree / "feature.txt").exists()
    assert not finished.named("committed")
    assert git(project.root, "branch", "--list", "wrighty/*") == ""
    store = project.store()
    try:
        session = store.get_session(item_id)
    finally:
        store.close()
    assert session is not None
    assert (session.workspace, session.branch, session.base_commit) == (str(tree), None, None)


def test_completion_base_names_where_every_branch_starts(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", completion={"base": "release", "branchPrefix": "bot."})
    release = git(project.root, "rev-parse", "HEAD")
    git(project.root, "branch", "release")
    (project.root / "later.txt").write_text("later\n")
    git(project.root, "add", "later.txt")
    git(project.root, "commit", "-qm", "later, on main only")
    item_id = project.plant("add it", title="Add it")

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    branch = f"bot.{item_id}-add-it"
    assert git(project.root, "rev-parse", f"{branch}^") == release
    assert not (worktree(project, item_id) / "later.txt").exists()
