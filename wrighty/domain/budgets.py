"""Budgets that stop spending (docs/usage.md#budgets): an item's own, and an agent's per
period (a day that starts at ``dayStartsAt`` in ``timeZone``). Pure.

An item whose total reached its budget is not launched again, and a run that takes it past the
budget is stopped; both end ``budget-exceeded`` in needs-attention with the session kept. An
agent whose period budget is spent gets no new run until the next period: its items stay
queued, held, with the reason shown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import TYPE_CHECKING

from wrighty.domain import suggestions
from wrighty.domain.model import Item, RunEnd
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339
from wrighty.domain.usage import NO_LIMIT, Limit, Usage, cost_label

if TYPE_CHECKING:
    from wrighty.domain.claims import Settlement

# The `budgets.perDay` entry for every agent that has none of its own.
ANY_AGENT = "*"

BUDGET_EXCEEDED = "budget-exceeded"


@dataclass(frozen=True)
class Period:
    """One budget period: [start, end), in UTC."""

    start: datetime
    end: datetime


@dataclass(frozen=True)
class Budgets:
    per_item: Limit = NO_LIMIT
    per_day: Mapping[str, Limit] = field(default_factory=dict)
    day_starts_at: time = time(0, 0)
    time_zone: tzinfo = UTC

    def item_limit(self, item: Item) -> Limit:
        """The item's budget: its own bounds (`create --max-cost-usd/--max-tokens`), each
        falling back to `budgets.perItem`'s."""
        return Limit(
            item.max_cost_usd if item.max_cost_usd is not None else self.per_item.max_cost_usd,
            item.max_tokens if item.max_tokens is not None else self.per_item.max_tokens,
        )

    def agent_limit(self, agent: str) -> Limit:
        return self.per_day.get(agent) or self.per_day.get(ANY_AGENT) or Limit()

    def period(self, now: datetime) -> Period:
        """The period that holds ``now``. A start that falls in a daylight-saving gap moves
        as the zone says (zoneinfo's reading of the wall-clock time)."""
        local = now.astimezone(self.time_zone)
        start = self._start_on(local.date())
        if start > now:
            start = self._start_on(local.date() - timedelta(days=1))
        end = self._start_on(start.astimezone(self.time_zone).date() + timedelta(days=1))
        return Period(start.astimezone(UTC), end.astimezone(UTC))

    def day_start(self, day: date) -> datetime:
        """When the budget day ``day`` (a date in the budget's time zone) begins, in UTC."""
        return self._start_on(day).astimezone(UTC)

    def _start_on(self, day: date) -> datetime:
        return datetime.combine(day, self.day_starts_at, tzinfo=self.time_zone)


@dataclass(frozen=True)
class AgentHold:
    """Why an agent gets no new run: its period budget is spent."""

    agent: str
    limit: Limit
    spent: Usage
    until: datetime

    def reason(self) -> str:
        return (
            f"{self.agent}'s budget for the day ({self.limit.describe()}) is spent "
            f"({usage_text(self.spent)}); new runs wait until {rfc3339(self.until)} "
            "(budgets.perDay)"
        )


def agent_hold(budgets: Budgets, agent: str, spent: Usage, *, now: datetime) -> AgentHold | None:
    """The hold on ``agent`` when what it spent in the current period reached its limit."""
    limit = budgets.agent_limit(agent)
    if limit.unbounded or not spent.over(limit):
        return None
    return AgentHold(agent, limit, spent, budgets.period(now).end)


def usage_text(usage: Usage) -> str:
    """``$1.2300, 45,678 tokens`` (the cost only when known; an estimate says so)."""
    tokens = f"{usage.tokens:,} tokens"
    cost = cost_label(usage)
    return tokens if cost is None else f"{cost}, {tokens}"


def raise_command(item_id: int, limit: Limit, spent: Usage, *, resumable: bool = True) -> str:
    """The command that continues an item stopped by its budget, with the bound it hit
    doubled (or, past that, twice what it spent), at most what `requeue` takes; `wrighty cancel`
    when that most is spent already (no requeue could run it)."""
    flags = raise_flags(limit, spent)
    if flags is None:
        return suggestions.cancel(item_id)
    return suggestions.requeue(item_id, resume=resumable, raised=flags)


def raise_flags(limit: Limit, spent: Usage) -> tuple[str, ...] | None:
    """The `requeue` options that lift each bound of ``limit`` that ``spent`` reached (none
    when the budget is not spent), each within what `requeue` takes (MAX_ITEM_COST_USD,
    MAX_ITEM_TOKENS). None when a bound cannot be lifted above what was spent: the item
    spent the most an item's budget may be."""
    flags = []
    cost = spent.cost_usd
    if limit.max_cost_usd is not None and cost is not None and cost >= limit.max_cost_usd:
        dollars = _dollars(min(_more(limit.max_cost_usd, cost), MAX_ITEM_COST_USD))
        if float(dollars) <= cost:
            return None
        flags.append(f"--max-cost-usd {dollars}")
    if limit.max_tokens is not None and spent.tokens >= limit.max_tokens:
        doubled = min(max(limit.max_tokens, spent.tokens) * 2, MAX_ITEM_TOKENS)
        if doubled <= spent.tokens:
            return None
        flags.append(f"--max-tokens {doubled}")
    return tuple(flags)


# The most an item's own budget may be: what `create` and `requeue` take in --max-cost-usd and
# --max-tokens (wrighty/cli/common.py reads these), so that every raise wrighty suggests is one
# they accept (docs/usage.md).
MAX_ITEM_COST_USD = 1_000_000
MAX_ITEM_TOKENS = 10**12


def _more(limit: float, spent: float) -> float:
    return max(limit, spent) * 2


def _dollars(amount: float) -> str:
    """``amount`` rounded up to the cent, as `requeue --max-cost-usd` takes it: never below
    the amount (a budget of a fraction of a cent would otherwise become 0, which requeue
    refuses), and never in exponent notation."""
    cents = math.ceil(round(amount * 100, 6))
    return f"{cents / 100:.2f}".rstrip("0").rstrip(".")


def item_budget_spent(
    item: Item, limit: Limit, spent: Usage, *, run_end: RunEnd | None, resumable: bool = True
) -> Settlement:
    """The item's total reached its budget: it waits for a person with its session kept.
    ``run_end`` is the run wrighty stopped for it (None: found before a launch)."""
    from wrighty.domain.claims import Settlement  # a worker's: a read of budgets needs none

    when = "its run was stopped" if run_end is not None else "no new run was started"
    return Settlement(
        ItemState.NEEDS_ATTENTION,
        process_started=run_end is not None,
        run_end=run_end,
        reason_code=BUDGET_EXCEEDED,
        reason=(
            f"the item's budget ({limit.describe()}) is spent ({usage_text(spent)} over its runs); "
            f"{when}; the workspace and session are kept"
        ),
        next_action=raise_command(item.id, limit, spent, resumable=resumable),
    )


def after_budget_stop(
    item: Item,
    run_end: RunEnd,
    *,
    limit: Limit,
    spent: Usage,
    hold: AgentHold | None,
    resumable: bool,
) -> Settlement:
    """A run stopped for a budget (wrighty's watch, or the vendor's own stop): the item's, or
    (``hold``) its agent's for the day. Never retried: a person raises the budget or waits
    for the next day, then resumes."""
    from wrighty.domain.claims import Settlement  # a worker's: a read of budgets needs none

    if hold is not None and not spent.over(limit):
        return Settlement(
            ItemState.NEEDS_ATTENTION,
            process_started=True,
            run_end=run_end,
            reason_code=BUDGET_EXCEEDED,
            reason=f"{hold.reason()}; its run was stopped; the workspace and session are kept",
            next_action=suggestions.requeue(item.id, resume=resumable),
        )
    return item_budget_spent(item, limit, spent, run_end=run_end, resumable=resumable)
