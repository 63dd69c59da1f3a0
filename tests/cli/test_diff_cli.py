"""`wrighty diff ITEM [--stat]`: an item's change against its base, committed and not, new
files included, ignored ones not; refused, in one line, for an item with no git work tree here
(docs/work-product.md#seeing-the-change-wrighty-diff). Real git, in a repository of the test's."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import TERMS, create_queued, open_store
from tests.conftest import FakeClock
from tests.helpers import git, installed_wrighty
from wrighty.cli.diff import show
from wrighty.domain.claims import ClaimRequest
from wrighty.domain.model import NewRun, Session
from wrighty.domain.outcomes import RunKind
from wrighty.installation import installation_id


@pytest.fixture
def repo(initialised: Path) -> Path:
    """An initialised project that is a real git repository with one commit."""
    git(initialised, "init", "-q")
    git(initialised, "config", "user.name", "Test")
    git(initialised, "config", "user.email", "test@example.com")
    (initialised / "app.py").write_text("print('one')\nprint('two')\n")
    (initialised / ".gitignore").write_text(".wrighty/\n*.log\n")
    git(initialised, "add", "-A")
    git(initialised, "commit", "-q", "-m", "first")
    return initialised


def ran_in(
    project: Path,
    clock: FakeClock,
    workspace: Path,
    *,
    base_commit: str | None = None,
    branch: str | None = None,
    installation: str | None = None,
) -> int:
    """An item whose run started in ``workspace``, its session recorded as a worker would."""
    item_id = create_queued()
    inst = installation or installation_id()
    store = open_store(project)
    try:
        held = store.acquire(
            ClaimRequest("w-test", inst, TERMS, "claude", item_id=item_id), now=clock()
        )
        assert held is not None
        session = Session(item_id, "command", "s-1", str(workspace), inst, branch, base_commit)
        new_run = NewRun(f"run-{item_id}", RunKind.FRESH, "w-test", inst, clock(), "s-1")
        assert store.start_run(held.item, new_run, session=session) is not None
    finally:
        store.close()
    return item_id


def worktree_item(project: Path, clock: FakeClock) -> tuple[int, Path, str]:
    """An item with a worktree on a branch of its own, as worktree mode makes it: its id,
    its worktree and its base commit."""
    base = git(project, "rev-parse", "HEAD")
    workspace = project / ".wrighty" / "worktrees" / "1"
    git(project, "worktree", "add", "-q", "-b", "wrighty/1-t", str(workspace), base)
    item_id = ran_in(project, clock, workspace, base_commit=base, branch="wrighty/1-t")
    assert item_id == 1
    return item_id, workspace, base


def test_the_change_shows_committed_and_uncommitted_edits_and_new_files_not_ignored_ones(
    repo: Path, clock: FakeClock
) -> None:
    item_id, workspace, _ = worktree_item(repo, clock)
    (workspace / "lib.py").write_text("committed = True\n")
    git(workspace, "add", "lib.py")
    git(workspace, "commit", "-q", "-m", "the agent's commit")
    (workspace / "app.py").write_text("print('one')\nprint('TWO')\n")
    (workspace / "notes").mkdir()
    (workspace / "notes" / "new.md").write_text("a new file\n")
    (workspace / "debug.log").write_text("ignored\n")
    status_before = git(workspace, "status", "--porcelain")

    result = wrighty("diff", str(item_id))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "+committed = True" in out  # committed on the branch
    assert "-print('two')\n+print('TWO')" in out  # changed, not committed
    assert "+++ b/notes/new.md" in out
    assert "+a new file" in out
    assert "debug.log" not in out  # ignored
    # Nothing staged, the index as it was: the new file is still untracked.
    assert git(workspace, "status", "--porcelain") == status_before
    assert git(workspace, "diff", "--cached", "--name-only") == ""


def test_stat_counts_the_files_and_lines_of_the_same_change(repo: Path, clock: FakeClock) -> None:
    item_id, workspace, _ = worktree_item(repo, clock)
    (workspace / "app.py").write_text("print('one')\n")  # one line removed
    (workspace / "new.py").write_text("a = 1\nb = 2\nc = 3\n")  # three added, untracked
    (workspace / "x.log").write_text("ignored\n")

    result = wrighty("diff", str(item_id), "--stat")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[-1].strip() == "2 files changed, 3 insertions(+), 1 deletion(-)"
    assert [line.split("|")[0].strip() for line in lines[:-1]] == ["app.py", "new.py"]


def test_a_file_with_control_characters_is_shown_escaped(repo: Path, clock: FakeClock) -> None:
    item_id, workspace, _ = worktree_item(repo, clock)
    (workspace / "evil.txt").write_text("red\x1b[31m\tTAB\x07bell\rback\n")
    result = wrighty("diff", str(item_id))
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout
    assert "\x07" not in result.stdout
    assert "\r" not in result.stdout
    assert "+red\\x1b[31m\tTAB\\x07bell\\rback" in result.stdout  # the tab kept


def test_an_item_with_no_change_says_so(repo: Path, clock: FakeClock) -> None:
    item_id, _, base = worktree_item(repo, clock)
    result = wrighty("diff", str(item_id))
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == f"item {item_id} has no change against {base[:12]}\n"


def test_a_worktree_made_before_branches_is_shown_against_where_it_forked(
    repo: Path, clock: FakeClock
) -> None:
    """Detached, no base recorded: the agent's commits on the detached HEAD are part of the
    change; the project's later commits are not."""
    workspace = repo / ".wrighty" / "worktrees" / "1"
    git(repo, "worktree", "add", "-q", "--detach", str(workspace), "HEAD")
    item_id = ran_in(repo, clock, workspace)
    (workspace / "agent.py").write_text("by the agent\n")
    git(workspace, "add", "agent.py")
    git(workspace, "commit", "-q", "-m", "on the detached HEAD")
    (repo / "later.py").write_text("the project moved on\n")
    git(repo, "add", "later.py")
    git(repo, "commit", "-q", "-m", "later, in the project")

    result = wrighty("diff", str(item_id))
    assert result.exit_code == 0, result.output
    assert "+by the agent" in result.stdout
    assert "later.py" not in result.stdout


def test_current_mode_shows_the_project_against_head_and_says_it_may_hold_others(
    repo: Path, clock: FakeClock
) -> None:
    item_id = ran_in(repo, clock, repo)
    (repo / "app.py").write_text("changed\n")
    result = wrighty("diff", str(item_id))
    assert result.exit_code == 0, result.output
    assert "+changed" in result.stdout
    assert "workspaceMode current" in result.stderr
    assert "may include others'" in result.stderr


def test_a_project_in_a_folder_of_a_repository_shows_that_folder_only(
    initialised: Path, clock: FakeClock
) -> None:
    outer = initialised.parent
    shutil.rmtree(initialised / ".git")
    git(outer, "init", "-q")
    git(outer, "config", "user.name", "Test")
    git(outer, "config", "user.email", "test@example.com")
    (outer / ".gitignore").write_text(".wrighty/\n")
    (initialised / "app.py").write_text("one\n")
    (outer / "elsewhere.txt").write_text("one\n")
    git(outer, "add", "-A")
    git(outer, "commit", "-q", "-m", "first")
    item_id = ran_in(initialised, clock, initialised)
    (initialised / "app.py").write_text("two\n")
    (initialised / "new.txt").write_text("new\n")
    (outer / "elsewhere.txt").write_text("two\n")
    (outer / "outside.txt").write_text("new\n")
    result = wrighty("diff", str(item_id), "--stat")
    assert result.exit_code == 0, result.output
    assert [line.split("|")[0].strip() for line in result.stdout.splitlines()[:-1]] == [
        "project/app.py",
        "project/new.txt",
    ]


def test_a_folder_where_the_worktree_was_is_not_taken_for_one(repo: Path, clock: FakeClock) -> None:
    """A plain folder at the item's worktree's place is inside the project's repository;
    its files (ignored there) are not the item's change."""
    workspace = repo / ".wrighty" / "worktrees" / "1"
    workspace.mkdir(parents=True)
    item_id = ran_in(repo, clock, workspace)
    result = wrighty("diff", str(item_id))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"wrighty: item {item_id}'s workspace {workspace} is not a git work tree"
    ]


def test_piped_output_is_not_paged(repo: Path, clock: FakeClock, tmp_path: Path) -> None:
    item_id, workspace, _ = worktree_item(repo, clock)
    (workspace / "new.py").write_text("x = 1\n")
    marker = tmp_path / "paged"
    pager = f"{sys.executable} -c \"open({str(marker)!r}, 'w').write('ran')\""
    result = wrighty("diff", str(item_id), env={"PAGER": pager})
    assert result.exit_code == 0
    assert "+x = 1" in result.stdout
    assert not marker.exists()


def test_on_a_terminal_the_installed_command_pages_the_change(
    repo: Path, clock: FakeClock, tmp_path: Path
) -> None:
    item_id, workspace, _ = worktree_item(repo, clock)
    (workspace / "new.py").write_text("x = 1\n")
    got = tmp_path / "got"
    pager = f"{sys.executable} -c \"import sys; open({str(got)!r}, 'w').write(sys.stdin.read())\""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    primary, secondary = pty.openpty()
    try:
        done = subprocess.run(
            [installed_wrighty(), "diff", str(item_id)],
            cwd=repo,
            stdin=subprocess.DEVNULL,
            stdout=secondary,
            stderr=subprocess.PIPE,
            env={**env, "PAGER": pager},
            timeout=60,
            check=False,
        )
    finally:
        os.close(secondary)
        os.close(primary)
    assert done.returncode == 0, done.stderr
    assert "+x = 1\n" in got.read_text()


def test_on_a_terminal_the_lines_go_to_the_pager_without_a_shell(tmp_path: Path) -> None:
    got = tmp_path / "got"
    pager = f"{sys.executable} -c \"import sys; open({str(got)!r}, 'w').write(sys.stdin.read())\""
    show(["+a\tb", "-c"], terminal=True, environ={**os.environ, "PAGER": pager + " ; true"})
    # `; true` is an argument to python, not a second command: no shell.
    assert got.read_text() == "+a\tb\n-c\n"


def test_a_pager_that_cannot_start_leaves_the_text_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    show(["+a"], terminal=True, environ={"PAGER": "/nonexistent/pager"})
    assert capsys.readouterr().out == "+a\n"


def test_an_item_that_has_not_run_has_no_workspace(repo: Path) -> None:
    item_id = create_queued()
    result = wrighty("diff", str(item_id))
    assert result.exit_code == 2
    assert result.stdout == ""
    # what becomes of it, by its state: a queued item is not told to be queued
    assert result.stderr == (
        f"wrighty: item {item_id} has no workspace yet: it has not run; it is queued: a worker "
        "of its agent makes its workspace\n"
    )
    assert wrighty("cancel", str(item_id)).exit_code == 0
    assert wrighty("diff", str(item_id)).stderr == (
        f"wrighty: item {item_id} has no workspace yet: it has not run; it was cancelled before "
        "it ran: nothing will run it\n"
    )
    todo = wrighty("create", "--title", "t", "--body", "b")
    assert todo.exit_code == 0, todo.output
    assert wrighty("diff", str(item_id + 1)).stderr.endswith(
        f"it has not run; queue it with `wrighty queue {item_id + 1}`\n"
    )


def test_a_directory_workspace_is_not_a_git_work_tree(repo: Path, clock: FakeClock) -> None:
    workspace = repo / ".wrighty" / "workspaces" / "1"
    workspace.mkdir(parents=True)
    item_id = ran_in(repo, clock, workspace)
    result = wrighty("diff", str(item_id))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"wrighty: item {item_id}'s workspace is not a git work tree (workspaceMode "
        f"directory): its files are in {workspace}"
    ]


def test_a_workspace_on_another_installation_is_refused(repo: Path, clock: FakeClock) -> None:
    item_id = ran_in(repo, clock, repo, installation="inst-elsewhere")
    result = wrighty("diff", str(item_id))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"wrighty: item {item_id}'s workspace is on another installation (inst-elsewhere); "
        f"run `wrighty diff {item_id}` there"
    ]


def test_a_pinned_folder_that_is_not_a_git_work_tree_is_refused(
    repo: Path, clock: FakeClock, tmp_path: Path
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    created = wrighty("create", "--title", "t", "--body", "b", "--workspace", str(folder))
    assert created.exit_code == 0, created.output
    store = open_store(repo)
    try:
        [item] = store.list_items()
    finally:
        store.close()
    wrighty("queue", str(item.id))
    inst = installation_id()
    store = open_store(repo)
    try:
        held = store.acquire(
            ClaimRequest("w-test", inst, TERMS, "claude", item_id=item.id), now=clock()
        )
        assert held is not None
        session = Session(item.id, "command", "s-1", str(folder), inst)
        run = NewRun("run-p", RunKind.FRESH, "w-test", inst, clock(), "s-1")
        assert store.start_run(held.item, run, session=session) is not None
    finally:
        store.close()
    result = wrighty("diff", str(item.id))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"wrighty: item {item.id}'s workspace {folder} is not a git work tree"
    ]


def test_the_repository_config_runs_no_program_of_its_own(
    repo: Path, clock: FakeClock, tmp_path: Path
) -> None:
    """An external diff or a text conversion named in the repository's config (which the agent
    can write) is not run: the diff is git's own."""
    item_id, workspace, _ = worktree_item(repo, clock)
    marker = tmp_path / "ran"
    program = tmp_path / "differ"
    program.write_text(f"#!/bin/sh\necho EXTERNAL\ntouch {marker}\n")
    program.chmod(0o755)
    git(repo, "config", "diff.external", str(program))
    git(repo, "config", "diff.conv.textconv", str(program))
    (workspace / ".gitattributes").write_text("*.py diff=conv\n")
    (workspace / "app.py").write_text("print('changed')\n")
    result = wrighty("diff", str(item_id))
    assert result.exit_code == 0, result.output
    assert "+print('changed')" in result.stdout
    assert "EXTERNAL" not in result.stdout
    assert not marker.exists()


def test_a_worktree_that_is_gone_is_refused(repo: Path, clock: FakeClock) -> None:
    item_id, workspace, _ = worktree_item(repo, clock)
    git(repo, "worktree", "remove", "--force", str(workspace))
    result = wrighty("diff", str(item_id))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"wrighty: item {item_id}'s workspace {workspace} is gone; nothing to show"
    ]


def test_a_base_the_repository_no_longer_has_is_refused(repo: Path, clock: FakeClock) -> None:
    workspace = repo / ".wrighty" / "worktrees" / "1"
    git(repo, "worktree", "add", "-q", "--detach", str(workspace), "HEAD")
    missing = "0123456789abcdef0123456789abcdef01234567"
    item_id = ran_in(repo, clock, workspace, base_commit=missing, branch="wrighty/1-t")
    result = wrighty("diff", str(item_id), "--stat")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"wrighty: item {item_id}'s base commit {missing} is no longer in the repository of "
        f"{workspace}"
    ]


def test_a_change_git_would_trust_its_index_about_is_shown(repo: Path, clock: FakeClock) -> None:
    """A change of the same size with the same time as the index has for the file (two writes
    in one tick of the kernel's clock; the change time left out, as a project may tell git to)
    is one that git's own `diff` misses when the index is newer: `wrighty diff` shows it."""
    git(repo, "config", "core.trustctime", "false")
    (repo / "app.py").write_text("one\n")
    git(repo, "add", "app.py")
    git(repo, "commit", "-q", "-m", "app")
    written = (repo / "app.py").stat().st_mtime_ns
    item_id = ran_in(repo, clock, repo)
    (repo / "app.py").write_text("two\n")  # the same size
    os.utime(repo / "app.py", ns=(written, written))  # and the time the index has for it
    later = written + 2_000_000_000
    os.utime(repo / ".git" / "index", ns=(later, later))  # the index newer than the file
    assert git(repo, "diff", "--stat") == ""  # git trusts its index
    result = wrighty("diff", str(item_id))
    assert result.exit_code == 0, result.output
    assert "+two" in result.stdout


def test_change_stat_is_the_stat_wrighty_diff_shows(repo: Path, clock: FakeClock) -> None:
    """The worker's stat of a change ready for review (workproduct/diff.change_stat): committed,
    not committed and new files, the same text `wrighty diff --stat` prints; the workspace
    left as it was."""
    from wrighty.workproduct.diff import change_stat

    item_id, workspace, base = worktree_item(repo, clock)
    assert change_stat(workspace, base) == ""  # no change yet
    (workspace / "lib.py").write_text("committed = True\n")
    git(workspace, "add", "lib.py")
    git(workspace, "commit", "-q", "-m", "the agent's commit")
    (workspace / "app.py").write_text("print('one')\n")
    (workspace / "new.py").write_text("a = 1\n")
    (workspace / "x.log").write_text("ignored\n")
    status_before = git(workspace, "status", "--porcelain")
    stat = change_stat(workspace, base)
    assert stat is not None
    lines = stat.splitlines()
    assert [line.split("|")[0].strip() for line in lines[:-1]] == ["app.py", "lib.py", "new.py"]
    assert lines[-1].strip() == "3 files changed, 2 insertions(+), 1 deletion(-)"
    shown = wrighty("diff", str(item_id), "--stat")
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == stat
    assert git(workspace, "status", "--porcelain") == status_before


def test_change_stat_is_none_when_git_cannot_tell(repo: Path, tmp_path: Path) -> None:
    from wrighty.workproduct.diff import change_stat

    base = git(repo, "rev-parse", "HEAD")
    assert change_stat(repo, "0123456789abcdef0123456789abcdef01234567") is None
    assert change_stat(tmp_path / "gone", base) is None
    plain = tmp_path / "plain"
    plain.mkdir()
    assert change_stat(plain, base) is None


def test_redact_replaces_the_secrets_an_agent_wrote_into_its_change(
    repo: Path, clock: FakeClock
) -> None:
    """An agent that wrote an agents.<name>.env value and a key into a file: `wrighty diff`
    shows the change as git has it (it is the work product), `--redact` with both replaced
    (docs/work-product.md#secrets-in-the-change)."""
    hook, key = "hook-Plain-value-5521", "sk-ant-api03-" + "q" * 40
    config = repo / "wrighty.json"
    document = json.loads(config.read_text())
    document["agents"] = {
        "fake": {"adapter": "command", "command": ["true"], "env": {"HOOK": hook}}
    }
    config.write_text(json.dumps(document))
    item_id, workspace, _ = worktree_item(repo, clock)
    (workspace / "deploy.sh").write_text(f"curl {hook}\nexport KEY={key}\n")

    whole = wrighty("diff", str(item_id))
    assert whole.exit_code == 0, whole.output
    assert f"+curl {hook}" in whole.stdout
    hidden = wrighty("diff", str(item_id), "--redact")
    assert hidden.exit_code == 0, hidden.output
    assert "+curl [REDACTED]\n+export KEY=[REDACTED]\n" in hidden.stdout
    assert hook not in hidden.stdout
    assert key not in hidden.stdout
