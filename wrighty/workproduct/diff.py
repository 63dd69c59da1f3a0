"""The git of `wrighty diff` (docs/work-product.md#seeing-the-change-wrighty-diff): whether a
folder is in a git work tree, the commits a change is shown against, and git's diff of a
workspace against one, untracked files included. services/diff.py decides which base and
which workspace; every git call goes through runner.py.

The untracked files are marked ``--intent-to-add`` in a copy of the workspace's index, in a
folder of wrighty's own: the workspace's own index, files and objects are left as they were.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from wrighty.errors import WrightyError
from wrighty.workproduct.runner import GitError, besides_nested, git_ok, run_git

# git's own diff, whatever the user's config says too (runner.py keeps every program the
# repository names from running).
_DIFF = ("diff", "--no-ext-diff", "--no-textconv")


def in_work_tree(workspace: Path, *, top: bool) -> bool:
    """Whether ``workspace`` is in a git work tree; ``top``: is the top of one (an item's
    worktree: a folder left there without its worktree is inside the project's)."""
    found = run_git(workspace, "rev-parse", "--is-inside-work-tree", "--show-toplevel")
    lines = found.stdout.split("\n")
    if not found.ok or len(lines) < 2 or lines[0] != "true":
        return False
    return not top or Path(lines[1]).resolve() == workspace.resolve()


def found_commit(workspace: Path, commit: str) -> str | None:
    """The full id of ``commit`` in the repository of ``workspace`` (None: it is not there)."""
    found = run_git(workspace, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    return found.stdout.strip() if found.ok else None


def head_or_empty_tree(workspace: Path) -> str:
    """The workspace's HEAD commit; with no commit yet, git's empty tree."""
    found = run_git(workspace, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if found.ok:
        return found.stdout.strip()
    # hash-object without -w writes nothing.
    return git_ok(workspace, "hash-object", "-t", "tree", "--stdin", input_text="").strip()


def fork_point(workspace: Path, head: str, project_root: Path) -> str | None:
    """Where ``head`` forked from the project's HEAD (their merge base; None: no history in
    common, or the project has no HEAD)."""
    project_head = run_git(project_root, "rev-parse", "--verify", "--quiet", "HEAD")
    if not project_head.ok:
        return None
    fork = run_git(workspace, "merge-base", head, project_head.stdout.strip())
    return fork.stdout.strip() if fork.ok and fork.stdout.strip() else None


def diff_text(workspace: Path, base: str, *, stat: bool) -> str:
    """``git diff [--stat] BASE`` of the files under ``workspace`` (a project in a folder of
    a repository: that folder's), untracked files not ignored included."""
    index = Path(git_ok(workspace, "rev-parse", "--git-path", "index").strip())
    if not index.is_absolute():
        index = workspace / index
    with tempfile.TemporaryDirectory(prefix="wrighty-diff-") as scratch:
        copy = Path(scratch) / "index"
        try:
            if index.is_file():
                shutil.copyfile(index, copy)
                # An index older than every file: git then compares the content of each file
                # whose size and time match its entry ("racily clean"), instead of trusting
                # them; two writes in one tick of the kernel's clock look alike otherwise.
                os.utime(copy, (1, 1))
        except OSError as error:
            raise WrightyError(
                f"cannot read the git index of {workspace}: {error.strerror or error}"
            ) from None
        env = {"GIT_INDEX_FILE": str(copy)}
        nested = besides_nested(workspace)
        git_ok(workspace, "add", "--intent-to-add", "--", ".", *nested, env=env)
        shown = ("--stat",) if stat else ()
        return git_ok(workspace, *_DIFF, *shown, base, "--", ".", env=env)


def change_stat(workspace: Path, base_commit: str) -> str | None:
    """git's ``--stat`` of the change in ``workspace`` against ``base_commit``, committed and
    not, untracked files included, as `wrighty diff --stat` shows it (a notification of an
    item ready for review carries it); None when git cannot tell (not a work tree, the base
    is gone, git fails)."""
    try:
        return diff_text(workspace, base_commit, stat=True)
    except (GitError, WrightyError):
        return None


def branch_stat(project_root: Path, base: str | None, branch: str) -> str:
    """git's stat of ``branch`` against its ``base`` in the project's repository, as an
    integration command's summary carries it ("" when git cannot tell)."""
    if base is None:
        return ""
    try:
        return git_ok(project_root, *_DIFF, "--stat", base, branch)
    except GitError:
        return ""
