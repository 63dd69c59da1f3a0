"""What the console's pages show, as plain values for the templates: the board's rows with
their filters and counts, the digest that tells a live page the board changed, and the
actions that apply to an item. Pure: no Starlette, no Jinja2, no store.

Every string here is plain text; the templates escape it (autoescape), and nothing from
outside is ever marked safe.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from wrighty.domain.board import Row, Section, row_matches, section_counts, when_cell
from wrighty.domain.budgets import usage_text
from wrighty.domain.model import MAX_ITEM_ID
from wrighty.domain.scheduling import LABEL_PATTERN, LABEL_RULE, priority_name
from wrighty.domain.states import TERMINAL_STATES, ItemState
from wrighty.domain.text import printable, printable_line
from wrighty.errors import WrightyError

if TYPE_CHECKING:
    from wrighty.domain.check_evidence import CheckRecord

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


# How many items one accept all ready may name (the ids the page showed).
MAX_CONFIRMED = 1000


def confirmed_ids(text: str) -> list[int]:
    """The ids an accept all ready form carries ("4,5,7", as its page showed them);
    WrightyError for anything else."""
    parts = text.split(",") if text else []
    ids = [parse_item_id(part) for part in parts[: MAX_CONFIRMED + 1]]
    if not parts or len(parts) > MAX_CONFIRMED or None in ids:
        raise WrightyError(
            "accept all ready: the form does not name the items it showed (item ids separated "
            "by commas); open Accept all ready again"
        )
    return [item_id for item_id in ids if item_id is not None]


SECTION_TITLES: Mapping[Section, str] = {
    Section.ATTENTION: "Needs attention",
    Section.REVIEW: "Review",
    Section.LANDING: "Landing",
    Section.RETRY: "Retry scheduled",
    Section.RUNNING: "Running",
    Section.HELD: "Held",
    Section.WAITING: "Queued",
}


# The states an item on the board can be in (the board shows open items), in their order: the
# state filter's choices.
BOARD_STATES: tuple[str, ...] = tuple(
    state.value for state in ItemState if state not in TERMINAL_STATES
)
# The sections whose items wait for a person: their count is in the board's tab title, and an
# item that enters one is what the opt-in browser notification tells of.
FOR_A_PERSON: tuple[Section, ...] = (Section.ATTENTION, Section.REVIEW)


def for_a_person(rows: Iterable[Row]) -> list[int]:
    """The ids of the open items that wait for a person (all of them: no filter applies)."""
    return [row.item.id for row in rows if row.section in FOR_A_PERSON]


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

    def refusal(self, agents: Collection[str]) -> str | None:
        """Why no item could ever pass this filter, in one line (a state that is not one of
        the board's, an agent wrighty.json does not name, a label no item may have); None
        when it is a filter the board can answer (an empty answer included)."""
        if self.state and self.state not in BOARD_STATES:
            if self.state in {state.value for state in TERMINAL_STATES}:
                return (
                    f"no {self.state} item is on the board: it shows open items "
                    f"(wrighty list --state {self.state} lists those)"
                )
            return f"no state {self.state}: the board's states are {', '.join(BOARD_STATES)}"
        if self.agent and self.agent not in agents:
            return f"no agent {self.agent}: wrighty.json names {', '.join(sorted(agents))}"
        if self.label and not re.fullmatch(LABEL_PATTERN, self.label):
            return f"no label {self.label}: {LABEL_RULE}"
        return None

    def keeps(self, row: Row, agent: str) -> bool:
        item = row.item
        if self.state and item.state.value != self.state:
            return False
        if self.agent and agent != self.agent:
            return False
        if self.label and self.label not in row.entry.labels:
            return False
        return not self.text or row_matches(row, self.text)


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

    QUEUE = "queue"
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

    if state in TERMINAL_STATES or state is ItemState.LANDING:
        return ()  # a landing item lands as it was accepted: nothing moves it but its lander
    offered: list[Action] = []
    if state is ItemState.TODO:
        offered.append(Action.QUEUE)
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


@dataclass(frozen=True)
class DiffRow:
    """One line of a file's diff as the page shows it: its kind, its number in the old file
    and in the new one (None: it is not in that one), and its text, neutralised."""

    kind: str
    old: int | None
    new: int | None
    text: str


@dataclass
class DiffFile:
    """One file of a change: its anchor on the page, its path as git names it (neutralised),
    the lines it adds and removes, and its rows."""

    anchor: str
    path: str
    added: int = 0
    removed: int = 0
    rows: list[DiffRow] = field(default_factory=list)


@dataclass(frozen=True)
class DiffView:
    """A change as the page shows it, file by file; ``cut``: the lines it was cut at (None:
    all of it is shown)."""

    files: list[DiffFile]
    cut: int | None

    @property
    def added(self) -> int:
        return sum(one.added for one in self.files)

    @property
    def removed(self) -> int:
        return sum(one.removed for one in self.files)


_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def diff_view(text: str, *, limit: int, anchor: str = "file") -> DiffView:
    """git's diff (text from outside) file by file, each line neutralised but its tabs and
    numbered in the old and the new file, at most ``limit`` lines in all. Each file's anchor
    is ``anchor`` and its place (``file-1``): never its name, which is outside text."""
    lines = text.removesuffix("\n").split("\n") if text else []
    files: list[DiffFile] = []
    in_header = False
    numbers = (0, 0)  # the next line's in the old file and in the new one
    for line in lines[:limit]:
        if line.startswith("diff ") or not files:
            files.append(DiffFile(f"{anchor}-{len(files) + 1}", _diff_path(line)))
            in_header = True
            if line.startswith("diff "):
                continue
        current = files[-1]
        hunk = _HUNK.match(line)
        if hunk is not None:
            in_header = False
            numbers = (int(hunk.group(1)), int(hunk.group(2)))
            current.rows.append(DiffRow(DiffLine.HUNK, None, None, printable(line)))
        elif in_header:
            _header_row(current, line)
        else:
            numbers = _body_row(current, line, numbers)
    return DiffView(files, limit if len(lines) > limit else None)


def _header_row(current: DiffFile, line: str) -> None:
    """A file header's line: the new file's name (the old one's for a removed file)."""
    named = line.startswith("+++ ") or (line.startswith("--- ") and not current.path)
    if named and line[4:] != "/dev/null":
        current.path = _diff_path(line)
    current.rows.append(DiffRow(DiffLine.FILE, None, None, printable(line)))


def _body_row(current: DiffFile, line: str, numbers: tuple[int, int]) -> tuple[int, int]:
    """A hunk's line, numbered; the numbers of the line after it."""
    old, new = numbers
    kind = _diff_kind(line, in_header=False)
    if line.startswith("\\"):  # "\ No newline at end of file": a line of neither
        current.rows.append(DiffRow(DiffLine.SAME, None, None, printable(line)))
        return numbers
    if kind is DiffLine.ADD:
        current.added += 1
        current.rows.append(DiffRow(kind, None, new, printable(line)))
        return old, new + 1
    if kind is DiffLine.DEL:
        current.removed += 1
        current.rows.append(DiffRow(kind, old, None, printable(line)))
        return old + 1, new
    current.rows.append(DiffRow(kind, old, new, printable(line)))
    return old + 1, new + 1


def _diff_path(line: str) -> str:
    """The file a header line names, as git wrote it (quoted when it has odd characters)."""
    if line.startswith(("+++ ", "--- ")):
        # git ends a name with a space by a tab, and quotes one with odd characters
        name = line[4:].removesuffix("\t")
        if len(name) > 1 and name.startswith('"') and name.endswith('"'):
            name = name[1:-1]
        return printable_line(name[2:] if name.startswith(("a/", "b/")) else name)
    if line.startswith("diff --git ") and " b/" in line:
        return printable_line(line.rsplit(" b/", 1)[1])
    return ""


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


# The states whose page is a review: the change, its checks and the actions come first.
REVIEWED_STATES = frozenset({ItemState.REVIEW, ItemState.LANDING, ItemState.NEEDS_ATTENTION})


def reason_words(reason_code: str | None, reason: str | None) -> str:
    """Why an item stands where it does, in words: its reason (its code's words when it has
    none: ``ready for review``)."""
    if reason:
        return printable_line(reason)
    return printable_line((reason_code or "").replace("-", " "))


@dataclass(frozen=True)
class CheckView:
    """One check of the latest verification as the page shows it: ``agents``, it failed and
    the agent is to fix it (not as it fails on the base); its output's end, neutralised by the
    page."""

    name: str
    passed: bool
    agents: bool
    ending: str
    seconds: str
    output: str
    start_failure: str | None


def latest_checks(records: Iterable[CheckRecord]) -> list[CheckView]:
    """The checks of the item's latest verification, those that failed first (the agent's
    before those that fail on the base too), each group in the order they ran."""
    from wrighty.domain.verify import latest_verification

    shown = [
        CheckView(
            name=printable_line(record.evidence.name),
            passed=record.evidence.passed,
            agents=record.evidence.agents_failure,
            ending="passed" if record.evidence.passed else record.evidence.ending(),
            seconds=f"{record.evidence.duration_seconds:.1f}",
            output=record.evidence.output_tail,
            start_failure=record.evidence.start_failure,
        )
        for record in latest_verification(list(records))
    ]
    return sorted(shown, key=lambda check: (check.passed, not check.agents))
