"""A GitHub issue's whole life with real `wrighty worker start` processes, real git and the
local GitHub API, on both stores (docs/sources.md#talking-on-the-issue): a labelled issue
becomes an item, its status comment follows it, a collaborator's `/wrighty reject` resumes the
same session with the feedback, `/wrighty accept` lands it as a pull request with its evidence,
the merge finishes it; an outsider's command does nothing; a worker killed between "comment
posted" and "recorded" leaves no second comment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.github.conftest import ServedGitHub
from tests.github.fake_api import TOKEN
from tests.helpers import git
from tests.integration.test_review_processes import AGENT, CHECK
from tests.integration.worker_process import ProjectOnDisk, make_project
from wrighty.domain.states import ItemState

REPO = "acme/widgets"
WAIT_SECONDS = 90


class Worker:
    """`wrighty worker start --json` in the background, its events read by a thread (so
    that waiting for a fact elsewhere never fills its pipe)."""

    def __init__(self, project: ProjectOnDisk) -> None:
        self.process = subprocess.Popen(
            project.command("worker", "start", "--json"), cwd=project.root, env=project.env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.events.append(json.loads(line))

    def named(self, name: str) -> list[dict[str, Any]]:
        return [event for event in list(self.events) if event["event"] == name]

    def kill(self) -> None:
        """SIGKILL the worker and everything it started (its own process group)."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
        _, err = self.process.communicate(timeout=60)
        return err


def wait_for(fact: Callable[[], Any], what: str, worker: Worker) -> Any:
    """``fact()`` once it is truthy (polled), or a failure saying what never came."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        found = fact()
        if found:
            return found
        if worker.process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what} never came; the worker said {worker.events[-8:]}")
        time.sleep(0.05)


def project_on(tmp_path: Path, github: ServedGitHub, store_url: str | None) -> ProjectOnDisk:
    marks = tmp_path / "p" / "marks"
    marks.mkdir(parents=True)
    tracker = {
        "kind": "github", "name": "widgets", "repo": REPO, "labels": ["wrighty"],
        "apiUrl": github.url, "timeoutSeconds": 2,
    }  # fmt: skip
    project = make_project(
        tmp_path / "p", programs={"maker": ("agent.py", AGENT)}, resumable=True,
        worker={"workspaceMode": "worktree"}, store_url=store_url, git=True,
        env={"MARKS": str(marks), "GITHUB_TOKEN": TOKEN},
        completion={"review": "person", "integrate": "github-pr", "remote": "origin"},
        verify=CHECK, sources={"pollSeconds": 1, "trackers": [tracker]},
    )  # fmt: skip
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    git(project.root, "remote", "add", "origin", str(remote))
    return project


def ours(github: ServedGitHub, issue: int, marker: str) -> list[dict[str, Any]]:
    return [
        comment
        for comment in github.fake.talk.on_issue(REPO, issue)
        if comment["body"].startswith(marker)
    ]


def status_saying(github: ServedGitHub, issue: int, words: str) -> dict[str, Any] | None:
    found = ours(github, issue, "<!-- wrighty:status item=")
    return found[0] if found and words in found[0]["body"] else None


def reply_to(github: ServedGitHub, issue: int, comment_id: int) -> dict[str, Any] | None:
    found = ours(github, issue, f"<!-- wrighty:answer comment={comment_id} -->")
    return found[0] if found else None


def test_an_issue_is_answered_rejected_accepted_as_a_pull_request_and_merged(
    tmp_path: Path, github: ServedGitHub, store_url: str | None
) -> None:
    talk = github.fake.talk
    talk.permissions.update(alice="write", mallory="read")
    project = project_on(tmp_path, github, store_url)
    marks = project.root / "marks"
    github.fake.add_issue(REPO, 7, "Answer", "Write the answer in answer.txt.")
    worker = Worker(project)
    try:
        in_review = wait_for(
            lambda: status_saying(github, 7, "ready for review"), "a review comment", worker
        )
        body = in_review["body"]
        assert body.startswith("<!-- wrighty:status item=1 -->")
        assert "answer.txt | 1 +" in body
        assert "- answer: passed" in body
        assert "/wrighty accept" in body

        # An outsider's command: answered once, acted on never.
        outsider = talk.say(REPO, 7, "mallory", "/wrighty accept")
        refused = wait_for(lambda: reply_to(github, 7, outsider), "mallory's answer", worker)
        assert "not acted on: only people with write access" in refused["body"]
        assert project.get(1).state is ItemState.REVIEW

        rejection = talk.say(REPO, 7, "alice", "/wrighty reject The answer must be 42.")
        said = wait_for(lambda: reply_to(github, 7, rejection), "alice's rejection", worker)
        assert "rejection 1 of 5" in said["body"]
        wait_for(lambda: (marks / "prompt-2").exists(), "the resumed run", worker)
        assert "The answer must be 42." in (marks / "prompt-2").read_text()
        assert (marks / "session-2").read_text() == (marks / "session-1").read_text() != ""
        wait_for(
            lambda: project.get(1).state is ItemState.REVIEW and project.get(1).rejections == 1,
            "review again",
            worker,
        )

        acceptance = talk.say(REPO, 7, "alice", "/wrighty accept")
        wait_for(lambda: reply_to(github, 7, acceptance), "alice's acceptance", worker)
        pull = wait_for(lambda: list(talk.pulls.values()), "a pull request", worker)[0]
        branch = "wrighty/1-answer"
        assert (pull["head"]["ref"], pull["base"]["ref"]) == (branch, "main")
        assert "Closes #7" in pull["body"]
        assert "- answer: passed" in pull["body"]
        pushed = git(project.root, "ls-remote", "origin", f"refs/heads/{branch}").split()[0]
        assert pushed == git(project.root, "rev-parse", branch)
        assert git(project.root, "show", f"{branch}:answer.txt") == "42"
        wait_for(
            lambda: status_saying(github, 7, "Its pull request is open"), "the PR's comment",
            worker,
        )  # fmt: skip
        waiting = project.get(1)
        assert (waiting.state, waiting.reason_code) == (ItemState.REVIEW, "pull-request-open")

        talk.merge(pull["number"])
        wait_for(lambda: project.get(1).state is ItemState.DONE, "done", worker)
        done = wait_for(lambda: status_saying(github, 7, "It is done."), "the done comment", worker)
        assert pull["html_url"] in done["body"]
    finally:
        err = worker.stop()
    assert "Traceback" not in err, err
    # One status comment all along, edited in place; each answer answered once.
    assert len(ours(github, 7, "<!-- wrighty:status ")) == 1
    assert len(ours(github, 7, "<!-- wrighty:answer ")) == 3
    events = json.loads(project.wrighty("show", "1", "--json"))["events"]
    assert [event["to_state"] for event in events][-2:] == ["review", "done"]
    assert TOKEN not in err
    assert all(TOKEN not in json.dumps(e) for e in worker.events)


def test_a_worker_killed_between_posting_and_recording_leaves_one_comment(
    tmp_path: Path, github: ServedGitHub, store_url: str | None
) -> None:
    talk = github.fake.talk
    talk.hang_after_post = True  # the first comment is stored, and never answered
    project = project_on(tmp_path, github, store_url)
    github.fake.add_issue(REPO, 3, "Answer", "Write the answer in answer.txt.")
    first = Worker(project)
    try:
        wait_for(talk.posted.is_set, "the first comment", first)
    finally:
        first.kill()
    assert len(ours(github, 3, "<!-- wrighty:status ")) == 1  # posted, not recorded
    second = Worker(project)
    try:
        wait_for(lambda: status_saying(github, 3, "ready for review"), "review", second)
    finally:
        err = second.stop()
    assert "Traceback" not in err, err
    assert len(ours(github, 3, "<!-- wrighty:status ")) == 1


def test_a_pull_request_github_refuses_leaves_the_item_in_review_and_a_new_accept_opens_it(
    tmp_path: Path, github: ServedGitHub, store_url: str | None
) -> None:
    talk = github.fake.talk
    talk.refuse_pulls = True
    project = project_on(tmp_path, github, store_url)
    github.fake.add_issue(REPO, 2, "Answer", "Write the answer in answer.txt.")
    worker = Worker(project)
    try:
        wait_for(lambda: status_saying(github, 2, "ready for review"), "review", worker)
        refused = subprocess.run(
            project.command("accept", "1"), cwd=project.root, env=project.env,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert refused.returncode == 1, refused.stderr
        assert "item 1 stays in review" in refused.stderr or "did not land" in refused.stderr
        back = wait_for(
            lambda: (item := project.get(1)).reason_code == "integration-failed" and item,
            "the refusal",
            worker,
        )
        assert back.state is ItemState.REVIEW
        assert "the branch was pushed, but GitHub answered 502" in (back.reason or "")
        assert "open a pull request: accept it again" in (back.reason or "")
        assert talk.pulls == {}
        talk.refuse_pulls = False
        project.wrighty("accept", "1")
        pull = wait_for(lambda: list(talk.pulls.values()), "a pull request", worker)[0]
        assert pull["head"]["ref"] == "wrighty/1-answer"
        wait_for(lambda: project.get(1).reason_code == "pull-request-open", "waiting", worker)
    finally:
        err = worker.stop()
    assert "Traceback" not in err, err
    assert len(talk.pulls) == 1


SNOOP = """\
import os, pathlib
marks = pathlib.Path(os.environ["MARKS"])
(marks / "agent-saw").write_text(os.environ.get("GITHUB_TOKEN", "-"))
pathlib.Path("answer.txt").write_text("41\\n")
"""


def test_no_agent_and_no_check_is_given_the_trackers_token(
    tmp_path: Path, github: ServedGitHub
) -> None:
    marks = tmp_path / "p" / "marks"
    marks.mkdir(parents=True)
    tracker = {"kind": "github", "repo": REPO, "labels": ["wrighty"], "apiUrl": github.url}
    snoop = {
        "name": "snoop",
        "argv": ["sh", "-c", f'echo "${{GITHUB_TOKEN:--}}" > {marks}/check-saw'],
    }
    project = make_project(
        tmp_path / "p", programs={"maker": ("agent.py", SNOOP)}, store_url=None,
        env={"MARKS": str(marks), "GITHUB_TOKEN": TOKEN},
        verify={"checks": [snoop]}, sources={"pollSeconds": 1, "trackers": [tracker]},
    )  # fmt: skip
    github.fake.add_issue(REPO, 1, "Snoop", "Look around.")
    worker = Worker(project)
    try:
        wait_for(lambda: (marks / "check-saw").exists(), "the check", worker)
        wait_for(lambda: project.get(1).state is ItemState.DONE, "done", worker)
    finally:
        worker.stop()
    assert (marks / "agent-saw").read_text() == "-"
    assert (marks / "check-saw").read_text().strip() == "-"
