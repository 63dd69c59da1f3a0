"""The machine-readable output: the JSON documents of docs/json.md and
schemas/status.schema.json, and the Prometheus text of `wrighty status --format prometheus`.

No rich here: `--json` output is plain text, so a command that prints JSON does not load the
terminal rendering. Nothing in the status documents reads an item's body, a prompt, an
environment value or the store's address: only counts, times, worker identities and the
provider circuits (their names and the one-line reason a worker wrote).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

from wrighty.domain.decisions import USAGE_CLASSES, USAGE_RETRY_FRESH
from wrighty.domain.health import oldest_wait_seconds
from wrighty.domain.model import Change, Event, Item, Run, Session
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.text import json_printable, printable_line
from wrighty.domain.times import rfc3339

if TYPE_CHECKING:
    from wrighty.agents import AgentInfo
    from wrighty.domain.classify import Classification
    from wrighty.services.circuits import CircuitView
    from wrighty.services.items import ItemDetail, WaitingItem
    from wrighty.services.status import StatusReport, WorkerView


def print_json(document: object) -> None:
    """``document`` on standard output as indented JSON, unsafe characters escaped."""
    typer.echo(json_printable(json.dumps(document, indent=2, ensure_ascii=False)))


def item_summary_json(item: Item) -> dict[str, Any]:
    return {
        "id": item.id,
        "title": item.title,
        "state": item.state.value,
        "agent": item.agent,
        "generation": item.generation,
        "reason_code": item.reason_code,
        "queued_at": rfc3339(item.queued_at),
        "not_before": rfc3339(item.not_before),
        "created_at": rfc3339(item.created_at),
        "updated_at": rfc3339(item.updated_at),
    }


def session_json(session: Session, *, resumable: bool) -> dict[str, Any]:
    return {
        "vendor": session.vendor,
        "session_id": session.session_id,
        "workspace": session.workspace,
        "installation_id": session.installation_id,
        "resumable": resumable,
    }


def run_json(run: Run) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "attempt": run.attempt,
        "kind": run.kind.value,
        "generation": run.generation,
        "started_at": rfc3339(run.started_at),
        "ended_at": rfc3339(run.ended_at),
        "outcome_class": run.outcome_class.value if run.outcome_class else None,
        "confidence": run.confidence.value if run.confidence else None,
        "exit_code": run.exit_code,
        "signal": run.signal,
        "session_id": run.session_id,
        "diagnostic": run.diagnostic,
    }


def event_json(event: Event) -> dict[str, Any]:
    return {
        "at": rfc3339(event.at),
        "actor": event.actor,
        "generation": event.generation,
        "from_state": event.from_state.value if event.from_state else None,
        "to_state": event.to_state.value,
        "reason_code": event.reason_code,
        "reason": event.reason,
    }


def reaped_json(change: Change) -> dict[str, Any]:
    """One item the reaper settled: where it went and why."""
    return {
        "id": change.after.id,
        "generation": change.before.generation,
        "from_state": change.before.state.value,
        "to_state": change.after.state.value,
        "reason_code": change.after.reason_code,
        "reason": change.after.reason,
        "lease_expired_at": rfc3339(change.before.lease_expires_at),
        "worker_id": change.before.claimed_by,
    }


CRASH_CLASSES = frozenset({OutcomeClass.PROCESS_CRASH})


def _retry_json(
    detail: ItemDetail,
    retries: int,
    classes: frozenset[OutcomeClass],
    codes: frozenset[str],
    max_attempts: int | None,
) -> tuple[dict[str, Any], Run | None] | None:
    """Where the item stands under one retry policy, and its last run of ``classes``; None
    when it never had one nor a retry."""
    item = detail.item
    matching = [run for run in detail.runs if run.outcome_class in classes]
    last = matching[-1] if matching else None
    if last is None and retries == 0:
        return None
    scheduled = item.state is ItemState.RETRY_SCHEDULED and item.reason_code in codes
    standing: dict[str, Any] = {
        "retries": retries,
        "max_attempts": max_attempts,
        "next_due": rfc3339(item.not_before) if scheduled else None,
    }
    return standing, last


def crash_retry_json(detail: ItemDetail, max_attempts: int | None) -> dict[str, Any] | None:
    """Where the item stands under worker.processCrash; None when it never crashed."""
    found = _retry_json(
        detail, detail.item.crash_retries, CRASH_CLASSES, frozenset({"process-crash"}), max_attempts
    )
    if found is None:
        return None
    standing, last = found
    return {
        **standing,
        "last_crash": None
        if last is None
        else {
            "run_id": last.run_id,
            "ended_at": rfc3339(last.ended_at),
            "exit_code": last.exit_code,
            "signal": last.signal,
            "summary": _first_line(last),
        },
    }


# The reason codes a usage retry waits with (domain/decisions._after_usage).
_USAGE_RETRY_CODES = frozenset({*(cls.value for cls in USAGE_CLASSES), USAGE_RETRY_FRESH})


def usage_retry_json(detail: ItemDetail, max_attempts: int | None) -> dict[str, Any] | None:
    """Where the item stands under worker.usageFailure; None when no provider refused it."""
    found = _retry_json(
        detail, detail.item.usage_retries, USAGE_CLASSES, _USAGE_RETRY_CODES, max_attempts
    )
    if found is None:
        return None
    standing, last = found
    return {
        **standing,
        "last_refusal": None
        if last is None
        else {
            "run_id": last.run_id,
            "ended_at": rfc3339(last.ended_at),
            "outcome_class": last.outcome_class.value if last.outcome_class else None,
            "summary": _first_line(last),
        },
    }


def _first_line(run: Run) -> str:
    return (run.diagnostic or "").split("\n", 1)[0]


def item_detail_json(
    detail: ItemDetail,
    *,
    resumable: bool,
    max_attempts: int | None = None,
    usage_max_attempts: int | None = None,
) -> dict[str, Any]:
    item = detail.item
    return {
        **item_summary_json(item),
        "body": item.body,
        "timeout_seconds": item.timeout_seconds,
        "workspace": item.workspace,
        "claimed_by": item.claimed_by,
        "lease_expires_at": rfc3339(item.lease_expires_at),
        "reason": item.reason,
        "next_action": item.next_action,
        "crash_retries": item.crash_retries,
        "crash_retry": crash_retry_json(detail, max_attempts),
        "usage_retries": item.usage_retries,
        "usage_retry": usage_retry_json(detail, usage_max_attempts),
        "requeues": item.requeues,
        "session": session_json(detail.session, resumable=resumable) if detail.session else None,
        "runs": [run_json(run) for run in detail.runs],
        "events": [event_json(event) for event in detail.events],
    }


def waiting_item_json(entry: WaitingItem) -> dict[str, Any]:
    """An item summary with since when it has needed attention and how many runs it had."""
    return {
        **item_summary_json(entry.item),
        "since": rfc3339(entry.since),
        "attempts": entry.attempts,
    }


def agent_json(info: AgentInfo, check: Classification | None) -> dict[str, Any]:
    plan = info.plan
    return {
        "name": plan.name,
        "adapter": plan.adapter,
        "executable": plan.executable,
        "installed": info.path is not None,
        "path": info.path,
        "version": info.version,
        "permission": plan.permission if plan.vendor else None,
        "permission_flags": list(plan.permission_flags()),
        "resume": plan.can_resume,
        "check": None
        if check is None
        else {
            "outcome_class": check.outcome_class.value,
            "confidence": check.confidence.value,
            "summary": check.summary,
        },
    }


# -- status -----------------------------------------------------------------------------------


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


def circuit_json(view: CircuitView) -> dict[str, Any]:
    """One provider circuit, as `wrighty providers --json` lists it."""
    circuit = view.circuit
    return {
        "name": circuit.name,
        "state": view.state.value,
        "opened_at": rfc3339(circuit.opened_at),
        "until": rfc3339(circuit.until),
        "reason": circuit.reason,
        "failures": circuit.failures,
        "probe": None
        if circuit.probe_by is None
        else {
            "worker_id": circuit.probe_by,
            "item_id": circuit.probe_item,
            "expires_at": rfc3339(circuit.probe_expires_at),
            "running": circuit.probe_running,
            "held": view.probe_held,
        },
    }


def status_circuit_json(view: CircuitView) -> dict[str, Any]:
    """One provider circuit in `wrighty status --json`."""
    circuit = view.circuit
    return {
        "name": circuit.name,
        "state": view.state.value,
        "until": rfc3339(circuit.until),
        "reason": circuit.reason,
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
        "open_circuits": report.open_circuits,
        "circuits": [status_circuit_json(view) for view in report.circuits],
        "thresholds": {
            "max_queue_wait_seconds": thresholds.max_queue_wait_seconds,
            "min_workers": thresholds.min_workers,
            "worker_max_age_seconds": report.worker_max_age_seconds,
            "max_expired_leases": thresholds.max_expired_leases,
            "max_needs_attention": thresholds.max_needs_attention,
            "max_open_circuits": thresholds.max_open_circuits,
        },
        "problems": [
            {"check": p.check, "value": p.value, "limit": p.limit, "message": p.message}
            for p in report.problems
        ],
        "warnings": [{"check": c.check, "message": c.message} for c in report.concerns],
    }


PROBLEM_CHECKS = (
    "max_queue_wait",
    "min_workers",
    "max_expired_leases",
    "max_needs_attention",
    "max_open_circuits",
)
WARNING_CHECKS = ("expired_leases", "no_live_worker", "dead_workers", "stale_workers")


def _label_value(text: str) -> str:
    """Outside text as a Prometheus label value: unsafe characters as their visible escapes
    (`printable_line`, so no newline is left), then backslash and double quote escaped as the
    exposition format reads them."""
    return printable_line(text).replace("\\", "\\\\").replace('"', '\\"')


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
        ("open_provider_circuits", "Provider circuits that are open or half-open.",
         "open_circuits"),
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
    _metric(
        lines,
        "provider_circuit_open",
        "gauge",
        "1 while a provider circuit is open or half-open, else 0, by circuit.",
    )
    for view in report.circuits:
        lines.append(
            f'wrighty_provider_circuit_open{{name="{_label_value(view.name)}"}} {int(view.shut)}'
        )
    _metric(lines, "problems", "gauge", "Health checks that failed, by check.")
    failed = {p.check for p in report.problems}
    for check in PROBLEM_CHECKS:
        lines.append(f'wrighty_problems{{check="{check}"}} {int(check in failed)}')
    _metric(lines, "warnings", "gauge", "Warnings (no threshold set for them), by check.")
    raised = {c.check for c in report.concerns}
    for check in WARNING_CHECKS:
        lines.append(f'wrighty_warnings{{check="{check}"}} {int(check in raised)}')
    return "\n".join(lines) + "\n"
