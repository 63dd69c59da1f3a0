"""An item's workspace as `wrighty workspaces` lists it, and the one rule of cleaning: which
workspace `wrighty workspaces clean` may remove, and why not (docs/work-product.md).

A workspace is removed only when no run, retry or resume of its item can need it again: its
item is finished (done or cancelled, states that never change), and wrighty made it for the
item (a worktree or a directory under `.wrighty/`). A pinned folder (`create --workspace`) and
the project directory (`workspaceMode` current) are never removed. Of the rest, one with
uncommitted changes, or whose commits the project's HEAD lacks and that would be left on no
branch, is removed only with `--force`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import PurePath

from wrighty.domain.model import Item
from wrighty.domain.states import TERMINAL_STATES, ItemState
from wrighty.domain.text import printable_line


class Mode(StrEnum):
    """What kind of workspace a session names, by its path."""

    WORKTREE = "worktree"  # .wrighty/worktrees/<id>, a git worktree
    DIRECTORY = "directory"  # .wrighty/workspaces/<id>, a plain folder
    CURRENT = "current"  # the project directory itself
    PINNED = "pinned"  # the folder the item was created with (create --workspace)
    OTHER = "other"  # none of these for this project: never touched


# The modes wrighty makes a folder for, one per item: the only ones cleaning removes.
MADE_BY_WRIGHTY = frozenset({Mode.WORKTREE, Mode.DIRECTORY})


def workspace_mode(
    recorded: PurePath,
    *,
    item_id: int,
    pinned: PurePath | None,
    project_root: PurePath,
    state_dir: PurePath,
) -> Mode:
    """The kind of the workspace ``recorded`` for item ``item_id``: the folder it was pinned
    to, the project directory, its folder or its worktree; OTHER for any other path (a
    relative one, one with ``..``, another checkout's)."""
    if not recorded.is_absolute() or ".." in recorded.parts:
        return Mode.OTHER
    if pinned is not None and pinned.is_absolute() and recorded == pinned:
        return Mode.PINNED
    if recorded == project_root:
        return Mode.CURRENT
    if recorded == state_dir / "workspaces" / str(item_id):
        return Mode.DIRECTORY
    if recorded == state_dir / "worktrees" / str(item_id):
        return Mode.WORKTREE
    return Mode.OTHER


def workspace_problem(
    recorded: str, *, item: Item, project_root: PurePath, state_dir: PurePath
) -> str | None:
    """Why the workspace ``recorded`` in the store for ``item`` is not one wrighty would use:
    it must be absolute and be the project directory, the item's folder or worktree, or the
    folder the item was pinned to with `--workspace`; None when it is."""
    shown = printable_line(recorded[:200])
    path = PurePath(recorded)
    if not path.is_absolute():
        return f"the workspace {shown} recorded for item {item.id} is not an absolute path"
    mode = workspace_mode(
        path,
        item_id=item.id,
        pinned=PurePath(item.workspace) if item.workspace else None,
        project_root=project_root,
        state_dir=state_dir,
    )
    if mode is Mode.OTHER:
        return (
            f"the workspace {shown} recorded for item {item.id} is not one wrighty makes for it "
            "(nor the folder it was pinned to)"
        )
    return None


@dataclass(frozen=True)
class Workspace:
    """One item's workspace on this installation, with what was found about it. A fact that
    does not apply (a directory has no branch) or could not be found is None."""

    item_id: int
    state: ItemState
    updated_at: datetime  # the item's last change
    mode: Mode
    path: str
    exists: bool
    branch: str | None = None
    base: str | None = None  # the commit the branch was made from
    branch_exists: bool = False
    ahead: int | None = None  # commits on the branch that its base lacks
    behind: int | None = None
    dirty: bool | None = None  # uncommitted changes (git status --porcelain says any)
    merged: bool | None = None  # the branch's (or HEAD's) commit is in the project's HEAD
    # A local branch holds the worktree's HEAD commit (False: an agent's commits on a detached
    # HEAD, which removing the worktree would leave on no branch; None: unknown, or no folder).
    head_on_branch: bool | None = None
    size_bytes: int | None = None  # on disk, walked without following links
    size_complete: bool = True  # False: the walk stopped at its bound; size is at least this
    note: str | None = None  # why a git fact is missing (git's own words, neutralised)

    @property
    def has_something(self) -> bool:
        """Something is left to clean: the folder, or a branch of the item's."""
        return self.exists or self.branch_exists


def never_removed(workspace: Workspace) -> str | None:
    """Why ``workspace`` is never removed, even with --force; None when it may be."""
    item = f"item {workspace.item_id}"
    if workspace.mode is Mode.PINNED:
        return f"{item} was created with --workspace: wrighty never removes a pinned folder"
    if workspace.mode is Mode.CURRENT:
        return f"{item} worked in the project directory itself (workspaceMode current)"
    if workspace.mode is Mode.OTHER:
        return f"{item}'s workspace is not one wrighty made in this project"
    if workspace.state not in TERMINAL_STATES:
        return (
            f"{item} is {workspace.state.value}: a retry, a resume or a run still needs its "
            "workspace (cancel it first to give it up)"
        )
    return None


def removal_refusal(workspace: Workspace, *, force: bool, branches: bool) -> str | None:
    """Why ``workspace`` may not be removed now (with its branch too when ``branches``); None
    when it may. Without --force, nothing is lost: no uncommitted change, and no commit left
    on no branch (a detached worktree's, or a branch's deleted with --branches) unless the
    project's HEAD has it. --force overrides those (and not knowing them), never
    `never_removed`."""
    never = never_removed(workspace)
    if never is not None or force or workspace.mode is not Mode.WORKTREE:
        return never
    item = f"item {workspace.item_id}"
    if workspace.exists and workspace.dirty is not False:
        if workspace.dirty:
            return f"{item}'s worktree has uncommitted changes (--force removes them)"
        return f"cannot tell whether {item}'s worktree has uncommitted changes{_note(workspace)}"
    head_at_stake = workspace.exists and (
        not workspace.branch_exists or workspace.head_on_branch is not True
    )
    commits_at_stake = (branches and workspace.branch_exists) or head_at_stake
    if commits_at_stake and workspace.merged is not True:
        whose = f"{item}'s branch"
        if head_at_stake and not workspace.branch:
            whose = f"{item}'s detached worktree"
        elif head_at_stake:
            whose = f"{item}'s worktree, whose HEAD is off its branch,"
        if workspace.merged is False:
            return f"{whose} has commits the project's HEAD lacks (--force deletes them)"
        return f"cannot tell whether the project's HEAD has {whose}'s commits{_note(workspace)}"
    return None


def _note(workspace: Workspace) -> str:
    return f" ({workspace.note}); --force removes it anyway" if workspace.note else ""


@dataclass(frozen=True)
class Filters:
    """`workspaces clean`'s filters; each one given narrows the selection."""

    done: bool = False  # the item is done or cancelled
    merged: bool = False  # its branch (or HEAD) is in the project's HEAD
    updated_before: datetime | None = None  # --older-than: now minus the duration

    @property
    def any(self) -> bool:
        return self.done or self.merged or self.updated_before is not None


def picked(workspace: Workspace, filters: Filters) -> bool:
    """Whether the filters pick ``workspace``: only one that may be removed at all (see
    `never_removed`) and that has something left, and that every filter given matches."""
    if never_removed(workspace) is not None or not workspace.has_something:
        return False
    if filters.done and workspace.state not in TERMINAL_STATES:
        return False
    if filters.merged and workspace.merged is not True:
        return False
    return filters.updated_before is None or workspace.updated_at < filters.updated_before


def is_items_branch(branch: str, item_id: int) -> bool:
    """Whether ``branch`` is one wrighty names for item ``item_id`` (`<prefix><id>-<slug>`):
    a branch read back from the store is deleted only then, so that a stored name can never
    make `--branches` delete another branch."""
    return re.fullmatch(rf"(?:.*[^0-9])?{item_id}(?:-[a-z0-9-]*)?", branch) is not None
