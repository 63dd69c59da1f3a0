"""The change is always on the item's branch (docs/work-product.md#the-items-branch), with real
git and real `wrighty worker start` processes: an agent that detached its HEAD has its commits
brought back onto the item's branch; one that checked out another branch (the project's own)
is set aside with nothing committed; a check that switches branch too; a half-made worktree is
made again with its branch and base recorded; a branch with the item's name that holds another
item's work is never adopted; on both stores."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import textwrap
from pathlib import Path

from tests.helpers import git, wait_for
from tests.integration.test_work_product_processes import make_project, worktree
from tests.integration.worker_process import LiveWorker, ProjectOnDisk
from wrighty.domain.model import Session
from wrighty.domain.states import ItemState

# An agent that does what its task says with git in its worktree, then writes feature.txt.
AGENT = textwrap.dedent(
    """\
    import pathlib, subprocess, sys
    task = sys.stdin.read()
    def git(*args):
        subprocess.run(["git", *args], check=True, capture_output=True)
    if "DETACH" in task:
        git("checkout", "-q", "--detach")
        pathlib.Path("early.txt").write_text("committed by the agent, detached\\n")
        git("add", "early.txt")
        git("commit", "-qm", "the agent's own commit")
    if "MAIN" in task:
        git("checkout", "-q", "--ignore-other-worktrees", "main")
        pathlib.Path("early.txt").write_text("committed by the agent, on main\\n")
        git("add", "early.txt")
        git("commit", "-qm", "the agent's commit on main")
    pathlib.Path("feature.txt").write_text("made by the agent\\n")
    """
)


def session_of(project: ProjectOnDisk, item_id: int) -> Session:
    store = project.store()
    try:
        session = store.get_session(item_id)
    finally:
        store.close()
    assert session is not None
    return session


def test_commits_on_a_detached_head_are_brought_back_onto_the_items_branch(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(
        tmp_path / "p", store_url, agent=AGENT,
        completion={"review": "person", "integrate": "merge"},
    )  # fmt: skip
    base = git(project.root, "rev-parse", "main")
    item_id = project.plant("DETACH, then add the feature", title="add it")
    branch = f"wrighty/{item_id}-add-it"

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    assert project.get(item_id).state is ItemState.REVIEW
    tree = worktree(project, item_id)
    assert git(tree, "symbolic-ref", "--short", "HEAD") == branch
    [restored] = finished.named("branch-restored")
    agents = git(project.root, "rev-parse", f"{branch}^")
    assert restored["branch"] == branch
    assert restored["commit"] == agents
    [committed] = finished.named("committed")
    assert committed["commit"] == git(project.root, "rev-parse", branch)
    # the agent's commit, then wrighty's, on the base
    assert git(project.root, "rev-parse", f"{branch}~2") == base
    assert git(project.root, "show", f"{branch}:early.txt") == "committed by the agent, detached"
    assert git(project.root, "show", f"{branch}:feature.txt") == "made by the agent"

    project.wrighty("accept", str(item_id))

    done = project.get(item_id)
    assert done.state is ItemState.DONE
    assert git(project.root, "rev-parse", "main") == git(project.root, "rev-parse", branch)
    assert (project.root / "early.txt").exists()
    assert (project.root / "feature.txt").exists()


def test_an_agent_that_committed_on_the_projects_branch_is_set_aside_and_nothing_committed(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(tmp_path / "p", store_url, agent=AGENT)
    base = git(project.root, "rev-parse", "main")
    item_id = project.plant("MAIN, then add the feature", title="add it")
    branch = f"wrighty/{item_id}-add-it"

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    waiting = project.get(item_id)
    assert (waiting.state, waiting.reason_code) == (ItemState.NEEDS_ATTENTION, "off-branch")
    assert waiting.reason is not None
    assert f"it has the branch main checked out, not its branch {branch}" in waiting.reason
    assert f"checked out in {project.root.resolve()} too" in waiting.reason
    assert "git reflog main" in waiting.reason
    assert waiting.next_action == f"wrighty requeue {item_id} --resume"
    assert not finished.named("committed")
    assert git(project.root, "rev-parse", branch) == base  # the item's branch: untouched
    agents = git(project.root, "rev-parse", "main")
    assert git(project.root, "rev-parse", f"{agents}^") == base  # only the agent's own commit
    # the agent's uncommitted work stays in its worktree, committed nowhere
    tree = worktree(project, item_id)
    assert "feature.txt" in git(tree, "status", "--porcelain")


CHECK_SWITCHES = {
    "checks": [{"name": "switches", "argv": ["git", "switch", "-q", "-c", "elsewhere"]}]
}


def test_a_check_that_switches_branch_sets_the_item_aside_before_the_commit(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(tmp_path / "p", store_url, agent=AGENT, verify=CHECK_SWITCHES)
    base = git(project.root, "rev-parse", "main")
    item_id = project.plant("add the feature", title="add it")

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    assert finished.named("check-passed")
    waiting = project.get(item_id)
    assert (waiting.state, waiting.reason_code) == (ItemState.NEEDS_ATTENTION, "off-branch")
    assert "it has the branch elsewhere checked out" in (waiting.reason or "")
    assert not finished.named("committed")
    assert git(project.root, "rev-parse", f"wrighty/{item_id}-add-it") == base
    assert git(project.root, "rev-parse", "elsewhere") == base


def test_a_half_made_worktree_is_made_again_with_its_branch_and_base(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(tmp_path / "p", store_url, agent=AGENT)
    base = git(project.root, "rev-parse", "main")
    item_id = project.plant("add the feature", title="add it")
    branch = f"wrighty/{item_id}-add-it"
    # as `git worktree add -b` leaves it when killed while it checks out: registered, locked
    # "initializing", its branch made, its files half there, and no session recorded
    tree = worktree(project, item_id)
    tree.parent.mkdir(parents=True)
    git(project.root, "worktree", "add", "-q", "--lock", "--reason", "initializing", "-b",
        branch, str(tree), "HEAD")  # fmt: skip
    (tree / "agent.py").unlink()

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    assert project.get(item_id).state is ItemState.DONE
    session = session_of(project, item_id)
    assert (session.workspace, session.branch, session.base_commit) == (str(tree), branch, base)
    [committed] = finished.named("committed")
    assert committed["branch"] == branch
    assert git(project.root, "rev-parse", f"{branch}^") == base
    assert git(tree, "symbolic-ref", "--short", "HEAD") == branch


def test_a_folder_with_only_gits_first_file_is_made_again(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", agent=AGENT)
    item_id = project.plant("add the feature", title="add it")
    tree = worktree(project, item_id)
    tree.mkdir(parents=True)
    (tree / ".git").write_text(f"gitdir: {project.root}/.git/worktrees/{item_id}\n")

    finished = project.worker("--once")

    assert project.get(item_id).state is ItemState.DONE, finished.stderr
    session = session_of(project, item_id)
    assert session.branch == f"wrighty/{item_id}-add-it"
    assert session.base_commit is not None
    assert finished.named("committed")


GIT_THAT_WAITS = """#!/bin/sh
{real} "$@"
status=$?
case " $* " in
  *" worktree add "*)
    touch {marks}/add-made
    while [ ! -e {marks}/go ]; do sleep 0.05; done
    ;;
esac
exit $status
"""


def test_a_worker_killed_while_git_makes_the_worktree_leaves_it_for_the_next_to_finish(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(
        tmp_path / "p", store_url, agent=AGENT,
        completion={"review": "person", "integrate": "merge"},
    )  # fmt: skip
    marks = tmp_path / "marks"
    marks.mkdir()
    # wrighty runs no hook of its own git calls' (docs/work-product.md#what-git-runs), so the
    # worker is caught inside `git worktree add` by a git of the test's own on its PATH: the
    # real git makes the worktree, then this one waits, before the worker records the session
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(
        GIT_THAT_WAITS.format(real=shutil.which("git"), marks=marks), encoding="utf-8"
    )
    wrapper.chmod(0o755)
    project.env = {**(project.env or os.environ), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    base = git(project.root, "rev-parse", "main")
    item_id = project.plant("add the feature", title="add it")
    branch = f"wrighty/{item_id}-add-it"
    first = LiveWorker(project, "--once")
    try:
        wait_for(
            lambda: (marks / "add-made").exists() or first.process.poll() is not None,
            timeout=60,
            what="git worktree add",
        )
        assert (marks / "add-made").exists(), "the worker ended before it made the worktree"
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait(timeout=30)
    finally:
        (marks / "go").touch()
        first.process.kill()
        first.process.communicate(timeout=30)
    assert worktree(project, item_id).is_dir()
    store = project.store()
    try:
        assert store.get_session(item_id) is None
    finally:
        store.close()

    # the next worker takes the item up once the dead worker's claim expires
    second = LiveWorker(project)
    try:
        second.until("settled", item_id=item_id)
    finally:
        second.process.send_signal(signal.SIGTERM)
        second.finish()

    assert project.get(item_id).state is ItemState.REVIEW
    session = session_of(project, item_id)
    assert (session.branch, session.base_commit) == (branch, base)
    assert [event["branch"] for event in second.events if event["event"] == "committed"] == [branch]
    assert git(project.root, "rev-parse", f"{branch}^") == base
    said = project.wrighty("accept", str(item_id))
    assert "already merged" not in said
    assert project.get(item_id).state is ItemState.DONE
    assert git(project.root, "rev-parse", "main") == git(project.root, "rev-parse", branch)
    assert (project.root / "feature.txt").read_text() == "made by the agent\n"


def test_a_branch_with_the_items_name_and_another_items_work_is_not_adopted(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(tmp_path / "p", store_url, agent=AGENT)
    base = git(project.root, "rev-parse", "main")
    # a store made anew restarts ids at 1: the branch of an earlier item 1 is still there
    branch = "wrighty/1-add-it"
    git(project.root, "switch", "-q", "-c", branch)
    (project.root / "old.txt").write_text("an earlier item's work\n")
    git(project.root, "add", "old.txt")
    git(project.root, "commit", "-qm", "an earlier item")
    old = git(project.root, "rev-parse", "HEAD")
    git(project.root, "switch", "-q", "main")
    item_id = project.plant("add the feature", title="add it")
    assert item_id == 1

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    assert project.get(item_id).state is ItemState.DONE
    fresh = f"{branch}-2"
    [renamed] = finished.named("branch-renamed")
    assert (renamed["branch"], renamed["taken"]) == (fresh, branch)
    assert session_of(project, item_id).branch == fresh
    assert git(project.root, "rev-parse", branch) == old  # the earlier branch: untouched
    assert git(project.root, "rev-parse", f"{fresh}^") == base
    change = git(project.root, "diff", "--name-only", base, fresh).split()
    assert change == ["feature.txt"]


def test_a_branch_with_the_items_name_and_nothing_of_its_own_is_made_anew(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "p", agent=AGENT)
    first = git(project.root, "rev-parse", "main")
    git(project.root, "branch", "wrighty/1-add-it")  # made, and never worked on
    (project.root / "later.txt").write_text("later\n")
    git(project.root, "add", "later.txt")
    git(project.root, "commit", "-qm", "later")
    base = git(project.root, "rev-parse", "main")
    item_id = project.plant("add the feature", title="add it")

    finished = project.worker("--once")

    assert not finished.named("branch-renamed")
    session = session_of(project, item_id)
    assert (session.branch, session.base_commit) == ("wrighty/1-add-it", base)
    assert git(project.root, "rev-parse", "wrighty/1-add-it^") == base != first


def test_a_session_that_lost_its_base_gets_the_branchs_fork_point(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    base = git(project.root, "rev-parse", "main")
    item_id = project.plant("FAIL FIRST then add it", title="add it")
    project.worker("--once")
    assert project.get(item_id).state is ItemState.NEEDS_ATTENTION
    (project.root / "later.txt").write_text("later\n")
    git(project.root, "add", "later.txt")
    git(project.root, "commit", "-qm", "later")
    with sqlite3.connect(project.root / ".wrighty" / "wrighty.db") as db:
        db.execute("UPDATE sessions SET base_commit = NULL")
    project.wrighty("requeue", str(item_id), "--resume")

    project.worker("--once")

    assert project.get(item_id).state is ItemState.DONE
    assert session_of(project, item_id).base_commit == base


def test_workspaces_clean_keeps_a_worktree_whose_head_holds_commits_on_no_branch(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "p", completion={"commit": "none"})
    item_id = project.plant("add the feature", title="add it")
    project.worker("--once")
    assert project.get(item_id).state is ItemState.DONE
    tree = worktree(project, item_id)
    git(tree, "checkout", "-q", "--detach")
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "on no branch")

    done = subprocess.run(
        project.command("workspaces", "clean", str(item_id)), cwd=project.root,
        env=project.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert done.returncode == 1, done.stdout
    assert "has commits the project's HEAD lacks (--force deletes them)" in done.stdout
    assert tree.is_dir()


def test_accept_refuses_a_worktree_whose_head_holds_commits_its_branch_lacks(
    tmp_path: Path,
) -> None:
    project = make_project(
        tmp_path / "p",
        completion={"commit": "none", "review": "person", "integrate": "merge"},
    )
    base = git(project.root, "rev-parse", "main")
    item_id = project.plant("add the feature", title="add it")
    project.worker("--once")
    assert project.get(item_id).state is ItemState.REVIEW
    tree = worktree(project, item_id)
    git(tree, "checkout", "-q", "--detach")
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "on no branch")

    done = subprocess.run(
        project.command("accept", str(item_id)), cwd=project.root,
        env=project.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert done.returncode == 1, done.stdout
    assert "is not on its branch" in done.stderr
    assert "already merged" not in done.stderr + done.stdout
    waiting = project.get(item_id)
    assert (waiting.state, waiting.reason_code) == (ItemState.REVIEW, "integration-failed")
    assert git(project.root, "rev-parse", "main") == base


def test_a_worktree_no_session_records_is_not_taken_when_it_holds_work(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(tmp_path / "p", store_url, agent=AGENT)
    # a store made anew: an earlier item 1's worktree is still there, with its work
    tree = worktree(project, 1)
    tree.parent.mkdir(parents=True)
    git(project.root, "worktree", "add", "-q", "-b", "wrighty/1-old", str(tree), "HEAD")
    (tree / "old.txt").write_text("an earlier item's work, not committed\n")
    item_id = project.plant("add the feature", title="add it")

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    waiting = project.get(item_id)
    assert (waiting.state, waiting.reason_code) == (ItemState.NEEDS_ATTENTION, "start-failed")
    assert "is a worktree that item 1's session does not record" in (waiting.reason or "")
    assert "move it away or remove it" in (waiting.reason or "")
    assert (tree / "old.txt").read_text() == "an earlier item's work, not committed\n"
    assert not (tree / "feature.txt").exists()


def null_session_branch(project: ProjectOnDisk) -> None:
    """The item's session as a worker that met a half-made worktree recorded it: no branch,
    no base (SQLite, as such a store was left)."""
    with sqlite3.connect(project.root / ".wrighty" / "wrighty.db") as db:
        db.execute("UPDATE sessions SET branch = NULL, base_commit = NULL")


def test_a_session_that_recorded_no_branch_learns_its_worktrees(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    base = git(project.root, "rev-parse", "main")
    item_id = project.plant("FAIL FIRST then add it", title="add it")
    project.worker("--once")
    null_session_branch(project)
    project.wrighty("requeue", str(item_id), "--resume")

    finished = project.worker("--once")

    assert project.get(item_id).state is ItemState.DONE
    session = session_of(project, item_id)
    assert (session.branch, session.base_commit) == (f"wrighty/{item_id}-add-it", base)
    [committed] = finished.named("committed")
    assert committed["branch"] == f"wrighty/{item_id}-add-it"


def test_accept_refuses_an_item_without_a_branch_whose_worktree_holds_its_change(
    tmp_path: Path,
) -> None:
    project = make_project(
        tmp_path / "p",
        completion={"commit": "none", "review": "person", "integrate": "merge"},
    )
    item_id = project.plant("add the feature", title="add it")
    project.worker("--once")
    assert project.get(item_id).state is ItemState.REVIEW
    null_session_branch(project)

    done = subprocess.run(
        project.command("accept", str(item_id)), cwd=project.root,
        env=project.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert done.returncode == 1, done.stdout
    assert f"item {item_id} has no branch, and its worktree" in done.stderr
    assert "nothing integrated" not in done.stdout + done.stderr
    assert project.get(item_id).state is ItemState.REVIEW
