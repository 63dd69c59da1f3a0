"""`wrighty inbox`: the terminal inbox, on Textual.

The board lists every open item by section (needs attention first); the pane below shows the
selected item as `wrighty show` does, or the tail of its last run's log; a side panel shows the
workers, open provider circuits and spent budgets. Actions on the selected item are the
services the commands call (through a `Desk`), each confirmed first, each answered on the
message line with what its command would have printed (or its one-line refusal).

Refreshes read the store in a worker thread, so a slow store never freezes the keys; the
table is updated cell by cell when its rows stay the same, so nothing flickers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Footer, Input, Static
from textual.worker import get_current_worker

from wrighty.domain import suggestions
from wrighty.domain.board import AttentionOrder, Row, row_matches
from wrighty.domain.health import Liveness
from wrighty.domain.scheduling import PRIORITIES, priority_name
from wrighty.domain.states import ItemState
from wrighty.domain.text import printable_line
from wrighty.errors import WrightyError
from wrighty.inbox.screens import (
    ChangeScreen,
    ConfirmScreen,
    FeedbackScreen,
    HandoffScreen,
    HelpScreen,
)
from wrighty.inbox.views import (
    COLUMNS,
    DetailView,
    ShowPrinter,
    column_widths,
    detail_view,
    header_text,
    row_cells,
    side_text,
)
from wrighty.operator.sentences import nothing_ready, ready_words
from wrighty.services.inbox import Board

if TYPE_CHECKING:
    from wrighty.operator.desk import Desk
    from wrighty.services.diff import Change

# A terminal at least this wide shows the side panel from the start (`w` toggles it).
SIDE_PANEL_MIN_WIDTH = 110
SIDE_PANEL_WIDTH = 38
READ_ONLY_REFUSAL = "read-only: this inbox was started with --read-only; it shows, it does not act"


@dataclass(frozen=True)
class Action:
    """An action on the selected item: its question, and what carries it out."""

    question: str
    run: Callable[[], str]


class InboxApp(App[None]):
    TITLE = "wrighty inbox"
    ENABLE_COMMAND_PALETTE = False
    CSS = """
    #header { height: 1; padding: 0 1; background: $boost; }
    #main { height: 1fr; }
    #board { height: auto; max-height: 50%; min-height: 4; }
    #detail { height: 1fr; border-top: solid $primary; padding: 0 1; }
    #side { width: SIDE_WIDTH; border-left: solid $primary; padding: 0 1; display: none; }
    #side.shown { display: block; }
    #message { height: 1; padding: 0 1; }
    #search { height: 1; border: none; padding: 0 1; display: none; }
    #search.shown { display: block; }
    """.replace("SIDE_WIDTH", str(SIDE_PANEL_WIDTH))
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("r", "resume", "Resume"),
        Binding("f", "fresh", "Fresh"),
        Binding("c", "cancel_item", "Cancel"),
        Binding("x", "release", "Release"),
        Binding("plus,equals_sign", "priority(-1)", "Prio+", show=False),
        Binding("minus", "priority(1)", "Prio-", show=False),
        Binding("R", "reap", "Reap"),
        Binding("a", "accept", "Accept", show=False),
        Binding("A", "accept_all", "Accept all ready", show=False),
        Binding("d", "reject", "Reject", show=False),
        Binding("e", "queue", "Queue", show=False),
        Binding("v", "verify", "Checks", show=False),
        Binding("h", "handoff", "Hand off", show=False),
        Binding("D", "change", "Diff", show=False),
        Binding("slash", "search", "Search", show=False),
        Binding("escape", "clear_search", show=False),
        Binding("l", "toggle_log", "Log"),
        Binding("s", "sort", "Sort", show=False),
        Binding("w", "toggle_side", "Workers", show=False),
        Binding("g", "refresh", "Refresh", show=False),
        Binding("j", "cursor(1)", show=False),
        Binding("k", "cursor(-1)", show=False),
    ]

    def __init__(
        self, desk: Desk, *, show: ShowPrinter, read_only: bool = False, interval: float = 2.0
    ) -> None:
        """``show``: prints `wrighty show`'s text of the selected item, for its detail."""
        super().__init__()
        self.desk = desk
        self.show = show
        self.read_only = read_only
        self.interval = interval
        self.order = AttentionOrder.REASON
        self.board: Board | None = None
        self.rows: list[Row] = []
        self.detail: DetailView | None = None
        self.show_log = False
        self.search = ""  # `/`: the board shows the rows it finds (row_matches)
        self._widths: tuple[int, ...] = ()
        self._cells: dict[str, tuple[Text, ...]] = {}

    # -- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(Text("wrighty inbox · reading the store…"), id="header")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield DataTable(id="board", cursor_type="row", zebra_stripes=False)
                with VerticalScroll(id="detail"):
                    yield Static(Text("(no item selected)", style="dim"), id="detail-body")
            with VerticalScroll(id="side"):
                yield Static(Text(""), id="side-body")
        yield Input(placeholder="search: id, title or reason", id="search")
        yield Static(Text(""), id="message")
        yield Footer()

    def on_mount(self) -> None:
        if self.size.width >= SIDE_PANEL_MIN_WIDTH:
            self.query_one("#side").add_class("shown")
        self._fill(None)
        self.query_one(DataTable).focus()
        self.action_refresh()
        if self.interval > 0:
            self.set_interval(self.interval, self.action_refresh)

    def on_resize(self) -> None:
        self._fill(self.selected_id())

    def _table_width(self) -> int:
        side = SIDE_PANEL_WIDTH if self.query_one("#side").has_class("shown") else 0
        return max(40, self.size.width - side)

    def _set_columns(self, cells: list[tuple[Text, ...]]) -> bool:
        """Widths for the board's columns, for the cells it is to show (views.column_widths);
        the columns are made anew, empty, only when they change (True then)."""
        why, title = len(COLUMNS) - 2, len(COLUMNS) - 1
        widths = column_widths(
            self._table_width(), (row[why] for row in cells), (row[title] for row in cells)
        )
        if widths == self._widths:
            return False
        self._widths = widths
        table = self.query_one(DataTable)
        table.clear(columns=True)
        for (heading, _), width in zip(COLUMNS, widths, strict=True):
            table.add_column(heading, width=width, key=heading or "section")
        self._cells = {}
        return True

    # -- reading ----------------------------------------------------------------------------

    def action_refresh(self) -> None:
        self._load(self.selected_id())

    @work(thread=True, exclusive=True, group="board")
    def _load(self, selected: int | None) -> None:
        try:
            board = self.desk.board(self.order)
            chosen = selected
            if chosen is None and board.rows:
                chosen = board.rows[0].item.id
            detail = self._read_detail(chosen)
        except WrightyError as error:
            self.call_from_thread(self._say, f"wrighty: {error}", error=True)
            return
        if not get_current_worker().is_cancelled:  # a later read has taken its place
            self.call_from_thread(self._show_board, board, detail)

    def _read_detail(self, item_id: int | None) -> DetailView | None:
        if item_id is None:
            return None
        try:
            return detail_view(self.desk.look(item_id), self.show)
        except WrightyError:
            return None  # it went away between the board's read and this one

    @work(thread=True, exclusive=True, group="detail")
    def _load_detail(self, item_id: int) -> None:
        detail = self._read_detail(item_id)
        if not get_current_worker().is_cancelled:
            self.call_from_thread(self._detail_read, item_id, detail)

    def _detail_read(self, item_id: int, detail: DetailView | None) -> None:
        """Show a detail that was read, unless the selection has moved on since it was asked
        for (the read for the new selection is on its way)."""
        if item_id == self.selected_id():
            self._show_detail(detail)

    def _show_board(self, board: Board, detail: DetailView | None) -> None:
        self.board = board
        self.query_one("#header", Static).update(
            header_text(board, label=self.desk.label, read_only=self.read_only)
        )
        self.query_one("#side-body", Static).update(side_text(board))
        selected = self.selected_id()
        self.rows = board.rows
        self._fill(selected if selected is not None else detail.item.id if detail else None)
        if detail is not None and detail.item.id == self.selected_id():
            self._show_detail(detail)
        elif self.selected_id() is not None:
            self._load_detail(self.selected_id())
        else:
            self._show_detail(None)

    def _fill(self, selected: int | None) -> None:
        """Put the rows in the table: changed cells only when the rows are the same items in
        the same order; otherwise anew, keeping the selected item selected."""
        table = self.query_one(DataTable)
        now = self.board.checked_at if self.board is not None else None
        if now is None:
            self._set_columns([])
            return
        new = {str(row.item.id): row_cells(row, now) for row in self.shown_rows()}
        row = table.cursor_row
        self._set_columns(list(new.values()))
        if list(new) == list(self._cells):
            for key, cells in new.items():
                for column, (old, cell) in enumerate(zip(self._cells[key], cells, strict=True)):
                    if old != cell:
                        table.update_cell(key, table.ordered_columns[column].key, cell)
            self._cells = new
            return
        with self.batch_update():
            table.clear()
            for key, cells in new.items():
                table.add_row(*cells, key=key)
            self._cells = new
            if selected is not None and str(selected) in new:
                table.move_cursor(row=table.get_row_index(str(selected)))
            elif new:  # it left the board: the row that took its place
                table.move_cursor(row=min(row, len(new) - 1))

    def shown_rows(self) -> list[Row]:
        """The board's rows the search finds (all of them without one)."""
        if not self.search:
            return self.rows
        return [row for row in self.rows if row_matches(row, self.search)]

    def _show_detail(self, detail: DetailView | None) -> None:
        self.detail = detail
        body = self.query_one("#detail-body", Static)
        pane = self.query_one("#detail", VerticalScroll)
        if detail is None:
            body.update(Text("(no item selected)" if not self.shown_rows() else "", style="dim"))
            return
        body.update(detail.log_renderable() if self.show_log else detail.renderable())
        if self.show_log and detail.following:
            pane.scroll_end(animate=False)

    def selected_id(self) -> int | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        row = max(0, min(table.cursor_row, table.row_count - 1))
        key = table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value
        return int(key) if key is not None else None

    def selected_row(self) -> Row | None:
        chosen = self.selected_id()
        return next((row for row in self.rows if row.item.id == chosen), None)

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        if key is not None and (self.detail is None or self.detail.item.id != int(key)):
            self._load_detail(int(key))

    # -- moving -----------------------------------------------------------------------------

    def action_cursor(self, step: int) -> None:
        table = self.query_one(DataTable)
        if table.row_count:
            table.move_cursor(row=max(0, min(table.cursor_row + step, table.row_count - 1)))

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_sort(self) -> None:
        self.order = (
            AttentionOrder.AGE if self.order is AttentionOrder.REASON else AttentionOrder.REASON
        )
        self._say(f"needs attention: {_ORDER_WORDS[self.order]}")
        self.action_refresh()

    def action_toggle_side(self) -> None:
        self.query_one("#side").toggle_class("shown")
        self._fill(self.selected_id())

    def action_search(self) -> None:
        search = self.query_one("#search", Input)
        search.add_class("shown")
        search.focus()

    @on(Input.Changed, "#search")
    def _searched(self, event: Input.Changed) -> None:
        self.search = event.value.strip()
        self._fill(self.selected_id())
        if self.selected_id() is None:
            self._show_detail(None)
        if self.search:
            found = len(self.shown_rows())
            self._say(f"/{self.search}: {found} of {len(self.rows)} items (escape clears it)")
        else:
            self._say("")

    @on(Input.Submitted, "#search")
    def _search_kept(self) -> None:
        self.query_one(DataTable).focus()

    def action_clear_search(self) -> None:
        search = self.query_one("#search", Input)
        if not search.has_class("shown"):
            return
        search.remove_class("shown")
        search.value = ""  # its Changed message shows the whole board again
        self.query_one(DataTable).focus()

    def action_change(self) -> None:
        """`D`: the selected item's change in a pager, read in a thread (git may take a
        while); its refusal on the message line."""
        row = self.selected_row()
        if row is None:
            self._say("no item selected", error=True)
            return
        self._say(f"reading item {row.item.id}'s change…")
        self._read_change(row.item.id)

    @work(thread=True, exclusive=True, group="change")
    def _read_change(self, item_id: int) -> None:
        from wrighty.services.diff import redacted

        try:  # for eyes: its secrets replaced, as `wrighty diff --redact` does
            change = redacted(self.desk.change(item_id, stat=False), self.desk.secrets())
        except WrightyError as error:
            self.call_from_thread(self._say, f"wrighty: {error}", error=True)
            return
        if not get_current_worker().is_cancelled:
            self.call_from_thread(self._show_change, change)

    def _show_change(self, change: Change) -> None:
        self._say("")
        self.push_screen(ChangeScreen(change))

    def action_toggle_log(self) -> None:
        self.show_log = not self.show_log
        self._show_detail(self.detail)

    # -- acting -----------------------------------------------------------------------------

    def action_resume(self) -> None:
        row = self._target()
        if row is not None:
            session = _session_words(self.detail, row)
            self._ask(
                Action(
                    f"Resume item {row.item.id}{session} now? "
                    f"({suggestions.requeue(row.item.id, resume=True)})",
                    lambda: self.desk.requeue(row.item.id, resume=True),
                )
            )

    def action_fresh(self) -> None:
        row = self._target()
        if row is not None:
            self._ask(
                Action(
                    f"Start item {row.item.id} over in a new session, in the same workspace? "
                    f"({suggestions.requeue(row.item.id, resume=False)})",
                    lambda: self.desk.requeue(row.item.id, resume=False),
                )
            )

    def action_cancel_item(self) -> None:
        row = self._target()
        if row is not None:
            self._ask(
                Action(
                    f"Cancel item {row.item.id}? Cancelled is final. "
                    f"({suggestions.cancel(row.item.id)})",
                    lambda: self.desk.cancel(row.item.id),
                )
            )

    def action_release(self) -> None:
        row = self._target()
        if row is not None:
            self._ask(
                Action(
                    f"Take item {row.item.id} from {self._worker_words(row)}? Only when that "
                    f"worker is really gone. ({suggestions.force_release(row.item.id)})",
                    lambda: self.desk.release(row.item.id),
                )
            )

    def action_queue(self) -> None:
        row = self._target()
        if row is not None:
            self._ask(
                Action(
                    f"Queue item {row.item.id}, so that a worker of its agent takes it? "
                    f"({suggestions.queue(row.item.id)})",
                    lambda: self.desk.queue(row.item.id),
                )
            )

    def action_verify(self) -> None:
        row = self._target()
        if row is None:
            return
        item_id = row.item.id
        action = Action(
            f"Run item {item_id}'s checks now, in its workspace here? The inbox goes on while "
            f"they run. ({suggestions.verify(item_id)})",
            lambda: self.desk.verify(item_id),
        )
        self._ask(action, busy=f"running item {item_id}'s checks…")

    def action_handoff(self) -> None:
        row = self._target()
        if row is None:
            return
        item = row.item
        agent = item.agent or self.desk.settings.default_agent
        try:
            offered = [name for name in self.desk.handoff_choices() if name != agent]
        except WrightyError as error:
            self._say(f"wrighty: {error}", error=True)
            return
        if not offered:
            self._say(
                f"no other agent to hand item {item.id} to: none is configured in wrighty.json "
                "with its program found here (`wrighty agents` lists them)",
                error=True,
            )
            return

        def answered(answer: tuple[str, str | None] | None) -> None:
            if answer is None:
                self._say("nothing done")
            else:
                to, note = answer
                self._carry_out(Action("", lambda: self.desk.handoff(item.id, to, note)))

        question = (
            f"Hand item {item.id} from {agent} to another agent: a new session of it takes "
            f"the item up in the same workspace (wrighty handoff {item.id} --to AGENT)."
        )
        self.push_screen(HandoffScreen(Text(printable_line(question)), offered), answered)

    def action_accept(self) -> None:
        row = self._target()
        if row is not None:
            self._ask(
                Action(
                    f"Accept item {row.item.id}: integrate its change and make it done? "
                    f"({suggestions.accept(row.item.id)})",
                    lambda: self.desk.accept(row.item.id),
                )
            )

    def action_accept_all(self) -> None:
        if not self._writable():
            return
        ready = self.desk.ready()
        if not ready.ready:
            self._say(f"wrighty: {nothing_ready(len(ready.waiting))}", error=True)
            return
        ids = [item.id for item in ready.ready]
        self._ask(
            Action(
                f"Accept {ready_words(ready)}? A worker lands each. ({suggestions.accept_all()})",
                lambda: self.desk.accept_ready(ids),
            )
        )

    def action_reject(self) -> None:
        row = self._target()
        if row is None:
            return
        item_id = row.item.id

        def answered(feedback: str | None) -> None:
            if feedback is None:
                self._say("nothing done")
            else:
                self._carry_out(Action("", lambda: self.desk.reject(item_id, feedback)))

        question = f"Reject item {item_id} and send it back to its agent with your feedback:"
        self.push_screen(FeedbackScreen(Text(printable_line(question))), answered)

    def action_reap(self) -> None:
        if self._writable():
            self._ask(
                Action(
                    f"Settle every running item whose lease has expired? ({suggestions.reap()})",
                    self.desk.reap,
                )
            )

    def action_priority(self, step: int) -> None:
        row = self._target()
        if row is None:
            return
        wanted = row.item.priority + step
        if wanted not in PRIORITIES:
            edge = "highest" if step < 0 else "lowest"
            self._say(
                f"item {row.item.id} is {priority_name(row.item.priority)} already, the {edge}",
                error=True,
            )
            return
        self._carry_out(Action("", lambda: self.desk.set_priority(row.item.id, wanted)))

    def _writable(self) -> bool:
        if self.read_only:
            self._say(READ_ONLY_REFUSAL, error=True)
        return not self.read_only

    def _target(self) -> Row | None:
        """The selected row, when acting is allowed and an item is selected."""
        if not self._writable():
            return None
        row = self.selected_row()
        if row is None:
            self._say("no item selected", error=True)
        return row

    def _worker_words(self, row: Row) -> str:
        worker = row.item.claimed_by
        if worker is None:
            return "its worker"
        views = self.board.report.workers if self.board is not None else []
        view = next((v for v in views if v.row.worker_id == worker), None)
        if view is None:
            return f"worker {worker} (not registered)"
        state = "live" if view.liveness is Liveness.LIVE else str(view.liveness)
        return f"worker {worker} ({state}, heartbeat {view.heartbeat_age_seconds:.0f}s ago)"

    def _ask(self, action: Action, *, busy: str | None = None) -> None:
        """Ask ``action``'s question; carry it out on a yes: here, or, with ``busy`` (what
        the message line says meanwhile), in a thread, for an action that may take long."""

        def answered(yes: bool | None) -> None:
            if not yes:
                self._say("nothing done")
            elif busy is None:
                self._carry_out(action)
            else:
                self._say(busy)
                self._carry_out_aside(action)

        self.push_screen(ConfirmScreen(Text(printable_line(action.question))), answered)

    def _carry_out(self, action: Action) -> None:
        try:
            said = action.run()
        except WrightyError as error:
            self._acted(f"wrighty: {error}", error=True)
        else:
            self._acted(said)

    @work(thread=True, group="act")
    def _carry_out_aside(self, action: Action) -> None:
        try:
            said = action.run()
        except WrightyError as error:
            self.call_from_thread(self._acted, f"wrighty: {error}", error=True)
        else:
            self.call_from_thread(self._acted, said)

    def _acted(self, said: str, *, error: bool = False) -> None:
        self._say(said, error=error)
        self.detail = None  # read again: the item moved, or its command said why not
        self.action_refresh()

    def _say(self, message: str, *, error: bool = False) -> None:
        style = "bold red" if error else "bold green"
        self.query_one("#message", Static).update(Text(printable_line(message), style=style))


_ORDER_WORDS = {
    AttentionOrder.REASON: "grouped by reason code",
    AttentionOrder.AGE: "longest waiting first",
}


def _session_words(detail: DetailView | None, row: Row) -> str:
    if row.item.state is ItemState.RUNNING or detail is None or detail.item.id != row.item.id:
        return ""
    session = detail.session
    return f"'s session {session}" if session else ""
