"""A project's worktrees as git lists them (`listed_worktrees`), what git says of an item's
worktree for `wrighty workspaces` (`git_facts`) and `wrighty show` (`worktree_progress`), and
their removal for `wrighty workspaces clean` (`remove_worktree`, `delete_branch`, `prune`).
The rule of what may be removed is the domain's (domain/workspaces.py); every git call goes
through runner.py."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from wrighty.domain.workspaces import Workspace
from wrighty.workproduct.reads import commit_id, toplevel, uncommitted
from wrighty.workproduct.runner import git_ok, run_git

# The reason git locks a worktree with while `git worktree add` makes it (LC_ALL=C).
HALF_MADE_LOCK = "initializing"


@dataclass(frozen=True)
class Listed:
    """A worktree as `git worktree list --porcelain` lists it."""

    branch: str | None  # the branch it has checked out (None: detached, or none yet)
    locked: str | None  # why it is locked ("" when no reason was given; None: not locked)


def listed_worktrees(project_root: Path) -> dict[Path, Listed]:
    """Every worktree of the project's repository, the project's own directory included, by
    its resolved path."""
    listing = git_ok(project_root, "worktree", "list", "--porcelain", "-z")
    found: dict[Path, Listed] = {}
    for record in listing.split("\0\0"):
        fields = dict(
            (line.partition(" ")[0], line.partition(" ")[2]) for line in record.split("\0") if line
        )
        if "worktree" not in fields:
            continue
        branch = fields.get("branch")
        found[Path(fields["worktree"]).resolve()] = Listed(
            branch.removeprefix("refs/heads/") if branch else None, fields.get("locked")
        )
    return found


def git_facts(workspace: Workspace, root: Path, project_head: str | None) -> Workspace:
    """What git says of a worktree: whether its branch is there, its commits ahead of and
    behind its base, uncommitted changes, and whether the project's HEAD has its commits (the
    worktree's HEAD; once the worktree is gone, its branch's)."""
    path = Path(workspace.path)
    branch_head = commit_id(root, f"refs/heads/{workspace.branch}") if workspace.branch else None
    dirty: bool | None = None
    note: str | None = None
    head = branch_head
    head_on_branch = None
    if workspace.exists:
        if toplevel(path) != path.resolve():
            note, head = "not a git worktree", None
        else:
            dirty, note = uncommitted(path)
            head = commit_id(path, "HEAD")
            head_on_branch = _on_a_branch(path, head) if head is not None else None
    ahead = behind = None
    if head is not None and workspace.base is not None:
        counted = run_git(root, "rev-list", "--left-right", "--count", f"{workspace.base}...{head}")
        if counted.ok and len(counted.stdout.split()) == 2:
            behind, ahead = (int(number) for number in counted.stdout.split())
    merged = None
    if head is not None and project_head is not None:
        answer = run_git(root, "merge-base", "--is-ancestor", head, project_head)
        if answer.returncode in (0, 1):
            merged = answer.returncode == 0
        else:
            note = note or answer.why()
    elif note is None and (workspace.exists or branch_head is not None):
        note = "the project has no HEAD" if project_head is None else "its HEAD cannot be read"
    return replace(
        workspace,
        branch_exists=branch_head is not None,
        ahead=ahead,
        behind=behind,
        dirty=dirty,
        merged=merged,
        note=note,
        head_on_branch=head_on_branch,
    )


def _on_a_branch(path: Path, head: str) -> bool | None:
    """Whether a local branch holds the commit ``head`` (None: git cannot tell)."""
    holding = run_git(path, "for-each-ref", "--count=1", f"--contains={head}", "refs/heads/")
    return bool(holding.stdout.strip()) if holding.ok else None


@dataclass(frozen=True)
class Progress:
    """How far an item's worktree is from its base, as `wrighty show` says it."""

    ahead: int | None  # the commits its HEAD has that its base lacks (None: unknown)
    dirty: bool | None  # uncommitted changes, untracked files included (None: unknown)


def worktree_progress(path: Path, base: str | None) -> Progress:
    """The commits the worktree at ``path`` made since ``base`` and whether it has uncommitted
    changes: two git commands, whatever the worktree holds."""
    ahead = None
    if base is not None:
        counted = run_git(path, "rev-list", "--count", f"{base}..HEAD")
        if counted.ok and counted.stdout.strip().isdigit():
            ahead = int(counted.stdout.strip())
    return Progress(ahead, uncommitted(path)[0])


def remove_worktree(root: Path, path: Path, *, force: bool) -> str | None:
    """`git worktree remove` of the worktree at ``path``; why not, when git refused."""
    removed = run_git(root, "worktree", "remove", *(["--force"] if force else []), "--", str(path))
    return None if removed.ok else f"git worktree remove: {removed.why()}"


def delete_branch(root: Path, branch: str, *, force: bool) -> str | None:
    """`git branch -d` (``force``: `-D`) of ``branch``; git's words, when it refused."""
    deleted = run_git(root, "branch", "-D" if force else "-d", "--", branch)
    return None if deleted.ok else deleted.why()


def prune(root: Path) -> None:
    """`git worktree prune`: git's records of worktrees that are gone, forgotten."""
    run_git(root, "worktree", "prune")
