"""What the Spend page shows (docs/web.md#spend), as plain values for its template: the
period from the query, and each budget day's and each agent's tokens and cost as
`wrighty usage` adds them up (services/usage.daily_spend), as a table and as two stacked bar
charts (charts.py). Pure: no Starlette, no Jinja2, no store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wrighty.domain.text import printable_line
from wrighty.web.charts import StackedBars, stacked_bars
from wrighty.web.views import whole_number

if TYPE_CHECKING:
    from wrighty.domain.budgets import Budgets
    from wrighty.domain.ledger import Spend
    from wrighty.services.usage import DailySpend

DEFAULT_DAYS = 14
MAX_DAYS = 366
DAY_CHOICES = (7, 14, 30, 90)
MAX_DAYS_CHARS = 6  # a longer value is refused without being read
MAX_SHOWN_CHARS = 40  # how much of a refused value the refusal repeats


def parse_days(text: str | None) -> int | None:
    """The ``days`` query parameter: 1 to MAX_DAYS in plain digits (DEFAULT_DAYS when it is
    not given); None for anything else."""
    if text is None:
        return DEFAULT_DAYS
    return whole_number(text, low=1, high=MAX_DAYS, max_chars=MAX_DAYS_CHARS)


def days_refusal(text: str) -> str:
    """The one line a bad ``days`` gets."""
    shown = printable_line(text[:MAX_SHOWN_CHARS]) + ("…" if len(text) > MAX_SHOWN_CHARS else "")
    return f"days: give a whole number of days from 1 to {MAX_DAYS}, not '{shown}'"


@dataclass(frozen=True)
class Figures:
    """A group of runs as a table cell shows it."""

    runs: int
    tokens: str
    cost: str


@dataclass(frozen=True)
class DayRow:
    day: str
    agents: list[Figures]  # in the order of the page's agents
    total: Figures


def figures(spend: Spend | None) -> Figures:
    """Tokens and cost as `wrighty usage` writes them; a day without a run spent nothing
    (``$0.0000``), a run with no cost known shows ``—``."""
    from wrighty.domain.usage import Usage, cost_label, cost_text

    if spend is None or spend.runs == 0:
        return Figures(0, "0", cost_label(Usage(cost_usd=0.0)) or "")
    return Figures(spend.runs, f"{spend.usage.tokens:,}", cost_text(spend.usage))


def spend_values(daily: DailySpend, budgets: Budgets, *, days: int) -> dict[str, Any]:
    """The page's values for the last ``days`` budget days."""
    from wrighty.domain.budgets import usage_text
    from wrighty.domain.ledger import no_cost_line
    from wrighty.domain.times import rfc3339

    agents = [str(agent) for agent, _ in daily.by_agent.groups]
    by_day = {str(day): spend for day, spend in daily.by_day.groups}
    by_agent = dict(daily.by_agent.groups)
    total = daily.by_day.total
    return {
        "days": days,
        "choices": DAY_CHOICES,
        "since": rfc3339(daily.by_day.since),
        "time_zone": str(budgets.time_zone),
        "day_starts_at": budgets.day_starts_at.strftime("%H:%M"),
        "agents": agents,
        "rows": [
            DayRow(
                day,
                [figures(daily.cells.get((day, agent))) for agent in agents],
                figures(by_day.get(day)),
            )
            for day in daily.days
        ],
        "agent_totals": [figures(by_agent[agent]) for agent in agents],
        "total": figures(total),
        "total_text": usage_text(total.usage),
        "no_cost": no_cost_line(total),
        "cost_chart": cost_chart(daily, agents),
        "token_chart": token_chart(daily, agents),
    }


def _categories(daily: DailySpend) -> list[tuple[str, str]]:
    """Each day, labelled under its bar by its month and day (``12-03``)."""
    return [(day, day[5:]) for day in daily.days]


def cost_chart(daily: DailySpend, agents: list[str]) -> StackedBars:
    """Each day's known cost in USD, stacked by agent (a run with no cost adds nothing)."""
    values = {key: spend.usage.cost_usd or 0.0 for key, spend in daily.cells.items()}
    return stacked_bars(
        _categories(daily), agents, values, describe=lambda cost: f"${cost:,.4f}", prefix="$"
    )


def token_chart(daily: DailySpend, agents: list[str]) -> StackedBars:
    """Each day's tokens (every kind), stacked by agent."""
    values = {key: float(spend.usage.tokens) for key, spend in daily.cells.items()}
    return stacked_bars(
        _categories(daily), agents, values, describe=lambda n: f"{n:,.0f} tokens", whole=True
    )
