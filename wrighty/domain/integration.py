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

from wrighty.domain.text import clip, printable, printable_line

if TYPE_CHECKING:
    from wrighty.domain.verify import CheckEvidence

IntegrateKind = Literal["none", "merge", "push", "command"]
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
