"""Terminal output of items and agents, with rich (the JSON documents: documents.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

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

from wrighty.domain.budgets import usage_text
from wrighty.domain.durations import format_duration
from wrighty.domain.ledger import reported
from wrighty.domain.model import Event, Item, Run
from wrighty.domain.scheduling import priority_name
from wrighty.domain.states import TERMINAL_STATES, ItemState
from wrighty.domain.suggestions import Standing, next_commands
from wrighty.domain.text import clip, plural, printable, printable_line
from wrighty.domain.transitions import is_edit
from wrighty.domain.usage import NO_LIMIT, Limit, Usage, cost_text
from wrighty.operator.documents import crash_retry_json, usage_retry_json
from wrighty.richtext import local_time, outside

if TYPE_CHECKING:
    from wrighty.agents import AgentInfo
    from wrighty.domain.budgets import AgentHold
    from wrighty.domain.classify import Classification
    from wrighty.domain.scheduling import Wait
    from wrighty.domain.verify import CheckRecord
    from wrighty.services.circuits import CircuitView
    from wrighty.services.items import ItemDetail, WaitingItem
    from wrighty.services.usage import UsageReport
    from wrighty.services.workspaces import Progress


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
            outside(_agent_words(item, default_agent)),
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


def _scheduling_fields(detail: ItemDetail) -> list[tuple[str, str]]:
    item = detail.item
    fields = [("priority", priority_name(item.priority))]
    if detail.labels:
        fields.append(("labels", ", ".join(detail.labels)))
    if detail.after:
        fields.append(
            (
                "after",
                ", ".join(
                    f"{edge.depends_on} ({edge.state or 'no such item'})" for edge in detail.after
                ),
            )
        )
    if detail.before:
        fields.append(("before", ", ".join(str(later) for later in detail.before)))
    wait = detail.wait
    if wait is not None:
        label = {"after": "waits", "blocked": "blocked", "held": "held"}[wait.kind]
        reason = wait.reason
        for prefix in ("waits ", "blocked: ", "held: "):
            reason = reason.removeprefix(prefix)
        fields.append((label, reason))
    return fields


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


_NOT_HERE = " (not resumable here)"


def _circuit_wait(view: CircuitView) -> str:
    from wrighty.domain.circuits import CircuitState  # for an item a circuit holds

    circuit = view.circuit
    if view.state is CircuitState.OPEN:
        when = f"open until {local_time(circuit.until)}"
    elif view.probe_held and circuit.probe_item is not None:
        when = f"half-open: item {circuit.probe_item} probes the provider first"
    else:
        when = "half-open: the next claim probes the provider"
    because = f" ({circuit.reason})" if circuit.reason else ""
    return f"the provider circuit {circuit.name}, {when}{because}; see `wrighty providers`"


def _retry_fields(
    detail: ItemDetail, crash_max_attempts: int | None, usage_max_attempts: int | None
) -> list[tuple[str, str]]:
    """Where the item stands under each retry policy that it met: "2 of 5, next due ...", and
    the run that used the policy last."""
    policies = (
        ("retries", crash_retry_json(detail, crash_max_attempts), "last_crash", "last crash"),
        ("usage retries", usage_retry_json(detail, usage_max_attempts), "last_refusal",
         "last refusal"),
    )  # fmt: skip
    fields = []
    for label, retry, last_key, last_label in policies:
        if retry is None:
            continue
        of = f" of {retry['max_attempts']}" if retry["max_attempts"] is not None else ""
        due = f", next due {local_time(detail.item.not_before)}" if retry["next_due"] else ""
        fields.append((label, f"{retry['retries']}{of}{due}"))
        if retry[last_key]:
            last = retry[last_key]
            fields.append((last_label, f"{last['summary']} ({last['run_id']})"))
    return fields


# -- usage (docs/usage.md#where-to-look) ------------------------------------------------------


def _usage_fields(
    runs: list[Run], total: Usage, limit: Limit, hold: AgentHold | None
) -> list[tuple[str, str]]:
    """The item's total over its runs, its models, its budget and what is left, and the hold
    on its agent."""
    fields = []
    counted = [run for run in runs if reported(run.usage)]
    if counted:
        partial = "" if total.final else " (partial: a run's final figures are not in)"
        over = f"{len(counted)} run{'' if len(counted) == 1 else 's'}"
        fields.append(("usage", f"{usage_text(total)} over {over}{partial}"))
    if total.models:
        fields.append(("models", ", ".join(total.models)))
    if not limit.unbounded:
        if total.over(limit):
            fields.append(("budget", f"{limit.describe()}, spent"))
        else:
            fields.append(
                ("budget", f"{limit.describe()}, left {limit.left_after(total).describe()}")
            )
    if hold is not None:
        fields.append(("held", hold.reason()))
    return fields


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
    max_attempts: int | None = None,
    usage_max_attempts: int | None = None,
    circuit: CircuitView | None = None,
    total: Usage | None = None,
    limit: Limit = NO_LIMIT,
    hold: AgentHold | None = None,
    default_agent: str | None = None,
    max_fix_turns: int | None = None,
    progress: Progress | None = None,
    change_stat: str | None = None,
) -> None:
    """``default_agent``: the agent of an item that names none (worker.defaultAgent);
    ``max_fix_turns``: its agent's verify.maxFixTurns (None: it has no checks);
    ``progress``: its worktree's commits and uncommitted changes (None: not known here);
    ``change_stat``: git's stat of its change against its base, shown for an item in review."""
    item = detail.item
    heading = Text(f"Item {item.id}  ", style="bold")
    heading.append_text(styled_state(item.state.value))
    heading.append(f"  generation {item.generation}", style="dim")
    console.print(heading)
    console.print(outside(item.title))
    fields: list[tuple[str, str]] = [
        ("agent", _agent_words(item, default_agent)),
        (
            "workspace",
            item.workspace
            or (detail.session.workspace if detail.session else "(chosen at the first run)"),
        ),
        *_branch_fields(detail, progress),
        ("timeout", format_duration(item.timeout_seconds) if item.timeout_seconds else "(default)"),
        ("queued at", local_time(item.queued_at)),
        *_scheduling_fields(detail),
    ]
    if item.not_before:
        fields.append(("not before", local_time(item.not_before)))
    if item.claimed_by:
        fields.append(
            ("claimed by", f"{item.claimed_by} until {local_time(item.lease_expires_at)}")
        )
    if item.reason_code:
        fields.append(("reason", f"{item.reason_code}: {item.reason or ''}".rstrip(": ")))
    if item.next_action:
        fields.append(("next", item.next_action))
    fields += _retry_fields(detail, max_attempts, usage_max_attempts)
    fields += _verify_fields(detail, max_fix_turns)
    fields += _review_fields(item)
    fields += _handoff_fields(item)
    fields += _usage_fields(detail.runs, total or Usage(final=True), limit, hold)
    if circuit is not None:
        fields.append(("waits for", _circuit_wait(circuit)))
    if detail.session:
        session = detail.session
        fields.append(
            (
                "session",
                f"{session.vendor} {session.session_id or '(id unknown)'}"
                + ("" if standing.resumable or item.state in TERMINAL_STATES else _NOT_HERE),
            )
        )
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
SHORT_COMMIT = 12  # the characters of a commit id shown for it


def _branch_fields(detail: ItemDetail, progress: Progress | None) -> list[tuple[str, str]]:
    """The branch the item's session recorded, its base commit, and (when known here) the
    commits made on it since and whether its worktree has uncommitted changes
    (docs/work-product.md)."""
    session = detail.session
    if session is None or (session.branch is None and session.base_commit is None):
        return []
    words = session.branch or "(detached)"
    if session.base_commit is not None:
        words += f" from {session.base_commit[:SHORT_COMMIT]}"
    facts = []
    if progress is not None and progress.ahead is not None:
        ahead = progress.ahead
        facts.append(f"{ahead} {plural(ahead, 'commit', 'commits')} ahead")
    if progress is not None and progress.dirty is not None:
        facts.append("uncommitted changes" if progress.dirty else "nothing uncommitted")
    return [("branch", ", ".join([words, *facts]))]


def _agent_words(item: Item, default_agent: str | None) -> str:
    """The agent that runs the item: its own, or the default one, named (``claude (default)``)."""
    if item.agent:
        return item.agent
    return "(default)" if default_agent is None else f"{default_agent} (default)"


def _print_next_steps(console: Console, detail: ItemDetail, standing: Standing) -> None:
    """A panel: why the item stands where it does and the commands that move it on (none when
    no command is due)."""
    item = detail.item
    suggestions = next_commands(item.id, item.state, standing, reason_code=item.reason_code)
    if not suggestions:
        return
    parts: list[RenderableType] = []
    why = item.reason or item.reason_code
    if why:
        parts.append(outside(why))
    if item.state is ItemState.RUNNING and item.claimed_by:
        parts.append(outside(_running_by(item, standing)))
    if item.state is ItemState.NEEDS_ATTENTION and detail.session and not standing.resumable:
        parts.append(
            Text("no --resume: this installation cannot resume the item's session", style="dim")
        )
    parts += [Text(""), Text("Next:", style="bold")]
    for suggestion in suggestions:
        # The command alone on its line, so that the line pastes into any shell as it is.
        parts += [Text(f"  {suggestion.command}"), Text(f"      {suggestion.purpose}", style="dim")]
    moves = [event for event in detail.events if not is_edit(event)]  # an edit is no move
    since = f" since {local_time(moves[-1].at)}" if moves else ""
    title = Text(f"{item.state}{since}", style=_STATE_STYLES.get(item.state.value, ""))
    console.print(Panel(Group(*parts), title=title, title_align="left", expand=False))


def _running_by(item: Item, standing: Standing) -> str:
    if standing.lease_expired:
        expired = local_time(item.lease_expires_at)
        return (
            f"the claim of worker {item.claimed_by} expired at {expired}: "
            "that worker stopped renewing it (it died, or lost the store)"
        )
    return f"worker {item.claimed_by} holds it until {local_time(item.lease_expires_at)}"


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


DIAGNOSTIC_TAIL_LINES = 10
FEEDBACK_SHOWN_CHARS = 200  # a rejection's feedback, in `show` (all of it: show --json)


def _verify_fields(detail: ItemDetail, max_fix_turns: int | None) -> list[tuple[str, str]]:
    """The checks the item chose (when it chose), whether its latest verification passed,
    and its fix turns (once it has been verified or had one)."""
    item = detail.item
    fields = []
    if item.verify_checks is not None:
        fields.append(("verify", ", ".join(item.verify_checks) or "none (--no-verify)"))
    if detail.verified is not None:
        fields.append(("checks", "passed" if detail.verified else "failed"))
    if item.fix_turns or (detail.checks and max_fix_turns is not None):
        of = f" of {max_fix_turns}" if max_fix_turns is not None else ""
        fields.append(("fix turns", f"{item.fix_turns}{of}"))
    return fields


def _review_fields(item: Item) -> list[tuple[str, str]]:
    """How many times a person rejected the item, and the latest feedback's start."""
    if not item.rejections:
        return []
    feedback = clip(printable_line((item.feedback or "").strip()), FEEDBACK_SHOWN_CHARS)
    return [("rejections", str(item.rejections)), ("feedback", feedback)]


def _handoff_fields(item: Item) -> list[tuple[str, str]]:
    """How many times the item was handed to another agent, and the latest note's start."""
    if not item.handoffs:
        return []
    fields = [("handoffs", str(item.handoffs))]
    if item.handoff_note:
        note = clip(printable_line(" ".join(item.handoff_note.split())), FEEDBACK_SHOWN_CHARS)
        fields.append(("handoff note", note))
    return fields


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
    verifications: dict[str, list[CheckRecord]] = {}
    for record in detail.checks:
        verifications.setdefault(record.verification_id, []).append(record)
    if not verifications:
        return
    from wrighty.operator.sentences import check_lines

    attempts = {run.run_id: run.attempt for run in detail.runs}
    console.print(Text("Checks", style="bold"))
    latest = list(verifications)[-1]
    for verification_id, records in verifications.items():
        first = records[0]
        run_id = first.run_id
        which = "by hand" if run_id is None else f"run {attempts.get(run_id, '?')}"
        heading = f"  {which}, {local_time(first.started_at)}, {first.actor}"
        console.print(outside(heading, style="dim"))
        tail = DIAGNOSTIC_TAIL_LINES if verification_id == latest else 0
        for record in records:
            for line in check_lines(record.evidence, tail_lines=tail):
                style = "" if record.evidence.passed or line.startswith(" ") else "red"
                console.print(Text(f"    {line}", style=style), soft_wrap=True)


def _print_diagnostic_tail(console: Console, runs: list[Run]) -> None:
    """The last lines of the last run's diagnostic, when it has one."""
    if not runs:
        return
    last = max(runs, key=lambda run: run.attempt)
    lines = (last.diagnostic or "").rstrip().splitlines()
    if not lines:
        return
    shown = lines[-DIAGNOSTIC_TAIL_LINES:]
    cut = f", last {len(shown)} of {len(lines)} lines" if len(shown) < len(lines) else ""
    console.print(Text(f"Diagnostic of run {last.attempt}{cut}", style="bold"))
    for line in shown:
        console.print(Text(f"  {printable_line(line)}"), soft_wrap=True)


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


def agents_table(rows: list[tuple[AgentInfo, Classification | None]]) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("AGENT", "ADAPTER", "INSTALLED", "VERSION", "PERMISSION FLAGS", "CHECK"):
        table.add_column(column)
    for info, check in rows:
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
            outcome,
        )
    return table
