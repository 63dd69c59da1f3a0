"""`wrighty diff ITEM`: an item's change against its base, committed and not
(docs/work-product.md#seeing-the-change-wrighty-diff).

The change is what ``git diff BASE`` shows in the item's workspace (the base's tree against
the files there now: commits made since and changes not committed) plus every untracked file
that git does not ignore, shown as a new file. The untracked files are marked
``--intent-to-add`` in a copy of the workspace's index, in a folder of wrighty's own: the
workspace's own index, files and objects are left as they were.

Which base:

- the commit recorded with the item's session when its worktree was made (worktree mode);
- a worktree made before branches (detached, no base recorded): where its HEAD forked from
  the project's HEAD (their merge base), so that commits its agent made on the detached HEAD
  are shown and the project's later commits are not; its own HEAD when they share none;
- ``current`` mode (the project's own directory) and a folder the item was pinned to with
  ``--workspace`` that is in a git work tree: its HEAD, with a note that the changes may not
  all be the item's and that commits made there are not shown. Only the files under the
  workspace are shown (a project in a folder of a larger repository: that folder's).

A ``directory`` workspace (not a git work tree), an item that has not run, and a workspace on
another installation are refused with one line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from wrighty.domain import suggestions
from wrighty.domain.model import COMMIT_ID, Item, Session
from wrighty.domain.workspaces import workspace_problem
from wrighty.errors import NotFoundError, WrightyError
from wrighty.store.port import Store
from wrighty.workproduct.diff import (
    diff_text,
    fork_point,
    found_commit,
    head_or_empty_tree,
    in_work_tree,
)
from wrighty.workproduct.runner import GitError


class Kind(Enum):
    """What the item's workspace is, by where it is."""

    WORKTREE = "worktree"  # .wrighty/worktrees/<id>
    DIRECTORY = "directory"  # .wrighty/workspaces/<id>
    CURRENT = "current"  # the project's own directory
    PINNED = "pinned"  # the folder given to `create --workspace`


@dataclass(frozen=True)
class Change:
    """An item's change: git's diff (or its stat) of the workspace against ``base``."""

    item_id: int
    workspace: Path
    base: str  # the full commit id the change is shown against
    text: str  # git's output, as git wrote it: text from outside, neutralised when shown
    note: str | None  # why the change may hold more than the item's, or less


def redacted(change: Change, secrets: Sequence[str]) -> Change:
    """``change`` with the secrets its text holds replaced: the values ``secrets`` knows
    (AppContext.secrets: agents.<name>.env's, the environment's tokens) and what looks like a
    key or a password (docs/work-product.md#secrets-in-the-change)."""
    from wrighty.domain.redact import redact_known

    return dataclasses.replace(change, text=redact_known(change.text, secrets))


def item_change(
    store: Store,
    item_id: int,
    *,
    project_root: Path,
    state_dir: Path,
    installation_id: str,
    stat: bool = False,
    since: str | None = None,
) -> Change:
    """Item ``item_id``'s change against its base (``stat``: git's ``--stat`` of it), or
    against ``since`` (a commit: what changed since a person last reviewed it); WrightyError,
    nothing run, for an item whose workspace is not a git work tree here, or a ``since`` that
    is not in its repository."""
    item = store.get_item(item_id)
    if item is None:
        raise NotFoundError(f"item {item_id} does not exist; `wrighty list` shows the items")
    session = store.get_session(item.id)
    try:
        workspace, kind = _workspace(item, session, project_root, state_dir, installation_id)
        assert session is not None
        if since is None:
            base, note = _base(item, session, workspace, kind, project_root)
        else:
            base, note = _reviewed(item, workspace, since), None
        return Change(item.id, workspace, base, diff_text(workspace, base, stat=stat), note)
    except GitError as error:
        raise WrightyError(f"cannot show item {item.id}'s change: {error}") from None


def change_refusal(
    item: Item,
    session: Session | None,
    *,
    project_root: Path,
    state_dir: Path,
    installation_id: str,
) -> str | None:
    """Why `wrighty diff` would refuse to show ``item``'s change here (None: it would show it).
    One git command at most: whether the workspace is in a git work tree."""
    try:
        _workspace(item, session, project_root, state_dir, installation_id)
    except WrightyError as error:
        return str(error)
    return None


def _workspace(
    item: Item, session: Session | None, project_root: Path, state_dir: Path, installation: str
) -> tuple[Path, Kind]:
    if session is None:
        raise WrightyError(
            f"item {item.id} has no workspace yet: it has not run; "
            + suggestions.before_first_run(item.id, item.state)
        )
    if session.installation_id != installation:
        raise WrightyError(
            f"item {item.id}'s workspace is on another installation "
            f"({session.installation_id}); run `wrighty diff {item.id}` there"
        )
    problem = workspace_problem(
        session.workspace, item=item, project_root=project_root, state_dir=state_dir
    )
    if problem is not None:
        raise WrightyError(problem)
    workspace = Path(session.workspace)
    kind = _kind(item, workspace, project_root, state_dir)
    if kind is Kind.DIRECTORY:
        raise WrightyError(
            f"item {item.id}'s workspace is not a git work tree (workspaceMode directory): "
            f"its files are in {workspace}"
        )
    if not workspace.is_dir():
        raise WrightyError(f"item {item.id}'s workspace {workspace} is gone; nothing to show")
    if not in_work_tree(workspace, top=kind is Kind.WORKTREE):
        raise WrightyError(f"item {item.id}'s workspace {workspace} is not a git work tree")
    return workspace, kind


def _kind(item: Item, workspace: Path, project_root: Path, state_dir: Path) -> Kind:
    if item.workspace and workspace == Path(item.workspace):
        return Kind.PINNED
    if workspace == state_dir / "worktrees" / str(item.id):
        return Kind.WORKTREE
    if workspace == state_dir / "workspaces" / str(item.id):
        return Kind.DIRECTORY
    return Kind.CURRENT


def _reviewed(item: Item, workspace: Path, commit: str) -> str:
    """``commit`` (a person's last review), found in the workspace's repository."""
    found = found_commit(workspace, commit) if COMMIT_ID.fullmatch(commit) else None
    if found is None:
        raise WrightyError(
            f"item {item.id}'s last reviewed commit {commit[:12]} is no longer in the "
            f"repository of {workspace}"
        )
    return found


def _base(
    item: Item, session: Session, workspace: Path, kind: Kind, project_root: Path
) -> tuple[str, str | None]:
    """The commit to show the change against, and a note when the change may hold more than
    the item's or less."""
    if session.base_commit is not None:
        found = found_commit(workspace, session.base_commit)
        if found is None:
            raise WrightyError(
                f"item {item.id}'s base commit {session.base_commit} is no longer in the "
                f"repository of {workspace}"
            )
        return found, None
    head = head_or_empty_tree(workspace)
    if kind is Kind.WORKTREE:  # made before branches: where it forked from the project
        return fork_point(workspace, head, project_root) or head, None
    where = (
        "the project's own directory (workspaceMode current)"
        if kind is Kind.CURRENT
        else "the folder it was pinned to (--workspace)"
    )
    return head, (
        f"item {item.id} works in {where}: these are all its changes against HEAD, which may "
        "include others' and do not include commits made there"
    )
