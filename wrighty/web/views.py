"""What the console's pages show, as plain values for the templates: the board's rows with
their filters and counts, the digest that tells a live page the board changed, and the
actions that apply to an item. Pure: no Starlette, no Jinja2, no store.

Every string here is plain text; the templates escape it (autoescape), and nothing from
outside is ever marked safe.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from wrighty.domain.board import Row, Section, section_counts, when_cell
from wrighty.domain.budgets import usage_text
from wrighty.domain.model import MAX_ITEM_ID
from wrighty.domain.scheduling import priority_name
from wrighty.domain.states import TERMINAL_STATES, ItemState
from wrighty.domain.text import printable, printable_line

# How long a filter's text may be (longer is cut: a filter is a few words).
MAX_FILTER_CHARS = 200
# The most characters an item id in a URL or a form may have.
MAX_ID_CHARS = 20


def whole_number(text: str, *, low: int, high: int, max_chars: int) -> int | None:
    """``text`` as a whole number from ``low`` to ``high``, in plain ASCII digits, at most
    ``max_chars`` of them (a longer one is not read); None for anything else."""
    if not (0 < len(text) <= max_chars) or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if low <= value <= high else None


def parse_item_id(text: str) -> int | None:
    """An item id from a URL or a form: 1 to MAX_ITEM_ID; None for anything else."""
    return whole_number(text, low=1, high=MAX_ITEM_ID, max_chars=MAX_ID_CHARS)


SECTION_TITLES: Mapping[Section, str] = {
    Section.ATTENTION: "Needs attention",
    Section.REVIEW: "Review",
    Section.RETRY: "Retry scheduled",
    Section.RUNNING: "Running",
    Section.HELD: "Held",
    Section.WAITING: "Queued",
}


@dataclass(frozen=True)
class BoardFilter:
    """The board's filters, from the page's query parameters (empty: no filter)."""

    state: str = ""
    agent: str = ""
    label: str = ""
    text: str = ""

    @classmethod
    def of(cls, params: Mapping[str, str]) -> BoardFilter:
        def one(name: str) -> str:
            return params.get(name, "").strip()[:MAX_FILTER_CHARS]

        return cls(one("state"), one("agent"), one("label"), one("text"))

    @property
    def active(self) -> bool:
        return any((self.state, self.agent, self.label, self.text))

    def keeps(self, row: Row, agent: str) -> bool:
        item = row.item
        if self.state and item.state.value != self.state:
            return False
        if self.agent and agent != self.agent:
            return False
        if self.label and self.label not in row.entry.labels:
            return False
        if self.text:
            wanted = self.text.casefold()
            haystack = f"{item.id} {item.title} {row.why}".casefold()
            return wanted in haystack
        return True


@dataclass(frozen=True)
class RowView:
    """One board row as the page shows it."""

    section: Section
    id: int
    state: str
    priority: str
    title: str
    why: str
    agent: str
    when: str
    labels: tuple[str, ...]
    spent: str = ""  # a running item's: what its open run spent so far


@dataclass(frozen=True)
class SectionView:
    section: Section
    title: str
    rows: list[RowView]
    total: int  # before the filters


def board_sections(
    rows: Iterable[Row], *, now: datetime, default_agent: str, wanted: BoardFilter
) -> list[SectionView]:
    """The board's sections in order, each with its rows that pass the filters and its count
    before them."""
    rows = list(rows)
    counts = section_counts(rows)
    kept: dict[Section, list[RowView]] = {section: [] for section in Section}
    for row in rows:
        agent = row.item.agent or default_agent
        if wanted.keeps(row, agent):
            kept[row.section].append(row_view(row, now=now, agent=agent))
    return [
        SectionView(section, SECTION_TITLES[section], kept[section], counts[section])
        for section in Section
    ]


def row_view(row: Row, *, now: datetime, agent: str) -> RowView:
    item = row.item
    return RowView(
        section=row.section,
        id=item.id,
        state=item.state.value,
        priority=priority_name(item.priority),
        title=printable_line(item.title),
        why=printable_line(row.why),
        agent=printable_line(agent),
        when=when_cell(row, now),
        labels=row.entry.labels,
        spent=_run_spend(row),
    )


def _run_spend(row: Row) -> str:
    run = row.entry.last_run
    if row.section is not Section.RUNNING or run is None or run.usage is None:
        return ""
    return usage_text(run.usage)


def board_digest(rows: Iterable[Row], *, extra: Iterable[object] = ()) -> str:
    """What a live page compares: the rows as they stand (section, id, state, generation,
    why, priority, title), not their ages, which change every second."""
    digest = hashlib.sha256()
    for row in rows:
        item = row.item
        digest.update(
            repr((row.section.value, item.id, item.state.value, item.generation, row.why,
                  item.priority, item.title)).encode("utf-8", "replace")
        )  # fmt: skip
    digest.update(repr(tuple(extra)).encode("utf-8", "replace"))
    return digest.hexdigest()


class Action(StrEnum):
    """What a person can do to an item from its page (each the same service call as the
    command of its name)."""

    REQUEUE = "requeue"
    CANCEL = "cancel"
    RELEASE = "release"
    PRIORITY = "priority"
    ACCEPT = "accept"
    REJECT = "reject"
    VERIFY = "verify"
    HANDOFF = "handoff"


def actions_for(state: ItemState, *, can_verify: bool = False) -> tuple[Action, ...]:
    """The actions offered for an item in ``state`` (what its service would take; the service
    still decides, and its refusal is shown); ``can_verify``: `wrighty show` offers
    `wrighty verify` (ShowFacts.standing)."""
    from wrighty.domain.handoff import HANDOFF_STATES
    from wrighty.services.items import REQUEUABLE

    if state in TERMINAL_STATES:
        return ()
    offered: list[Action] = []
    if state in REQUEUABLE:
        offered.append(Action.REQUEUE)
    if can_verify:
        offered.append(Action.VERIFY)
    if state is ItemState.RUNNING:
        offered.append(Action.RELEASE)
    if state is ItemState.REVIEW:
        offered += [Action.ACCEPT, Action.REJECT]
    if state in HANDOFF_STATES:
        offered.append(Action.HANDOFF)
    if state is not ItemState.RUNNING:
        offered.append(Action.PRIORITY)
    offered.append(Action.CANCEL)
    return tuple(offered)


def shown_text(text: str) -> str:
    """Multi-line text from outside (a body, `show`'s text) as the page holds it: control
    characters as escapes, newlines kept (the template escapes the rest)."""
    return printable(text)


class DiffLine(StrEnum):
    """What a line of git's diff is, for its colour."""

    FILE = "file"  # a file's header: diff --git, index, ---, +++, new file, ...
    HUNK = "hunk"  # @@ -a,b +c,d @@
    ADD = "add"
    DEL = "del"
    SAME = "same"


def diff_lines(text: str, *, limit: int) -> tuple[list[tuple[str, str]], int | None]:
    """git's diff (text from outside) as (kind, line) pairs, each line neutralised but its
    tabs, at most ``limit`` of them; and ``limit`` when it cut the rest (else None)."""
    lines = text.removesuffix("\n").split("\n") if text else []
    shown: list[tuple[str, str]] = []
    in_header = False
    for line in lines[:limit]:
        if line.startswith("diff "):
            in_header = True
        elif line.startswith("@@"):
            in_header = False
        kind = _diff_kind(line, in_header)
        shown.append((kind.value, printable(line)))
    return shown, (limit if len(lines) > limit else None)


def _diff_kind(line: str, in_header: bool) -> DiffLine:
    if in_header:
        return DiffLine.FILE
    if line.startswith("@@"):
        return DiffLine.HUNK
    if line.startswith("+"):
        return DiffLine.ADD
    if line.startswith("-"):
        return DiffLine.DEL
    return DiffLine.SAME
