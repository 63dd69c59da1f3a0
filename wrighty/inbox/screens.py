"""The inbox's screens over its board (docs/inbox.md): the help, the questions an action asks
(yes or no, a rejection's feedback, a handoff's agent and note) and the change in a pager."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, OptionList, Static

from wrighty.inbox.views import change_heading, change_text

if TYPE_CHECKING:
    from wrighty.services.diff import Change

_Answer = TypeVar("_Answer")


HELP = """\
[b]wrighty inbox[/b]: the items that need a person, live
[b]Looking[/b]
  ↑ ↓  j k      select an item (the board); tab: to the detail, to scroll
  l             the detail: `wrighty show`'s text, or the last run's log
  D             its change: `wrighty diff`, in a pager (q closes it)
  /             search the board: id, title or reason (escape clears)
  s  w  g       sort needs attention · side panel · refresh now
[b]Acting on the selected item[/b] (each asks first; not with --read-only)
  e             queue it (todo -> queued)
  r  f          requeue --resume (its session) or --fresh (a new one)
  v             run its checks now (`wrighty verify`)
  h             hand it to another agent, with a note (`wrighty handoff`)
  a  d          in review: accept it, or reject it with your feedback
  A             accept every item in review that is ready (checks passed)
  + -           raise or lower its priority (edit --priority)
  x             release --force: take it from a worker that is gone
  c             cancel it (final)
  R             reap: settle every running item whose lease expired
  ?  this help     q  quit     Press escape to close."""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 78; max-width: 100%; height: auto; max-height: 100%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP, id="help-text")


class Asking(ModalScreen[_Answer]):
    """A question put over the board, and how it may be answered."""

    DEFAULT_CSS = """
    Asking { align: center middle; }
    Asking > Vertical {
        width: 70; max-width: 100%; height: auto;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, question: Text) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, id="question")
            yield from self.answers()

    def answers(self) -> ComposeResult:
        raise NotImplementedError


class ConfirmScreen(Asking[bool]):
    """One question; y confirms, n or escape does not."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def answers(self) -> ComposeResult:
        yield Static(Text("y: yes    n: no", style="bold"), id="answers")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class FeedbackScreen(Asking[str | None]):
    """A rejection's feedback: enter sends the item back with it, escape does not."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "give_up", "No")]

    def answers(self) -> ComposeResult:
        yield Input(placeholder="what the agent is to change", id="feedback")
        yield Static(Text("enter: reject with this feedback    escape: no", style="bold"))

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_give_up(self) -> None:
        self.dismiss(None)


class HandoffScreen(Asking[tuple[str, str | None] | None]):
    """A handoff's agent, among those offered, and its optional note: enter on an agent goes
    to the note, enter there hands the item off; escape does not."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "give_up", "No")]

    def __init__(self, question: Text, agents: list[str]) -> None:
        super().__init__(question)
        self.agents = agents

    def answers(self) -> ComposeResult:
        yield OptionList(*(Text(name) for name in self.agents), id="agents")
        yield Input(placeholder="a note for the new agent (optional)", id="note")
        yield Static(
            Text("↑ ↓: the agent   enter: to the note, then hand off   escape: no", style="bold")
        )

    def on_mount(self) -> None:
        agents = self.query_one(OptionList)
        agents.highlighted = 0
        agents.focus()

    @on(OptionList.OptionSelected)
    def chosen(self) -> None:
        self.query_one("#note", Input).focus()

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        chosen = self.query_one(OptionList).highlighted
        if chosen is not None:
            note = event.value if event.value.strip() else None
            self.dismiss((self.agents[chosen], note))

    def action_give_up(self) -> None:
        self.dismiss(None)


class ChangeScreen(Screen[None]):
    """An item's change (`wrighty diff ID`, its secrets redacted), in a pager: the arrows,
    j k, page up and down, space, home and end scroll it; q or escape closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q,escape", "dismiss", "Close"),
        Binding("j", "scroll('scroll_down')", show=False),
        Binding("k", "scroll('scroll_up')", show=False),
        Binding("space", "scroll('scroll_page_down')", show=False),
        Binding("b", "scroll('scroll_page_up')", show=False),
    ]
    DEFAULT_CSS = """
    ChangeScreen #change-heading { height: 1; padding: 0 1; background: $boost; }
    ChangeScreen #change { height: 1fr; padding: 0 1; }
    """

    def __init__(self, change: Change) -> None:
        super().__init__()
        self.change = change

    def compose(self) -> ComposeResult:
        yield Static(change_heading(self.change), id="change-heading")
        with VerticalScroll(id="change"):
            yield Static(change_text(self.change), id="change-body")

    def on_mount(self) -> None:
        self.query_one("#change", VerticalScroll).focus()

    def action_scroll(self, how: str) -> None:
        getattr(self.query_one("#change", VerticalScroll), how)(animate=False)
