"""Integration: what becomes of an item's branch when a person accepts it
(docs/work-product.md#integration): completion.integrate's settings (`Integration`), the
summary an integration command reads on its standard input, and the URL it printed (the merge
commit's message is work_product.py's, beside the commit's). Pure, and light: checking
wrighty.json loads it.

The decisions taken here:

- A remote is named as git names one: letters, digits, '.', '_', '-' and '/', not starting with
  '-' (git would read it as an option), at most ``MAX_REMOTE`` characters. A URL or a path is no
  remote name: a remote is set up with `git remote add`, and wrighty.json names it.
- An integration command is an argv (no shell) of at most ``MAX_COMMAND_ARGS`` arguments of at
  most ``MAX_COMMAND_ARG_CHARS`` characters each: a program and its options, not a script.
- It runs ``MIN_TIMEOUT_SECONDS`` to ``MAX_TIMEOUT_SECONDS`` (1 s to an hour), 300 s by
  default: long enough for a push and a pull request, short enough that a hung command does
  not hold the person who accepts.
- The summary is at most ``MAX_SUMMARY_CHARS`` characters, its control characters escaped but
  for newline and tab; the diff's stat keeps its last line (the totals) when it is cut.
- The URL a command printed is the last http(s) URL on its standard output, at most
  ``MAX_URL_CHARS`` characters (a longer one is no URL a person opens).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from wrighty.domain.text import clip, plural, printable, printable_line

if TYPE_CHECKING:
    from wrighty.domain.check_evidence import CheckEvidence

IntegrateKind = Literal["none", "merge", "push", "command", "github-pr"]
MergeMode = Literal["ff", "ff-only", "no-ff"]

DEFAULT_REMOTE = "origin"
MAX_REMOTE = 100
REMOTE_NAME = re.compile(rf"[A-Za-z0-9._/][A-Za-z0-9._/-]{{0,{MAX_REMOTE - 1}}}")
REMOTE_RULE = (
    f"must be a git remote's name: 1 to {MAX_REMOTE} letters, digits, '.', '_', '-' and '/', "
    "not starting with '-'"
)
MAX_COMMAND_ARGS = 64
MAX_COMMAND_ARG_CHARS = 4_000
DEFAULT_TIMEOUT_SECONDS = 300
MIN_TIMEOUT_SECONDS = 1
MAX_TIMEOUT_SECONDS = 3_600
MAX_SUMMARY_CHARS = 16_000
MAX_URL_CHARS = 2_000
# How much of the title a merge commit's subject and the summary show.
MAX_TITLE_CHARS = 200
# How much of the diff's stat the summary keeps.
MAX_STAT_CHARS = 8_000

_URL = re.compile(r"https?://[^\s<>\"'`\x00-\x1f\x7f]+")
# Punctuation that ends a sentence around a URL rather than the URL itself.
_URL_TAIL = ".,;:!?)]}"


@dataclass(frozen=True)
class Integration:
    """completion.integrate and its settings: what accepting an item does with its branch."""

    kind: IntegrateKind = "none"
    merge: MergeMode = "ff"
    remote: str = DEFAULT_REMOTE
    command: tuple[str, ...] = ()
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        problem = remote_problem(self.remote)
        if problem is not None:
            raise ValueError(f"remote {printable_line(self.remote)!r} {problem}")
        if self.kind == "command" and (not self.command or not self.command[0]):
            raise ValueError("an integration command must name a program")
        if len(self.command) > MAX_COMMAND_ARGS:
            raise ValueError(f"an integration command has at most {MAX_COMMAND_ARGS} arguments")
        if any("\x00" in argument for argument in self.command):
            raise ValueError("an integration command must not contain NUL")
        if not MIN_TIMEOUT_SECONDS <= self.timeout_seconds <= MAX_TIMEOUT_SECONDS:
            raise ValueError(
                f"an integration's timeout must be {MIN_TIMEOUT_SECONDS} to "
                f"{MAX_TIMEOUT_SECONDS} s, got {self.timeout_seconds!r}"
            )


def remote_problem(remote: str) -> str | None:
    """Why ``remote`` cannot be a git remote's name in wrighty.json, or None."""
    return REMOTE_RULE if REMOTE_NAME.fullmatch(remote) is None else None


def one_line(text: str, limit: int) -> str:
    """``text`` as one neutralised line of at most ``limit`` characters, its runs of white
    space one space."""
    return clip(printable_line(" ".join(text.split())), limit)


def summary(
    *,
    item_id: int,
    title: str,
    branch: str | None,
    base: str | None,
    diff_stat: str,
    checks: Sequence[CheckEvidence],
) -> str:
    """What an integration command reads on its standard input: the item, its branch and
    base, its change as git's stat says it, and how each check ended; at most
    MAX_SUMMARY_CHARS characters, control characters escaped but for newline and tab."""
    lines = [f"Item {item_id}: {one_line(title, MAX_TITLE_CHARS)}"]
    if branch is not None:
        start = f" (from {base[:12]})" if base else ""
        lines.append(f"Branch: {one_line(branch, MAX_TITLE_CHARS)}{start}")
    lines += ["", "Change:"]
    stat = _bounded_stat(printable(diff_stat.replace("\r\n", "\n")).rstrip("\n"))
    lines += stat.splitlines() if stat.strip() else ["(no change)"]
    lines += ["", "Checks:"]
    lines += [
        f"- {one_line(check.name, 64)}: {_status(check)} ({check.duration_seconds:.1f}s)"
        for check in checks
    ] or ["(none ran)"]
    return clip("\n".join(lines) + "\n", MAX_SUMMARY_CHARS)


def _status(check: CheckEvidence) -> str:
    return "passed" if check.passed else check.ending()


def _bounded_stat(stat: str) -> str:
    """git's stat, at most MAX_STAT_CHARS characters: its first lines and its last (the
    totals), with a line that says how many were left out."""
    if len(stat) <= MAX_STAT_CHARS:
        return stat
    lines = stat.splitlines()
    last = clip(lines[-1], MAX_TITLE_CHARS)
    kept: list[str] = []
    room = MAX_STAT_CHARS - len(last) - 60
    for line in lines[:-1]:
        line = clip(line, MAX_TITLE_CHARS)
        if len(line) + 1 > room:
            break
        kept.append(line)
        room -= len(line) + 1
    left = len(lines) - 1 - len(kept)
    return "\n".join([*kept, f" ... ({left} more lines left out)", last])


def last_url(output: str) -> str | None:
    """The last http(s) URL in ``output`` (a command's standard output), without the
    punctuation a sentence puts after it; None when there is none, or when it is longer than
    MAX_URL_CHARS."""
    found = None
    for match in _URL.finditer(output):
        found = match.group().rstrip(_URL_TAIL)
    if found is None or len(found) > MAX_URL_CHARS or found.endswith("://"):
        return None
    return found


# -- a merge, decided from the repository's state as read ---------------------------------------

# How many conflicting files a refused merge names; a commit as a message shows it.
MAX_CONFLICTS_NAMED = 10
SHORT = 12
# completion.merge as `git merge` takes it.
MERGE_FLAGS: dict[MergeMode, str] = {"ff": "--ff", "ff-only": "--ff-only", "no-ff": "--no-ff"}


@dataclass(frozen=True)
class WorktreeState:
    """An item's worktree as read before an integration: its HEAD's commit (None: none), the
    branch it has checked out (None: detached), whether it has uncommitted changes (None: git
    could not tell, and ``why``), and whether its HEAD's commits are all on the item's branch
    (``compare_why``: git could not compare them)."""

    path: str
    head: str | None
    checked_out: str | None
    changed: bool | None
    why: str | None = None
    head_in_tip: bool = True
    compare_why: str | None = None


def worktree_refusal(item_id: int, branch: str, tip: str, worktree: WorktreeState) -> str | None:
    """Why integrating ``branch`` (at ``tip``) is refused for what its worktree holds: changes
    not committed, or commits on a HEAD off the branch, which integrating the branch would
    leave out (and then say the change is integrated); None when nothing is left out."""
    path = worktree.path
    if worktree.changed is None:
        return (
            f"cannot tell whether item {item_id}'s worktree {path} has uncommitted changes: "
            f"{worktree.why}"
        )
    if worktree.changed:
        return (
            f"item {item_id}'s worktree {path} has uncommitted changes, which its branch does "
            "not hold: commit them on the branch (or remove them), then accept again"
        )
    head = worktree.head
    if head is None or head == tip:
        return None
    if worktree.compare_why is not None:
        return f"git cannot compare {head[:SHORT]} and {tip[:SHORT]}: {worktree.compare_why}"
    if worktree.head_in_tip:
        return None
    on = worktree.checked_out
    where = f"on the branch {printable_line(on)}" if on else "detached"
    short = head[:SHORT]
    return (
        f"item {item_id}'s worktree {path} is not on its branch {branch}: its HEAD is {where} "
        f"at {short}, with commits {branch} lacks; put them on {branch} (in the worktree: `git "
        f"switch {branch}`, then `git merge {short}`), then accept again"
    )


@dataclass(frozen=True)
class ProjectState:
    """The project's repository as read before a merge: the branch it has checked out (None:
    HEAD detached), its commit (None: none yet), whether tracked files have uncommitted
    changes (None: git could not tell, and ``why``), and the merge base of that commit and
    the item's branch (None: no history in common; ``compare_why``: git could not say)."""

    checked_out: str | None
    head: str | None
    changed: bool | None
    why: str | None = None
    base: str | None = None
    compare_why: str | None = None


@dataclass(frozen=True)
class Refused:
    """The merge is refused, before anything changes: ``why``, in one line."""

    why: str


@dataclass(frozen=True)
class AlreadyMerged:
    """The project's branch holds the item's branch already: nothing to do."""

    words: str
    commit: str


@dataclass(frozen=True)
class MergeInto:
    """Merge the item's branch into ``into`` (at ``head``) with `git merge FLAG`; when the
    branches diverged, look for conflicts first (``check_conflicts``)."""

    into: str
    head: str
    flag: str
    check_conflicts: bool


def merge_plan(
    branch: str, tip: str, project: ProjectState, mode: MergeMode
) -> Refused | AlreadyMerged | MergeInto:
    """What merging ``branch`` (at ``tip``) into the project's checked-out branch comes to
    (completion.integrate merge, docs/work-product.md#integration): refused for a detached
    HEAD, the item's own branch checked out, a branch with no commit, uncommitted changes to
    tracked files (the merge would mix them in), or, under ff-only, a branch that moved on;
    nothing when it is merged already; else the merge, conflicts looked for first when the
    branches diverged."""
    into = project.checked_out
    if into is None:
        return Refused(
            "the project's HEAD is detached: check out the branch to merge into (as `git switch "
            "main`), then accept again"
        )
    if into == branch:
        return Refused(
            f"the project has the item's own branch {branch} checked out: check out the branch "
            "to merge into, then accept again"
        )
    head = project.head
    if head is None:
        return Refused(f"the project's branch {into} has no commit yet to merge into")
    if project.compare_why is not None:
        return Refused(
            f"git cannot compare {tip[:SHORT]} and {head[:SHORT]}: {project.compare_why}"
        )
    if project.base == tip:
        return AlreadyMerged(f"{branch} is already merged into {into} ({head[:SHORT]})", head)
    if project.changed is None:
        return Refused(f"cannot read the project's working tree: {project.why}")
    if project.changed:
        return Refused(
            f"the project's working tree has uncommitted changes to tracked files: commit or "
            f"stash them, then accept again (merging {branch} into {into} would mix them in)"
        )
    fast_forward = project.base == head
    if not fast_forward and mode == "ff-only":
        return Refused(
            f"{into} has moved on since {branch} was made: it cannot be fast-forwarded "
            "(completion.merge is ff-only); rebase the branch on it, or set completion.merge "
            "to ff"
        )
    return MergeInto(into, head, MERGE_FLAGS[mode], check_conflicts=not fast_forward)


def conflict_refusal(branch: str, into: str, files: Sequence[str]) -> str:
    """Why a merge whose conflicts `git merge-tree` found in ``files`` is refused, naming the
    first MAX_CONFLICTS_NAMED of them."""
    named = ", ".join(printable_line(name)[:200] for name in files[:MAX_CONFLICTS_NAMED])
    more = len(files) - MAX_CONFLICTS_NAMED
    rest = f" and {more} more" if more > 0 else ""
    return (
        f"{branch} conflicts with {into} in {len(files)} {plural(len(files), 'file', 'files')} "
        f"{named}{rest}: "
        "nothing was merged; resolve it on the branch (merge or rebase there), then accept again"
    )


def merge_made(now: str, parents: Sequence[str], *, head: str, tip: str) -> str | None:
    """What a merge made of the project's branch, now at ``now`` (its ``parents``): a
    fast-forward to ``tip``, a merge commit of ``head`` and ``tip``, or None: the branch
    moved some other way meanwhile."""
    if now == tip:
        return "fast-forward"
    if list(parents) == [head, tip]:
        return "a merge commit"
    return None
