"""Terminal output of items and agents, with rich (the JSON documents: documents.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Unpack

from rich.console import (
    Console,
    ConsoleDimensions,
    ConsoleOptions,
    Group,
    RenderableType,
    RenderResult,
)
from rich.panel import Panel
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from wrighty.domain.durations import format_duration
from wrighty.domain.ledger import reported
from wrighty.domain.model import Event, Item, Run
from wrighty.domain.scheduling import priority_name
from wrighty.domain.suggestions import Standing
from wrighty.domain.text import printable
from wrighty.domain.transitions import is_edit
from wrighty.domain.usage import Usage, cost_text
from wrighty.operator.showing import (
    Known,
    agent_words,
    diagnostic_tail,
    item_fields,
    next_steps,
    verifications,
)
from wrighty.richtext import local_time, outside

if TYPE_CHECKING:
    from wrighty.agents import AgentInfo
    from wrighty.domain.budgets import AgentHold
    from wrighty.domain.classify import Classification
    from wrighty.domain.sandbox import SandboxStatus
    from wrighty.domain.scheduling import Wait
    from wrighty.services.items import ItemDetail, WaitingItem
    from wrighty.services.usage import UsageReport


# Wide enough for any row; rich pads no line to the width, so nothing grows with it.
PIPE_WIDTH = 1_000_000


class OutputConsole(Console):
    """A console that, writing to a pipe or a file, never wraps or cuts a line: each row is
    one whole line for grep and scripts. On a terminal, tables fit the window."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        return size if self.is_terminal else ConsoleDimensions(PIPE_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self.width, self.height = new_size


class Trimmed:
    """``renderable`` with every line ending at its last character: a table pads each cell to
    its column's widest, so without this one long reason in a last column makes every row of
    the table that long."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in console.render_lines(self.renderable, options, pad=False):
            kept = list(line)
            while kept and not kept[-1].control and not kept[-1].text.rstrip(" "):
                kept.pop()
            if kept and not kept[-1].control:
                last = kept[-1]
                kept[-1] = Segment(last.text.rstrip(" "), last.style)
            yield from kept
            yield Segment.line()


_STATE_STYLES = {
    "todo": "dim",
    "queued": "cyan",
    "running": "bold blue",
    "retry-scheduled": "yellow",
    "needs-attention": "bold red",
    "review": "bold green",
    "landing": "green",
    "done": "green",
    "cancelled": "dim",
}


def styled_state(state: str) -> Text:
    return Text(state, style=_STATE_STYLES.get(state, ""))


def items_table(
    items: list[Item],
    verified: Mapping[int, bool] | None = None,
    *,
    default_agent: str | None = None,
) -> Table:
    """`wrighty list`'s table; a CHECKS column (the latest verification's outcome) when a
    listed item has been verified. An item without an agent of its own names the default
    one, as `show` does (``default_agent``: worker.defaultAgent)."""
    verified = verified or {}
    with_checks = any(item.id in verified for item in items)
    columns = ["ID", "STATE", "PRI", "AGENT", "TITLE", "UPDATED", "REASON"]
    if with_checks:
        columns.insert(-1, "CHECKS")
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in columns:
        table.add_column(column, no_wrap=column != "TITLE", overflow="fold")
    for item in items:
        cells: list[RenderableType] = [
            str(item.id),
            styled_state(item.state.value),
            priority_name(item.priority),
            outside(agent_words(item, default_agent)),
            outside(item.title),
            local_time(item.updated_at),
            outside(item.reason_code or ""),
        ]
        if with_checks:
            found = verified.get(item.id)
            word = "-" if found is None else Text("passed" if found else "failed")
            if isinstance(word, Text):
                word.stylize("green" if found else "red")
            cells.insert(-1, word)
        table.add_row(*cells)
    return table


def held_lines(items: list[Item], holds: dict[int, AgentHold]) -> list[Text]:
    """Below `wrighty list`: the listed items whose agent's budget for the day is spent, one
    line per agent, with why."""
    by_agent: dict[str, tuple[AgentHold, list[int]]] = {}
    for item in items:
        hold = holds.get(item.id)
        if hold is not None:
            by_agent.setdefault(hold.agent, (hold, []))[1].append(item.id)
    lines = []
    for hold, ids in by_agent.values():
        which = ", ".join(str(item_id) for item_id in ids)
        line = Text(f"held: item{'s' if len(ids) > 1 else ''} {which}: ", style="yellow")
        line.append_text(outside(hold.reason()))
        lines.append(line)
    return lines


_WAIT_STYLES = {"after": "cyan", "blocked": "bold red", "held": "yellow"}


def wait_lines(items: list[Item], waits: Mapping[int, Wait]) -> list[Text]:
    """Below `wrighty list`: each listed item that waits although it could be claimed, with
    what for (the items it comes after, a blocked one, a concurrency limit)."""
    lines = []
    for item in items:
        wait = waits.get(item.id)
        if wait is not None:
            line = Text(f"item {item.id} ", style=_WAIT_STYLES[wait.kind])
            line.append_text(outside(wait.reason))
            lines.append(line)
    return lines


def attention_table(entries: list[WaitingItem]) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("ID", "TITLE", "REASON", "SINCE", "ATTEMPTS"):
        table.add_column(column, no_wrap=column != "TITLE", overflow="fold")
    for entry in entries:
        table.add_row(
            str(entry.item.id),
            outside(entry.item.title),
            outside(entry.item.reason_code or "-"),
            local_time(entry.since),
            str(entry.attempts),
        )
    return table


# -- usage (docs/usage.md#where-to-look) ------------------------------------------------------


def _run_usage_cells(run: Run) -> tuple[str, str]:
    usage = run.usage
    if not reported(usage):
        return "-", "-"
    partial = "" if usage.final else " (partial)"
    return f"{usage.tokens:,}{partial}", cost_text(usage)


def usage_table(report: UsageReport) -> Table:
    """`wrighty usage`: one row per group, and the total."""
    table = Table(box=None, pad_edge=False, header_style="bold", show_footer=True)
    heading = {"agent": "AGENT", "day": "DAY", "item": "ITEM"}[report.by]
    total = report.total
    columns = (
        (heading, "total"),
        ("RUNS", str(total.runs)),
        *zip(
            ("INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "TOKENS"),
            _token_cells(total.usage),
            strict=True,
        ),
        ("COST", cost_text(total.usage)),
    )
    for index, (name, footer) in enumerate(columns):
        table.add_column(
            name, footer=footer, justify="left" if index == 0 else "right", no_wrap=True
        )
    for key, group in report.groups:
        table.add_row(
            outside(str(key)), str(group.runs), *_token_cells(group.usage), cost_text(group.usage)
        )
    return table


def _token_cells(usage: Usage) -> tuple[str, ...]:
    return tuple(
        f"{count:,}"
        for count in (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.tokens,
        )
    )


def print_item_detail(
    console: Console,
    detail: ItemDetail,
    standing: Standing,
    *,
    change_stat: str | None = None,
    **known: Unpack[Known],
) -> None:
    """`show`'s text: its fields as `operator/showing.item_fields` gives them;
    ``change_stat``: git's stat of its change against its base, shown for an item in review."""
    item = detail.item
    heading = Text(f"Item {item.id}  ", style="bold")
    heading.append_text(styled_state(item.state.value))
    heading.append(f"  generation {item.generation}", style="dim")
    console.print(heading)
    console.print(outside(item.title))
    fields = item_fields(detail, standing, **known)
    # Every label ends in at least one space, however long: a label never runs into its value.
    width = max(LABEL_WIDTH, *(len(label) + 1 for label, _ in fields))
    for label, value in fields:
        line = Text(f"  {label:<{width}}", style="dim")
        line.append_text(outside(value))  # every value holds text from the store
        console.print(line)
    _print_next_steps(console, detail, standing)
    _print_runs(console, detail.runs)
    _print_change(console, change_stat)
    _print_checks(console, detail)
    _print_diagnostic_tail(console, detail.runs)
    _print_events(console, detail.events)
    if item.body:
        console.print(Text("Task", style="bold"))
        console.print(Text(printable(item.body)), soft_wrap=True)


LABEL_WIDTH = 11


def _print_next_steps(console: Console, detail: ItemDetail, standing: Standing) -> None:
    """A panel: why the item stands where it does and the commands that move it on (none when
    no command is due)."""
    steps = next_steps(detail, standing)
    if steps is None:
        return
    parts: list[RenderableType] = [outside(line) for line in steps.why]
    if steps.note is not None:
        parts.append(Text(steps.note, style="dim"))
    parts += [Text(""), Text("Next:", style="bold")]
    for suggestion in steps.suggestions:
        # The command alone on its line, so that the line pastes into any shell as it is.
        parts += [Text(f"  {suggestion.command}"), Text(f"      {suggestion.purpose}", style="dim")]
    title = Text(steps.title, style=_STATE_STYLES.get(detail.item.state.value, ""))
    console.print(Panel(Group(*parts), title=title, title_align="left", expand=False))


def _run_duration(run: Run) -> str:
    if run.ended_at is None:
        return "(running)"
    seconds = max(0.0, (run.ended_at - run.started_at).total_seconds())
    return f"{seconds:.1f}s" if seconds < 10 else format_duration(round(seconds))


def _print_runs(console: Console, runs: list[Run]) -> None:
    if not runs:
        return
    # One space between columns, so the seven fit in 80 columns.
    table = Table(
        title="Runs",
        title_justify="left",
        box=None,
        header_style="bold",
        pad_edge=False,
        collapse_padding=True,
    )
    # RUN is the attempt number, as `wrighty logs --run N` takes it.
    for column in ("RUN", "KIND", "STARTED", "DURATION"):
        table.add_column(column, no_wrap=True)
    table.add_column("CLASS", overflow="fold")
    table.add_column("EXIT/SIGNAL", no_wrap=True)
    table.add_column("CONFIDENCE", overflow="fold")
    # What each run spent, when any run reported it.
    with_usage = any(reported(run.usage) for run in runs)
    # Which agent ran each run, once the item was handed from one to another.
    with_agents = len({run.agent for run in runs}) > 1
    if with_agents:
        table.add_column("AGENT", overflow="fold")
    if with_usage:
        table.add_column("TOKENS", no_wrap=True, justify="right")
        table.add_column("COST", no_wrap=True, justify="right")
    from wrighty.domain.classify import signal_name  # `show`'s runs, not `list`'s table

    for run in runs:
        if run.signal is not None:
            exit_text = signal_name(run.signal)
        else:
            exit_text = "-" if run.exit_code is None else str(run.exit_code)
        cells: list[str | Text] = [
            str(run.attempt),
            run.kind.value,
            local_time(run.started_at),
            _run_duration(run),
            run.outcome_class.value if run.outcome_class else "(running)",
            exit_text,
            run.confidence.value if run.confidence else "-",
        ]
        if with_agents:
            cells.append(outside(run.agent or "-"))  # read back from the store: text
        if with_usage:
            cells += _run_usage_cells(run)
        table.add_row(*cells)
    console.print(table)


def _print_change(console: Console, stat: str | None) -> None:
    """The item's change as git's stat gives it (file names are text from outside)."""
    if not stat:
        return
    console.print(Text("Change against its base", style="bold"))
    for line in stat.splitlines():
        console.print(outside(f"  {line}"), soft_wrap=True)


def _print_checks(console: Console, detail: ItemDetail) -> None:
    """Each verification, oldest first: which run it verified (or that it ran by hand), then
    one line per check; the failing checks of the latest one with the end of their output."""
    shown = verifications(detail)
    if not shown:
        return
    console.print(Text("Checks", style="bold"))
    for verification in shown:
        console.print(outside(f"  {verification.heading}", style="dim"))
        for line, failed in verification.lines:
            console.print(Text(f"    {line}", style="red" if failed else ""), soft_wrap=True)


def _print_diagnostic_tail(console: Console, runs: list[Run]) -> None:
    """The last lines of the last run's diagnostic, when it has one."""
    tail = diagnostic_tail(runs)
    if tail is None:
        return
    console.print(Text(tail.heading, style="bold"))
    for line in tail.lines:
        console.print(Text(f"  {line}"), soft_wrap=True)


def _print_events(console: Console, events: list[Event]) -> None:
    table = Table(title="History", title_justify="left", box=None, header_style="bold")
    for column in ("AT", "ACTOR", "GEN", "CHANGE", "REASON"):
        table.add_column(column)
    for event in events:
        if is_edit(event):
            change = Text("edited, ")
        else:
            change = Text(f"{event.from_state or 'created'} -> ")
        change.append_text(styled_state(event.to_state.value))
        table.add_row(
            local_time(event.at),
            outside(event.actor),
            str(event.generation),
            change,
            outside(event.reason or event.reason_code or ""),
        )
    console.print(Trimmed(table))


def agents_table(
    rows: list[tuple[AgentInfo, Classification | None, SandboxStatus | None]],
) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    columns = ("AGENT", "ADAPTER", "INSTALLED", "VERSION", "PERMISSION FLAGS", "SANDBOX", "CHECK")
    for column in columns:
        table.add_column(column)
    for info, check, sandbox in rows:
        plan = info.plan
        installed = outside(info.path, style="green") if info.path else Text("no", style="red")
        flags = " ".join(plan.permission_flags()) or "-"
        outcome = "-" if check is None else f"{check.outcome_class} ({check.confidence})"
        table.add_row(
            outside(plan.name),
            outside(plan.adapter),
            installed,
            outside(info.version or "-"),
            outside(flags),
            _sandbox_cell(sandbox),
            outcome,
        )
    return table


def _sandbox_cell(sandbox: SandboxStatus | None) -> Text:
    """``none``, or the sandbox, the setting that chose it and whether it starts here."""
    if sandbox is None:
        return Text("none")
    cell = outside(f"{sandbox.describe()}, {sandbox.setting}:")
    if sandbox.problem is None:
        cell.append(" works" + (" (checked)" if sandbox.checked else ""), style="green")
    else:
        cell.append(" cannot start", style="red")
    return cell
