"""The books read back (docs/usage.md#where-to-look): the ledger's runs added up by
agent, by budget day or by item, and each agent's spend in the current budget period and the
last 24 hours. Pure: the entries come in, the sums go out.

A run that reported nothing has an empty ``Usage()`` in the ledger: it counts as a run, adds
nothing, and does not make a total partial.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Literal, TypeGuard

from wrighty.domain.budgets import AgentHold, Budgets, Period, agent_hold
from wrighty.domain.durations import DAY_SECONDS
from wrighty.domain.usage import CostSource, LedgerEntry, Limit, Usage, total

GroupBy = Literal["agent", "day", "item"]

# `wrighty usage --since`: far enough back for any report, bounded as every duration is.
MAX_USAGE_SINCE_SECONDS = 3650 * DAY_SECONDS
LAST_DAY = timedelta(hours=24)

# A run recorded before the ledger knew agents, when the store could not name one.
UNKNOWN_AGENT = "-"

_NOTHING = Usage()


def reported(usage: Usage | None) -> TypeGuard[Usage]:
    """Whether a run's usage says anything (None, or an empty record, says nothing)."""
    return usage is not None and usage != _NOTHING


def runs_total(usages: Iterable[Usage | None]) -> Usage:
    """The runs' usage together; the runs that reported nothing are left out (``Usage()``,
    final, when none reported)."""
    return total(usage for usage in usages if reported(usage))


@dataclass(frozen=True)
class Spend:
    """A group of runs: how many, what they spent together, and how many of them have no
    cost (so that a cost known for only some of them is not taken for the whole)."""

    runs: int
    usage: Usage
    runs_without_cost: int

    @property
    def cost_complete(self) -> bool:
        return self.runs_without_cost == 0


def no_cost_line(total: Spend) -> str | None:
    """How many runs a cost leaves out, when some have a cost and others none (`wrighty
    usage` says it under its table, the web console's Spend page under its charts)."""
    missing = total.runs_without_cost
    if not missing or total.usage.cost_usd is None:
        return None
    return (
        f"{missing} of {total.runs} runs have no cost (their vendor reported none "
        "and `pricing` has no price for them): COST counts the others"
    )


def spend_of(usages: Iterable[Usage]) -> Spend:
    listed = list(usages)
    return Spend(
        runs=len(listed),
        usage=runs_total(listed),
        runs_without_cost=sum(usage.cost_usd is None for usage in listed),
    )


def budget_day(moment: datetime, budgets: Budgets) -> date:
    """The budget day that holds ``moment``: the date, in the budget's time zone, on which
    its period (from ``dayStartsAt``) began."""
    return budgets.period(moment).start.astimezone(budgets.time_zone).date()


def group_key(entry: LedgerEntry, by: GroupBy, budgets: Budgets) -> str | int:
    if by == "agent":
        return entry.agent or UNKNOWN_AGENT
    if by == "day":
        return budget_day(entry.started_at, budgets).isoformat()
    return entry.item_id


def grouped(
    entries: Iterable[LedgerEntry], by: GroupBy, budgets: Budgets
) -> list[tuple[str | int, Spend]]:
    """The entries by agent (by name), by budget day (oldest first) or by item (by id)."""
    groups: dict[str | int, list[Usage]] = {}
    for entry in entries:
        groups.setdefault(group_key(entry, by, budgets), []).append(entry.usage)
    return [(key, spend_of(groups[key])) for key in sorted(groups)]  # one type per grouping


def totals_by_item(entries: Iterable[LedgerEntry]) -> dict[int, Usage]:
    """Each item's total over its runs (an item with no run has no entry)."""
    usages: dict[int, list[Usage]] = {}
    for entry in entries:
        usages.setdefault(entry.item_id, []).append(entry.usage)
    return {item_id: runs_total(runs) for item_id, runs in usages.items()}


def totals_by_agent(entries: Iterable[LedgerEntry]) -> dict[str, Usage]:
    """Each agent's total over all its runs, by name."""
    usages: dict[str, list[Usage]] = {}
    for entry in entries:
        usages.setdefault(entry.agent or UNKNOWN_AGENT, []).append(entry.usage)
    return {agent: runs_total(usages[agent]) for agent in sorted(usages)}


def cost_by_source(entries: Iterable[LedgerEntry]) -> dict[tuple[str, CostSource], float]:
    """The known costs by agent and by where they come from (the vendor's figure, or
    wrighty's estimate from `pricing`)."""
    costs: dict[tuple[str, CostSource], float] = {}
    for entry in entries:
        cost = entry.usage.cost_usd
        if cost is None:
            continue
        source: CostSource = entry.usage.cost_source or "reported"
        key = (entry.agent or UNKNOWN_AGENT, source)
        costs[key] = costs.get(key, 0.0) + cost
    return dict(sorted(costs.items()))


@dataclass(frozen=True)
class AgentSpending:
    """One agent's spend in the current budget period and in the last 24 hours, with its
    period budget and, when that is spent, the hold on its new runs."""

    agent: str
    period: Spend
    last_day: Spend
    limit: Limit
    hold: AgentHold | None


@dataclass(frozen=True)
class Spending:
    period: Period
    agents: list[AgentSpending]

    @property
    def held(self) -> list[AgentSpending]:
        return [agent for agent in self.agents if agent.hold is not None]


def spending_since(budgets: Budgets, now: datetime) -> datetime:
    """How far back `spending` needs the ledger: the period's start or 24 hours, the earlier
    (a budget day with a daylight-saving change is 23 or 25 hours long)."""
    return min(budgets.period(now).start, now - LAST_DAY)


def spending(
    entries: Iterable[LedgerEntry],
    budgets: Budgets,
    *,
    now: datetime,
    agents: Iterable[str] = (),
) -> Spending:
    """Each agent's spend: the agents with a run in the window, and ``agents`` (those with a
    budget of their own, say), by name. ``entries`` must reach back to `spending_since`."""
    period = budgets.period(now)
    day_start = now - LAST_DAY
    in_period: dict[str, list[Usage]] = {}
    in_day: dict[str, list[Usage]] = {}
    names = set(agents)
    for entry in entries:
        name = entry.agent or UNKNOWN_AGENT
        if entry.started_at >= period.start:
            in_period.setdefault(name, []).append(entry.usage)
            names.add(name)
        if entry.started_at >= day_start:
            in_day.setdefault(name, []).append(entry.usage)
            names.add(name)
    rows = []
    for name in sorted(names):
        spent = spend_of(in_period.get(name, []))
        rows.append(
            AgentSpending(
                agent=name,
                period=spent,
                last_day=spend_of(in_day.get(name, [])),
                limit=budgets.agent_limit(name),
                hold=agent_hold(budgets, name, spent.usage, now=now),
            )
        )
    return Spending(period, rows)
