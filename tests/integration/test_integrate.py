"""The integration an accepted item's branch gets (wrighty/workproduct/integrate.py,
docs/work-product.md#integration), on real git repositories: merges (fast-forward, merge
commits, refusals that leave the project as it was), a push to a bare repository, and a
project's command (a stand-in `gh` that records what it was given)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.helpers import git, snapshot
from wrighty.domain.integration import Integration, MergeMode
from wrighty.workproduct.integrate import (
    IntegrationError,
    IntegrationTarget,
    integrate,
)

TITLE = "Fix the login page"
BRANCH = "wrighty/1-fix-the-login-page"
SECRET = "ghp_" + "Zq9Wx8Ev7Rt6Yu5I" * 3  # a GitHub token's shape: redact knows it


@pytest.fixture
def project(git_project: Path) -> Path:
    return git_project  # tests/conftest.py's: a repository on main, wrighty's folder ignored


def worked(
    root: Path, files: dict[str, str] | None = None, *, item_id: int = 1
) -> IntegrationTarget:
    """Item ``item_id``'s worktree, made as the worker makes it (from main), with ``files``
    written and committed on its branch."""
    worktree = root / ".wrighty" / "worktrees" / str(item_id)
    branch = BRANCH if item_id == 1 else f"wrighty/{item_id}-x"
    base = git(root, "rev-parse", "HEAD")
    git(root, "worktree", "add", "-q", "-b", branch, str(worktree), base)
    for name, text in (files or {"login.py": "fixed\n"}).items():
        (worktree / name).parent.mkdir(parents=True, exist_ok=True)
        (worktree / name).write_text(text)
    git(worktree, "add", "-A")
    git(worktree, "commit", "-qm", TITLE)
    return IntegrationTarget(
        item_id=item_id,
        title=TITLE,
        branch=branch,
        base=base,
        worktree=worktree,
        summary=f"Item {item_id}: {TITLE}\n",
    )


def commit_on_main(root: Path, name: str, text: str) -> str:
    (root / name).write_text(text)
    git(root, "add", name)
    git(root, "commit", "-qm", f"main changes {name}")
    return git(root, "rev-parse", "HEAD")


def merging(mode: MergeMode = "ff") -> Integration:
    return Integration(kind="merge", merge=mode)


EVERY_KIND = (
    Integration(kind="merge"),
    Integration(kind="push"),
    Integration(kind="command", command=("true",)),
)


def state(root: Path) -> tuple[object, ...]:
    """What a refused integration must leave as it was: HEAD, every ref, the index, the
    working tree's files and git's own (but its objects, which a merge-tree adds to, its logs,
    the index file, whose stat data git refreshes, and ORIG_HEAD, git's note of the HEAD
    before a merge it tried), so no merge under way either."""
    files = {
        path: content
        for path, content in snapshot(root).items()
        if not path.startswith(
            (".git/objects", ".git/logs", ".git/index", ".git/ORIG_HEAD", ".wrighty")
        )
    }
    return (
        git(root, "rev-parse", "--symbolic-full-name", "HEAD"),
        git(root, "rev-parse", "HEAD"),
        git(root, "for-each-ref", "--format=%(refname) %(objectname)"),
        git(root, "ls-files", "--stage"),
        git(root, "status", "--porcelain=v2", "--untracked-files=all"),
        files,
    )


def refused(
    root: Path, integration: Integration, target: IntegrationTarget, *, hooks: bool = False
) -> str:
    """The one line an integration that must be refused says; the project is as it was."""
    before = state(root)
    with pytest.raises(IntegrationError) as raised:
        integrate(root, integration, target, hooks=hooks)
    assert state(root) == before
    message = str(raised.value)
    assert "\n" not in message
    return message


# -- merge --------------------------------------------------------------------------------------


def test_a_branch_ahead_of_main_is_fast_forwarded(project: Path) -> None:
    target = worked(project)
    tip = git(project, "rev-parse", BRANCH)
    done = integrate(project, merging(), target)
    assert git(project, "rev-parse", "HEAD") == tip
    assert git(project, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert (project / "login.py").read_text() == "fixed\n"
    assert done.commit == tip
    assert done.words == f"merged {BRANCH} into main as {tip[:12]} (fast-forward)"
    assert done.url is None


def test_no_ff_makes_a_merge_commit_naming_the_item_with_completions_author(project: Path) -> None:
    target = worked(project)
    start = git(project, "rev-parse", "HEAD")
    tip = git(project, "rev-parse", BRANCH)
    done = integrate(
        project,
        merging("no-ff"),
        target,
        author_name="Wrighty Bot",
        author_email="bot@example.invalid",
    )
    head = git(project, "rev-parse", "HEAD")
    assert done.commit == head
    assert git(project, "rev-list", "--parents", "-n1", "HEAD").split() == [head, start, tip]
    assert git(project, "log", "-1", "--format=%B") == f"Merge item 1: {TITLE}\n\nWrighty-Item: 1"
    assert git(project, "log", "-1", "--format=%an <%ae>|%cn <%ce>") == (
        "Wrighty Bot <bot@example.invalid>|Wrighty Bot <bot@example.invalid>"
    )
    assert done.words == f"merged {BRANCH} into main as {head[:12]} (a merge commit)"


def test_ff_makes_a_merge_commit_when_main_moved_on(project: Path) -> None:
    target = worked(project)
    moved = commit_on_main(project, "docs.md", "docs\n")
    tip = git(project, "rev-parse", BRANCH)
    done = integrate(project, merging("ff"), target)
    head = git(project, "rev-parse", "HEAD")
    assert git(project, "rev-list", "--parents", "-n1", "HEAD").split() == [head, moved, tip]
    assert git(project, "log", "-1", "--format=%an") == "Test"  # git's own identity
    assert (project / "login.py").read_text() == "fixed\n"
    assert (project / "docs.md").read_text() == "docs\n"
    assert done.words is not None
    assert done.words.endswith("(a merge commit)")


def test_ff_only_refuses_a_branch_main_moved_on_from(project: Path) -> None:
    target = worked(project)
    commit_on_main(project, "docs.md", "docs\n")
    message = refused(project, merging("ff-only"), target)
    assert "main has moved on" in message
    assert "ff-only" in message


def test_ff_only_fast_forwards(project: Path) -> None:
    target = worked(project)
    done = integrate(project, merging("ff-only"), target)
    assert done.commit == git(project, "rev-parse", BRANCH) == git(project, "rev-parse", "HEAD")


def test_a_conflict_is_refused_naming_the_files_with_nothing_changed(project: Path) -> None:
    target = worked(project, {"README": "the item's\n", "same.txt": "item\n"})
    commit_on_main(project, "README", "main's\n")
    commit_on_main(project, "same.txt", "main\n")
    (project / "untracked.txt").write_text("a person's notes\n")
    message = refused(project, merging("no-ff"), target)
    assert message.startswith(f"{BRANCH} conflicts with main in 2 files README, same.txt:")
    assert "nothing was merged" in message
    assert not (project / ".git" / "MERGE_HEAD").exists()


def test_tracked_changes_in_the_project_refuse_a_merge(project: Path) -> None:
    target = worked(project)
    (project / "README").write_text("a person's edit, not committed\n")
    message = refused(project, merging(), target)
    assert "the project's working tree has uncommitted changes to tracked files" in message


def test_a_working_tree_git_cannot_read_refuses_a_merge_in_its_turn(project: Path) -> None:
    """`git status` reads the project's HEAD and changes at once; when it fails (its index is
    unreadable), HEAD is read on its own, so a branch merged already is still said so and any
    other is refused with git's reason, nothing changed."""
    target = worked(project)
    head = git(project, "rev-parse", "HEAD")
    index = project / ".git" / "index"
    kept = index.read_bytes()
    index.write_bytes(b"not an index")
    with pytest.raises(IntegrationError, match=r"^cannot read the project's working tree: "):
        integrate(project, merging(), target)
    assert git(project, "rev-parse", "HEAD") == head
    assert index.read_bytes() == b"not an index"
    index.write_bytes(kept)
    integrate(project, merging(), target)
    index.write_bytes(b"not an index")
    done = integrate(project, merging(), target)
    assert done.words is not None
    assert "is already merged into main" in done.words


def test_untracked_files_in_the_project_do_not_refuse_a_merge(project: Path) -> None:
    target = worked(project)
    (project / "notes.txt").write_text("a person's notes\n")
    done = integrate(project, merging(), target)
    assert done.commit == git(project, "rev-parse", "HEAD")
    assert (project / "notes.txt").read_text() == "a person's notes\n"


def test_an_untracked_file_the_merge_would_overwrite_is_left_and_the_merge_undone(
    project: Path,
) -> None:
    target = worked(project, {"login.py": "fixed\n"})
    commit_on_main(project, "docs.md", "docs\n")  # not a fast-forward: git merges
    (project / "login.py").write_text("a person's own file\n")
    message = refused(project, merging(), target)
    assert "git could not merge" in message
    assert "the project is as it was" in message
    assert (project / "login.py").read_text() == "a person's own file\n"


def test_a_merge_a_hook_refuses_is_aborted_and_says_the_hooks_words(project: Path) -> None:
    target = worked(project)
    commit_on_main(project, "docs.md", "docs\n")
    hook = project / ".git" / "hooks" / "pre-merge-commit"
    hook.write_text("#!/bin/sh\necho 'no merges on Fridays' >&2\nexit 1\n")
    hook.chmod(0o755)
    message = refused(project, merging(), target, hooks=True)
    assert message == (
        f"git could not merge {BRANCH} into main, and the project is as it was: no merges on "
        "Fridays"
    )


def hang(project: Path, hook_name: str) -> Path:
    """A hook of the project's that hangs with its output closed (so git's caller sees git
    end at its time limit); the file its process id is written to."""
    hung = project.parent / f"{hook_name}.pid"
    hook = project / ".git" / "hooks" / hook_name
    hook.write_text(
        f"#!/bin/sh\nexec >/dev/null 2>&1 </dev/null\necho $$ > {hung}\nexec sleep 60\n"
    )
    hook.chmod(0o755)
    return hung


def end(hung: Path) -> None:
    """End the hook git left running, by its process id."""
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(hung.read_text()), signal.SIGKILL)


def test_a_merge_past_its_time_limit_is_undone(project: Path) -> None:
    target = worked(project)
    commit_on_main(project, "docs.md", "docs\n")
    hung = hang(project, "pre-merge-commit")
    try:
        message = refused(project, Integration(kind="merge", timeout_seconds=1), target, hooks=True)
    finally:
        end(hung)
    assert message == f"git merge took longer than 1s; the merge of {BRANCH} into main was undone"


def test_a_merge_runs_no_program_the_repositorys_config_names(project: Path) -> None:
    target = worked(project)
    commit_on_main(project, "docs.md", "docs\n")
    marker = project.parent / "monitor-ran"
    monitor = project.parent / "monitor.sh"
    monitor.write_text(f"#!/bin/sh\ntouch {marker}\n")
    monitor.chmod(0o755)
    git(project, "config", "core.fsmonitor", str(monitor))
    integrate(project, merging(), target)
    assert (project / "login.py").read_text() == "fixed\n"
    assert not marker.exists()


def test_uncommitted_changes_in_the_items_worktree_refuse_it(project: Path) -> None:
    target = worked(project)
    assert target.worktree is not None
    (target.worktree / "forgotten.py").write_text("not committed\n")
    for integration in EVERY_KIND:
        message = refused(project, integration, target)
        assert message.startswith(f"item 1's worktree {target.worktree} has uncommitted changes")


def test_a_detached_head_or_the_items_own_branch_checked_out_refuses_a_merge(
    project: Path,
) -> None:
    target = worked(project)
    git(project, "switch", "-q", "--detach")
    assert "the project's HEAD is detached" in refused(project, merging(), target)
    git(project, "worktree", "remove", str(target.worktree))
    git(project, "switch", "-q", BRANCH)
    assert f"has the item's own branch {BRANCH} checked out" in refused(project, merging(), target)


def test_a_branch_already_merged_is_said_so_and_nothing_is_done(project: Path) -> None:
    target = worked(project)
    integrate(project, merging(), target)
    commit_on_main(project, "later.txt", "later\n")
    (project / "later.txt").write_text("a person's edit: nothing is merged, so it is no matter\n")
    head = git(project, "rev-parse", "HEAD")
    done = integrate(project, merging("no-ff"), target)
    assert git(project, "rev-parse", "HEAD") == head
    assert done.words == f"{BRANCH} is already merged into main ({head[:12]})"


def test_a_missing_branch_or_no_branch_is_refused(project: Path) -> None:
    target = worked(project)
    git(project, "worktree", "remove", str(target.worktree))
    git(project, "branch", "-D", BRANCH)
    for integration in EVERY_KIND:
        message = refused(project, integration, target)
        assert message == f"item 1's branch {BRANCH} is not in the project's repository"
    branchless = IntegrationTarget(1, TITLE, None, None, None, "")
    assert "item 1 has no branch to integrate" in refused(project, merging(), branchless)


def test_none_does_nothing_whatever_the_item(project: Path) -> None:
    branchless = IntegrationTarget(1, TITLE, None, None, None, "")
    before = state(project)
    done = integrate(project, Integration(), branchless)
    assert (done.words, done.url, done.commit) == (None, None, None)
    assert state(project) == before


# -- push ---------------------------------------------------------------------------------------


def test_push_puts_the_branch_on_the_remote(project: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(project, "remote", "add", "upstream", str(remote))
    target = worked(project)
    tip = git(project, "rev-parse", BRANCH)
    done = integrate(project, Integration(kind="push", remote="upstream"), target)
    assert git(remote, "rev-parse", f"refs/heads/{BRANCH}") == tip
    assert git(remote, "for-each-ref", "--format=%(refname)") == f"refs/heads/{BRANCH}"
    assert done.words == f"pushed {BRANCH} to upstream ({tip[:12]})"
    assert done.commit == tip


def test_push_to_a_remote_the_project_lacks_is_refused(project: Path) -> None:
    target = worked(project)
    message = refused(project, Integration(kind="push"), target)
    assert message == (
        "the project's repository has no git remote named origin: add it (git remote add "
        "origin URL), or set completion.remote"
    )


def test_a_failed_push_says_gits_reason_without_a_secret(project: Path) -> None:
    git(project, "remote", "add", "origin", f"/nonexistent/{SECRET}/r.git")
    target = worked(project)
    message = refused(project, Integration(kind="push"), target)
    assert message == (
        f"git could not push {BRANCH} to origin: fatal: '/nonexistent/[REDACTED]/r.git' does "
        "not appear to be a git repository"
    )


def test_a_push_the_remote_rejects_says_which_and_why(project: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(project, "remote", "add", "origin", str(remote))
    target = worked(project)
    git(project, "push", "-q", "origin", f"main:refs/heads/{BRANCH}")
    commit_on_main(project, "other.txt", "someone else's\n")
    git(project, "push", "-q", "--force", "origin", f"main:refs/heads/{BRANCH}")
    theirs = git(remote, "rev-parse", f"refs/heads/{BRANCH}")
    message = refused(project, Integration(kind="push"), target)
    assert message.startswith(f"git could not push {BRANCH} to origin: ! [rejected]")
    assert "(fetch first)" in message or "(non-fast-forward)" in message
    assert git(remote, "rev-parse", f"refs/heads/{BRANCH}") == theirs


# -- command ------------------------------------------------------------------------------------

STAND_IN = """#!{python}
import json, os, sys
record = {{
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
    "stdin": sys.stdin.read(),
    "env": {{k: v for k, v in os.environ.items() if k.startswith("WRIGHTY_")}},
}}
with open({record!r}, "w") as file:
    json.dump(record, file)
sys.stdout.write({stdout!r})
sys.stderr.write({stderr!r})
sys.exit({code})
"""


PRINTED = (
    "Creating pull request for wrighty/1-fix-the-login-page into main\n"
    "(https://github.com/o/r/pull/6 was the last one.)\n"
    "https://github.com/o/r/pull/7.\n"
)


def stand_in(
    folder: Path, *, stdout: str = PRINTED, stderr: str = "", code: int = 0
) -> tuple[Path, Path]:
    """A stand-in `gh`: it records its argv, folder, stdin and WRIGHTY_ variables, prints
    ``stdout`` and ``stderr``, and exits with ``code``."""
    record = folder / "record.json"
    program = folder / "bin" / "gh"
    program.parent.mkdir()
    program.write_text(
        STAND_IN.format(
            python=sys.executable, record=str(record), stdout=stdout, stderr=stderr, code=code
        )
    )
    program.chmod(0o755)
    return program, record


def test_the_command_gets_the_summary_and_the_items_variables_and_its_url_is_kept(
    project: Path, tmp_path: Path
) -> None:
    program, record = stand_in(tmp_path)
    target = worked(project)
    summary = "Item 1: Fix the login page\nBranch: wrighty/1-fix-the-login-page\n\nChecks:\n"
    target = IntegrationTarget(1, TITLE, target.branch, target.base, target.worktree, summary)
    integration = Integration(kind="command", command=(str(program), "pr", "create", "--fill"))
    before = state(project)
    done = integrate(project, integration, target)
    said = json.loads(record.read_text())
    assert said["argv"] == ["pr", "create", "--fill"]
    assert said["stdin"] == summary
    assert said["cwd"] == str(target.worktree)
    # (beside wrighty's own environment, which the command gets as it is: CI's WRIGHTY_REQUIRE_*)
    # and the markers its tree is stopped by (docs/worker.md#stopping-a-process-tree)
    added = {
        k: v
        for k, v in said["env"].items()
        if os.environ.get(k) != v and not k.startswith(("WRIGHTY_CHILD_ID", "WRIGHTY_OWNER_"))
    }
    assert added == {
        "WRIGHTY_ITEM_ID": "1",
        "WRIGHTY_ITEM_TITLE": TITLE,
        "WRIGHTY_BRANCH": BRANCH,
        "WRIGHTY_BASE": target.base,
        "WRIGHTY_INTEGRATION_ATTEMPT": "1",  # the first: no earlier one may have run it
    }
    assert done.url == "https://github.com/o/r/pull/7"
    assert done.words == "ran gh: https://github.com/o/r/pull/7"
    assert done.commit is None
    assert state(project) == before


def test_the_command_runs_in_the_project_when_the_worktree_is_gone(
    project: Path, tmp_path: Path
) -> None:
    program, record = stand_in(tmp_path, stdout="no URL here: http:// alone\n")
    target = worked(project)
    git(project, "worktree", "remove", str(target.worktree))
    done = integrate(project, Integration(kind="command", command=(str(program),)), target)
    assert json.loads(record.read_text())["cwd"] == str(project)
    assert (done.words, done.url) == ("ran gh", None)


def test_a_relative_program_is_the_projects_not_the_worktrees(
    project: Path, tmp_path: Path
) -> None:
    program, record = stand_in(tmp_path)
    target = worked(project, {"tools/pr": "#!/bin/sh\necho the agent's own >&2\nexit 9\n"})
    assert target.worktree is not None
    (target.worktree / "tools" / "pr").chmod(0o755)
    git(target.worktree, "commit", "-qam", "the agent's own pr")
    (project / "tools").mkdir()
    (project / "tools" / "pr").symlink_to(program)
    done = integrate(project, Integration(kind="command", command=("tools/pr", "x")), target)
    assert json.loads(record.read_text())["argv"] == ["x"]
    assert done.words == "ran pr: https://github.com/o/r/pull/7"


def test_a_failing_command_says_its_last_line_neutralised_and_redacted(
    project: Path, tmp_path: Path
) -> None:
    stderr = f"warning: first\nerror: \x1b[31mbad credentials\x1b[0m for token={SECRET}\n\n"
    program, _ = stand_in(tmp_path, stderr=stderr, code=4)
    target = worked(project)
    with pytest.raises(IntegrationError) as raised:
        integrate(project, Integration(kind="command", command=(str(program),)), target)
    assert str(raised.value) == (
        "the integration command gh exited with status 4: error: \\x1b[31mbad credentials"
        "\\x1b[0m for token=[REDACTED]"
    )


def test_a_hung_command_is_stopped_at_its_time_limit(project: Path) -> None:
    target = worked(project)
    integration = Integration(kind="command", command=("sleep", "60"), timeout_seconds=1)
    with pytest.raises(IntegrationError) as raised:
        integrate(project, integration, target)
    assert str(raised.value) == (
        "the integration command sleep did not finish within 1s and was stopped"
    )


def test_a_program_that_is_not_there_is_one_line(project: Path) -> None:
    target = worked(project)
    integration = Integration(kind="command", command=("wrighty-no-such-gh", "pr"))
    message = refused(project, integration, target)
    assert message == (
        "completion.integrateCommand: integration command executable 'wrighty-no-such-gh' not "
        "found on PATH"
    )
