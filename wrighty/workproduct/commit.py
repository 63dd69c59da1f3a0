"""The commit after a done run (docs/work-product.md#commits): per completion.commit, wrighty
commits everything the run left in the item's worktree on its branch (``wrighty``), or only
looks whether the agent left anything uncommitted (``agent``), or does nothing (``none``).
The message, the endings and where a done item goes after its commit are the domain's
(domain/decide.py: `done_goes`); every git call goes through workproduct/runner.py."""

from __future__ import annotations

from pathlib import Path

from wrighty.domain.model import Item
from wrighty.domain.work_product import CommitResult, Completion, Ending, commit_message
from wrighty.workproduct.runner import (
    GitError,
    GitResult,
    besides_nested,
    git_ok,
    identity,
    run_git,
)


def complete(
    workspace: Path,
    completion: Completion,
    *,
    item: Item,
    run_id: str,
    base_commit: str | None = None,
) -> CommitResult:
    """Do what completion.commit says with the worktree ``workspace`` of ``item``'s done run.
    ``base_commit``: the commit its branch was made from, to tell a run that changed nothing
    (None: not known, not told)."""
    try:
        if completion.commit == "wrighty":
            return _commit(workspace, completion, item=item, run_id=run_id, base=base_commit)
        if completion.commit == "agent" and git_ok(workspace, "status", "--porcelain").strip():
            return CommitResult(Ending.UNCOMMITTED)
        if completion.commit == "agent" and _still_base(workspace, base_commit):
            return CommitResult(Ending.UNCHANGED)
    except GitError as error:
        return CommitResult(Ending.FAILED, why=str(error))
    return CommitResult(Ending.NOT_ASKED)


def _still_base(workspace: Path, base: str | None) -> bool:
    """Whether the worktree's HEAD is still the commit its branch was made from."""
    return base is not None and git_ok(workspace, "rev-parse", "HEAD").strip() == base


def _commit(
    workspace: Path, completion: Completion, *, item: Item, run_id: str, base: str | None
) -> CommitResult:
    # what .gitignore ignores stays out, and what nested repositories hold
    added = run_git(workspace, "add", "-A", "--", ".", *besides_nested(workspace))
    if not added.ok:
        return _failed("stage the changes (git add -A; nothing was staged)", added)
    staged = run_git(workspace, "diff", "--cached", "--quiet")
    # A landing's conflict resolved to the branch's own side changes nothing against HEAD,
    # and is still the merge that brings the branch up to date (docs/landing.md).
    merging = run_git(workspace, "rev-parse", "--quiet", "--verify", "MERGE_HEAD").ok
    if staged.ok and not merging:
        return CommitResult(Ending.UNCHANGED if _still_base(workspace, base) else Ending.NOTHING)
    if staged.returncode not in (0, 1):
        return _failed("compare the staged changes with HEAD (git diff --cached)", staged)
    made = run_git(
        workspace,
        "commit",
        "--quiet",
        "--file=-",
        "--cleanup=whitespace",  # a "#" title is kept, whatever commit.cleanup says
        input_text=commit_message(item, run_id),
        env=identity(completion.author_name, completion.author_email),
        hooks=completion.hooks == "run",
    )
    if not made.ok:
        return _failed("commit the staged changes (git commit; they stay staged)", made)
    return CommitResult(Ending.COMMITTED, commit=git_ok(workspace, "rev-parse", "HEAD").strip())


def _failed(what: str, result: GitResult) -> CommitResult:
    """A failed step, in wrighty's words (what could not be done, what it left), then git's
    own last line."""
    return CommitResult(Ending.FAILED, why=f"git could not {what}: {result.why()}")
