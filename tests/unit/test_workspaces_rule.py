"""The one rule of `wrighty workspaces clean` (wrighty/domain/workspaces.py): which workspace
may be removed, and why not; which the filters pick; what kind a recorded path is."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath

import pytest

from wrighty.domain.states import ItemState
from wrighty.domain.workspaces import (
    Filters,
    Mode,
    Workspace,
    is_items_branch,
    never_removed,
    picked,
    removal_refusal,
    workspace_mode,
)

AT = datetime(2026, 1, 10, tzinfo=UTC)
ROOT = PurePosixPath("/p")
STATE = ROOT / ".wrighty"

CLEAN_MERGED = Workspace(
    item_id=7,
    state=ItemState.DONE,
    updated_at=AT,
    mode=Mode.WORKTREE,
    path="/p/.wrighty/worktrees/7",
    exists=True,
    branch="wrighty/7-fix",
    base="a" * 40,
    branch_exists=True,
    dirty=False,
    merged=True,
    head_on_branch=True,
)


def mode_of(path: str, pinned: str | None = None) -> Mode:
    return workspace_mode(
        PurePosixPath(path),
        item_id=7,
        pinned=PurePosixPath(pinned) if pinned else None,
        project_root=ROOT,
        state_dir=STATE,
    )


def test_a_recorded_path_is_of_the_kind_its_place_says() -> None:
    assert mode_of("/p/.wrighty/worktrees/7") is Mode.WORKTREE
    assert mode_of("/p/.wrighty/workspaces/7") is Mode.DIRECTORY
    assert mode_of("/p") is Mode.CURRENT
    assert mode_of("/elsewhere", pinned="/elsewhere") is Mode.PINNED
    assert mode_of("/p/.wrighty/worktrees/7", pinned="/p/.wrighty/worktrees/7") is Mode.PINNED
    # another item's folder, a relative path, a way out, another checkout: never wrighty's
    for path in ("/p/.wrighty/worktrees/8", ".wrighty/worktrees/7", "/p/.wrighty/worktrees/7/..",
                 "/q/.wrighty/worktrees/7", "/p/.wrighty/worktrees/../worktrees/7"):  # fmt: skip
        assert mode_of(path) is Mode.OTHER, path


@pytest.mark.parametrize("state", [ItemState.DONE, ItemState.CANCELLED])
def test_a_finished_items_clean_merged_worktree_may_go(state: ItemState) -> None:
    workspace = replace(CLEAN_MERGED, state=state)
    assert removal_refusal(workspace, force=False, branches=True) is None


@pytest.mark.parametrize(
    "state",
    [ItemState.TODO, ItemState.QUEUED, ItemState.RUNNING, ItemState.RETRY_SCHEDULED,
     ItemState.NEEDS_ATTENTION],
)  # fmt: skip
def test_an_unfinished_items_workspace_never_goes(state: ItemState) -> None:
    workspace = replace(CLEAN_MERGED, state=state)
    for force in (False, True):
        refusal = removal_refusal(workspace, force=force, branches=False)
        assert refusal is not None
        assert f"item 7 is {state.value}" in refusal


@pytest.mark.parametrize("mode", [Mode.PINNED, Mode.CURRENT, Mode.OTHER])
def test_a_folder_wrighty_did_not_make_for_the_item_never_goes(mode: Mode) -> None:
    workspace = replace(CLEAN_MERGED, mode=mode)
    assert never_removed(workspace) is not None
    assert removal_refusal(workspace, force=True, branches=False) == never_removed(workspace)


def test_uncommitted_changes_need_force() -> None:
    for dirty in (True, None):  # changes, or not knowing
        workspace = replace(CLEAN_MERGED, dirty=dirty, note="git failed")
        refusal = removal_refusal(workspace, force=False, branches=False)
        assert refusal is not None
        assert "uncommitted" in refusal
        assert removal_refusal(workspace, force=True, branches=False) is None


def test_commits_the_project_lacks_need_force_only_when_they_would_be_left_on_no_branch() -> None:
    unmerged = replace(CLEAN_MERGED, merged=False)
    assert removal_refusal(unmerged, force=False, branches=False) is None  # the branch keeps them
    refusal = removal_refusal(unmerged, force=False, branches=True)
    assert refusal is not None
    assert "commits the project's HEAD lacks" in refusal
    detached = replace(unmerged, branch=None, branch_exists=False)
    assert removal_refusal(detached, force=False, branches=False) is not None
    assert removal_refusal(replace(unmerged, merged=None), force=False, branches=True)
    assert removal_refusal(unmerged, force=True, branches=True) is None
    # an agent's commits on a detached HEAD, its branch left behind: on no branch
    off = replace(unmerged, head_on_branch=False)
    refusal = removal_refusal(off, force=False, branches=False)
    assert refusal == (
        "item 7's worktree, whose HEAD is off its branch, has commits the project's HEAD lacks "
        "(--force deletes them)"
    )
    assert removal_refusal(replace(off, merged=True), force=False, branches=False) is None
    assert removal_refusal(off, force=True, branches=False) is None


def test_a_directory_has_no_git_facts_to_wait_for() -> None:
    folder = replace(
        CLEAN_MERGED, mode=Mode.DIRECTORY, branch=None, branch_exists=False, dirty=None, merged=None
    )
    assert removal_refusal(folder, force=False, branches=True) is None


def test_the_filters_pick_only_what_may_go_and_has_something_left() -> None:
    everything = Filters(done=True, merged=True, updated_before=AT + timedelta(seconds=1))
    assert picked(CLEAN_MERGED, everything)
    assert not picked(CLEAN_MERGED, Filters(updated_before=AT))  # changed at the cutoff
    assert not picked(replace(CLEAN_MERGED, merged=False), Filters(merged=True))
    assert not picked(replace(CLEAN_MERGED, state=ItemState.NEEDS_ATTENTION), Filters(merged=True))
    assert not picked(replace(CLEAN_MERGED, mode=Mode.PINNED), Filters(done=True))
    gone = replace(CLEAN_MERGED, exists=False, branch_exists=False)
    assert not picked(gone, Filters(done=True))
    assert picked(replace(gone, branch_exists=True), Filters(done=True))  # its branch is left
    assert not Filters().any


def test_only_a_branch_named_for_the_item_is_its_own() -> None:
    for branch in ("wrighty/7-fix-the-bug", "wrighty/7", "7-x", "work-7-x", "a/b/7-"):
        assert is_items_branch(branch, 7), branch
    for branch in ("main", "wrighty/17-x", "wrighty/71-x", "wrighty/8-x", "wrighty/7-X", "7x"):
        assert not is_items_branch(branch, 7), branch
