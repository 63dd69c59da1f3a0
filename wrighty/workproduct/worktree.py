"""Where an item's agent works (worker.workspaceMode), chosen once and then kept.

- ``current``: the directory that holds wrighty.json. One agent at a time works there: the
  worker takes an exclusive file lock before it claims, and holds it for the whole run.
- ``directory``: a plain folder per item, ``.wrighty/workspaces/<id>``.
- ``worktree``: a git worktree per item, ``.wrighty/worktrees/<id>``, on a branch of its own
  (``<completion.branchPrefix><id>-<slug>``) made from completion.base (docs/work-product.md).

An item pinned with ``wrighty create --workspace PATH`` always runs there. The first run records
its workspace in the item's session; every later run of the item reuses it. Only `wrighty
workspaces clean` deletes one, when a person asks, and only a finished item's
(domain/workspaces.py). When the recorded one has gone, a resume cannot run (the worker settles
the item before it gets here), but a fresh run gets a new workspace as the first run did: the
item's folder or worktree is made again; a pinned folder that is gone is a start failure that
says what to do.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from wrighty.domain import suggestions
from wrighty.domain.machine import StartFailure, Step
from wrighty.domain.model import Item, Session
from wrighty.domain.text import printable_line
from wrighty.domain.work_product import (
    MAX_FRESH_BRANCHES,
    Completion,
    branch_name,
    fresh_branch,
)
from wrighty.domain.workspaces import is_items_branch, workspace_problem
from wrighty.files import make_private_dirs
from wrighty.workproduct.listing import HALF_MADE_LOCK, listed_worktrees
from wrighty.workproduct.reads import commit_id, is_ancestor, toplevel, uncommitted
from wrighty.workproduct.runner import GitError, git_ok, run_git


class WorkspaceError(Exception):
    """The workspace could not be prepared: the run does not start. ``failure`` says at which
    step and with which OS error, so the worker can tell its machine's failures from the
    item's (wrighty/domain/machine.py)."""

    def __init__(self, message: str, step: Step, errno: int | None = None) -> None:
        super().__init__(message)
        self.failure = StartFailure(step, message, errno)


@dataclass(frozen=True)
class Workspace:
    """Where a run works; in worktree mode, the branch it made or attached and the full id of
    the base commit it made the branch from (None when it kept what was there: the session
    keeps what it recorded)."""

    path: Path
    branch: str | None = None
    base_commit: str | None = None
    # The item's branch name, when a branch that is not the item's had it: ``branch`` is a
    # fresh one (its name and `-2`, `-3`, ...).
    taken: str | None = None


def choose_workspace(
    mode: str,
    *,
    project_root: Path,
    state_dir: Path,
    item: Item,
    session: Session | None,
    resume: bool = False,
    start_over: bool = False,
    completion: Completion | None = None,
    stack_on: str | None = None,
) -> Workspace:
    """The workspace for ``item``'s next run, created if its mode makes one per item. A
    resume works in its session's workspace; a fresh run too while that one exists.
    ``stack_on``: the branch of the item it stacks on (completion.stack), which a worktree
    made now starts from instead of completion.base (docs/landing.md#stacked-items).

    A recorded workspace is used only if it is one wrighty would make for the item (or the
    folder it was pinned to): anything else, read back from a store, is refused with
    WorkspaceError (docs/worker.md). ``start_over``: a person asked to start over (`requeue
    --fresh`), or the last start's machine failed, so a refused session workspace is passed
    over for the item's own."""
    if session is not None and (resume or Path(session.workspace).is_dir()):
        problem = workspace_problem(
            session.workspace, item=item, project_root=project_root, state_dir=state_dir
        )
        if problem is None:
            kept = Path(session.workspace)
            if kept == state_dir / "worktrees" / str(item.id) and kept.is_dir():
                # its branch and base are known, and a half-made one is made again
                return _worktree(
                    project_root, kept, item, session, completion or Completion(), stack_on
                )
            return Workspace(kept)
        if resume or not start_over:
            raise WorkspaceError(
                f"{problem}; `{suggestions.requeue(item.id, resume=False)}` starts over in the "
                "item's own workspace",
                Step.RECORDED_WORKSPACE,
            )
    if item.workspace:
        problem = workspace_problem(
            item.workspace, item=item, project_root=project_root, state_dir=state_dir
        )
        if problem is not None:
            raise WorkspaceError(
                f"{problem}; `{suggestions.cancel(item.id)}` and create it anew",
                Step.PINNED_WORKSPACE,
            )
        pinned = Path(item.workspace)
        if not pinned.is_dir():
            raise WorkspaceError(
                f"the workspace {pinned} that item {item.id} was created with (--workspace) is "
                "gone; make that folder again and run "
                f"`{suggestions.requeue(item.id, resume=False)}`, or "
                f"`{suggestions.cancel(item.id)}` and create the item anew",
                Step.PINNED_WORKSPACE,
            )
        return Workspace(pinned)
    if mode == "current":
        return Workspace(project_root)
    if mode == "directory":
        path = state_dir / "workspaces" / str(item.id)
        _make_folder(path.parent, Step.WORKSPACE_ROOT)
        _make_folder(path, Step.WORKSPACE)
        return Workspace(path)
    completion = completion or Completion()
    path = state_dir / "worktrees" / str(item.id)
    # A worktree made again keeps the branch its session recorded (completion.branchPrefix
    # may have changed since).
    recorded = session if session is not None and session.workspace == str(path) else None
    return _worktree(project_root, path, item, recorded, completion, stack_on)


def _make_folder(path: Path, step: Step) -> None:
    try:
        make_private_dirs(path)
        if not path.is_dir():  # a file stands where the folder goes: nothing can be made in it
            raise NotADirectoryError(errno.ENOTDIR, "something else than a folder stands there")
    except OSError as error:
        why = error.strerror or error
        raise WorkspaceError(
            f"cannot create the workspace {path}: {why}", step, error.errno
        ) from None


def _worktree(
    project_root: Path,
    path: Path,
    item: Item,
    recorded: Session | None,
    completion: Completion,
    stack_on: str | None = None,
) -> Workspace:
    """The item's worktree, with its branch and base always known. One its session recorded
    is kept as it is (work may be in it); a half-made one (`git worktree add` did not finish,
    or finished under a worker that died before it recorded it) is made again; and a branch
    with the item's name that the item's session does not name is never adopted with work of
    its own on it (docs/work-product.md#the-items-branch)."""
    try:
        if os.path.lexists(path):
            found = _found(project_root, path, item, recorded, completion, stack_on)
            if found is not None:
                return found
        return _made(project_root, path, item, recorded, completion, stack_on)
    except GitError as error:
        raise WorkspaceError(f"cannot create a git worktree at {path}: {error}", Step.GIT) from None


def _start(project_root: Path, completion: Completion, stack_on: str | None, item: Item) -> str:
    """The commit a branch made now starts from: the tip of ``stack_on``, the branch of the
    item ``item`` stacks on, when there is one (GitError when it is gone), else the base."""
    if stack_on is None:
        return resolve_base(project_root, completion)
    tip = commit_id(project_root, f"refs/heads/{stack_on}")
    if tip is None:
        raise GitError(
            f"item {item.id} stacks on the branch {stack_on}, which is not in the project's "
            "repository any more"
        )
    return tip


def _found(
    project_root: Path,
    path: Path,
    item: Item,
    recorded: Session | None,
    completion: Completion,
    stack_on: str | None = None,
) -> Workspace | None:
    """The worktree at ``path`` as it stands (its branch and base recovered when its session
    lost them); None when it was half made and is removed now, to be made again."""
    listed = listed_worktrees(project_root).get(path.resolve())
    whole = (
        listed is not None
        and listed.locked != HALF_MADE_LOCK
        and toplevel(path) == path.resolve()
        and commit_id(path, "HEAD") is not None
    )
    if whole and recorded is not None:
        return _kept(project_root, path, recorded, completion)
    if whole and not _holds_work(project_root, path, item, completion, stack_on):
        _remove_half_made(project_root, path, registered=True)
        return None
    if not whole and (listed is not None or _only_git_file(path)):
        _remove_half_made(project_root, path, registered=listed is not None)
        return None
    what = "a worktree that item {0}'s session does not record" if whole else "not a git worktree"
    raise WorkspaceError(
        f"{path} is {what.format(item.id)}, and it holds work wrighty will not take as item "
        f"{item.id}'s nor delete (a store made anew, or a folder made by hand?): move it away "
        f"or remove it, then run `{suggestions.requeue(item.id, resume=False)}`",
        Step.WORKSPACE,
        errno.EEXIST,  # something else stands at the item's name: the item's to mend
    )


def _kept(project_root: Path, path: Path, recorded: Session, completion: Completion) -> Workspace:
    """A worktree the item's session recorded, as it is, with its branch and its base: a base
    the session lost is the branch's fork point from completion.base; a branch it lost, the
    one the worktree has checked out when it is named as wrighty names the item's. A worktree
    made detached before branches keeps working with none."""
    branch = recorded.branch
    if branch is None:
        on = run_git(path, "symbolic-ref", "--quiet", "--short", "HEAD").stdout.strip()
        branch = on if on and is_items_branch(on, recorded.item_id) else None
    if branch is None or recorded.base_commit is not None:
        return Workspace(path, branch)
    return Workspace(path, branch, _fork_point(project_root, branch, recorded.item_id, completion))


def _fork_point(project_root: Path, branch: str, item_id: int, completion: Completion) -> str:
    """The base a session lost: where ``branch`` forked from completion.base."""
    base = resolve_base(project_root, completion)
    fork = run_git(project_root, "merge-base", f"refs/heads/{branch}", base)
    if not fork.ok or not fork.stdout.strip():
        raise WorkspaceError(
            f"item {item_id}'s session lost the base of its branch {branch}, and the branch has "
            f"no history in common with {completion.base_ref} ({fork.why()}): set "
            "completion.base in wrighty.json to the commit it was made from, then run "
            f"`{suggestions.requeue(item_id, resume=True)}`",
            Step.WORKSPACE,
        )
    return fork.stdout.strip()


def _made(
    project_root: Path,
    path: Path,
    item: Item,
    recorded: Session | None,
    completion: Completion,
    stack_on: str | None = None,
) -> Workspace:
    """The item's worktree made (again) on its branch: the session's, as it stands (work may
    be on it); else the item's name, made from the base (the tip of ``stack_on``, the branch it
    stacks on, when there is one), or a fresh name when a branch that holds commits the base
    lacks already has it (not this item's: no session of it names it)."""
    _make_folder(path.parent, Step.WORKSPACE_ROOT)
    ours = recorded.branch if recorded is not None else None
    branch = ours or branch_name(completion.branch_prefix, item.id, item.title)
    tip = commit_id(project_root, f"refs/heads/{branch}")
    if tip is not None and branch == ours:
        # --force: a worktree of this item that someone deleted is still registered with
        # git (and holds the branch), which would otherwise refuse to add it again.
        git_ok(project_root, "worktree", "add", "--force", str(path), branch)
        base = recorded.base_commit if recorded is not None else None
        return Workspace(
            path, branch, base or _fork_point(project_root, branch, item.id, completion)
        )
    base = _start(project_root, completion, stack_on, item)
    if tip is None:
        git_ok(project_root, "worktree", "add", "--force", "-b", branch, str(path), base)
        return Workspace(path, branch, base)
    if is_ancestor(project_root, tip, base):
        # It holds nothing the base lacks (a branch made by a worker stopped before it
        # recorded it): made anew from the base, nobody's work is taken or lost.
        git_ok(project_root, "worktree", "add", "--force", "-B", branch, str(path), base)
        return Workspace(path, branch, base)
    fresh = fresh_branch(
        branch, lambda name: commit_id(project_root, f"refs/heads/{name}") is not None
    )
    if fresh is None:
        raise GitError(
            f"the branch {branch} and its fresh names up to -{MAX_FRESH_BRANCHES} are taken"
        )
    git_ok(project_root, "worktree", "add", "--force", "-b", fresh, str(path), base)
    return Workspace(path, fresh, base, taken=branch)


def _holds_work(
    project_root: Path, path: Path, item: Item, completion: Completion, stack_on: str | None
) -> bool:
    """Whether the worktree at ``path`` holds anything its base (``_start``'s) lacks: a change
    not committed (untracked files included), or a commit (True when git cannot tell)."""
    dirty, _ = uncommitted(path)
    if dirty is not False:
        return True
    head = commit_id(path, "HEAD")
    base = _start(project_root, completion, stack_on, item)
    return head is None or not is_ancestor(project_root, head, base)


def _only_git_file(path: Path) -> bool:
    """Whether ``path`` is a folder that holds nothing, or only the `.git` file `git worktree
    add` writes first."""
    try:
        return not path.is_symlink() and all(entry.name == ".git" for entry in os.scandir(path))
    except OSError:
        return False


def _remove_half_made(project_root: Path, path: Path, *, registered: bool) -> None:
    """Remove a worktree that holds no work, as git knows it (a half-made one is locked
    "initializing": hence --force twice) or as a folder, and forget it."""
    if registered:
        git_ok(project_root, "worktree", "remove", "--force", "--force", "--", str(path))
    else:
        (path / ".git").unlink(missing_ok=True)
        path.rmdir()
    git_ok(project_root, "worktree", "prune")


def resolve_base(project_root: Path, completion: Completion) -> str:
    """The full id of the commit completion.base names (HEAD when it is null); GitError saying
    what to do when it names none (docs/work-product.md)."""
    found = run_git(
        project_root, "rev-parse", "--verify", "--quiet", f"{completion.base_ref}^{{commit}}"
    )
    if found.ok and found.stdout.strip():
        return found.stdout.strip()
    inside = run_git(project_root, "rev-parse", "--git-dir")
    if not inside.ok:
        raise GitError(
            f"{project_root} is not in a git repository; run `git init` there and commit, or "
            "set worker.workspaceMode to directory"
        )
    if completion.base is None:
        raise GitError(
            f"the git repository at {project_root} has no commit yet; commit once (worktrees "
            "start from HEAD), or set completion.base in wrighty.json"
        )
    shown = printable_line(completion.base)
    raise GitError(
        f"completion.base {shown!r} names no commit in the git repository at {project_root}; "
        "fix completion.base in wrighty.json (null: the project's HEAD)"
    )


class CurrentDirectoryLock:
    """The exclusive lock on the project directory (workspaceMode ``current``)."""

    def __init__(self, state_dir: Path) -> None:
        make_private_dirs(state_dir)
        # Not thread-local: the claim loop takes it, and the item's slot thread releases it.
        self._lock = FileLock(
            str(state_dir / "current-workspace.lock"), mode=0o600, thread_local=False
        )

    def try_acquire(self) -> bool:
        """Take the lock, or keep it: a worker that goes on claiming holds it between items."""
        if self._lock.is_locked:
            return True
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            return False
        return True

    def release(self) -> None:
        if self._lock.is_locked:
            self._lock.release()
