"""The terminal views of `wrighty status`, `wrighty workers`, `wrighty providers` and
`wrighty notify pending`, with rich (their JSON documents: documents.py; the Prometheus text:
prometheus.py). Only counts, times, worker identities, the provider circuits and the
notifications' outbox are shown; a circuit's name and reason, and a notification's error, are
outside text."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from wrighty.cli.render import styled_state
from wrighty.domain.circuits import CircuitState
from wrighty.operator.documents import status_json
from wrighty.operator.sentences import probe_text, spend_text
from wrighty.richtext import local_time, outside
from wrighty.styles import VERDICT_STYLES

if TYPE_CHECKING:
    from wrighty.domain.ledger import AgentSpending, Spending
    from wrighty.domain.outbox import StoredNotice
    from wrighty.services.circuits import CircuitView
    from wrighty.services.status import StatusReport, WorkerView


def workers_table(views: list[WorkerView]) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("WORKER", "LABEL", "AGENT", "INSTALLATION", "PID", "STATE", "ITEMS",
                   "HEARTBEAT", "LIVENESS", "CLOCK"):  # fmt: skip
        table.add_column(column)
    styles = {"live": "green", "stale": "yellow", "dead": "red"}
    for view in views:
        row = view.row
        table.add_row(
            outside(row.worker_id),
            outside(row.label or "-"),
            outside(row.agent or "-"),
            outside(row.installation_id),
            str(row.pid),
            Text("held", style="yellow") if row.held_reason else row.state.value,
            ",".join(str(item) for item in row.items) or "-",
            f"{view.heartbeat_age_seconds:.0f} s ago",
            Text(view.liveness.value, style=styles[view.liveness.value]),
            _clock_text(view),
        )
    return table


def _clock_text(view: WorkerView) -> Text:
    """How far the worker's clock is from the store's (``-``: not measured, on SQLite), in
    yellow when beyond the bound (docs/fleet.md#one-time-for-the-fleet)."""
    offset = view.row.clock_offset_seconds
    if offset is None:
        return Text("-")
    return Text(f"{offset:+.1f} s", style="yellow" if view.clock_skewed else "")


def held_lines(views: list[WorkerView]) -> list[Text]:
    """Why each held worker claims nothing, and what each waiting one waits for (outside
    text, both: they are read back from the store)."""
    lines = []
    for view in views:
        for word, said in (("held", view.row.held_reason), ("waiting", view.row.waiting_for)):
            if said:
                line = Text(f"{word} ", style="yellow")
                line.append_text(outside(f"{view.row.worker_id}: {said}"))
                lines.append(line)
    return lines


_NOTICE_STYLES = {"pending": "yellow", "given-up": "bold red", "delivered": "green"}


def notices_table(notices: list[StoredNotice]) -> Table:
    """The outbox's notifications (`wrighty notify pending`): the last error is outside text,
    and names sinks by their labels."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("ID", "EVENT", "ITEM", "STATE", "ATTEMPTS", "NEXT ATTEMPT", "LAST ERROR"):
        table.add_column(column, no_wrap=column != "LAST ERROR", overflow="fold")
    for stored in notices:
        notice = stored.notice
        table.add_row(
            outside(notice.id),
            outside(notice.event),
            "-" if notice.item_id is None else str(notice.item_id),
            Text(stored.state, style=_NOTICE_STYLES.get(stored.state, "")),
            str(stored.attempts),
            local_time(stored.next_attempt_at) if stored.state == "pending" else "-",
            outside(stored.last_error or "-"),
        )
    return table


_CIRCUIT_STYLES = {
    CircuitState.CLOSED: "green",
    CircuitState.OPEN: "bold red",
    CircuitState.HALF_OPEN: "yellow",
}


def circuit_state(view: CircuitView) -> Text:
    return Text(view.state.value, style=_CIRCUIT_STYLES[view.state])


def providers_table(views: list[CircuitView]) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("NAME", "STATE", "SINCE", "UNTIL", "REASON", "PROBE"):
        table.add_column(column, no_wrap=column != "REASON", overflow="fold")
    for view in views:
        circuit = view.circuit
        table.add_row(
            outside(circuit.name),
            circuit_state(view),
            local_time(circuit.opened_at),
            local_time(circuit.until),
            outside(circuit.reason or "-"),
            probe_text(view),
        )
    return table


def _circuit_line(view: CircuitView) -> Text:
    """A circuit that is not closed, as one line of the status view."""
    circuit = view.circuit
    line = Text("  provider circuit ")
    line.append_text(outside(circuit.name))
    line.append(" ")
    line.append_text(circuit_state(view))
    when = "until" if view.state is CircuitState.OPEN else "since"
    line.append(f" {when} {local_time(circuit.until)}")
    probe = probe_text(view)
    if probe != "-":
        line.append(f", probe {probe}")
    line.append(", reason: ")
    line.append_text(outside(circuit.reason or "-"))
    return line


def _spending_lines(spending: Spending) -> list[Text]:
    """Each agent's spend, its budget for the period, and the hold when that is spent."""
    if not spending.agents:
        return []
    period = spending.period
    lines = [
        Text(f"  budget day {local_time(period.start)} to {local_time(period.end)}", style="dim")
    ]
    for row in spending.agents:
        lines.append(_agent_spend_line(row))
        if row.hold is not None:
            line = Text("  held ", style="bold red")
            line.append_text(outside(row.hold.reason()))
            lines.append(line)
    return lines


def _agent_spend_line(row: AgentSpending) -> Text:
    line = Text("  spend ")
    line.append_text(outside(row.agent))
    line.append(f": budget day {spend_text(row.period)}")
    if not row.limit.unbounded:
        line.append(f" of {row.limit.describe()}")
    line.append(f"; last 24 h {spend_text(row.last_day)}")
    return line


def status_view(report: StatusReport) -> Group:
    """The terminal view of `wrighty status` (and of each `--watch` refresh)."""
    document = status_json(report)
    heading = Text("wrighty status: ", style="bold")
    heading.append_text(_verdict(report))
    heading.append(f"  ({document['checked_at']})", style="dim")
    counts = Text("  ")
    for state, count in document["counts"].items():
        counts.append_text(styled_state(state))
        counts.append(f" {count}   ")
    wait = document["oldest_queue_wait_seconds"]
    lines = [
        heading,
        counts,
        Text(
            f"  waiting {document['waiting']}, oldest wait "
            f"{'-' if wait is None else f'{wait:.0f} s'}, unknown waits "
            f"{document['unknown_queue_wait']}, expired leases {document['expired_leases']}, "
            f"next retry {document['retry_scheduled_next_due'] or '-'}"
        ),
        Text(f"  live workers {document['live_workers']} of {len(report.workers)} registered"),
    ]
    if document["waiting_on_dependencies"]:
        lines.append(
            Text(
                f"  waiting for the items they come after {document['waiting_on_dependencies']},"
                f" blocked {document['blocked']}"
            )
        )
    in_review = document["counts"]["review"]
    if in_review or report.thresholds.max_review_wait_seconds:
        review_wait = document["oldest_review_wait_seconds"]
        lines.append(
            Text(
                f"  in review {in_review}, oldest review wait "
                f"{'-' if review_wait is None else f'{review_wait:.0f} s'}"
            )
        )
    landing = document["counts"]["landing"]
    if landing:
        landing_wait = document["oldest_landing_wait_seconds"]
        lines.append(
            Text(
                f"  landing {landing}, oldest landing wait "
                f"{'-' if landing_wait is None else f'{landing_wait:.0f} s'}"
            )
        )
    lines += [_circuit_line(view) for view in report.circuits if view.shut]
    outbox = document["notify"]
    if outbox["pending"] or outbox["given_up"] or report.thresholds.max_notify_age_seconds:
        age = outbox["oldest_pending_age_seconds"]
        lines.append(
            Text(
                f"  notifications {outbox['pending']} not delivered yet, oldest "
                f"{'-' if age is None else f'{age:.0f} s'}, given up {outbox['given_up']} "
                "(`wrighty notify pending`)"
            )
        )
    if report.spending is not None:
        lines += _spending_lines(report.spending)
    problems = [outside(f"  problem: {p['message']}", style="red") for p in document["problems"]]
    warnings = [outside(f"  warning: {c['message']}", style="yellow") for c in document["warnings"]]
    parts: list[Text | Table] = [*lines, *problems, *warnings]
    if report.workers:
        parts.append(workers_table(report.workers))
    return Group(*parts)


def _verdict(report: StatusReport) -> Text:
    return Text(report.verdict.value, style=VERDICT_STYLES[report.verdict])


WATCH_INTERVAL_SECONDS = 2.0


def watch_status(
    console: Console,
    frame: Callable[[], Group],
    *,
    frames: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Redraw ``frame()`` every WATCH_INTERVAL_SECONDS until interrupted (or ``frames``)."""
    from rich.live import Live  # for --watch alone

    gc.enable()  # a read command collects no garbage (cli/app.py), but this one runs on
    shown = 0
    with Live(frame(), console=console, auto_refresh=False) as live:
        while frames is None or shown < frames:
            shown += 1
            sleep(WATCH_INTERVAL_SECONDS)
            live.update(frame(), refresh=True)
