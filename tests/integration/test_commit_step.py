"""The commit step itself (wrighty/workproduct/commit.py) on a real git repository: what it makes of
a worktree with nothing to commit, a title git would read as a comment, and a repository git
refuses to commit in."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.helpers import git
from wrighty.domain.model import Item
from wrighty.domain.states import ItemState
from wrighty.domain.work_product import Completion, Ending
from wrighty.workproduct.commit import complete

AT = datetime(2026, 1, 1, tzinfo=UTC)
ITEM = Item(
    id=4, title="# not a comment", body="body", agent=None, timeout_seconds=None,
    workspace=None, state=ItemState.RUNNING, generation=1, claimed_by="w", lease_expires_at=AT,
    queued_at=AT, not_before=None, reason_code=None, reason=None, next_action=None,
    crash_retries=0, requeues=0, created_at=AT, updated_at=AT,
)  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    root = tmp_path / "repo"
    root.mkdir()
    for args in (
        ("init", "-q"),
        ("config", "user.name", "T"),
        ("config", "user.email", "t@example.invalid"),
        ("commit", "-q", "--allow-empty", "-m", "start"),
    ):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    return root


def test_nothing_to_commit_is_no_commit(repo: Path) -> None:
    before = git(repo, "rev-parse", "HEAD")
    assert complete(repo, Completion(), item=ITEM, run_id="run-1").ending is Ending.NOTHING
    assert git(repo, "rev-parse", "HEAD") == before


def test_a_change_the_agent_committed_itself_is_not_committed_again(repo: Path) -> None:
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-qm", "the agent's own")
    mine = git(repo, "rev-parse", "HEAD")
    assert complete(repo, Completion(), item=ITEM, run_id="run-1").ending is Ending.NOTHING
    assert git(repo, "rev-parse", "HEAD") == mine


def test_a_title_that_starts_with_a_hash_is_kept(repo: Path) -> None:
    git(repo, "config", "commit.cleanup", "strip")  # a project's own: '#' lines are comments
    (repo / "a.txt").write_text("a\n")
    done = complete(repo, Completion(), item=ITEM, run_id="run-1")
    assert done.ending is Ending.COMMITTED
    assert done.commit == git(repo, "rev-parse", "HEAD")
    assert git(repo, "log", "-1", "--format=%s") == "# not a comment"


def test_a_commit_git_refuses_says_why_and_keeps_the_change(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "commit-msg"
    hook.write_text("#!/bin/sh\nprintf 'bad\\033[2J message\\n' >&2\nexit 1\n")
    hook.chmod(0o755)
    (repo / "a.txt").write_text("a\n")
    done = complete(repo, Completion(hooks="run"), item=ITEM, run_id="run-1")
    assert done.ending is Ending.FAILED
    # what failed, in wrighty's words; then git's last line, neutralised
    assert done.why == (
        "git could not commit the staged changes (git commit; they stay staged): "
        "bad\\x1b[2J message"
    )
    assert (repo / "a.txt").read_text() == "a\n"
    assert git(repo, "log", "--format=%s") == "start"


def test_agent_mode_only_looks(repo: Path) -> None:
    agent = dataclasses.replace(Completion(), commit="agent")
    assert complete(repo, agent, item=ITEM, run_id="run-1").ending is Ending.NOT_ASKED
    (repo / "a.txt").write_text("a\n")
    assert complete(repo, agent, item=ITEM, run_id="run-1").ending is Ending.UNCOMMITTED
    assert git(repo, "status", "--porcelain") == "?? a.txt"
