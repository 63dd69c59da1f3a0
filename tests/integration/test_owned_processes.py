"""Nothing outlives its owner (docs/worker.md#stopping-a-process-tree): git, a check and an
integration's command are supervised as an agent is, so that at their time limit, at their end
and at the end of the wrighty process that ran them, no process they started (a hook, its
`sleep`, a daemon that left the group with `setsid`) is left running. Real git, real processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import file_appears, git, read_pid
from tests.integration.test_integrate import BRANCH, worked
from tests.integration.test_review_processes import _accept, _reviewed
from tests.integration.test_work_product_processes import make_project
from tests.integration.tree_marks import (
    daemon,
    hook,
    new_mark,
    none_left,
)
from tests.integration.worker_process import LiveWorker, ProjectOnDisk
from wrighty.domain.integration import Integration
from wrighty.domain.states import ItemState
from wrighty.workproduct.integrate import IntegrationError, integrate
from wrighty.workproduct.runner import GitError, run_git


@pytest.fixture
def project(git_project: Path) -> Path:
    return git_project  # tests/conftest.py's: a repository on main, wrighty's folder ignored


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder


def pid_files(marks: Path) -> list[Path]:
    return [marks / "git.pid", marks / "hook.pid", marks / "daemon.pid"]


def test_git_past_its_time_limit_leaves_nothing_of_its_hook(project: Path, marks: Path) -> None:
    hook(project / ".git" / "hooks" / "pre-commit", marks, hangs=True)
    (project / "a.txt").write_text("a\n")
    git(project, "add", "a.txt")
    mark = new_mark()

    with pytest.raises(GitError) as raised:
        run_git(project, "commit", "-qm", "a", env=mark, timeout=5, hooks=True)

    assert str(raised.value) == "git commit took longer than 5s"
    assert none_left(mark, *pid_files(marks)) == []
    assert git(project, "log", "--format=%s", "-1") == "ignore wrighty's folder"


def test_git_that_ends_leaves_nothing_its_hook_started(project: Path, marks: Path) -> None:
    hook(project / ".git" / "hooks" / "post-commit", marks, hangs=False)
    (project / "a.txt").write_text("a\n")
    git(project, "add", "a.txt")
    mark = new_mark()

    result = run_git(project, "commit", "-qm", "a", env=mark, hooks=True)

    assert result.ok, result.stderr
    assert none_left(mark, *pid_files(marks)) == []


def test_a_merge_whose_post_merge_hook_hangs_is_recorded_as_merged_and_the_hook_stopped(
    project: Path, marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = worked(project)
    hook(project / ".git" / "hooks" / "post-merge", marks, hangs=True)
    mark = new_mark()
    monkeypatch.setenv(*next(iter(mark.items())))

    done = integrate(project, Integration(kind="merge", timeout_seconds=5), target, hooks=True)

    tip = git(project, "rev-parse", BRANCH)
    assert git(project, "rev-parse", "HEAD") == tip  # main moved: the merge was made
    assert done.commit == tip
    assert done.words == (
        f"merged {BRANCH} into main as {tip[:12]} (fast-forward); git merge went on past the "
        "time limit of 5s after the merge (a post-merge hook) and was stopped"
    )
    assert none_left(mark, *pid_files(marks)) == []


def test_a_push_whose_pre_receive_hook_hangs_leaves_nothing_behind(
    project: Path, marks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(project, "remote", "add", "origin", str(remote))
    hook(remote / "hooks" / "pre-receive", marks, hangs=True)
    target = worked(project)
    mark = new_mark()
    monkeypatch.setenv(*next(iter(mark.items())))

    with pytest.raises(IntegrationError) as raised:
        integrate(project, Integration(kind="push", timeout_seconds=5), target, hooks=True)

    assert str(raised.value) == "git push took longer than 5s"
    # marks/git.pid is the hook's parent: git-receive-pack
    assert none_left(mark, *pid_files(marks)) == []
    assert git(remote, "branch", "--list") == ""


def test_an_integration_command_leaves_nothing_it_started(
    project: Path, marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = worked(project)
    pid_file = marks / "daemon.pid"
    started = f"while [ ! -s {pid_file} ]; do sleep 0.01; done"
    script = f"({daemon(pid_file)}); {started}; echo https://example.invalid/pull/1"
    mark = new_mark()
    monkeypatch.setenv(*next(iter(mark.items())))

    done = integrate(project, Integration(kind="command", command=("sh", "-c", script)), target)

    assert done.url == "https://example.invalid/pull/1"
    assert none_left(mark, pid_file) == []


# -- a worker and `wrighty verify`, as real processes -------------------------------------------

# An agent that writes feature.txt; told HANG, it first starts a daemon (marks/agent.pid) and
# waits there to be stopped.
AGENT = textwrap.dedent(
    """\
    import os, pathlib, signal, subprocess, sys, time
    task = sys.stdin.read()
    pathlib.Path("feature.txt").write_text("made by the agent\\n")
    if "HANG" in task:
        marks = pathlib.Path(os.environ["MARKS"])
        subprocess.run(["sh", "-c", sys.argv[1] if len(sys.argv) > 1 else os.environ["DAEMON"]])
        while not (marks / "agent.pid").exists():
            time.sleep(0.01)
        (marks / "agent-ready").touch()
        signal.pause()  # until its tree is stopped
    """
)


def worker_project(
    tmp_path: Path, marks: Path, store_url: str | None, **settings: Any
) -> tuple[ProjectOnDisk, dict[str, str]]:
    """A worktree project whose agent is AGENT, and the mark its worker's tree carries."""
    project = make_project(tmp_path / "p", store_url, agent=AGENT, **settings)
    mark = new_mark()
    assert project.env is not None
    project.env.update(mark, MARKS=str(marks), DAEMON=daemon(marks / "agent.pid"))
    return project, mark


def test_a_worker_killed_while_its_commits_hook_runs_leaves_nothing_and_no_commit(
    tmp_path: Path, marks: Path
) -> None:
    # the project's hooks run in wrighty's commit only under completion.hooks run
    project, mark = worker_project(tmp_path, marks, None, completion={"hooks": "run"})
    hook(project.root / ".git" / "hooks" / "pre-commit", marks, hangs=True)
    item_id = project.plant("make the feature")
    worker = LiveWorker(project, "--once")
    try:
        read_pid(marks / "hook.pid")
        worker.process.kill()
    finally:
        worker.finish()

    assert none_left(mark, *pid_files(marks)) == []
    assert project.get(item_id).state is ItemState.RUNNING  # the reaper's, once its lease ends
    assert git(project.root, "log", "--all", "--format=%s") == "the project"


def test_a_group_wide_sigterm_stops_the_worker_cleanly_and_its_agents_tree(
    tmp_path: Path, marks: Path, store_url: str | None
) -> None:
    project, mark = worker_project(tmp_path, marks, store_url)
    item_id = project.plant("HANG")
    worker = subprocess.Popen(
        project.command("worker", "start", "--json", "--once"), cwd=project.root,
        env=project.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # as `timeout` runs it: a group of its own
    )  # fmt: skip
    try:
        file_appears(marks / "agent-ready")
        # What `timeout` does at its time limit: the signal to its command, then to the group
        # (sent once the first was heard: two at once can reach a process as one).
        os.kill(worker.pid, signal.SIGTERM)
        assert worker.stderr is not None
        heard = worker.stderr.readline()
        assert "stopping" in heard, heard
        os.killpg(worker.pid, signal.SIGTERM)
        _, err = worker.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()

    assert "interrupted" not in err, err
    assert project.get(item_id).state is not ItemState.RUNNING
    assert none_left(mark, marks / "agent.pid") == []


CHECK = {
    "name": "leaves-a-daemon",
    "argv": [
        "sh",
        "-c",
        f"{daemon(Path('daemon.pid'))} while [ ! -s daemon.pid ]; do sleep 0.01; done",
    ],
}


def test_a_checks_daemon_ends_with_the_check_under_a_worker_and_by_hand(
    tmp_path: Path, marks: Path, store_url: str | None
) -> None:
    project, mark = worker_project(tmp_path, marks, store_url, verify={"checks": [CHECK]})
    item_id = project.plant("make the feature")

    ran = project.worker("--once")

    assert ran.named("check-passed"), ran.events
    assert none_left(mark) == []
    assert project.env is not None
    project.env.update(by_hand := new_mark())
    assert "passed" in project.wrighty("verify", str(item_id))
    assert none_left(by_hand) == []


def test_accept_whose_post_merge_hook_hangs_makes_the_item_done_with_main_moved(
    tmp_path: Path, marks: Path, store_url: str | None
) -> None:
    project, item_id = _reviewed(
        tmp_path, store_url, integrate="merge", integrateTimeoutSeconds=5, hooks="run"
    )
    hook(project.root / ".git" / "hooks" / "post-merge", marks, hangs=True)
    mark = new_mark()
    assert project.env is not None
    project.env.update(mark)

    accepted = _accept(project, item_id, "--json")

    assert accepted.returncode == 0, accepted.stderr
    tip = git(project.root, "rev-parse", f"wrighty/{item_id}-answer")
    assert git(project.root, "rev-parse", "main") == tip
    said = json.loads(accepted.stdout)
    assert said["state"] == "done"
    assert said["integrated"].startswith("landed on main as ")
    assert "past the time limit of 5s after the move (a post-merge hook)" in said["integrated"]
    assert project.get(item_id).state is ItemState.DONE
    assert none_left(mark, *pid_files(marks)) == []
