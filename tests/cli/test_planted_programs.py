"""git runs no program that an agent planted in the repository (docs/work-product.md
#what-git-runs): from its worktree an agent writes the shared config (filters, diff and merge
drivers, a file-system monitor, an external diff, a signing program), .gitattributes naming
the drivers, and the shared hooks folder. Every reader's command (diff, diff --stat, show,
workspaces, workspaces clean --dry-run) and the worker's own git (a worktree made, git add
-A, status, the commit, an accepted item's merge-tree and merge) runs none of them; then
plain git, run the same way, runs each one: the plants are live. Real git, real repositories;
each planted program leaves a marker file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.cli.test_workspaces_cli import repo, worktree_item
from tests.conftest import FakeClock
from tests.helpers import git, git_env
from wrighty.domain.integration import Integration
from wrighty.domain.model import Item
from wrighty.domain.states import ItemState
from wrighty.domain.work_product import Completion, Ending
from wrighty.workproduct.commit import complete
from wrighty.workproduct.integrate import IntegrationError, IntegrationTarget, integrate
from wrighty.workproduct.runner import run_git

__all__ = ["repo"]

# Each setting the agent plants, with the program it names (a marker of its name).
CONFIG = {
    "filter.evilclean.clean": "clean",
    "filter.evilsmudge.smudge": "smudge",
    "filter.evilprocess.process": "process",
    "diff.evildiff.command": "diff-command",
    "diff.eviltext.textconv": "textconv",
    "merge.evilmerge.driver": "merge-driver",
    "core.fsmonitor": "fsmonitor",
    "diff.external": "external-diff",
    "gpg.program": "gpg",
}
ATTRIBUTES = (
    "clean.txt filter=evilclean\n"
    "smudge.txt filter=evilsmudge\n"
    "process.txt filter=evilprocess\n"
    "diff.txt diff=evildiff\n"
    "text.txt diff=eviltext\n"
    "merge.txt merge=evilmerge\n"
)
FILES = ("clean.txt", "smudge.txt", "process.txt", "diff.txt", "text.txt", "merge.txt")
HOOKS = (
    "pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout",
    "post-index-change", "pre-merge-commit", "post-merge", "reference-transaction",
    "pre-auto-gc", "post-rewrite", "pre-push",
)  # fmt: skip


def plant(worktree: Path, markers: Path) -> None:
    """What a hostile agent does from its worktree: programs, the settings and attributes
    that name them, a hook of every name in the shared hooks folder."""
    markers.mkdir()
    for key, name in CONFIG.items():
        program = markers / f"program-{name}"
        # Passes its input through (a filter's contract) after leaving its marker.
        program.write_text(f"#!/bin/sh\ntouch {markers / name}\ncat\n")
        program.chmod(0o755)
        git(worktree, "config", key, str(program))  # writes the shared .git/config
    git(worktree, "config", "commit.gpgSign", "true")
    common = Path(git(worktree, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    (worktree / ".gitattributes").write_text(ATTRIBUTES)
    (common / "info").mkdir(exist_ok=True)
    (common / "info" / "attributes").write_text(ATTRIBUTES)  # the project's checkout too
    for hook in HOOKS:
        path = common / "hooks" / hook
        path.write_text(f"#!/bin/sh\ntouch {markers / ('hook-' + hook)}\n")
        path.chmod(0o755)


def ran(markers: Path) -> set[str]:
    return {path.name for path in markers.iterdir() if not path.name.startswith("program-")}


def agent_work(project: Path, clock: FakeClock) -> tuple[int, Path]:
    """An item done in its worktree: each driven file committed on its branch, then changed
    and not committed; main moved on with merge.txt changed (the merge must merge)."""
    item_id = worktree_item(project, clock, ItemState.DONE)
    tree = project / ".wrighty" / "worktrees" / str(item_id)
    for name in FILES:
        (tree / name).write_text(f"{name} on the branch\n")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "the agent's files")
    for name in FILES:
        (tree / name).write_text(f"{name} changed, not committed\n")
    (project / "merge.txt").write_text("main's merge.txt\n")
    git(project, "add", "merge.txt")
    git(project, "commit", "-q", "-m", "main moves on")
    return item_id, tree


def test_no_reader_command_runs_a_program_the_agent_planted(
    repo: Path, clock: FakeClock, tmp_path: Path
) -> None:
    item_id, tree = agent_work(repo, clock)
    markers = tmp_path / "markers"
    plant(tree, markers)

    for args in (
        ("diff", str(item_id)),
        ("diff", str(item_id), "--stat"),
        ("show", str(item_id)),
        ("workspaces",),
        ("workspaces", "clean", str(item_id), "--dry-run"),
    ):
        result = wrighty(*args)
        assert result.exit_code in (0, 1), (args, result.output)
        assert ran(markers) == set(), args
    shown = wrighty("diff", str(item_id))
    assert "+clean.txt changed, not committed" in shown.output  # the file as it is

    # Plain git runs every one of them: the plants are live.
    git(tree, "status")
    git(tree, "diff", "HEAD")
    git(tree, "diff", "--no-ext-diff", "HEAD")
    git(tree, "add", "-A")
    assert {"fsmonitor", "clean", "process", "diff-command", "external-diff", "textconv"} <= (
        ran(markers)
    )
    assert "hook-post-index-change" in ran(markers)


def test_the_workers_own_git_runs_none_with_hooks_skipped(
    repo: Path, clock: FakeClock, tmp_path: Path
) -> None:
    item_id, tree = agent_work(repo, clock)
    markers = tmp_path / "markers"
    plant(tree, markers)
    branch = f"wrighty/{item_id}-task"

    # The worktree made again on the branch, as the worker makes it (smudge, post-checkout).
    git(repo, "worktree", "add", "-q", str(tmp_path / "scratch"), "HEAD")  # plain, for later
    assert "hook-post-checkout" in ran(markers)
    for name in ran(markers):
        (markers / name).unlink()
    again = tmp_path / "again"
    made = run_git(repo, "worktree", "add", "--force", str(again), branch)
    assert made.ok, made.stderr
    assert (again / "smudge.txt").read_text() == "smudge.txt on the branch\n"
    assert ran(markers) == set()

    # The commit: git add -A, status, commit (no signing, no hooks under completion.hooks skip).
    done = complete(tree, Completion(), item=_item(item_id), run_id="run-1")
    assert done.ending is Ending.COMMITTED, done.why
    assert git(tree, "show", f"{done.commit}:clean.txt") == "clean.txt changed, not committed"
    assert ran(markers) == set()

    # Accepting: merge-tree finds merge.txt needs the agent's merge driver, which does not run.
    target = IntegrationTarget(item_id, "task", branch, None, tree, "summary")
    with pytest.raises(IntegrationError) as refused:
        integrate(repo, Integration(kind="merge"), target)
    assert "failure to merge" in str(refused.value)  # git could not run a driver
    assert ran(markers) == set()

    # Without merge.txt to merge, the merge is made: no smudge, no merge hooks.
    git(tree, "rm", "-q", "merge.txt")
    git(tree, "commit", "-q", "--no-verify", "--no-gpg-sign", "-m", "no merge.txt")
    for name in ran(markers):
        (markers / name).unlink()
    git(repo, "rm", "-q", "merge.txt")
    git(repo, "commit", "-q", "--no-verify", "--no-gpg-sign", "-m", "no merge.txt on main")
    for name in ran(markers):
        (markers / name).unlink()
    merged = integrate(repo, Integration(kind="merge", merge="no-ff"), target)
    assert merged.commit == git(repo, "rev-parse", "HEAD")
    assert (repo / "smudge.txt").read_text() == "smudge.txt changed, not committed\n"
    assert ran(markers) == set()

    # Plain git runs them: the plants are live.
    (tree / "new.txt").write_text("new\n")
    git(tree, "add", "-A")
    with pytest.raises(subprocess.CalledProcessError):  # the planted gpg signs nothing
        git(tree, "commit", "-q", "-m", "plain")
    (repo / "smudge.txt").unlink()
    git(repo, "checkout", "--", "smudge.txt")
    assert {"smudge", "gpg", "hook-pre-commit", "hook-post-index-change"} <= ran(markers)


def test_the_projects_hooks_run_in_the_commit_and_merge_with_completion_hooks_run(
    repo: Path, clock: FakeClock, tmp_path: Path
) -> None:
    item_id, tree = agent_work(repo, clock)
    markers = tmp_path / "markers"
    plant(tree, markers)
    git(tree, "config", "commit.gpgSign", "false")
    git(tree, "rm", "-q", "--cached", "merge.txt")
    (tree / "merge.txt").unlink()
    git(repo, "rm", "-q", "merge.txt")
    git(repo, "commit", "-q", "--no-verify", "-m", "no merge.txt on main")
    for name in ran(markers):
        (markers / name).unlink()

    done = complete(tree, Completion(hooks="run"), item=_item(item_id), run_id="run-1")
    assert done.ending is Ending.COMMITTED, done.why
    assert {"hook-pre-commit", "hook-commit-msg", "hook-post-commit"} <= ran(markers)
    assert not {"clean", "process", "fsmonitor", "gpg"} & ran(markers)  # never a filter
    target = IntegrationTarget(item_id, "task", f"wrighty/{item_id}-task", None, tree, "")
    integrate(repo, Integration(kind="merge", merge="no-ff"), target, hooks=True)
    assert {"hook-pre-merge-commit", "hook-post-merge"} <= ran(markers)
    assert not {"clean", "smudge", "process", "fsmonitor", "gpg", "merge-driver"} & ran(markers)


def _item(item_id: int) -> Item:
    from tests.cli.run_helpers import open_store

    store = open_store(Path.cwd())
    try:
        found = store.get_item(item_id)
    finally:
        store.close()
    assert found is not None
    return found


def test_a_push_runs_no_transport_program_the_agent_planted(
    repo: Path, clock: FakeClock, tmp_path: Path
) -> None:
    item_id, tree = agent_work(repo, clock)
    markers = tmp_path / "markers"
    plant(tree, markers)
    git(tree, "config", "commit.gpgSign", "false")
    branch = f"wrighty/{item_id}-task"
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))

    def program(name: str, then: str = "exit 1") -> str:
        path = markers / f"program-{name}"
        path.write_text(f"#!/bin/sh\ntouch {markers / name}\n{then}\n")
        path.chmod(0o755)
        return str(path)

    # Each remote reaches one planted program: the receive-pack run for a local remote, the
    # ssh command, the proxy of git://, the ext:: transport the agent allowed.
    git(tree, "remote", "add", "origin", str(remote))
    git(
        tree,
        "config",
        "remote.origin.receivepack",
        program("receivepack", 'exec git-receive-pack "$@"'),
    )
    git(tree, "remote", "add", "sshy", "ssh://127.0.0.1:9/x.git")
    git(tree, "config", "core.sshCommand", program("ssh"))
    git(tree, "remote", "add", "proxied", "git://127.0.0.1:9/x.git")
    git(tree, "config", "core.gitProxy", program("proxy"))
    git(tree, "remote", "add", "extish", f"ext::{program('ext')}")
    git(tree, "config", "protocol.ext.allow", "always")
    target = IntegrationTarget(item_id, "task", branch, None, None, "")

    pushed = integrate(repo, Integration(kind="push"), target)
    assert pushed.commit == git(remote, "rev-parse", branch)
    for name in ("sshy", "proxied", "extish"):
        with pytest.raises(IntegrationError):
            integrate(repo, Integration(kind="push", remote=name), target)
    assert ran(markers) == set()

    # Plain git runs each of them.
    for name in ("origin", "sshy", "proxied", "extish"):
        subprocess.run(
            ["git", "-C", str(repo), "push", "-q", name, f"{branch}:refs/heads/again"],
            capture_output=True, env=git_env(), check=False, timeout=60,
        )  # fmt: skip
    assert {"receivepack", "ssh", "proxy", "ext", "hook-pre-push"} <= ran(markers)


def test_a_nested_repository_the_agent_made_runs_nothing_either(
    repo: Path, clock: FakeClock, tmp_path: Path
) -> None:
    item_id = worktree_item(repo, clock, ItemState.DONE)
    tree = repo / ".wrighty" / "worktrees" / str(item_id)
    markers = tmp_path / "markers"
    markers.mkdir()
    nested = tree / "nested"
    git(tree, "init", "-q", str(nested))  # its config is the agent's, whatever names it uses
    git(nested, "config", "user.name", "Agent")
    git(nested, "config", "user.email", "agent@example.invalid")
    (nested / ".gitattributes").write_text("* filter=deep\n")
    (nested / "file.txt").write_text("one\n")
    git(nested, "add", "-A")
    git(nested, "commit", "-q", "-m", "nested")
    git(nested, "config", "filter.deep.clean", f"touch {markers / 'nested-clean'}; cat")
    git(tree, "add", "nested")  # a gitlink: git looks into its work tree for changes
    git(tree, "commit", "-q", "-m", "a nested repository")
    (nested / "file.txt").write_text("two\n")
    (tree / "mine.txt").write_text("the agent's\n")

    for args in (
        ("diff", str(item_id)),
        ("show", str(item_id)),
        ("workspaces",),
        ("workspaces", "clean", str(item_id), "--dry-run"),
    ):
        assert wrighty(*args).exit_code in (0, 1), args
        assert ran(markers) == set(), args
    done = complete(tree, Completion(), item=_item(item_id), run_id="run-1")
    assert done.ending is Ending.COMMITTED, done.why
    assert git(tree, "show", "--name-only", "--format=", "HEAD") == "mine.txt"
    assert ran(markers) == set()

    git(tree, "add", "-A")
    assert ran(markers) == {"nested-clean"}


def test_a_hooks_folder_the_agent_names_in_core_hooks_path_runs_only_with_hooks_run(
    repo: Path, clock: FakeClock, tmp_path: Path
) -> None:
    item_id = worktree_item(repo, clock, ItemState.DONE)
    tree = repo / ".wrighty" / "worktrees" / str(item_id)
    markers = tmp_path / "markers"
    markers.mkdir()
    hooks = tree / ".husky"  # relative: the worktree's own copy, the agent's
    hooks.mkdir()
    for hook in HOOKS:
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {markers / ('hook-' + hook)}\n")
        (hooks / hook).chmod(0o755)
    git(tree, "config", "core.hooksPath", ".husky")
    (tree / "a.txt").write_text("a\n")

    skipped = complete(tree, Completion(), item=_item(item_id), run_id="run-1")
    assert skipped.ending is Ending.COMMITTED, skipped.why
    assert ran(markers) == set()
    (tree / "b.txt").write_text("b\n")
    done = complete(tree, Completion(hooks="run"), item=_item(item_id), run_id="run-2")
    assert done.ending is Ending.COMMITTED, done.why
    assert {"hook-pre-commit", "hook-commit-msg", "hook-post-commit"} <= ran(markers)
