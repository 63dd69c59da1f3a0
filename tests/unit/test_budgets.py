"""Budgets (docs/usage.md#budgets): the budget day and its daylight-saving changes, an item's and an
agent's limits, the hold on a spent agent, and what an item stopped by its budget says."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from tests.factories import claimed_item
from wrighty.domain.budgets import (
    BUDGET_EXCEEDED,
    AgentHold,
    Budgets,
    Period,
    agent_hold,
    item_budget_spent,
    raise_command,
    usage_text,
)
from wrighty.domain.model import Item, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.usage import Limit, Usage

BERLIN = ZoneInfo("Europe/Berlin")
BERLIN_AT_SIX = Budgets(day_starts_at=time(6, 0), time_zone=BERLIN)
HOUR = timedelta(hours=1)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def item(**changes: object) -> Item:
    at = utc(2026, 11, 30, 9)
    return claimed_item(**{"id": 7, "claimed_by": "w1", "queued_at": at, "created_at": at,
                           "updated_at": at, **changes})  # fmt: skip


# -- the budget day --------------------------------------------------------------------------


def test_a_utc_day_starts_at_midnight_by_default() -> None:
    period = Budgets().period(utc(2026, 11, 30, 9, 30))
    assert period == Period(utc(2026, 11, 30), utc(2026, 12, 1))


def test_a_day_starting_later_holds_the_early_hours_in_the_day_before() -> None:
    budgets = Budgets(day_starts_at=time(6, 0))
    assert budgets.period(utc(2026, 11, 30, 5, 59)) == Period(
        utc(2026, 11, 29, 6), utc(2026, 11, 30, 6)
    )
    assert budgets.period(utc(2026, 11, 30, 6)) == Period(utc(2026, 11, 30, 6), utc(2026, 12, 1, 6))


def test_a_berlin_day_starting_at_six_is_read_in_berlin() -> None:
    # Winter: Berlin is UTC+1, so 06:00 there is 05:00 UTC.
    assert BERLIN_AT_SIX.period(utc(2026, 11, 30, 12)) == Period(
        utc(2026, 11, 30, 5), utc(2026, 12, 1, 5)
    )
    # Summer: UTC+2, 04:00 UTC.
    assert BERLIN_AT_SIX.period(utc(2026, 7, 1, 12)) == Period(
        utc(2026, 7, 1, 4), utc(2026, 7, 2, 4)
    )
    # 05:30 in Berlin (04:30 UTC in winter) still belongs to the day before.
    assert BERLIN_AT_SIX.period(utc(2026, 11, 30, 4, 30)).start == utc(2026, 11, 29, 5)


def test_the_day_the_clocks_go_forward_is_23_hours_long() -> None:
    # 2026-03-29: 02:00 CET becomes 03:00 CEST. The day that holds that night began on the
    # 28th at 06:00 CET (05:00 UTC) and ends on the 29th at 06:00 CEST (04:00 UTC).
    period = BERLIN_AT_SIX.period(utc(2026, 3, 29, 1, 30))
    assert period == Period(utc(2026, 3, 28, 5), utc(2026, 3, 29, 4))
    assert period.end - period.start == 23 * HOUR
    after = BERLIN_AT_SIX.period(utc(2026, 3, 29, 4))  # the next day begins at its start
    assert after == Period(utc(2026, 3, 29, 4), utc(2026, 3, 30, 4))
    assert after.end - after.start == 24 * HOUR
    assert BERLIN_AT_SIX.period(utc(2026, 3, 29, 3, 59, 59)) == period


def test_the_day_the_clocks_go_back_is_25_hours_long() -> None:
    # 2026-10-25: 03:00 CEST becomes 02:00 CET. The day began on the 24th at 06:00 CEST
    # (04:00 UTC) and ends on the 25th at 06:00 CET (05:00 UTC).
    period = BERLIN_AT_SIX.period(utc(2026, 10, 25, 1, 30))  # inside the repeated hour
    assert period == Period(utc(2026, 10, 24, 4), utc(2026, 10, 25, 5))
    assert period.end - period.start == 25 * HOUR
    assert BERLIN_AT_SIX.period(utc(2026, 10, 25, 4, 59)) == period
    assert BERLIN_AT_SIX.period(utc(2026, 10, 25, 5)).start == utc(2026, 10, 25, 5)


@pytest.mark.parametrize("starts_at", [time(6, 0), time(0, 0), time(2, 30), time(23, 59)], ids=str)
def test_every_moment_of_a_year_lies_in_exactly_one_berlin_day(starts_at: time) -> None:
    """Also for a day that starts inside the hour the clocks skip or repeat (02:30)."""
    budgets = Budgets(day_starts_at=starts_at, time_zone=BERLIN)
    moment, lengths, previous = utc(2026, 1, 1), set(), None
    while moment < utc(2027, 1, 1):
        period = budgets.period(moment)
        assert period.start <= moment < period.end
        assert period.start.tzinfo is UTC
        assert period.end.tzinfo is UTC
        if previous is not None and previous != period:
            assert period.start == previous.end  # the days follow each other without a gap
        if starts_at == time(6, 0):
            assert period.start.astimezone(BERLIN).time() == starts_at
        lengths.add(period.end - period.start)
        previous = period
        moment += timedelta(minutes=37)
    assert lengths == {23 * HOUR, 24 * HOUR, 25 * HOUR}


# -- limits ------------------------------------------------------------------------------------


def test_an_items_limit_falls_back_bound_by_bound() -> None:
    budgets = Budgets(per_item=Limit(5.0, 100_000))
    assert budgets.item_limit(item()) == Limit(5.0, 100_000)
    assert budgets.item_limit(item(max_cost_usd=2.0)) == Limit(2.0, 100_000)
    assert budgets.item_limit(item(max_tokens=50)) == Limit(5.0, 50)
    assert budgets.item_limit(item(max_cost_usd=9.0, max_tokens=7)) == Limit(9.0, 7)
    assert Budgets().item_limit(item(max_tokens=50)) == Limit(None, 50)
    assert Budgets().item_limit(item()).unbounded


def test_an_agents_limit_is_its_own_else_the_star_entry() -> None:
    budgets = Budgets(per_day={"*": Limit(10.0), "codex": Limit(max_tokens=5000)})
    assert budgets.agent_limit("codex") == Limit(None, 5000)
    assert budgets.agent_limit("claude") == Limit(10.0)
    assert Budgets(per_day={"codex": Limit(1.0)}).agent_limit("claude").unbounded
    assert Budgets().agent_limit("codex").unbounded


# -- the hold on an agent ------------------------------------------------------------------------

NOW = utc(2026, 11, 30, 12)
SPENT = Usage(9000, 1000, cost_usd=10.5, cost_source="reported")


def test_no_hold_without_a_limit_or_under_it() -> None:
    assert agent_hold(Budgets(), "codex", SPENT, now=NOW) is None
    under = Budgets(per_day={"codex": Limit(20.0, 20_000)})
    assert agent_hold(under, "codex", SPENT, now=NOW) is None
    # another agent's limit is not this one's
    assert agent_hold(Budgets(per_day={"claude": Limit(1.0)}), "codex", SPENT, now=NOW) is None


@pytest.mark.parametrize(
    "limit", [Limit(10.0), Limit(max_tokens=10_000), Limit(50.0, 5000)], ids=str
)
def test_a_spent_agent_is_held_until_the_period_ends(limit: Limit) -> None:
    budgets = Budgets(per_day={"codex": limit}, day_starts_at=time(6, 0), time_zone=BERLIN)
    hold = agent_hold(budgets, "codex", SPENT, now=NOW)
    assert hold == AgentHold("codex", limit, SPENT, until=utc(2026, 12, 1, 5))
    reason = hold.reason()
    assert reason.startswith(f"codex's budget for the day ({limit.describe()}) is spent")
    assert "($10.5000, 10,000 tokens)" in reason
    assert "new runs wait until 2026-12-01T05:00:00.000Z" in reason
    assert reason.endswith("(budgets.perDay)")


def test_the_star_entry_holds_each_agent_on_its_own_spend() -> None:
    budgets = Budgets(per_day={"*": Limit(max_tokens=10_000)})
    hold = agent_hold(budgets, "gemini", SPENT, now=NOW)
    assert hold is not None
    assert hold.agent == "gemini"
    assert hold.until == utc(2026, 12, 1)
    assert agent_hold(budgets, "claude", Usage(9999), now=NOW) is None


def test_an_unknown_cost_never_holds_on_a_dollar_limit() -> None:
    budgets = Budgets(per_day={"codex": Limit(0.01)})
    assert agent_hold(budgets, "codex", Usage(10**9), now=NOW) is None


def test_a_spend_says_its_cost_when_known_and_labels_an_estimate() -> None:
    assert usage_text(Usage(1234, 5)) == "1,239 tokens"
    assert usage_text(SPENT) == "$10.5000, 10,000 tokens"
    estimate = Usage(100, cost_usd=0.25, cost_source="estimated")
    assert usage_text(estimate) == "$0.2500 est., 100 tokens"


# -- an item stopped by its budget ---------------------------------------------------------------


def test_raising_a_spent_cost_bound_doubles_it() -> None:
    assert raise_command(7, Limit(5.0), Usage(cost_usd=5.0)) == (
        "wrighty requeue 7 --resume --max-cost-usd 10"
    )
    # past the bound: twice what it spent
    assert raise_command(7, Limit(5.0), Usage(cost_usd=5.2)) == (
        "wrighty requeue 7 --resume --max-cost-usd 10.4"
    )


def test_raising_a_spent_token_bound_doubles_it() -> None:
    assert raise_command(7, Limit(max_tokens=1000), Usage(1000)) == (
        "wrighty requeue 7 --resume --max-tokens 2000"
    )
    assert raise_command(7, Limit(max_tokens=1000), Usage(1200, 300)) == (
        "wrighty requeue 7 --resume --max-tokens 3000"
    )


def test_raising_both_bounds_when_both_were_hit_and_only_the_one_hit_otherwise() -> None:
    both = raise_command(7, Limit(5.0, 1000), Usage(1000, cost_usd=5.0))
    assert both == "wrighty requeue 7 --resume --max-cost-usd 10 --max-tokens 2000"
    tokens_only = raise_command(7, Limit(5.0, 1000), Usage(1000, cost_usd=1.0))
    assert tokens_only == "wrighty requeue 7 --resume --max-tokens 2000"
    cost_only = raise_command(7, Limit(5.0, 1000), Usage(10, cost_usd=6.0))
    assert cost_only == "wrighty requeue 7 --resume --max-cost-usd 12"
    unknown_cost = raise_command(7, Limit(5.0, 1000), Usage(1000))
    assert unknown_cost == "wrighty requeue 7 --resume --max-tokens 2000"


def test_a_raised_cost_is_a_budget_requeue_accepts() -> None:
    """Rounded up to the cent: never 0 (which requeue refuses), never below the double."""
    assert raise_command(3, Limit(0.002), Usage(cost_usd=0.002)).endswith("--max-cost-usd 0.01")
    assert raise_command(3, Limit(2.231), Usage(cost_usd=2.231)).endswith("--max-cost-usd 4.47")
    summed = 0.0081 + 0.0172  # a sum of floats: 0.025300000000000003
    assert raise_command(3, Limit(0.02), Usage(cost_usd=summed)).endswith("--max-cost-usd 0.06")
    assert raise_command(3, Limit(0.02), Usage(cost_usd=0.04)).endswith("--max-cost-usd 0.08")
    big = raise_command(3, Limit(400_000.0), Usage(cost_usd=400_000.0))
    assert big.endswith("--max-cost-usd 800000")


def test_an_item_that_cannot_resume_is_raised_fresh() -> None:
    assert raise_command(7, Limit(max_tokens=10), Usage(10), resumable=False) == (
        "wrighty requeue 7 --fresh --max-tokens 20"
    )


def test_an_item_whose_run_was_stopped_waits_for_a_person_with_its_session_kept() -> None:
    limit, spent = Limit(1.0, 5000), Usage(4000, 1500, cost_usd=0.75, cost_source="reported")
    end = RunEnd(NOW, OutcomeClass.BUDGET_EXCEEDED, Confidence.AUTHORITATIVE, usage=spent)
    settlement = item_budget_spent(item(), limit, spent, run_end=end)
    assert settlement.to_state is ItemState.NEEDS_ATTENTION
    assert (settlement.process_started, settlement.run_end) == (True, end)
    assert settlement.reason_code == BUDGET_EXCEEDED == "budget-exceeded"
    assert settlement.reason == (
        "the item's budget ($1 / 5,000 tokens) is spent ($0.7500, 5,500 tokens over its "
        "runs); its run was stopped; the workspace and session are kept"
    )
    assert settlement.next_action == "wrighty requeue 7 --resume --max-tokens 11000"
    assert (settlement.not_before, settlement.counts_as_crash_retry) == (None, False)
    assert settlement.counts_as_usage_retry is False


def test_an_item_found_spent_before_a_launch_starts_no_run() -> None:
    limit, spent = Limit(max_cost_usd=1.0), Usage(100, cost_usd=1.0, cost_source="estimated")
    settlement = item_budget_spent(item(id=12), limit, spent, run_end=None, resumable=False)
    assert (settlement.process_started, settlement.run_end) == (False, None)
    assert "no new run was started" in (settlement.reason or "")
    assert "($1.0000 est., 100 tokens over its runs)" in (settlement.reason or "")
    assert settlement.next_action == "wrighty requeue 12 --fresh --max-cost-usd 2"


def test_a_budget_day_starts_at_day_starts_at_in_the_zone_whatever_its_offset() -> None:
    berlin = BERLIN_AT_SIX
    # 2026-03-29: Berlin moves from +01:00 to +02:00 at 02:00; 06:00 is 04:00 UTC that day.
    assert berlin.day_start(date(2026, 3, 28)) == datetime(2026, 3, 28, 5, 0, tzinfo=UTC)
    assert berlin.day_start(date(2026, 3, 29)) == datetime(2026, 3, 29, 4, 0, tzinfo=UTC)
    # The period that holds a moment begins at its budget day's start.
    moment = datetime(2026, 3, 29, 12, 0, tzinfo=UTC)
    assert berlin.period(moment).start == berlin.day_start(date(2026, 3, 29))
    assert berlin.period(moment).end == berlin.day_start(date(2026, 3, 30))
