"""Where an item's agent works (worker.workspaceMode), chosen once and then kept.

- ``current``: the directory that holds wrighty.json. One agent at a time works there: the
  worker takes an exclusive file lock before it claims, and holds it for the whole run.
- ``directory``: a plain folder per item, ``.wrighty/workspaces/<id>``.
- ``worktree``: a git worktree per item, ``.wrighty/worktrees/<id>``, detached at HEAD.

An item pinned with ``wrighty create --workspace PATH`` always runs there. The first run records
its workspace in the item's session; every later run of the item reuses it. wrighty never
deletes a workspace.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from filelock import FileLock, Timeout

from wrighty.domain.model import Item, Session


class WorkspaceError(Exception):
    """The workspace could not be prepared: the run is start-failed."""


def choose_workspace(
    mode: str, *, project_root: Path, state_dir: Path, item: Item, session: Session | None
) -> Path:
    """The workspace for ``item``'s next run, created if its mode makes one per item."""
    if session is not None:
        return Path(session.workspace)
    if item.workspace:
        return Path(item.workspace)
    if mode == "current":
        return project_root
    if mode == "directory":
        path = state_dir / "workspaces" / str(item.id)
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path
    return _worktree(project_root, state_dir / "worktrees" / str(item.id))


def _worktree(project_root: Path, path: Path) -> Path:
    if path.exists():
        return path
    git = shutil.which("git")
    if git is None:
        raise WorkspaceError("workspaceMode is worktree but git is not installed")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    done = subprocess.run(
        [git, "-C", str(project_root), "worktree", "add", "--detach", str(path), "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        last_line = (done.stderr.strip().splitlines() or ["git failed"])[-1]
        raise WorkspaceError(f"cannot create a git worktree at {path}: {last_line}")
    return path


class CurrentDirectoryLock:
    """The exclusive lock on the project directory (workspaceMode ``current``)."""

    def __init__(self, state_dir: Path) -> None:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Not thread-local: the claim loop takes it, and the item's slot thread releases it.
        self._lock = FileLock(str(state_dir / "current-workspace.lock"), thread_local=False)

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
