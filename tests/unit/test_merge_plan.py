"""The decisions of an accepted item's merge (domain/integration.py), from the repository's
state as read: what the item's worktree holds that the merge would leave out
(`worktree_refusal`), what a merge into the project's branch comes to (`merge_plan`: refused,
merged already, a fast-forward, or a merge with conflicts looked for first), and what it made
(`merge_made`). Each row is one state and its answer, in the order the rules are asked."""

from __future__ import annotations

import pytest

from wrighty.domain.integration import (
    AlreadyMerged,
    MergeInto,
    MergeMode,
    ProjectState,
    Refused,
    WorktreeState,
    conflict_refusal,
    merge_made,
    merge_plan,
    worktree_refusal,
)

BRANCH = "wrighty/1-fix"
TIP, HEAD, BASE, OTHER = "a" * 40, "b" * 40, "c" * 40, "d" * 40


def project(**facts: object) -> ProjectState:
    given: dict[str, object] = {"checked_out": "main", "head": HEAD, "changed": False}
    given.update(facts)
    return ProjectState(**given)  # type: ignore[arg-type]


PLANS: list[tuple[str, ProjectState, MergeMode, str]] = [
    # (case, the state read, completion.merge, words of the refusal)
    ("detached", project(checked_out=None), "ff", "HEAD is detached"),
    ("the item's own branch", project(checked_out=BRANCH), "ff", "own branch"),
    ("no commit yet", project(head=None), "ff", "has no commit yet"),
    ("cannot compare", project(compare_why="bad object"), "ff", "cannot compare"),
    ("status failed", project(changed=None, why="index locked", base=HEAD), "ff", "index locked"),
    ("tracked changes", project(changed=True, base=HEAD), "ff", "uncommitted changes"),
    ("ff-only, moved on", project(base=BASE), "ff-only", "cannot be fast-forwarded"),
]


@pytest.mark.parametrize(
    ("state", "mode", "words"), [row[1:] for row in PLANS], ids=[row[0] for row in PLANS]
)
def test_a_merge_is_refused_before_anything_changes(
    state: ProjectState, mode: MergeMode, words: str
) -> None:
    plan = merge_plan(BRANCH, TIP, state, mode)
    assert isinstance(plan, Refused)
    assert words in plan.why


def test_a_branch_merged_already_needs_nothing_even_with_tracked_changes() -> None:
    plan = merge_plan(BRANCH, TIP, project(base=TIP, changed=True), "ff-only")
    assert plan == AlreadyMerged(f"{BRANCH} is already merged into main ({HEAD[:12]})", HEAD)


@pytest.mark.parametrize(
    ("mode", "flag"), [("ff", "--ff"), ("ff-only", "--ff-only"), ("no-ff", "--no-ff")]
)
def test_a_branch_ahead_of_the_project_merges_without_a_conflict_check(
    mode: MergeMode, flag: str
) -> None:
    plan = merge_plan(BRANCH, TIP, project(base=HEAD), mode)
    assert plan == MergeInto("main", HEAD, flag, check_conflicts=False)


@pytest.mark.parametrize("base", [BASE, None], ids=["diverged", "no history in common"])
def test_diverged_branches_look_for_conflicts_first(base: str | None) -> None:
    plan = merge_plan(BRANCH, TIP, project(base=base), "ff")
    assert plan == MergeInto("main", HEAD, "--ff", check_conflicts=True)


def worktree(**facts: object) -> WorktreeState:
    given: dict[str, object] = {
        "path": "/p/.wrighty/worktrees/1", "head": TIP, "checked_out": BRANCH, "changed": False,
    }  # fmt: skip
    given.update(facts)
    return WorktreeState(**given)  # type: ignore[arg-type]


WORKTREES: list[tuple[str, WorktreeState, str | None]] = [
    ("clean, on its branch", worktree(), None),
    ("its HEAD behind the branch", worktree(head=OTHER, head_in_tip=True), None),
    ("no HEAD", worktree(head=None), None),
    ("cannot tell", worktree(changed=None, why="index locked"), "cannot tell whether"),
    ("uncommitted", worktree(changed=True), "has uncommitted changes"),
    ("cannot compare", worktree(head=OTHER, compare_why="bad"), "cannot compare"),
    (
        "detached with commits",
        worktree(head=OTHER, checked_out=None, head_in_tip=False),
        f"its HEAD is detached at {OTHER[:12]}",
    ),
    (
        "another branch with commits",
        worktree(head=OTHER, checked_out="main", head_in_tip=False),
        "on the branch main",
    ),
]


@pytest.mark.parametrize(
    ("state", "words"), [row[1:] for row in WORKTREES], ids=[row[0] for row in WORKTREES]
)
def test_a_worktree_holding_what_the_merge_leaves_out_refuses_it(
    state: WorktreeState, words: str | None
) -> None:
    refusal = worktree_refusal(1, BRANCH, TIP, state)
    if words is None:
        assert refusal is None
    else:
        assert refusal is not None
        assert words in refusal


def test_what_a_merge_made() -> None:
    assert merge_made(TIP, [HEAD], head=HEAD, tip=TIP) == "fast-forward"
    assert merge_made(OTHER, [HEAD, TIP], head=HEAD, tip=TIP) == "a merge commit"
    assert merge_made(OTHER, [BASE], head=HEAD, tip=TIP) is None
    assert merge_made(OTHER, [TIP, HEAD], head=HEAD, tip=TIP) is None


def test_a_conflict_names_its_first_files_and_how_many_more() -> None:
    files = [f"f{number}.py" for number in range(12)]
    said = conflict_refusal(BRANCH, "main", files)
    assert said.startswith(f"{BRANCH} conflicts with main in 12 files f0.py, f1.py")
    assert "f9.py and 2 more: nothing was merged" in said
    assert "f10.py" not in said
