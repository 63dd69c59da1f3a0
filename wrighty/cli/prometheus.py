"""The Prometheus text of `wrighty status --format prometheus`: the status report's figures
(the same as `status --json`'s, documents.py) in the text exposition format. Like the JSON,
no rich here, and nothing that reads an item's body, a prompt or the store's address."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wrighty.domain.text import printable_line
from wrighty.operator.documents import COST_DECIMALS, status_json

if TYPE_CHECKING:
    from wrighty.domain.ledger import AgentSpending
    from wrighty.domain.usage import CostSource
    from wrighty.services.status import StatusReport


PROBLEM_CHECKS = (
    "max_queue_wait",
    "min_workers",
    "max_expired_leases",
    "max_needs_attention",
    "max_open_circuits",
    "max_notify_age",
    "max_review_wait",
)
WARNING_CHECKS = (
    "expired_leases",
    "no_live_worker",
    "dead_workers",
    "stale_workers",
    "blocked_items",
    "unserved_agent",
    "clock_skew",
    "held_workers",
    "source_failing",
)


def _label_value(text: str) -> str:
    """Outside text as a Prometheus label value: unsafe characters as their visible escapes
    (`printable_line`, so no newline is left), then backslash and double quote escaped as the
    exposition format reads them."""
    return printable_line(text).replace("\\", "\\\\").replace('"', '\\"')


def _metric(lines: list[str], name: str, kind: str, help_text: str) -> None:
    lines.append(f"# HELP wrighty_{name} {help_text}")
    lines.append(f"# TYPE wrighty_{name} {kind}")


TOKEN_KINDS = ("input", "output", "cache_read", "cache_write")
COST_SOURCES: tuple[CostSource, ...] = ("reported", "estimated")


def _spend_metrics(lines: list[str], report: StatusReport) -> None:
    """The usage ledger: counters over every run, gauges for the current budget period."""
    if report.lifetime is not None:
        usage, costs = report.lifetime.usage, report.lifetime.costs
        _metric(lines, "tokens_total", "counter", "Tokens the runs reported, by agent and kind.")
        for agent, spent in usage.items():
            counts = (spent.input_tokens, spent.output_tokens, spent.cache_read_tokens,
                      spent.cache_write_tokens)  # fmt: skip
            for kind, count in zip(TOKEN_KINDS, counts, strict=True):
                lines.append(
                    f'wrighty_tokens_total{{agent="{_label_value(agent)}",kind="{kind}"}} {count}'
                )
        _metric(
            lines,
            "cost_usd_total",
            "counter",
            "US dollars the runs cost, by agent and source: the vendor's figure (reported) or "
            "wrighty's from `pricing` (estimated).",
        )
        for agent in usage:
            for source in COST_SOURCES:
                cost = round(costs.get((agent, source), 0.0), COST_DECIMALS)
                lines.append(
                    f'wrighty_cost_usd_total{{agent="{_label_value(agent)}",source="{source}"}} '
                    f"{cost}"
                )
    spending = report.spending
    if spending is None:
        return
    _metric(
        lines,
        "budget_period_end_timestamp_seconds",
        "gauge",
        "Unix time when the current budget period (budgets.dayStartsAt) ends.",
    )
    lines.append(f"wrighty_budget_period_end_timestamp_seconds {spending.period.end.timestamp()}")
    gauges = (
        ("budget_period_tokens", "Tokens each agent's runs spent in the current budget period."),
        ("budget_period_cost_usd", "US dollars each agent's runs cost in the current budget "
         "period (NaN when its runs reported no cost)."),
        ("budget_period_limit_tokens", "Each agent's budget for the period in tokens "
         "(budgets.perDay)."),
        ("budget_period_limit_cost_usd", "Each agent's budget for the period in US dollars."),
        ("budget_agent_held", "1 while an agent's budget for the period is spent (its items "
         "wait), else 0."),
    )  # fmt: skip
    for name, help_text in gauges:
        _metric(lines, name, "gauge", help_text)
        for row in spending.agents:
            value = _spend_gauge(name, row)
            if value is not None:
                lines.append(f'wrighty_{name}{{agent="{_label_value(row.agent)}"}} {value}')


def _spend_gauge(name: str, row: AgentSpending) -> str | None:
    """One agent's value of a period gauge; None to leave out a limit it does not have."""
    spent = row.period.usage
    if name == "budget_period_tokens":
        return str(spent.tokens)
    if name == "budget_period_cost_usd":
        if spent.cost_usd is None:
            return "NaN" if row.period.runs else "0"
        return str(round(spent.cost_usd, COST_DECIMALS))
    if name == "budget_period_limit_tokens":
        return None if row.limit.max_tokens is None else str(row.limit.max_tokens)
    if name == "budget_period_limit_cost_usd":
        return None if row.limit.max_cost_usd is None else str(row.limit.max_cost_usd)
    return str(int(row.hold is not None))


CHECK_RESULTS = (
    ("passed", "checks_passed"),
    ("failed", "checks_failed"),
    ("not-started", "checks_not_started"),
)


def _verification_metrics(lines: list[str], verification: dict[str, int]) -> None:
    """Verification's counters over every check and run recorded (docs/verify.md)."""
    _metric(
        lines,
        "checks_total",
        "counter",
        "Checks run after agent runs or by hand (wrighty verify), by result: passed (exit "
        "code 0), failed (ran and did not pass) or not-started (could not start).",
    )
    for result, key in CHECK_RESULTS:
        lines.append(f'wrighty_checks_total{{result="{result}"}} {verification[key]}')
    _metric(lines, "fix_turns_total", "counter", "Fix turns: runs resumed to fix failed checks.")
    lines.append(f"wrighty_fix_turns_total {verification['fix_turns']}")


def _outbox_metrics(lines: list[str], outbox: dict[str, Any]) -> None:
    gauges = (
        ("notify_pending", "Notifications not delivered yet (docs/notifications.md).", "pending"),
        ("notify_oldest_pending_age_seconds", "How long the oldest undelivered notification has "
         "waited (NaN when none waits).", "oldest_pending_age_seconds"),
        ("notify_given_up", "Notifications given up after their last delivery attempt.",
         "given_up"),
    )  # fmt: skip
    _gauges(lines, gauges, outbox)


def _gauges(
    lines: list[str], gauges: tuple[tuple[str, str, str], ...], values: dict[str, Any]
) -> None:
    """One gauge per (name, help, key of ``values``); NaN for a value that is not known."""
    for name, help_text, key in gauges:
        _metric(lines, name, "gauge", help_text)
        value = values[key]
        lines.append(f"wrighty_{name} {'NaN' if value is None else value}")


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
        ("dependency_waiting_items", "Queued or retry-scheduled items that wait for an item "
         "they come after.", "waiting_on_dependencies"),
        ("blocked_items", "Of those, the items an item they come after (or one further up) "
         "keeps from ever starting: it was cancelled or needs attention.", "blocked"),
        ("oldest_review_wait_seconds", "How long the item longest in review has waited for "
         "a person (NaN when none is in review).", "oldest_review_wait_seconds"),
        ("oldest_landing_wait_seconds", "How long the item longest in landing has been "
         "landing (NaN when none is).", "oldest_landing_wait_seconds"),
        ("live_workers", "Workers with a recent heartbeat.", "live_workers"),
        ("open_provider_circuits", "Provider circuits that are open or half-open.",
         "open_circuits"),
    )  # fmt: skip
    _gauges(lines, gauges, document)
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
    _metric(
        lines,
        "unserved_items",
        "gauge",
        "Items (queued or retry-scheduled) that wait for an agent no live worker runs, by agent.",
    )
    for unserved in report.unserved:
        lines.append(
            f'wrighty_unserved_items{{agent="{_label_value(unserved.agent)}"}} {unserved.waiting}'
        )
    _verification_metrics(lines, document["verification"])
    _spend_metrics(lines, report)
    _outbox_metrics(lines, document["notify"])
    _metric(lines, "problems", "gauge", "Health checks that failed, by check.")
    failed = {p.check for p in report.problems}
    for check in PROBLEM_CHECKS:
        lines.append(f'wrighty_problems{{check="{check}"}} {int(check in failed)}')
    _metric(lines, "warnings", "gauge", "Warnings (no threshold set for them), by check.")
    raised = {c.check for c in report.concerns}
    for check in WARNING_CHECKS:
        lines.append(f'wrighty_warnings{{check="{check}"}} {int(check in raised)}')
    return "\n".join(lines) + "\n"
