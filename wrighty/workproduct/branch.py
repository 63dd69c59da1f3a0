"""The branch guard (docs/work-product.md#the-items-branch): before a done run's checks and
before its commit, the item's worktree must be on the item's branch. A HEAD the agent detached
from the branch, with or without commits on it, is brought back (the branch moves to it, only
if it still is where it was); anything else is set aside for a person, with nothing committed
and no branch moved. The rule is the domain's (work_product.head_place); every git call goes
through workproduct/runner.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wrighty.domain.text import printable_line
from wrighty.domain.work_product import HeadPlace, WorktreeHead, head_place, off_branch_reason
from wrighty.workproduct.listing import listed_worktrees
from wrighty.workproduct.reads import commit_id
from wrighty.workproduct.runner import GitError, run_git

# What the branch's reflog says of wrighty's move.
REFLOG_MESSAGE = "wrighty: the run's commits, back on the item's branch"


@dataclass(frozen=True)
class Guarded:
    """What the guard found and did: ``brought_back`` from the commit the detached HEAD was at
    (None: it was on the branch); ``off_branch``: why the item is set aside (None: it is on
    its branch now)."""

    brought_back: str | None = None
    off_branch: str | None = None


def keep_on_branch(project_root: Path, worktree: Path, branch: str) -> Guarded:
    """Put the worktree ``worktree`` back on ``branch`` when the rule says it may be; else
    say why not. Never raises: a git failure sets the item aside."""
    try:
        facts = _read(project_root, worktree, branch)
    except GitError as error:
        facts = WorktreeHead(branch, None, None, None, tip_in_head=False)
        return Guarded(off_branch=f"{off_branch_reason(facts, worktree=str(worktree))} ({error})")
    place = head_place(facts)
    if place is HeadPlace.ON_BRANCH:
        return Guarded()
    if place is HeadPlace.BRING_BACK and facts.head is not None and facts.tip is not None:
        # The branch moves only if it is still at the commit read (update-ref's old value),
        # and the worktree's HEAD is then pointed at it: its files and index stay as they are.
        moved = run_git(
            worktree, "update-ref", "-m", REFLOG_MESSAGE, f"refs/heads/{branch}", facts.head,
            facts.tip,
        )  # fmt: skip
        pointed = moved.ok and run_git(worktree, "symbolic-ref", "HEAD", f"refs/heads/{branch}").ok
        if pointed:
            return Guarded(brought_back=facts.head)
        why = moved.why() if not moved.ok else "git symbolic-ref HEAD failed"
        said = off_branch_reason(facts, worktree=str(worktree))
        return Guarded(off_branch=f"{said} (moving {branch} failed: {why})")
    return Guarded(off_branch=off_branch_reason(facts, worktree=str(worktree)))


def _read(project_root: Path, worktree: Path, branch: str) -> WorktreeHead:
    on = run_git(worktree, "symbolic-ref", "--quiet", "HEAD")
    checked_out = on.stdout.strip().removeprefix("refs/heads/") if on.ok else None
    head = commit_id(worktree, "HEAD")
    tip = commit_id(worktree, f"refs/heads/{branch}")
    tip_in_head = False
    if head is not None and tip is not None:
        tip_in_head = run_git(worktree, "merge-base", "--is-ancestor", tip, head).returncode == 0
    elsewhere: tuple[str, ...] = ()
    if checked_out is not None and checked_out != branch:
        here = worktree.resolve()
        elsewhere = tuple(
            printable_line(str(path))
            for path, listed in listed_worktrees(project_root).items()
            if listed.branch == checked_out and path != here
        )
    shown = printable_line(checked_out) if checked_out is not None else None
    return WorktreeHead(branch, shown, head, tip, tip_in_head, elsewhere)
