"""What the inbox draws, as rich text: the board's rows, the header line, the side panel and
the detail of the selected item. Every piece of text from outside wrighty (titles, reasons,
diagnostics, worker names, agent output) goes through `outside` or `printable`, so that its
control characters are shown as escapes and its brackets are never taken as markup.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.text import Text

from wrighty.domain.board import Row, Section, age, section_counts, when_cell
from wrighty.domain.budgets import usage_text
from wrighty.domain.health import Liveness, Verdict
from wrighty.domain.model import Item, Run
from wrighty.domain.scheduling import priority_name
from wrighty.domain.text import printable
from wrighty.richtext import local_time, outside
from wrighty.services.inbox import Board, circuit_words
from wrighty.services.status import StatusReport
from wrighty.styles import VERDICT_STYLES

if TYPE_CHECKING:
    from wrighty.operator.desk import ItemLook
    from wrighty.services.diff import Change
    from wrighty.services.show import ShowFacts

SECTION_TAGS: dict[Section, tuple[str, str]] = {
    Section.ATTENTION: ("ATTN", "bold red"),
    Section.REVIEW: ("REVW", "bold green"),
    Section.LANDING: ("LAND", "green"),
    Section.RETRY: ("RETRY", "yellow"),
    Section.RUNNING: ("RUN", "bold blue"),
    Section.HELD: ("HELD", "magenta"),
    Section.WAITING: ("WAIT", "cyan"),
}

# The board's columns: its heading and width (None: what is left, shared by WHY and TITLE).
COLUMNS: tuple[tuple[str, int | None], ...] = (
    ("", 5),
    ("ID", 6),
    ("P", 2),
    ("WHEN", 7),
    ("WHY", None),
    ("TITLE", None),
)
# What the title keeps of the room WHY and TITLE share when the reasons would take it all:
# these many cells, or a quarter of the room when that is more (the detail shows it whole).
TITLE_MIN_CELLS = 12


def column_widths(
    table_width: int, whys: Iterable[Text], titles: Iterable[Text]
) -> tuple[int, ...]:
    """The board's column widths in a table ``table_width`` cells wide: the fixed ones; WHY as
    wide as its longest reason, short of what TITLE keeps (its longest title, at most
    TITLE_MIN_CELLS or a quarter of the room); TITLE the rest, the width WHY does not use."""
    fixed = [width for _, width in COLUMNS if width is not None]
    padding = 2 * len(COLUMNS) + 2  # each cell's padding, and the scroll bar
    room = max(20, table_width - sum(fixed) - padding)
    need_why = max((cell.cell_len for cell in whys), default=0)
    need_title = max((cell.cell_len for cell in titles), default=0)
    title_keeps = min(need_title, max(TITLE_MIN_CELLS, room // 4))
    why = max(len("WHY"), min(need_why, room - title_keeps))
    return (*fixed, why, room - why)


def row_cells(row: Row, now: datetime) -> tuple[Text, ...]:
    tag, style = SECTION_TAGS[row.section]
    return (
        Text(tag, style=style),
        Text(str(row.item.id)),
        Text(priority_name(row.item.priority)),
        Text(when_cell(row, now)),
        outside(row.why),
        outside(row.item.title),
    )


_HEADER_WORDS = {
    Section.ATTENTION: "attn",
    Section.REVIEW: "review",
    Section.LANDING: "land",
    Section.RETRY: "retry",
    Section.RUNNING: "run",
    Section.HELD: "held",
    Section.WAITING: "wait",
}


def verdict_text(report: StatusReport) -> Text:
    """The verdict in `wrighty status`'s words (healthy only when thresholds were set and all
    pass), with the number of problems when some failed."""
    words = report.verdict.value
    if report.verdict is Verdict.UNHEALTHY:
        count = len(report.problems)
        words += f", {count} problem{'s' if count > 1 else ''}"
    return Text(words, style=VERDICT_STYLES[report.verdict])


def header_text(board: Board, *, label: str, read_only: bool) -> Text:
    """``wrighty · 3 attn · 1 retry · … · healthy 09:30:00 · <store>`` on one line, what
    matters first (a narrow terminal cuts the store's name)."""
    counts = section_counts(board.rows)
    text = Text("wrighty", style="bold")
    if read_only:
        text.append(" read-only", style="bold magenta")
    for section, words in _HEADER_WORDS.items():
        if counts[section]:
            text.append(" · ")
            text.append(f"{counts[section]} {words}", style=SECTION_TAGS[section][1])
    if board.listed < board.open_total:
        text.append(f" · {board.listed} of {board.open_total} listed", style="bold yellow")
    text.append(" · ")
    text.append_text(verdict_text(board.report))
    text.append(f" {board.checked_at.astimezone().strftime('%H:%M:%S')}", style="dim")
    text.append(f"  {printable(label)}", style="dim")
    return text


def side_text(board: Board) -> Text:
    """The side panel: the workers (dead ones flagged), open circuits, spent budgets, the
    outbox and the report's problems."""
    report = board.report
    text = _workers_text(board)
    shut = [view for view in report.circuits if view.shut]
    held = report.spending.held if report.spending is not None else []
    lines = [
        *(("Circuits", circuit_words(view), "yellow") for view in shut),
        *(
            (
                "Budgets spent",
                f"{a.agent}: {usage_text(a.period.usage)} of {a.limit.describe()}",
                "red",
            )
            for a in held
        ),
        *(("Unreadable (left out; docs/storage.md)", line, "red") for line in board.unreadable),
    ]
    heading = None
    for title, words, style in lines:
        if title != heading:
            text.append(f"{title}\n", style="bold")
            heading = title
        text.append(" ")
        text.append_text(outside(words, style=style))
        text.append("\n")
    outbox = report.outbox
    if outbox is not None and (outbox.pending or outbox.given_up):
        text.append(f"Outbox  {outbox.pending} pending, {outbox.given_up} given up\n", style="bold")
    for problem in report.problems:
        text.append_text(outside(f"! {problem.message}", style="bold red"))
        text.append("\n")
    for concern in report.concerns:
        text.append_text(outside(f"~ {concern.message}", style="yellow"))
        text.append("\n")
    return text


def _workers_text(board: Board) -> Text:
    report = board.report
    text = Text()
    dead = sum(view.liveness is not Liveness.LIVE for view in report.workers)
    text.append(f"Workers  {report.live_workers} live", style="bold")
    if dead:
        text.append(f", {dead} not", style="bold red")
    text.append("\n")
    if not report.workers:
        text.append(" none registered\n", style="dim")
    for view in report.workers:
        live = view.liveness is Liveness.LIVE
        text.append(" ● " if live else " ✗ ", style="green" if live else "bold red")
        text.append_text(outside(view.row.label or view.row.worker_id))
        state = "" if live else f" {view.liveness}"
        text.append(f"{state} hb {age(view.heartbeat_age_seconds)}", style="" if live else "red")
        text.append("\n")
        if view.row.items:
            text.append(f"   items {', '.join(str(i) for i in view.row.items)}\n", style="dim")
    return text


class Collector(Console):
    """A console that keeps what is printed to it, for a widget to draw (the inbox shows
    `wrighty show`'s own text as its detail)."""

    def __init__(self) -> None:
        super().__init__(file=io.StringIO(), width=100)
        self.collected: list[RenderableType] = []

    def print(self, *objects: Any, **options: Any) -> None:
        self.collected.extend(objects)


# Prints `wrighty show`'s text of an item's facts to a console (the command's own renderer,
# handed over by `wrighty inbox`).
ShowPrinter = Callable[[Console, "ShowFacts"], None]


def detail_view(look: ItemLook, show: ShowPrinter) -> DetailView:
    """The detail pane of an item as the desk looks at it, `show`'s text printed by ``show``."""
    shown = Collector()
    show(shown, look.facts)
    return DetailView(
        look.facts.detail.item,
        shown.collected,
        session=look.session,
        last_run=look.last_run,
        log=look.log,
        log_problem=look.log_problem,
    )


@dataclass(frozen=True)
class DetailView:
    """The selected item as the detail pane shows it: `wrighty show`'s text, and the tail of
    its last run's log (or why there is none here)."""

    item: Item
    shown: list[RenderableType]
    session: str | None = None  # the vendor's session id, when one is recorded
    last_run: Run | None = None
    log: str | None = None
    log_problem: str | None = None

    @property
    def following(self) -> bool:
        """Whether the log grows: its run is still going."""
        return self.last_run is not None and self.last_run.ended_at is None

    def renderable(self) -> RenderableType:
        return Group(*self.shown)

    def log_renderable(self) -> RenderableType:
        run = self.last_run
        if run is None:
            return Text(f"item {self.item.id} has no runs yet", style="dim")
        heading = Text(f"Log of run {run.attempt} of item {self.item.id}", style="bold")
        if self.following:
            heading.append(" (following)", style="bold blue")
        else:
            heading.append(f" (ended {local_time(run.ended_at)})", style="dim")
        if self.log_problem is not None:
            body = outside(self.log_problem, style="dim")
        elif self.log:
            body = Text(self.log)  # printable already: tail_output escapes it
        else:
            body = Text("(no output yet)", style="dim")
        return Group(heading, body)


# The most lines of a change the pager shows (`wrighty diff` shows it whole), as the console.
CHANGE_MAX_LINES = 20_000


def change_heading(change: Change) -> Text:
    """The pager's first line: whose change, against which commit, and how to close it."""
    text = Text(f"Item {change.item_id}'s change against {change.base[:12]}", style="bold")
    text.append(f"  (wrighty diff {change.item_id}, secrets redacted)  q: close", style="dim")
    return text


def change_text(change: Change, *, limit: int = CHANGE_MAX_LINES) -> Text:
    """`wrighty diff ID`'s text (from outside) as the pager shows it: its note first, each
    line neutralised but its tabs, at most ``limit`` lines, and what was left out."""
    text = Text()
    if change.note is not None:
        text.append_text(outside(change.note, style="yellow"))
        text.append("\n")
    if not change.text:
        text.append(f"item {change.item_id} has no change against {change.base[:12]}", "dim")
        return text
    lines = change.text.removesuffix("\n").split("\n")
    text.append("".join(f"{printable(line)}\n" for line in lines[:limit]))
    if len(lines) > limit:
        left = len(lines) - limit
        text.append(
            f"… {left} more lines: `wrighty diff {change.item_id}` shows them all", "bold yellow"
        )
    return text
