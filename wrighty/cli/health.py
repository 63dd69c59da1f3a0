"""`wrighty status` and `wrighty workers`: the JSON document (schemas/status.schema.json), the
Prometheus text format, and the terminal views. Nothing here reads an item's body, a prompt,
an environment value or the store's address: only counts, times and worker identities."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from wrighty.cli.render import outside, styled_state
from wrighty.domain.health import oldest_wait_seconds
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339
from wrighty.services import StatusReport, WorkerView


def worker_json(view: WorkerView) -> dict[str, Any]:
    row = view.row
    return {
        "worker_id": row.worker_id,
        "label": row.label,
        "installation_id": row.installation_id,
        "pid": row.pid,
        "version": row.version,
        "state": row.state.value,
        "items": list(row.items),
        "started_at": rfc3339(row.started_at),
        "last_heartbeat_at": rfc3339(row.last_heartbeat_at),
        "heartbeat_age_seconds": round(view.heartbeat_age_seconds, 3),
        "liveness": view.liveness.value,
    }


def status_json(report: StatusReport) -> dict[str, Any]:
    figures, thresholds = report.figures, report.thresholds
    wait = oldest_wait_seconds(figures, report.checked_at)
    return {
        "healthy": report.healthy,
        "checked_at": rfc3339(report.checked_at),
        "counts": {state.value: figures.counts.get(state, 0) for state in ItemState},
        "waiting": figures.waiting,
        "oldest_queue_wait_seconds": None if wait is None else round(wait, 3),
        "unknown_queue_wait": figures.unknown_queue_wait,
        "expired_leases": figures.expired_leases,
        "live_workers": report.live_workers,
        "workers": [worker_json(view) for view in report.workers],
        "retry_scheduled_next_due": rfc3339(figures.retry_next_due),
        "thresholds": {
            "max_queue_wait_seconds": thresholds.max_queue_wait_seconds,
            "min_workers": thresholds.min_workers,
            "worker_max_age_seconds": report.worker_max_age_seconds,
            "max_expired_leases": thresholds.max_expired_leases,
            "max_needs_attention": thresholds.max_needs_attention,
        },
        "problems": [
            {"check": p.check, "value": p.value, "limit": p.limit, "message": p.message}
            for p in report.problems
        ],
        "warnings": [{"check": c.check, "message": c.message} for c in report.concerns],
    }


WARNING_CHECKS = ("expired_leases", "no_live_worker", "dead_workers", "stale_workers")


def _metric(lines: list[str], name: str, kind: str, help_text: str) -> None:
    lines.append(f"# HELP wrighty_{name} {help_text}")
    lines.append(f"# TYPE wrighty_{name} {kind}")


def status_prometheus(report: StatusReport) -> str:
    """The same figures in the Prometheus text exposition format (version 0.0.4)."""
    document = status_json(report)
    lines: list[str] = []
    _metric(lines, "healthy", "gauge", "1 when no health threshold failed, else 0.")
    lines.append(f"wrighty_healthy {int(report.healthy)}")
    _metric(lines, "items", "gauge", "Items by state.")
    for state, count in document["counts"].items():
        lines.append(f'wrighty_items{{state="{state}"}} {count}')
    gauges = (
        ("waiting_items", "Items a worker could take now (queued, or a due retry).", "waiting"),
        (
            "oldest_queue_wait_seconds",
            "How long the longest-waiting item has waited (NaN when none waits).",
            "oldest_queue_wait_seconds",
        ),
        ("unknown_queue_wait_items", "Waiting items whose queue entry time is unknown.",
         "unknown_queue_wait"),
        ("expired_leases", "Running items whose lease has expired.", "expired_leases"),
        ("live_workers", "Workers with a recent heartbeat.", "live_workers"),
    )  # fmt: skip
    for name, help_text, key in gauges:
        _metric(lines, name, "gauge", help_text)
        value = document[key]
        lines.append(f"wrighty_{name} {'NaN' if value is None else value}")
    _metric(
        lines,
        "retry_scheduled_next_due_timestamp_seconds",
        "gauge",
        "Unix time of the earliest scheduled retry (NaN when none is scheduled).",
    )
    due = report.figures.retry_next_due
    lines.append(
        f"wrighty_retry_scheduled_next_due_timestamp_seconds {due.timestamp() if due else 'NaN'}"
    )
    _metric(lines, "problems", "gauge", "Health checks that failed, by check.")
    failed = {p.check for p in report.problems}
    for check in ("max_queue_wait", "min_workers", "max_expired_leases", "max_needs_attention"):
        lines.append(f'wrighty_problems{{check="{check}"}} {int(check in failed)}')
    _metric(lines, "warnings", "gauge", "Warnings (no threshold set for them), by check.")
    raised = {c.check for c in report.concerns}
    for check in WARNING_CHECKS:
        lines.append(f'wrighty_warnings{{check="{check}"}} {int(check in raised)}')
    return "\n".join(lines) + "\n"


def workers_table(views: list[WorkerView]) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("WORKER", "LABEL", "INSTALLATION", "PID", "STATE", "ITEMS", "HEARTBEAT",
                   "LIVENESS"):  # fmt: skip
        table.add_column(column)
    styles = {"live": "green", "stale": "yellow", "dead": "red"}
    for view in views:
        row = view.row
        table.add_row(
            outside(row.worker_id),
            outside(row.label or "-"),
            outside(row.installation_id),
            str(row.pid),
            row.state.value,
            ",".join(str(item) for item in row.items) or "-",
            f"{view.heartbeat_age_seconds:.0f} s ago",
            Text(view.liveness.value, style=styles[view.liveness.value]),
        )
    return table


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
    problems = [outside(f"  problem: {p['message']}", style="red") for p in document["problems"]]
    warnings = [outside(f"  warning: {c['message']}", style="yellow") for c in document["warnings"]]
    parts: list[Text | Table] = [*lines, *problems, *warnings]
    if report.workers:
        parts.append(workers_table(report.workers))
    return Group(*parts)


def _verdict(report: StatusReport) -> Text:
    """Healthy only when thresholds were set and all of them pass: with none set, nothing was
    checked, and a quiet registry proves nothing."""
    if not report.healthy:
        return Text("unhealthy", style="bold red")
    if not report.thresholds.any_set:
        return Text("no thresholds set", style="bold yellow")
    return Text("healthy", style="bold green")


WATCH_INTERVAL_SECONDS = 2.0


def watch_status(
    console: Console,
    frame: Callable[[], Group],
    *,
    frames: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Redraw ``frame()`` every WATCH_INTERVAL_SECONDS until interrupted (or ``frames``)."""
    shown = 0
    with Live(frame(), console=console, auto_refresh=False) as live:
        while frames is None or shown < frames:
            shown += 1
            sleep(WATCH_INTERVAL_SECONDS)
            live.update(frame(), refresh=True)
