"""`wrighty workspaces`: the workspaces on this installation and what git says of each
(`list_workspaces`), and `wrighty workspaces clean`: removing those no run, retry or resume can
need again (`clean`), by the rule of wrighty/domain/workspaces.py (docs/work-product.md).

Worktrees are removed through git (`git worktree remove`, then `git worktree prune`), a
directory workspace as a folder, never following a symbolic link out of it; a branch with
`git branch -d` (`-D` with --force), all by wrighty/workproduct/listing.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from wrighty.domain.model import Item, Session
from wrighty.domain.text import printable_line
from wrighty.domain.workspaces import (
    Filters,
    Mode,
    Workspace,
    is_items_branch,
    picked,
    removal_refusal,
    workspace_mode,
)
from wrighty.errors import NotFoundError, WrightyError
from wrighty.services.runlogs import run_logs_of
from wrighty.store.port import Store
from wrighty.workproduct.listing import delete_branch, git_facts, prune, remove_worktree
from wrighty.workproduct.reads import commit_id
from wrighty.workproduct.runner import GitError

# How many files and folders one listing looks at, in all its workspaces, to sum their sizes:
# past it, a size is a lower bound (`Workspace.size_complete`), so a listing stays quick.
SIZE_ENTRIES = 200_000


@dataclass(frozen=True)
class Project:
    """Where the project is: its root (wrighty.json's folder) and wrighty's folder in it."""

    root: Path
    state_dir: Path


def list_workspaces(
    store: Store,
    project: Project,
    *,
    installation_id: str,
    size_entries: int = SIZE_ENTRIES,
) -> list[Workspace]:
    """One workspace per item with a session on this installation, by item id."""
    sessions = store.list_sessions(installation_id)
    if not sessions:
        return []
    items = {item.id: item for item in store.list_items()}
    heads: dict[str, str | None] = {}  # the project's HEAD, read once, when a worktree asks
    found = [
        _facts(items[session.item_id], session, project, heads)
        for session in sessions
        if session.item_id in items
    ]
    return _with_sizes(found, size_entries)


def _facts(
    item: Item, session: Session, project: Project, heads: dict[str, str | None]
) -> Workspace:
    recorded = Path(session.workspace)
    mode = workspace_mode(
        recorded,
        item_id=item.id,
        pinned=Path(item.workspace) if item.workspace else None,
        project_root=project.root,
        state_dir=project.state_dir,
    )
    workspace = Workspace(
        item_id=item.id,
        state=item.state,
        updated_at=item.updated_at,
        mode=mode,
        path=session.workspace,
        exists=_exists(recorded),
        branch=session.branch,
        base=session.base_commit,
    )
    if mode is not Mode.WORKTREE:
        return workspace
    try:
        if "HEAD" not in heads:
            heads["HEAD"] = commit_id(project.root, "HEAD")
        return git_facts(workspace, project.root, heads["HEAD"])
    except GitError as error:
        return replace(workspace, note=printable_line(str(error)))


def _exists(path: Path) -> bool:
    try:
        return os.path.lexists(path)
    except (OSError, ValueError):
        return False


def _with_sizes(workspaces: list[Workspace], entries: int) -> list[Workspace]:
    """Each worktree's and directory's size on disk, the walks sharing ``entries``."""
    sized = []
    for workspace in workspaces:
        if workspace.mode in (Mode.WORKTREE, Mode.DIRECTORY) and workspace.exists:
            size, looked_at, complete = disk_usage(Path(workspace.path), entries)
            entries -= looked_at
            workspace = replace(workspace, size_bytes=size, size_complete=complete)
        sized.append(workspace)
    return sized


def disk_usage(top: Path, entries: int) -> tuple[int, int, bool]:
    """The bytes on disk under ``top`` (its blocks; a link counts as itself, never followed),
    how many entries were looked at (at most ``entries``), and whether that was all of them."""
    total = 0
    looked_at = 0
    try:
        first = os.lstat(top)
    except OSError:
        return 0, 0, True
    total += _bytes(first)
    if not stat.S_ISDIR(first.st_mode):
        return total, 1, True
    folders = [top]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    if looked_at >= entries:
                        return total, looked_at, False
                    looked_at += 1
                    try:
                        facts = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += _bytes(facts)
                    if stat.S_ISDIR(facts.st_mode):
                        folders.append(Path(entry.path))
        except OSError:
            continue
    return total, looked_at, True


def _bytes(facts: os.stat_result) -> int:
    blocks = getattr(facts, "st_blocks", None)
    return blocks * 512 if blocks is not None else facts.st_size


# -- cleaning ---------------------------------------------------------------------------------


class Outcome(StrEnum):
    REMOVED = "removed"  # what was asked is gone
    WOULD_REMOVE = "would-remove"  # --dry-run: it would have been
    REFUSED = "refused"  # the rule says no (the reason says why)
    FAILED = "failed"  # git or the file system said no
    NOTHING = "nothing-to-do"  # neither the folder nor a branch to delete is left


@dataclass(frozen=True)
class Cleaned:
    """What `workspaces clean` did with one workspace."""

    workspace: Workspace
    outcome: Outcome
    removed_workspace: bool = False
    deleted_branch: bool = False
    removed_logs: bool = False  # --logs: the item's run logs (.wrighty/runs/<id>)
    reason: str | None = None


@dataclass(frozen=True)
class CleanRequest:
    ids: tuple[int, ...] = ()
    filters: Filters = field(default_factory=Filters)
    branches: bool = False  # delete the item's branch too
    logs: bool = False  # remove the item's run logs too
    force: bool = False
    dry_run: bool = False


def select(workspaces: list[Workspace], request: CleanRequest, store: Store) -> list[Workspace]:
    """The workspaces a clean request names: those of the items given (NotFoundError for an
    item that does not exist, WrightyError for one without a workspace here), or those the
    filters pick."""
    if request.ids and request.filters.any:
        raise WrightyError("give item ids or filters (--done, --merged, --older-than), not both")
    if not request.ids:
        if not request.filters.any:
            raise WrightyError(
                "say which workspaces to remove: give item ids, or --done, --merged or "
                "--older-than DURATION (`wrighty workspaces` lists them)"
            )
        return [workspace for workspace in workspaces if picked(workspace, request.filters)]
    by_id = {workspace.item_id: workspace for workspace in workspaces}
    chosen = []
    for item_id in dict.fromkeys(request.ids):
        if item_id not in by_id:
            if store.get_item(item_id) is None:
                raise NotFoundError(f"item {item_id} does not exist")
            raise WrightyError(
                f"item {item_id} has no workspace on this installation "
                "(`wrighty workspaces` lists those that have one)"
            )
        chosen.append(by_id[item_id])
    return chosen


def clean(chosen: Iterable[Workspace], request: CleanRequest, project: Project) -> list[Cleaned]:
    """Remove each of ``chosen`` that the rule allows (nothing with ``dry_run``); a refusal
    or a failure for one leaves the others to be cleaned."""
    root = project.root
    done = [_clean_one(workspace, request, project) for workspace in chosen]
    if not request.dry_run and any(
        cleaned.workspace.mode is Mode.WORKTREE and cleaned.removed_workspace for cleaned in done
    ):
        with contextlib.suppress(GitError):  # best effort: git's records of worktrees gone
            prune(root)
    return done


def _clean_one(workspace: Workspace, request: CleanRequest, project: Project) -> Cleaned:
    try:
        cleaned = _clean_or_refuse(workspace, request, project.root)
        if request.logs and cleaned.outcome not in (Outcome.REFUSED, Outcome.FAILED):
            return _clean_logs(cleaned, project, dry_run=request.dry_run)
        return cleaned
    except GitError as error:  # git missing, or past its time limit
        return Cleaned(workspace, Outcome.FAILED, reason=printable_line(str(error)))


def _clean_or_refuse(workspace: Workspace, request: CleanRequest, root: Path) -> Cleaned:
    refusal = removal_refusal(workspace, force=request.force, branches=request.branches)
    if refusal is not None:
        return Cleaned(workspace, Outcome.REFUSED, reason=refusal)
    branch = workspace.branch if request.branches and workspace.branch_exists else None
    if branch is not None and not is_items_branch(branch, workspace.item_id):
        return Cleaned(
            workspace,
            Outcome.REFUSED,
            reason=f"the branch {printable_line(branch)} is not one wrighty names for item "
            f"{workspace.item_id}; delete it with git if you mean to",
        )
    if not workspace.exists and branch is None:
        return Cleaned(workspace, Outcome.NOTHING)
    if request.dry_run:
        return Cleaned(
            workspace,
            Outcome.WOULD_REMOVE,
            removed_workspace=workspace.exists,
            deleted_branch=branch is not None,
        )
    removed = False
    if workspace.exists:
        problem = _remove(workspace, root, force=request.force)
        if problem is not None:
            return Cleaned(workspace, Outcome.FAILED, reason=problem)
        removed = True
    if branch is not None:
        kept = delete_branch(root, branch, force=request.force)
        if kept is not None:
            return Cleaned(
                workspace,
                Outcome.FAILED,
                removed_workspace=removed,
                reason=f"{'its workspace was removed, but ' if removed else ''}the branch "
                f"{printable_line(branch)} was kept: {kept}",
            )
    return Cleaned(
        workspace, Outcome.REMOVED, removed_workspace=removed, deleted_branch=branch is not None
    )


def _remove(workspace: Workspace, root: Path, *, force: bool) -> str | None:
    """Remove the workspace's folder; why not, when it could not be."""
    path = Path(workspace.path)
    if path.is_symlink():
        return f"{printable_line(workspace.path)} is a symbolic link: wrighty does not follow it"
    if workspace.mode is Mode.WORKTREE:
        return remove_worktree(root, path, force=force)
    if not shutil.rmtree.avoids_symlink_attacks:  # pragma: no cover - every platform we run on
        return "this platform cannot remove a folder without following links in it"
    try:
        shutil.rmtree(path)
    except OSError as error:
        return f"cannot remove {printable_line(workspace.path)}: {error.strerror or error}"
    return None


def _clean_logs(cleaned: Cleaned, project: Project, *, dry_run: bool) -> Cleaned:
    """``cleaned`` with its item's run logs removed too (``--logs``; the rule that let its
    workspace go lets them go: no run, retry or resume of a finished item needs them)."""
    logs = run_logs_of(project.state_dir, cleaned.workspace.item_id)
    if not logs.is_dir() or logs.is_symlink():
        return cleaned
    outcome = Outcome.WOULD_REMOVE if dry_run else Outcome.REMOVED
    if dry_run:
        return replace(cleaned, outcome=outcome, removed_logs=True)
    try:
        shutil.rmtree(logs)
    except OSError as error:
        why = f"cannot remove its run logs {printable_line(str(logs))}: {error.strerror or error}"
        return replace(cleaned, outcome=Outcome.FAILED, reason=why)
    return replace(cleaned, outcome=outcome, removed_logs=True)


def nothing_refused(done: Collection[Cleaned]) -> bool:
    return all(cleaned.outcome not in (Outcome.REFUSED, Outcome.FAILED) for cleaned in done)
