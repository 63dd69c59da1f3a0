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
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from wrighty.domain import suggestions
from wrighty.domain.machine import StartFailure, Step
from wrighty.domain.model import Item, Session
from wrighty.domain.text import printable_line
from wrighty.domain.work_product import Completion, branch_name
from wrighty.domain.workspaces import Mode, workspace_mode
from wrighty.files import make_private_dirs
from wrighty.supervisor.git import GitError, git_ok, run_git


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
) -> Workspace:
    """The workspace for ``item``'s next run, created if its mode makes one per item. A
    resume works in its session's workspace; a fresh run too while that one exists.

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
            return Workspace(Path(session.workspace))
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
    recorded = session.branch if session is not None and session.workspace == str(path) else None
    branch = recorded or branch_name(completion.branch_prefix, item.id, item.title)
    return _worktree(project_root, path, branch, completion)


def workspace_problem(
    recorded: str, *, item: Item, project_root: Path, state_dir: Path
) -> str | None:
    """Why the workspace ``recorded`` in the store for ``item`` is not one wrighty would use:
    it must be absolute and be the project directory, the item's folder or worktree, or the
    folder the item was pinned to with `--workspace`; None when it is."""
    shown = printable_line(recorded[:200])
    path = Path(recorded)
    if not path.is_absolute():
        return f"the workspace {shown} recorded for item {item.id} is not an absolute path"
    mode = workspace_mode(
        path,
        item_id=item.id,
        pinned=Path(item.workspace) if item.workspace else None,
        project_root=project_root,
        state_dir=state_dir,
    )
    if mode is Mode.OTHER:
        return (
            f"the workspace {shown} recorded for item {item.id} is not one wrighty makes for it "
            "(nor the folder it was pinned to)"
        )
    return None


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


def _worktree(project_root: Path, path: Path, branch: str, completion: Completion) -> Workspace:
    """The item's worktree: kept as it is when it exists (its branch, or none for one made
    detached before branches); else made on the item's branch, which is made from the base
    when it does not exist yet, and attached as it is when it does (work may be on it)."""
    if path.exists():
        return Workspace(path)
    _make_folder(path.parent, Step.WORKSPACE_ROOT)
    try:
        if run_git(project_root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").ok:
            # --force: a worktree of this item that someone deleted is still registered with
            # git (and holds the branch), which would otherwise refuse to add it again.
            git_ok(project_root, "worktree", "add", "--force", str(path), branch)
            return Workspace(path, branch)
        base = resolve_base(project_root, completion)
        git_ok(project_root, "worktree", "add", "--force", "-b", branch, str(path), base)
    except GitError as error:
        raise WorkspaceError(f"cannot create a git worktree at {path}: {error}", Step.GIT) from None
    return Workspace(path, branch, base)


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
