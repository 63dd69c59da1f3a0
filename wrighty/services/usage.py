"""The usage ledger as the reports read it (docs/usage.md#where-to-look): an item's total,
`wrighty usage`'s report (and the web console's Spend page: by day and by agent at once), each
agent's spend for `wrighty status`, and the holds that keep a waiting item's agent from being
launched. Reads through the store port only; the sums are wrighty/domain/ledger.py's.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from wrighty.domain.budgets import ANY_AGENT, AgentHold, Budgets, agent_hold
from wrighty.domain.ledger import (
    GroupBy,
    Spend,
    Spending,
    budget_day,
    group_key,
    grouped,
    runs_total,
    spend_of,
    spending,
    spending_since,
    totals_by_item,
)
from wrighty.domain.model import Item
from wrighty.domain.states import ItemState
from wrighty.domain.usage import LedgerEntry, Usage
from wrighty.store.port import Store

# The states in which an item waits for a claim, which an agent's spent budget holds back.
WAITING_STATES = frozenset({ItemState.QUEUED, ItemState.RETRY_SCHEDULED})


def item_usage(
    store: Store, item_id: int, *, default_agent: str
) -> tuple[list[LedgerEntry], Usage]:
    """The item's runs in the ledger, oldest first, and their total."""
    entries = store.list_ledger(default_agent=default_agent, item_id=item_id)
    return entries, runs_total(entry.usage for entry in entries)


def item_totals(
    store: Store, *, default_agent: str, item_ids: Collection[int] | None = None
) -> dict[int, Usage]:
    """Every item's total (or only those of ``item_ids``), in one read of the ledger (an item
    with no run has none)."""
    return totals_by_item(store.list_ledger(default_agent=default_agent, item_ids=item_ids))


@dataclass(frozen=True)
class UsageReport:
    """`wrighty usage`: the runs started since ``since``, grouped."""

    since: datetime
    until: datetime
    by: GroupBy
    groups: list[tuple[str | int, Spend]]
    total: Spend


def usage_report(
    store: Store,
    *,
    since: datetime,
    now: datetime,
    by: GroupBy,
    budgets: Budgets,
    default_agent: str,
) -> UsageReport:
    entries = store.list_ledger(default_agent=default_agent, since=since)
    return UsageReport(
        since=since,
        until=now,
        by=by,
        groups=grouped(entries, by, budgets),
        total=spend_of(entry.usage for entry in entries),
    )


@dataclass(frozen=True)
class DailySpend:
    """`wrighty usage --by day` and `--by agent` at once, over whole budget days, with each
    agent's spend on each day (the web console's Spend page): one read of the ledger."""

    days: list[str]  # every budget day of the period, oldest first, those without a run too
    by_day: UsageReport
    by_agent: UsageReport
    cells: dict[tuple[str, str], Spend]  # (day, agent): only those with a run


def daily_spend(
    store: Store, *, days: int, now: datetime, budgets: Budgets, default_agent: str
) -> DailySpend:
    """The last ``days`` budget days, today's included: the runs started since the first
    one began, grouped as `usage_report` groups them."""
    first = budget_day(now, budgets) - timedelta(days=days - 1)
    since = budgets.day_start(first)
    entries = store.list_ledger(default_agent=default_agent, since=since)
    total = spend_of(entry.usage for entry in entries)
    by_agent: dict[str, list[LedgerEntry]] = {}
    for entry in entries:
        by_agent.setdefault(str(group_key(entry, "agent", budgets)), []).append(entry)
    cells = {
        (str(day), agent): spend
        for agent, runs in by_agent.items()
        for day, spend in grouped(runs, "day", budgets)
    }
    return DailySpend(
        days=[(first + timedelta(days=n)).isoformat() for n in range(days)],
        by_day=UsageReport(since, now, "day", grouped(entries, "day", budgets), total),
        by_agent=UsageReport(since, now, "agent", grouped(entries, "agent", budgets), total),
        cells=cells,
    )


def budgeted_agents(budgets: Budgets) -> list[str]:
    """The agents with a period budget of their own (not the ``"*"`` entry)."""
    return sorted(name for name in budgets.per_day if name != ANY_AGENT)


def agent_spending(
    store: Store, *, budgets: Budgets, default_agent: str, now: datetime
) -> Spending:
    """Each agent's spend in the current budget period and in the last 24 hours, with its
    period budget and whether it is held, in one read of the ledger. The agents are those
    with a run in that time and those with a budget of their own."""
    entries = store.list_ledger(default_agent=default_agent, since=spending_since(budgets, now))
    return spending(entries, budgets, now=now, agents=budgeted_agents(budgets))


def agent_holds(
    store: Store, agents: Iterable[str], *, budgets: Budgets, now: datetime
) -> dict[str, AgentHold]:
    """The agents among ``agents`` whose budget for the period is spent, with why: as the
    worker reads it before a claim (`Store.agent_spend`), one read per agent with a budget."""
    holds = {}
    since = budgets.period(now).start
    for agent in sorted(set(agents)):
        if budgets.agent_limit(agent).unbounded:
            continue
        hold = agent_hold(budgets, agent, store.agent_spend(agent, since=since), now=now)
        if hold is not None:
            holds[agent] = hold
    return holds


def item_agent(item: Item, default_agent: str) -> str:
    return item.agent or default_agent


def held_items(
    store: Store, items: Iterable[Item], *, budgets: Budgets, default_agent: str, now: datetime
) -> dict[int, AgentHold]:
    """The waiting items (queued, or a retry) whose agent's period budget is spent."""
    waiting = [item for item in items if item.state in WAITING_STATES]
    holds = agent_holds(
        store,
        (item_agent(item, default_agent) for item in waiting),
        budgets=budgets,
        now=now,
    )
    found = {}
    for item in waiting:
        hold = holds.get(item_agent(item, default_agent))
        if hold is not None:
            found[item.id] = hold
    return found
