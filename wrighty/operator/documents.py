"""The machine-readable output: the JSON documents of docs/json.md and
schemas/status.schema.json (the Prometheus text of `wrighty status --format prometheus` is
prometheus.py's).

No rich here: `--json` output is plain text, so a command that prints JSON does not load the
terminal rendering. Nothing in the status documents reads an item's body, a prompt, an
environment value or the store's address: only counts, times, worker identities and the
provider circuits (their names and the one-line reason a worker wrote).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from wrighty.domain.ledger import reported
from wrighty.domain.model import Change, Dependency, Event, Item, Run, Session
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339

if TYPE_CHECKING:
    from wrighty.agents import AgentInfo
    from wrighty.domain.budgets import AgentHold
    from wrighty.domain.check_evidence import CheckEvidence, CheckRecord
    from wrighty.domain.classify import Classification
    from wrighty.domain.health import VerificationFigures
    from wrighty.domain.ledger import AgentSpending, Spend, Spending
    from wrighty.domain.outbox import OutboxFigures, StoredNotice
    from wrighty.domain.sandbox import SandboxStatus
    from wrighty.domain.scheduling import Wait
    from wrighty.domain.usage import Limit, Usage
    from wrighty.services.circuits import CircuitView
    from wrighty.services.items import ItemDetail, WaitingItem
    from wrighty.services.show import RetryStanding
    from wrighty.services.status import StatusReport, WorkerView
    from wrighty.services.usage import UsageReport


def json_text(document: object, *, indent: int | None = None, ascii_only: bool = False) -> str:
    """``document`` as JSON text, the one way every JSON wrighty prints is written: a number
    that is not finite (NaN, Infinity: not JSON) is written as null, "not known"
    (docs/json.md); json.dumps is told to refuse any that slipped past."""
    return json.dumps(finite(document), indent=indent, ensure_ascii=ascii_only, allow_nan=False)


def finite(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by None, at any depth."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(inner) for key, inner in value.items()}
    if isinstance(value, list | tuple):
        return [finite(inner) for inner in value]
    return value


def item_summary_json(item: Item) -> dict[str, Any]:
    return {
        "id": item.id,
        "title": item.title,
        "state": item.state.value,
        "agent": item.agent,
        "priority": item.priority,
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
        "branch": session.branch,
        "base_commit": session.base_commit,
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
        "agent": run.agent,
        "diagnostic": run.diagnostic,
        "usage": usage_json(run.usage) if reported(run.usage) else None,
    }


def check_json(evidence: CheckEvidence) -> dict[str, Any]:
    """One check's evidence (docs/json.md#checks); its output's end is redacted already."""
    return {
        "name": evidence.name,
        "argv": list(evidence.argv),
        "passed": evidence.passed,
        "exit_code": evidence.exit_code,
        "signal": evidence.signal,
        "timed_out": evidence.timed_out,
        "start_failure": evidence.start_failure,
        "duration_seconds": finite(round(evidence.duration_seconds, 3)),
        "output_tail": evidence.output_tail,
        "fails_on_base": evidence.fails_on_base,
    }


def hand_verifications_json(records: Iterable[CheckRecord]) -> list[dict[str, Any]]:
    """The verifications run by hand (`wrighty verify`), oldest first, each with its checks."""
    found: dict[str, list[CheckRecord]] = {}
    for record in records:
        found.setdefault(record.verification_id, []).append(record)
    return [
        {
            "verification_id": verification_id,
            "actor": checks[0].actor,
            "started_at": rfc3339(checks[0].started_at),
            "passed": all(record.evidence.passed for record in checks),
            "checks": [check_json(record.evidence) for record in checks],
        }
        for verification_id, checks in found.items()
    ]


# -- usage (docs/usage.md#where-to-look) ------------------------------------------------------

# Costs are sums of floats: six decimals (a millionth of a dollar) keep them readable.
COST_DECIMALS = 6


def cost_json(cost: float | None) -> float | None:
    return None if cost is None else round(cost, COST_DECIMALS)


def _tokens_json(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "tokens": usage.tokens,
        "cost_usd": cost_json(usage.cost_usd),
        "cost_source": usage.cost_source if usage.cost_usd is not None else None,
    }


def usage_json(usage: Usage) -> dict[str, Any]:
    """What a run spent, or an item over its runs."""
    return {
        **_tokens_json(usage),
        "models": list(usage.models),
        "turns": usage.turns,
        "api_ms": usage.api_ms,
        "final": usage.final,
    }


def limit_json(limit: Limit) -> dict[str, Any]:
    return {"max_cost_usd": limit.max_cost_usd, "max_tokens": limit.max_tokens}


def budget_json(limit: Limit, spent: Usage) -> dict[str, Any]:
    """A budget, what is left of it after ``spent``, and whether it is spent."""
    left = limit.left_after(spent)
    return {
        **limit_json(limit),
        "left_cost_usd": cost_json(left.max_cost_usd),
        "left_tokens": left.max_tokens,
        "exceeded": not limit.unbounded and spent.over(limit),
    }


def hold_json(hold: AgentHold | None) -> dict[str, Any] | None:
    """Why a waiting item's agent gets no new run: its period budget is spent."""
    if hold is None:
        return None
    return {"agent": hold.agent, "until": rfc3339(hold.until), "reason": hold.reason()}


def spend_json(spend: Spend) -> dict[str, Any]:
    """A group of runs: how many, and what they spent together."""
    return {
        "runs": spend.runs,
        **_tokens_json(spend.usage),
        "runs_without_cost": spend.runs_without_cost,
    }


_GROUP_KEYS = {"agent": "agent", "day": "day", "item": "item_id"}


def usage_report_json(report: UsageReport, *, time_zone: str, day_starts_at: str) -> dict[str, Any]:
    """`wrighty usage --json`."""
    key = _GROUP_KEYS[report.by]
    return {
        "since": rfc3339(report.since),
        "until": rfc3339(report.until),
        "by": report.by,
        "time_zone": time_zone,
        "day_starts_at": day_starts_at,
        "groups": [{key: group, **spend_json(spend)} for group, spend in report.groups],
        "total": spend_json(report.total),
    }


def agent_spending_json(row: AgentSpending) -> dict[str, Any]:
    return {
        "agent": row.agent,
        "period": spend_json(row.period),
        "last_24h": spend_json(row.last_day),
        "limit": None if row.limit.unbounded else limit_json(row.limit),
        "held": row.hold is not None,
        "hold_reason": row.hold.reason() if row.hold is not None else None,
    }


def spending_json(spending: Spending) -> dict[str, Any]:
    """Each agent's spend in the current budget period and the last 24 hours."""
    return {
        "period_start": rfc3339(spending.period.start),
        "period_end": rfc3339(spending.period.end),
        "held_agents": len(spending.held),
        "agents": [agent_spending_json(row) for row in spending.agents],
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


def _retry_json(standing: RetryStanding) -> dict[str, Any]:
    return {
        "retries": standing.retries,
        "max_attempts": standing.max_attempts,
        "next_due": rfc3339(standing.next_due),
    }


def crash_retry_json(standing: RetryStanding | None) -> dict[str, Any] | None:
    """Where the item stands under worker.processCrash; None when it never crashed."""
    if standing is None:
        return None
    last = standing.last
    return {
        **_retry_json(standing),
        "last_crash": None
        if last is None
        else {
            "run_id": last.run_id,
            "ended_at": rfc3339(last.ended_at),
            "exit_code": last.exit_code,
            "signal": last.signal,
            "summary": first_line(last),
        },
    }


def usage_retry_json(standing: RetryStanding | None) -> dict[str, Any] | None:
    """Where the item stands under worker.usageFailure; None when no provider refused it."""
    if standing is None:
        return None
    last = standing.last
    return {
        **_retry_json(standing),
        "last_refusal": None
        if last is None
        else {
            "run_id": last.run_id,
            "ended_at": rfc3339(last.ended_at),
            "outcome_class": last.outcome_class.value if last.outcome_class else None,
            "summary": first_line(last),
        },
    }


def first_line(run: Run) -> str:
    """The first line of a run's diagnostic (its summary)."""
    return (run.diagnostic or "").split("\n", 1)[0]


def item_detail_json(
    detail: ItemDetail,
    *,
    resumable: bool,
    crash_retry: RetryStanding | None = None,
    usage_retry: RetryStanding | None = None,
    max_fix_turns: int | None = None,
) -> dict[str, Any]:
    """The item in full (`show --json`); the usage keys are `item_usage_json`'s."""
    item = detail.item
    by_run: dict[str | None, list[CheckRecord]] = {}
    for record in detail.checks:
        by_run.setdefault(record.run_id, []).append(record)
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
        "crash_retry": crash_retry_json(crash_retry),
        "usage_retries": item.usage_retries,
        "usage_retry": usage_retry_json(usage_retry),
        "requeues": item.requeues,
        "fix_turns": item.fix_turns,
        "max_fix_turns": max_fix_turns,
        "verify_checks": None if item.verify_checks is None else list(item.verify_checks),
        "verified": detail.verified,
        "rejections": item.rejections,
        "feedback": item.feedback,
        "reviewed_commit": item.reviewed_commit,
        "handoffs": item.handoffs,
        "handoff_note": item.handoff_note,
        **scheduling_json(detail.labels, detail.after, detail.wait),
        "before": list(detail.before),
        "session": session_json(detail.session, resumable=resumable) if detail.session else None,
        "runs": [
            {
                **run_json(run),
                "checks": [check_json(r.evidence) for r in by_run.get(run.run_id, ())],
            }
            for run in detail.runs
        ],
        "hand_verifications": hand_verifications_json(by_run.get(None, ())),
        "landing": landing_json(detail, max_fix_turns),
        "pull_request": pull_request_json(detail),
        "events": [event_json(event) for event in detail.events],
    }


def pull_request_json(detail: ItemDetail) -> dict[str, Any] | None:
    """An item's pull request in `show --json` (docs/json.md#show): completion.integrate
    github-pr's; None when it has none."""
    pull = detail.pull_request
    if pull is None:
        return None
    return {
        "repo": pull.pull_repo,
        "number": pull.pull_number,
        "url": pull.pull_url,
        "state": pull.pull_state,
    }


def landing_json(detail: ItemDetail, max_fix_turns: int | None) -> dict[str, Any] | None:
    """An accepted item's landing in `show --json` (docs/json.md#landing); None when it was
    never accepted into landing."""
    landing = detail.landing
    if landing is None:
        return None
    from wrighty.domain.landing_view import landing_view

    view = landing_view(landing, detail.item, detail.events, max_fix_turns=max_fix_turns)
    return {
        "where": view.where,
        "step": landing.step.value,
        "target": landing.target,
        "accepted_at": rfc3339(landing.accepted_at),
        "accepted_by": landing.accepted_by,
        "accepted_commit": landing.accepted_commit,
        "target_commit": landing.target_commit,
        "checked_commit": landing.checked_commit,
        "attempt": landing.attempt,
        "fix_turn": view.fix_turn,
        "landed": view.landed,
        "landed_at": rfc3339(view.landed_at),
    }


def item_usage_json(total: Usage, limit: Limit, hold: AgentHold | None) -> dict[str, Any]:
    """The keys `show --json` ends with: the item's total over its runs, its budget and what
    is left, and the hold on its agent."""
    return {
        "usage": usage_json(total),
        "budget": budget_json(limit, total),
        "hold": hold_json(hold),
    }


def listed_item_json(
    item: Item,
    total: Usage,
    hold: AgentHold | None,
    scheduling: dict[str, Any] | None = None,
    *,
    verified: bool | None = None,
) -> dict[str, Any]:
    """An item summary as `list --json` prints it: with its total, its agent's hold, its
    scheduling (`scheduling_json`) and whether its latest verification passed."""
    return {
        **item_summary_json(item),
        **(scheduling or scheduling_json((), (), None)),
        "verified": verified,
        "usage": usage_json(total),
        "hold": hold_json(hold),
    }


def wait_json(wait: Wait | None) -> dict[str, Any] | None:
    """Why a waiting item is not claimed (docs/scheduling.md)."""
    if wait is None:
        return None
    return {
        "kind": wait.kind,
        "reason": wait.reason,
        "items": list(wait.items),
        "setting": wait.setting,
    }


def _state_value(state: ItemState | None) -> str | None:
    """A state in JSON; null for an item that does not exist."""
    return None if state is None else state.value


def scheduling_json(
    labels: Iterable[str], after: Iterable[Dependency], wait: Wait | None
) -> dict[str, Any]:
    """An item's labels, the items it comes after (with their states), and what it waits
    for."""
    return {
        "labels": list(labels),
        "after": [{"id": edge.depends_on, "state": _state_value(edge.state)} for edge in after],
        "waits": wait_json(wait),
    }


def waiting_item_json(entry: WaitingItem, total: Usage, verified: bool | None) -> dict[str, Any]:
    """An item summary with whether its latest verification passed, since when it has needed
    attention, how many runs it had and what they spent."""
    return {
        **item_summary_json(entry.item),
        "verified": verified,
        "since": rfc3339(entry.since),
        "attempts": entry.attempts,
        "usage": usage_json(total),
    }


def agent_json(
    info: AgentInfo, check: Classification | None, sandbox: SandboxStatus | None = None
) -> dict[str, Any]:
    plan = info.plan
    return {
        "name": plan.name,
        "adapter": plan.adapter,
        "executable": plan.executable,
        "installed": info.path is not None,
        "path": info.path,
        "version": info.version,
        "permission": plan.permission if plan.vendor.takes_permission else None,
        "permission_flags": list(plan.permission_flags()),
        "resume": plan.can_resume,
        "sandbox": None if sandbox is None else sandbox_json(sandbox),
        "check": None
        if check is None
        else {
            "outcome_class": check.outcome_class.value,
            "confidence": check.confidence.value,
            "summary": check.summary,
        },
    }


def sandbox_json(sandbox: SandboxStatus) -> dict[str, Any]:
    profile = sandbox.profile
    return {
        "kind": "bubblewrap",
        "setting": sandbox.setting,
        "program": profile.program,
        "network": profile.network,
        "works": sandbox.problem is None,
        "problem": sandbox.problem,
        "checked": sandbox.checked,
    }


# -- status -----------------------------------------------------------------------------------


def worker_json(view: WorkerView) -> dict[str, Any]:
    row = view.row
    offset = row.clock_offset_seconds
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
        "agent": row.agent,
        "clock_offset_seconds": None if offset is None else round(offset, 3),
        "clock_skewed": view.clock_skewed,
        "held_reason": row.held_reason,
        "waiting_for": row.waiting_for,
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
    """One provider circuit in `wrighty status --json`: the fields of `providers --json` that
    say whether it holds work, and until when."""
    whole = circuit_json(view)
    return {key: whole[key] for key in ("name", "state", "until", "reason")}


def outbox_json(outbox: OutboxFigures | None, now: datetime) -> dict[str, Any]:
    """The notifications not delivered yet, in `wrighty status --json`."""
    from wrighty.domain.health import oldest_notice_age_seconds

    age = oldest_notice_age_seconds(outbox, now)
    return {
        "pending": outbox.pending if outbox else 0,
        "oldest_pending_at": rfc3339(outbox.oldest_pending_at) if outbox else None,
        "oldest_pending_age_seconds": None if age is None else round(age, 3),
        "given_up": outbox.given_up if outbox else 0,
    }


def status_json(report: StatusReport) -> dict[str, Any]:
    from wrighty.domain.health import (
        oldest_landing_wait_seconds,
        oldest_review_wait_seconds,
        oldest_wait_seconds,
    )

    figures, thresholds = report.figures, report.thresholds
    wait = oldest_wait_seconds(figures, report.checked_at)
    review_wait = oldest_review_wait_seconds(figures, report.checked_at)
    landing_wait = oldest_landing_wait_seconds(figures, report.checked_at)
    return {
        "healthy": report.healthy,
        "checked_at": rfc3339(report.checked_at),
        "counts": {state.value: figures.counts.get(state, 0) for state in ItemState},
        "waiting": figures.waiting,
        "oldest_queue_wait_seconds": None if wait is None else round(wait, 3),
        "unknown_queue_wait": figures.unknown_queue_wait,
        "expired_leases": figures.expired_leases,
        "waiting_on_dependencies": figures.waiting_on_dependencies,
        "blocked": figures.blocked,
        "oldest_review_wait_seconds": None if review_wait is None else round(review_wait, 3),
        "oldest_landing_wait_seconds": None if landing_wait is None else round(landing_wait, 3),
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
            "max_notify_age_seconds": thresholds.max_notify_age_seconds,
            "max_review_wait_seconds": thresholds.max_review_wait_seconds,
        },
        "problems": [
            {"check": p.check, "value": p.value, "limit": p.limit, "message": p.message}
            for p in report.problems
        ],
        "warnings": [{"check": c.check, "message": c.message} for c in report.concerns],
        "spend": spending_json(report.spending) if report.spending is not None else None,
        "notify": outbox_json(report.outbox, report.checked_at),
        "unserved": [{"agent": u.agent, "waiting": u.waiting} for u in report.unserved],
        "verification": verification_figures_json(figures.verification),
    }


def verification_figures_json(figures: VerificationFigures) -> dict[str, int]:
    """Verification's totals over every check and fix turn recorded (docs/verify.md)."""
    return {
        "checks_passed": figures.checks_passed,
        "checks_failed": figures.checks_failed,
        "checks_not_started": figures.checks_not_started,
        "fix_turns": figures.fix_turns,
    }


# -- notifications (docs/notifications.md) ----------------------------------------------------


def notice_json(stored: StoredNotice) -> dict[str, Any]:
    """One notification of the outbox, as `wrighty notify pending --json` lists it. The payload
    is what the sinks get (redacted and bounded when it was written); the last error names
    sinks by their labels, never by their URLs."""
    notice = stored.notice
    return {
        "id": notice.id,
        "event": notice.event,
        "events": list(notice.events),
        "created_at": rfc3339(notice.at),
        "item_id": notice.item_id,
        "reason_code": notice.reason_code,
        "state": stored.state,
        "attempts": stored.attempts,
        "next_attempt_at": rfc3339(stored.next_attempt_at) if stored.state == "pending" else None,
        "delivered_to": list(stored.delivered_to),
        "last_error": stored.last_error,
        "claimed_by": stored.claimed_by,
        "claim_expires_at": rfc3339(stored.claim_expires_at),
        "finished_at": rfc3339(stored.finished_at),
        "payload": notice.payload,
    }
