"""The work product's rules (docs/work-product.md): the branch an item's worktree is on, what
makes a branch prefix or a commit identity acceptable, the message of the commit wrighty makes
after a run that is done (where the item goes when that commit fails: decisions.py) and of the
merge commit when an accepted item is merged (integration.py). Pure, and light: checking
wrighty.json loads it."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Literal

from wrighty.domain.integration import MAX_TITLE_CHARS, Integration, one_line
from wrighty.domain.model import BRANCH_NAME, Item
from wrighty.domain.text import clip, printable_line

if TYPE_CHECKING:
    pass

CommitMode = Literal["wrighty", "agent", "none"]
ReviewMode = Literal["auto", "person"]
# Whether the project's git hooks run in wrighty's own commit, merge and push
# (docs/work-product.md#what-git-runs).
HooksMode = Literal["run", "skip"]
DEFAULT_MAX_REJECTIONS = 5
MAX_MAX_REJECTIONS = 100
DEFAULT_BRANCH_PREFIX = "wrighty/"
MAX_BRANCH_PREFIX = 100
MAX_SLUG = 40
MAX_IDENTITY = 200
# How much of the item's body the commit message carries: its first line, bounded.
MAX_BODY_LINE = 200
# The trailers that tie a commit to its item and run (`git log --grep`, `git interpret-trailers`).
ITEM_TRAILER = "Wrighty-Item"
RUN_TRAILER = "Wrighty-Run"

_NOT_SLUG = re.compile(r"[^a-z0-9]+")
# A change's stat as a notice carries it: git's lines, each at most this long, and at most
# this many of them (past it, the first files, a line that says how many were left out, and
# git's summary); `show` and the console's pages show more of its lines.
MAX_STAT_LINES = 20
MAX_STAT_LINE_CHARS = 160
SHOWN_STAT_LINES = 200


def bounded_stat(stat: str, *, max_lines: int = MAX_STAT_LINES) -> str:
    """git's ``--stat`` of a change, bounded: secrets redacted, each line one safe line at most
    MAX_STAT_LINE_CHARS long, at most ``max_lines`` lines (the first files, how many more, and
    git's summary line); empty for no change."""
    from wrighty.domain.redact import redact

    lines = [
        clip(printable_line(line.rstrip()), MAX_STAT_LINE_CHARS)
        for line in redact(stat).split("\n")  # git's lines: a carriage return is no line end
        if line.strip()
    ]
    if len(lines) > max_lines:
        left_out = len(lines) - (max_lines - 1)
        lines = [*lines[: max_lines - 2], f" … {left_out} more lines", lines[-1]]
    return "\n".join(lines)


@dataclass(frozen=True)
class Completion:
    """wrighty.json's completion section: how an item's branch is named and made, who
    commits what a done run leaves in its worktree, and what accepting it does with the
    branch (``integration``)."""

    branch_prefix: str = DEFAULT_BRANCH_PREFIX
    base: str | None = None  # a git ref; None: the project's HEAD when the worktree is made
    commit: CommitMode = "wrighty"
    author_name: str | None = None  # None (both): git's own identity
    author_email: str | None = None
    review: ReviewMode = "auto"  # person: a done run's item waits in review (review.py)
    max_rejections: int = DEFAULT_MAX_REJECTIONS
    hooks: HooksMode = "skip"
    integration: Integration = field(default_factory=Integration)
    # Landing (docs/landing.md): how the branch is brought up to date with its target, whether
    # it lands as one commit, whether dependents start from a branch in review, and where a
    # landing's fix turn that passed goes.
    update: Literal["merge", "rebase"] = "merge"
    squash: bool = False
    stack: bool = False
    review_after_fix: Literal["person", "auto"] = "person"

    @property
    def base_ref(self) -> str:
        return self.base or "HEAD"


def slug(title: str) -> str:
    """``title`` as lowercase ASCII letters, digits and '-', at most MAX_SLUG characters
    ("Fix the login page!" -> "fix-the-login-page"); empty when nothing of it is ASCII."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    words = _NOT_SLUG.sub("-", ascii_title.lower()).strip("-")
    return words[:MAX_SLUG].rstrip("-")


def branch_name(prefix: str, item_id: int, title: str) -> str:
    """The branch of item ``item_id``'s worktree: ``<prefix><id>-<slug>`` (no slug, no dash)."""
    words = slug(title)
    return f"{prefix}{item_id}-{words}" if words else f"{prefix}{item_id}"


def branch_prefix_problem(prefix: str) -> str | None:
    """Why git would refuse branches that start with ``prefix`` (git check-ref-format's rules,
    within the letters wrighty allows), or None."""
    if len(prefix) > MAX_BRANCH_PREFIX:
        return f"is longer than {MAX_BRANCH_PREFIX} characters"
    example = f"{prefix}1-x"
    if not BRANCH_NAME.fullmatch(example):
        return (
            "must start with a letter or digit and hold only letters, digits, '.', '_', '-' and '/'"
        )
    if ".." in prefix or "//" in prefix:
        return "must not hold '..' or '//' (git refuses such branch names)"
    for part in example.split("/"):
        if part.startswith(".") or part.endswith(".lock"):
            return "must not have a part that starts with '.' or ends with '.lock' (git refuses it)"
    return None


def identity_problem(value: str) -> str | None:
    """Why ``value`` cannot be a commit author's name or email, or None."""
    if not value.strip():
        return "is empty"
    if len(value) > MAX_IDENTITY:
        return f"is longer than {MAX_IDENTITY} characters"
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in value):
        return "holds a newline or another control character"
    if "<" in value or ">" in value:
        return "must not hold '<' or '>' (git drops them)"
    return None


def commit_message(item: Item, run_id: str) -> str:
    """The message of the commit wrighty makes for ``item``'s done run: its title, its body's
    first line (bounded), and the trailers naming the item and the run."""
    lines = [line.strip() for line in item.body.splitlines()]
    first = next((line for line in lines if line), "")
    parts = [item.title.strip() or f"wrighty item {item.id}"]
    if first and first != parts[0]:
        parts.append(clip(first, MAX_BODY_LINE))
    parts.append(f"{ITEM_TRAILER}: {item.id}\n{RUN_TRAILER}: {run_id}")
    return "\n\n".join(parts) + "\n"


def merge_message(item_id: int, title: str) -> tuple[str, str]:
    """The paragraphs of the merge commit that integrates item ``item_id``'s branch
    (completion.integrate merge): its subject, naming the item, and the trailer that ties it to
    the item."""
    words = one_line(title, MAX_TITLE_CHARS)
    subject = f"Merge item {item_id}: {words}" if words else f"Merge item {item_id}"
    return subject, f"{ITEM_TRAILER}: {item_id}"


# -- the item's branch, kept ------------------------------------------------------------------

# How many fresh names (`-2`, `-3`, ...) are tried for an item whose branch name is taken.
MAX_FRESH_BRANCHES = 100
_SHORT = 12  # a commit as a reason shows it


class HeadPlace(StrEnum):
    """Where a done run's worktree stands against the item's branch (``head_place``)."""

    ON_BRANCH = "on-branch"  # it has the item's branch checked out: commit there
    BRING_BACK = "bring-back"  # a detached HEAD that holds the branch's commit: move the branch
    OFF_BRANCH = "off-branch"  # anything else: commit nothing, a person looks


@dataclass(frozen=True)
class WorktreeHead:
    """What git says of an item's worktree and its branch after a run."""

    branch: str  # the item's branch
    checked_out: str | None  # the branch the worktree has checked out (None: HEAD detached)
    head: str | None  # the worktree HEAD's commit (None: git cannot read it)
    tip: str | None  # the item's branch's commit (None: the branch is gone)
    tip_in_head: bool  # the branch's commit is HEAD's, or one of its ancestors
    # Where else ``checked_out`` is checked out (the project's directory, another worktree).
    elsewhere: tuple[str, ...] = ()


def head_place(facts: WorktreeHead) -> HeadPlace:
    """The one rule of the branch guard (docs/work-product.md#the-item-s-branch): a run's
    change is committed only on the item's branch. A detached HEAD whose history holds the
    branch's commit (the agent committed on it, or only detached) is brought back: the branch
    moves to it, nothing is lost and nothing of anyone else's is taken. Another branch checked
    out is never taken over nor committed on: it may be the project's, or hold others' work."""
    if facts.checked_out == facts.branch:
        return HeadPlace.ON_BRANCH
    if (
        facts.checked_out is None
        and facts.head is not None
        and facts.tip is not None
        and facts.tip_in_head
    ):
        return HeadPlace.BRING_BACK
    return HeadPlace.OFF_BRANCH


def off_branch_reason(facts: WorktreeHead, *, worktree: str) -> str:
    """Why the worktree ``worktree`` is set aside, what wrighty did not do, and how a person
    puts the work on the item's branch."""
    branch = facts.branch
    if facts.head is None:
        where = "its HEAD cannot be read"
    elif facts.tip is None:
        where = f"its branch {branch} is no longer in the repository"
    elif facts.checked_out is not None:
        where = f"it has the branch {facts.checked_out} checked out, not its branch {branch}"
    else:
        where = (
            f"its HEAD is detached at {facts.head[:_SHORT]}, which does not hold {branch}'s "
            f"commit {facts.tip[:_SHORT]}"
        )
    said = (
        f"the run succeeded but its worktree {worktree} is not on the item's branch: {where}; "
        "wrighty committed nothing and moved no branch, and the agent's work stays in the "
        f"worktree. Put it on {branch} there (`git switch {branch}`, then bring over what to "
        "keep: `git merge`, `git cherry-pick` or the files), then resume the item"
    )
    if facts.checked_out is not None and facts.elsewhere:
        places = ", ".join(facts.elsewhere)
        said += (
            f". The agent may have moved {facts.checked_out}, which is checked out in {places} "
            f"too: see `git reflog {facts.checked_out}` and put it back where it was if it "
            "should not hold the agent's commits"
        )
    return said


def fresh_branch(name: str, taken: Callable[[str], bool]) -> str | None:
    """The first of ``name``-2, ``name``-3, ... that is not ``taken`` (None: the first
    MAX_FRESH_BRANCHES are)."""
    for number in range(2, MAX_FRESH_BRANCHES + 2):
        candidate = f"{name}-{number}"
        if not taken(candidate):
            return candidate
    return None


# -- the commit after a done run, and where the item goes -------------------------------------


class Ending(StrEnum):
    COMMITTED = "committed"  # wrighty made a commit
    NOTHING = "nothing"  # nothing to commit: the agent committed itself
    UNCHANGED = "unchanged"  # nothing to commit, and the branch is still its base: no change
    UNCOMMITTED = "uncommitted"  # completion.commit agent: the agent left changes
    FAILED = "failed"  # git refused (a hook, no identity): the changes stay in the worktree
    NOT_ASKED = "not-asked"  # completion.commit none, or agent with a clean worktree


@dataclass(frozen=True)
class CommitResult:
    ending: Ending
    commit: str | None = None  # the commit wrighty made
    why: str | None = None  # why it failed: the step, in words, then git's last line, neutralised
