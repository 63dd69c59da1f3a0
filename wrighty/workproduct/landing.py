"""Landing's git (docs/landing.md): an accepted item's branch brought up to date with its
target (`update_branch`), the commit the target will move to (`landing_commit`), and the
move itself (`move_target`), each through runner.py (nothing the repository names runs).

The move is made to be carried out once whatever dies when: the commit the target moves to
is computed first and recorded by the lander (domain/landing.py's intent), and `move_target`
reads where the target is before it moves it: at the intent, it landed already; at the
commit it was read at, it moves; anywhere else, something else moved it (``TargetMoved``).
A lander that died inside `git merge --ff-only` left the project's checkout half moved (some
files of the intent written, the index and the branch not) and git's index lock behind:
``recovering`` puts exactly those files back and removes a lock nobody holds, and refuses
when a file holds anything else (a person's change). A lander that died inside its update's
merge left the same in the item's worktree: `update_branch` puts it back before it merges.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wrighty.domain.integration import one_line
from wrighty.domain.landing import SHORT, UpdateMode
from wrighty.domain.text import clip, printable
from wrighty.workproduct.reads import commit_id, head_status, is_ancestor
from wrighty.workproduct.runner import GitError, GitResult, run_git

# How much of a conflict's hunks and of what the target gained a fix turn's prompt shows.
MAX_HUNKS_CHARS = 24_000
MAX_GAINED_LINES = 50
# How many files a refusal names.
MAX_NAMED_FILES = 10
# How long a lock file left in the project's repository must stay unchanged before a
# recovering lander takes it for its dead predecessor's (git holds one for milliseconds).
STALE_LOCK_SECONDS = 2.0


class LandingError(Exception):
    """The landing cannot go on as it is, for a reason a person must see (one line)."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message, 600))


class MovedLate(Exception):
    """The target was moved, but git went on past its time limit after it (a post-merge hook
    that hung), and was stopped: the message says so."""


class TargetMoved(Exception):
    """The target is neither where the intent moves it from nor at the intent: something else
    moved it since it was read."""


@dataclass(frozen=True)
class Updated:
    """The item's branch, up to date with the target: its commit."""

    commit: str


@dataclass(frozen=True)
class Conflict:
    """Bringing the branch up to date conflicts: the files, their hunks (bounded) and what
    the target gained (its commits, one line each). The item's worktree is left with the merge
    under way and the conflict markers in its files, for the agent's fix turn."""

    files: tuple[str, ...]
    hunks: str
    gained: str


def checked_out_branch(root: Path) -> str | None:
    """The branch the project's checkout has (None: a detached HEAD, or no repository)."""
    named = run_git(root, "symbolic-ref", "--quiet", "HEAD")
    ref = named.stdout.strip() if named.ok else ""
    return ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None


def pushed_as(root: Path, commit: str) -> list[str]:
    """The remote-tracking branches that hold ``commit`` (a branch that was pushed)."""
    found = run_git(root, "for-each-ref", "--contains", commit, "--format=%(refname:short)",
                    "refs/remotes")  # fmt: skip
    return [line for line in found.stdout.splitlines() if line.strip()] if found.ok else []


def branch_tip(root: Path, branch: str) -> str | None:
    return commit_id(root, f"refs/heads/{branch}")


def update_branch(
    worktree: Path,
    branch: str,
    target: str,
    target_tip: str,
    *,
    mode: UpdateMode,
    author: Mapping[str, str],
    hooks: bool,
) -> Updated | Conflict:
    """Bring ``branch`` (checked out in ``worktree``) up to date with ``target_tip``: the
    target merged into it (``merge``), or the branch replayed on it (``rebase``; one that
    conflicts is merged instead, so that the agent resolves the conflict once, with both sides
    in front of it). LandingError when git cannot."""
    recover_worktree(worktree, target_tip)
    _leave_no_merge_under_way(worktree)
    found = head_status(worktree, untracked=False)
    if found.branch != branch:
        raise LandingError(
            f"the item's worktree {worktree} has {found.branch or 'a detached HEAD'} checked "
            f"out, not its branch {branch}"
        )
    if found.changed is not False:
        raise LandingError(
            f"the item's worktree {worktree} has uncommitted changes to tracked files "
            f"({found.why or 'git status'}): commit or remove them, then accept again"
        )
    before = found.head or ""
    if mode == "rebase":
        rebased = run_git(worktree, "rebase", "--quiet", target_tip, env=author, hooks=hooks)
        if rebased.ok:
            return Updated(commit_id(worktree, "HEAD") or before)
        run_git(worktree, "rebase", "--abort")
    subject = f"Merge {target} into {branch}"
    merged = run_git(
        worktree, "merge", "--no-ff", "--no-edit", "-m", subject, target_tip,
        env=author, hooks=hooks,
    )  # fmt: skip
    if merged.ok:
        return Updated(commit_id(worktree, "HEAD") or before)
    files = _conflicted(worktree)
    if not files:
        run_git(worktree, "merge", "--abort")
        raise LandingError(f"git could not merge {target} into {branch}: {_first(merged)}")
    return Conflict(files, _hunks(worktree), _gained(worktree, before, target_tip))


def _leave_no_merge_under_way(worktree: Path) -> None:
    """A merge or a rebase left under way in the item's worktree (a fix turn that did not end
    its merge, a lander that died) is undone: the update starts again from the branch."""
    if run_git(worktree, "rev-parse", "--quiet", "--verify", "MERGE_HEAD").ok:
        run_git(worktree, "merge", "--abort")
    git_dir = run_git(worktree, "rev-parse", "--git-dir")
    if git_dir.ok:
        place = Path(git_dir.stdout.strip())
        place = place if place.is_absolute() else worktree / place
        if (place / "rebase-merge").exists() or (place / "rebase-apply").exists():
            run_git(worktree, "rebase", "--abort")


def recover_worktree(worktree: Path, target_tip: str) -> None:
    """What a lander that died inside its update left in the item's worktree put back: git's
    lock, when it stays unchanged, and the files its merge had written of ``target_tip``.
    Before anything reads the worktree's changes (they are not the agent's)."""
    if worktree.is_dir() and _take_stale_lock(worktree):
        _put_back_half_moved(worktree, "HEAD", target_tip)


def merge_under_way(worktree: Path) -> bool:
    """Whether ``worktree`` has a merge under way (a landing's conflict, for the agent)."""
    return run_git(worktree, "rev-parse", "--quiet", "--verify", "MERGE_HEAD").ok


def _conflicted(worktree: Path) -> tuple[str, ...]:
    found = run_git(worktree, "diff", "--name-only", "--diff-filter=U", "-z")
    return tuple(dict.fromkeys(name for name in found.stdout.split("\0") if name))


def _hunks(worktree: Path) -> str:
    shown = run_git(worktree, "diff", "--no-color", "--no-ext-diff")
    return clip(printable(shown.stdout), MAX_HUNKS_CHARS)


def _gained(worktree: Path, before: str, target_tip: str) -> str:
    listed = run_git(
        worktree, "log", "--no-decorate", "--format=%h %s", f"--max-count={MAX_GAINED_LINES}",
        f"{before}..{target_tip}",
    )  # fmt: skip
    return printable(listed.stdout.strip()) if listed.ok else ""


def landing_commit(
    root: Path,
    how: str,
    *,
    branch_commit: str,
    target_commit: str,
    message: str,
    author: Mapping[str, str],
) -> str:
    """The commit the target moves to: the branch's own (``ff``: a fast-forward), or a new
    commit whose tree is exactly the branch's checked tree, on the target (``squash``: one
    parent) or joining both (``no-ff``: a merge commit)."""
    if how == "ff":
        return branch_commit
    parents = ("-p", target_commit) + (("-p", branch_commit) if how == "no-ff" else ())
    made = run_git(
        root, "commit-tree", f"{branch_commit}^{{tree}}", *parents, "-F", "-",
        input_text=message, env=author,
    )  # fmt: skip
    commit = made.stdout.strip()
    if not made.ok or not commit:
        raise LandingError(f"git could not make the landing commit: {_first(made)}")
    return commit


def target_first(root: Path, branch: str, commit: str, target_tip: str) -> str:
    """``commit``, the branch's tip, with the target first: a merge of the target into the
    branch (parents: the branch's, then ``target_tip``) is made again with the same tree and
    message and its parents the other way round, and the branch moved to it. Landed by a
    fast-forward, the target's first-parent line is then its own commits and the landed ones,
    each checked, never the branch's earlier commits. Any other commit is as it is."""
    parents = run_git(root, "rev-list", "--parents", "--max-count=1", commit).stdout.split()
    if len(parents) != 3 or parents[2] != target_tip:
        return commit
    message = run_git(root, "log", "--format=%B", "--max-count=1", commit).stdout
    author = run_git(root, "log", "--format=%an%x00%ae%x00%ad", "--date=raw", "--max-count=1",
                     commit).stdout.strip().split("\0")  # fmt: skip
    env = (
        {"GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1], "GIT_AUTHOR_DATE": author[2]}
        if len(author) == 3
        else {}
    )
    made = run_git(
        root, "commit-tree", f"{commit}^{{tree}}", "-p", target_tip, "-p", parents[1], "-F", "-",
        input_text=message, env=env,
    )  # fmt: skip
    again = made.stdout.strip()
    if not made.ok or not again:
        raise LandingError(f"git could not make the landing commit: {_first(made)}")
    moved = run_git(root, "update-ref", "-m", "wrighty: the target first", f"refs/heads/{branch}",
                    again, commit)  # fmt: skip
    if not moved.ok:
        raise LandingError(f"the item's branch {branch} moved while it was landed")
    return again


def move_target(
    root: Path,
    target: str,
    *,
    from_commit: str,
    to_commit: str,
    item_id: int,
    author: Mapping[str, str],
    hooks: bool,
    timeout: float,
    recovering: bool,
) -> bool:
    """Move ``target`` from ``from_commit`` to ``to_commit`` (a fast-forward), in the project's
    checkout when it has the target checked out, else the branch alone. False: it is there
    already (landed before). TargetMoved: it is elsewhere. LandingError: a person must look
    (the checkout has changes of its own, a merge under way, the target is checked out in
    another worktree)."""
    tip = branch_tip(root, target)
    if tip == to_commit:
        return False
    if tip != from_commit:
        if tip is not None and is_ancestor(root, to_commit, tip):
            return False  # landed, and the target went on after it
        raise TargetMoved(f"{target} is at {(tip or 'nothing')[:SHORT]}")
    place = _checked_out_in(root, target)
    if place is None:
        return _move_ref(root, target, from_commit, to_commit, item_id)
    if place.resolve() != root.resolve():
        raise LandingError(
            f"the target {target} is checked out in {place}, not in the project's directory: "
            "check it out there (or nowhere), then accept again"
        )
    if recovering:
        _take_stale_lock(root)
        _put_back_half_moved(root, from_commit, to_commit)
    _refuse_what_is_not_ours(root, target)
    try:
        merged = run_git(root, "merge", "--ff-only", "--no-edit", to_commit, env=author,
                         hooks=hooks, timeout=timeout)  # fmt: skip
    except GitError as error:  # git stopped at its time limit: a post-merge hook, say
        if branch_tip(root, target) == to_commit:
            raise MovedLate(
                f"git merge went on past the time limit of {timeout:g}s after the move (a "
                "post-merge hook) and was stopped"
            ) from None
        raise LandingError(f"{error}; {target} was not moved") from None
    if not merged.ok and branch_tip(root, target) != to_commit:
        raise LandingError(f"git could not move {target} to {to_commit[:SHORT]}: {_first(merged)}")
    return True


def _move_ref(root: Path, target: str, from_commit: str, to_commit: str, item_id: int) -> bool:
    """Move a target no worktree has checked out: the ref alone, only from ``from_commit``."""
    moved = run_git(
        root, "update-ref", "-m", f"wrighty: item {item_id} landed", f"refs/heads/{target}",
        to_commit, from_commit,
    )  # fmt: skip
    if not moved.ok and branch_tip(root, target) != to_commit:
        raise TargetMoved(f"{target} moved while it was moved: {_first(moved)}")
    return True


def _checked_out_in(root: Path, target: str) -> Path | None:
    """Where ``target`` is checked out (the first worktree that has it), or None."""
    listed = run_git(root, "worktree", "list", "--porcelain", "-z")
    place: Path | None = None
    for field in listed.stdout.split("\0"):
        if field.startswith("worktree "):
            place = Path(field.removeprefix("worktree "))
        elif field == f"branch refs/heads/{target}" and place is not None:
            return place
    return None


def _refuse_what_is_not_ours(root: Path, target: str) -> None:
    """Refused: a merge, rebase or cherry-pick under way in the project's checkout, or tracked
    files with changes (named)."""
    refusal = checkout_refusal(root, target)
    if refusal is not None:
        raise LandingError(refusal)


def checkout_refusal(root: Path, target: str) -> str | None:
    """Why the project's checkout of ``target`` cannot be moved now (a merge, rebase or
    cherry-pick under way; tracked files with changes, named), or None: asked by the move,
    and by `accept` before it records anything."""
    for marker in ("MERGE_HEAD", "REBASE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"):
        if run_git(root, "rev-parse", "--quiet", "--verify", marker).ok:
            return (
                f"the project's checkout has a {marker.split('_')[0].lower()} under way on "
                f"{target}: finish or abort it, then accept again"
            )
    changed = run_git(root, "diff", "HEAD", "--name-only", "-z")
    files = [name for name in changed.stdout.split("\0") if name]
    if changed.ok and not files:
        return None
    named = ", ".join(files[:MAX_NAMED_FILES]) + (" ..." if len(files) > MAX_NAMED_FILES else "")
    return (
        f"the project's checkout of {target} has uncommitted changes to tracked files "
        f"({named or changed.why()}): commit or stash them, then accept again"
    )


def _take_stale_lock(root: Path) -> bool:
    """Remove git's index lock (of ``root``'s checkout: the project's, or an item's worktree)
    when it stays unchanged for STALE_LOCK_SECONDS: the one a lander that died inside its
    merge left (a live git holds it for milliseconds). Whether it was removed."""
    git_dir = run_git(root, "rev-parse", "--git-dir")
    if not git_dir.ok:
        return False
    place = Path(git_dir.stdout.strip())
    lock = (place if place.is_absolute() else root / place) / "index.lock"
    try:
        first = lock.stat()
    except FileNotFoundError:
        return False
    time.sleep(STALE_LOCK_SECONDS)
    try:
        again = lock.stat()
    except FileNotFoundError:
        return False
    if (again.st_ino, again.st_mtime_ns) != (first.st_ino, first.st_mtime_ns):
        return False
    lock.unlink(missing_ok=True)
    return True


def _put_back_half_moved(root: Path, from_commit: str, to_commit: str) -> None:
    """The files a dead lander's merge wrote before it died (its `git merge --ff-only` in the
    project's checkout, or its update's merge of the target in the item's worktree) are put
    back as ``from_commit`` has them: each file that differs between the two whose content is
    ``to_commit``'s. A file with anything else is a person's (or the agent's), and is left for
    the refusal."""
    changed = run_git(root, "diff", "--name-only", "-z", from_commit, to_commit)
    for name in (n for n in changed.stdout.split("\0") if n):
        path = root / name
        ours = _blob(root, to_commit, name)
        theirs = _blob(root, from_commit, name)
        on_disk = _hash_of(root, path)
        if on_disk == theirs or on_disk != ours:
            continue
        if theirs is None:
            path.unlink(missing_ok=True)  # a file the move adds, written before it died
        else:
            run_git(root, "checkout", from_commit, "--", name)


def _blob(root: Path, commit: str, name: str) -> str | None:
    found = run_git(root, "rev-parse", "--quiet", "--verify", f"{commit}:{name}")
    return found.stdout.strip() if found.ok else None


def _hash_of(root: Path, path: Path) -> str | None:
    if not os.path.lexists(path) or path.is_dir():
        return None
    hashed = run_git(root, "hash-object", "--no-filters", "--", str(path))
    return hashed.stdout.strip() if hashed.ok else None


def _first(result: GitResult) -> str:
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    return lines[0] if lines else result.why()
