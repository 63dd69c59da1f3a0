"""The Spend page (/spend), on both stores: tokens and dollars per budget day and per agent
over the chosen period, as a table and two stacked bar charts (inline SVG), matching
`wrighty usage --json` for the same store and period; every day of the period shown, those
without a run as zero; a bad period refused with one line and 400."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.cli.conftest import wrighty
from tests.conftest import FakeClock
from tests.web.conftest import Console, make_console
from tests.web.fleet_seed import configure, spent
from wrighty.domain.usage import Usage
from wrighty.operator.context import AppContext

CLAUDE = Usage(input_tokens=1000, output_tokens=200, cost_usd=0.5, cost_source="reported")
CODEX = Usage(input_tokens=3000, cost_usd=0.25, cost_source="estimated")
GEMINI = Usage(input_tokens=700)  # no cost known
BEFORE = Usage(input_tokens=99_999, cost_usd=9.0)  # before the period


def seed(console: Console, clock: FakeClock) -> None:
    """Runs today (three agents), three days ago (claude twice), and 20 days ago."""
    now = clock()
    with console.store() as store:
        spent(store, at=now - timedelta(hours=1), agent="claude", usage=CLAUDE)
        spent(store, at=now - timedelta(hours=2), agent="codex", usage=CODEX)
        spent(store, at=now - timedelta(hours=3), agent="gemini", usage=GEMINI)
        for hours in (1, 5):
            spent(store, at=now - timedelta(days=3, hours=hours), agent="claude", usage=CLAUDE)
        spent(store, at=now - timedelta(days=20), agent="claude", usage=BEFORE)


def usage_json(app_ctx: AppContext, since: datetime, by: str) -> Any:
    """`wrighty usage --json` since ``since``, on the console's store."""
    store = ("--store", app_ctx.store_option) if app_ctx.store_option else ()
    seconds = int((app_ctx.now() - since).total_seconds())
    result = wrighty(*store, "usage", "--since", f"{seconds}s", "--by", by, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def table(page: str) -> dict[str, list[str]]:
    """The table's rows: each day's cells (tokens and cost per agent, then runs, tokens and
    cost in all), by day."""
    rows = re.findall(r'<tr class="day" data-day="([0-9-]+)">(.*?)</tr>', page, re.S)
    return {day: re.findall(r'<td class="num">(.*?)</td>', cells) for day, cells in rows}


def agents_of(page: str) -> list[str]:
    return re.findall(r'<th colspan="2" class="agent">(.*?)</th>', page)


def totals(page: str) -> list[str]:
    found = re.search(r'<tr class="total">(.*?)</tr>', page, re.S)
    assert found is not None
    return re.findall(r'<td class="num">(.*?)</td>', found.group(1))


def cost(value: float | None) -> str:
    return "—" if value is None else f"${value:.4f}"


def test_spend_per_day_and_agent_matches_wrighty_usage(console: Console, clock: FakeClock):
    seed(console, clock)
    page = console.login().get("/spend")
    assert page.status_code == 200
    assert 'href="/spend" aria-current="page"' in page.text
    rows = table(page.text)
    days = list(rows)
    assert len(days) == 14  # the default period: the last 14 budget days, today's included
    today = clock().date()
    assert days[-1] == today.isoformat()
    assert days[0] == (today - timedelta(days=13)).isoformat()
    assert agents_of(page.text) == ["claude", "codex", "gemini"]

    since = datetime.combine(today - timedelta(days=13), datetime.min.time(), tzinfo=UTC)
    by_day = usage_json(console.app_ctx, since, "day")
    assert [group["day"] for group in by_day["groups"]] == [
        (today - timedelta(days=3)).isoformat(),
        today.isoformat(),
    ]
    for group in by_day["groups"]:
        runs, tokens, dollars = rows[group["day"]][-3:]
        assert (int(runs), tokens) == (group["runs"], f"{group['tokens']:,}")
        assert dollars == cost(group["cost_usd"]) + (
            " est." if group["cost_source"] == "estimated" else ""
        )
    by_agent = usage_json(console.app_ctx, since, "agent")
    agent_totals = totals(page.text)
    for index, group in enumerate(by_agent["groups"]):
        tokens, dollars = agent_totals[2 * index : 2 * index + 2]
        assert tokens == f"{group['tokens']:,}"
        assert dollars.startswith(cost(group["cost_usd"]))
    total = by_agent["total"]
    assert agent_totals[-3:] == [str(total["runs"]), f"{total['tokens']:,}", "$1.7500 est."]

    # Each agent's cell of a day: today's three agents, and claude's two runs 3 days ago.
    assert rows[today.isoformat()][:6] == ["1,200", "$0.5000", "3,000", "$0.2500 est.", "700", "—"]
    three_ago = rows[(today - timedelta(days=3)).isoformat()]
    assert three_ago == [
        "2,400",
        "$1.0000",
        "0",
        "$0.0000",
        "0",
        "$0.0000",
        "2",
        "2,400",
        "$1.0000",
    ]
    # A day with no run spent nothing.
    quiet = rows[(today - timedelta(days=1)).isoformat()]
    assert quiet == ["0", "$0.0000"] * 3 + ["0", "0", "$0.0000"]
    # Gemini's run has no cost: the page says what the command says.
    assert "1 of 5 runs have no cost" in page.text  # the 5 runs of the period
    assert "99,999" not in page.text  # 20 days ago: outside the period


def test_the_charts_are_inline_svg_with_a_bar_per_day_and_a_part_per_agent(
    console: Console, clock: FakeClock
):
    seed(console, clock)
    page = console.login().get("/spend", params={"days": "7"}).text
    assert len(table(page)) == 7
    charts = re.findall(r"<svg class=\"chart\".*?</svg>", page, re.S)
    assert len(charts) == 2
    cost_chart, token_chart = charts
    for chart in charts:
        assert 'role="img"' in chart
        assert re.search(r'aria-labelledby="(\w+)-title \1-desc"', chart)
        assert len(re.findall(r'<g class="bar">', chart)) == 7
    today = clock().date().isoformat()
    # Today's bar: one part per agent, each titled with its figure.
    assert f"<title>{today}, claude: $0.5000</title>" in cost_chart
    assert f"<title>{today}, codex: $0.2500</title>" in cost_chart
    assert f"<title>{today}, gemini:" not in cost_chart  # no cost known: no part
    assert f"<title>{today}, gemini: 700 tokens</title>" in token_chart
    assert f"<title>{today}: 4,900 tokens</title>" in token_chart
    # Heights proportional to the figures: claude's 1,200 tokens and codex's 3,000.
    parts = rf'height="([0-9.]+)"><title>{today}, (\w+): [0-9,]+ tokens</title>'
    heights = {agent: height for height, agent in re.findall(parts, token_chart)}
    assert float(heights["codex"]) / float(heights["claude"]) == pytest.approx(2.5, rel=0.01)
    # A legend names each agent with its colour.
    for tone, agent in enumerate(("claude", "codex", "gemini")):
        assert re.search(
            rf'<rect class="tone-{tone}" width="10" height="10"></rect></svg> {agent}</li>', page
        )
    assert "style=" not in page  # the CSP allows no inline style
    assert "every day is zero" not in page


def test_nothing_spent_shows_every_day_at_zero(console: Console, clock: FakeClock):
    page = console.login().get("/spend", params={"days": "3"}).text
    rows = table(page)
    assert len(rows) == 3
    assert all(cells == ["0", "0", "$0.0000"] for cells in rows.values())
    assert "0 runs, 0 tokens" in page
    assert '<g class="bar">' in page
    assert page.count('<span class="empty">(every day is zero)</span>') == 2
    assert '<rect class="tone-' not in page


def test_budget_days_follow_the_budget_time_zone_and_start(
    project_ctx: AppContext, clock: FakeClock
):
    # START is 09:00 UTC: in a budget day that starts at 10:00 UTC it is still yesterday's.
    configure(project_ctx.cwd, budgets={"dayStartsAt": "10:00", "timeZone": "UTC"})
    made = make_console(project_ctx, project_ctx.cwd)
    with made.client:
        with made.store() as store:
            spent(store, at=clock() - timedelta(hours=2), agent="claude", usage=CLAUDE)
        page = made.login().get("/spend", params={"days": "2"}).text
    yesterday = (clock().date() - timedelta(days=1)).isoformat()
    assert list(table(page)) == [(clock().date() - timedelta(days=2)).isoformat(), yesterday]
    assert table(page)[yesterday][-3:] == ["1", "1,200", "$0.5000"]
    assert "by budget day (UTC, from 10:00)" in page


@pytest.mark.parametrize(
    "days",
    ["0", "367", "-1", "abc", "1e3", "", " 7", "7.0", "\u0667", "9" * 40, "<script>x</script>"],
)
def test_a_bad_period_is_refused_with_one_line_and_400(
    console: Console, clock: FakeClock, days: str
):
    seed(console, clock)
    page = console.login().get("/spend", params={"days": days})
    assert page.status_code == 400
    refusals = re.findall(r'<p class="refused" role="alert">(.*?)</p>', page.text)
    assert len(refusals) == 1
    assert refusals[0].startswith("days: give a whole number of days from 1 to 366, not ")
    assert '<svg class="chart"' not in page.text
    assert 'class="rows spend"' not in page.text
    assert "<script>x" not in page.text
