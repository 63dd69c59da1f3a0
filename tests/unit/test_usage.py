"""A run's usage and an item's total across its runs (pure)."""

from __future__ import annotations

import dataclasses

import pytest

from wrighty.domain.usage import Limit, Price, Usage, priced, total, with_reported_cost

CLAUDE = Usage(1200, 300, 50, 10, cost_usd=0.0081, models=("claude-sonnet-4-5",), turns=1,
               api_ms=900, final=True)  # fmt: skip
CODEX = Usage(500, 100, 200, models=("gpt-5",), turns=2, final=True)


def test_tokens_count_every_kind() -> None:
    assert CLAUDE.tokens == 1560


def test_an_items_total_adds_each_kind_and_keeps_every_model_once() -> None:
    total = CLAUDE + CODEX + CLAUDE
    assert (total.input_tokens, total.output_tokens) == (2900, 700)
    assert (total.cache_read_tokens, total.cache_write_tokens) == (300, 20)
    assert total.models == ("claude-sonnet-4-5", "gpt-5")
    assert (total.turns, total.api_ms) == (4, 1800)
    assert total.cost_usd is not None
    assert abs(total.cost_usd - 0.0162) < 1e-12


def test_a_cost_is_known_when_any_run_reported_one_and_partial_spreads() -> None:
    assert (CODEX + CODEX).cost_usd is None
    assert (CODEX + CLAUDE).cost_usd == 0.0081
    assert (CODEX + Usage()).turns == 2
    assert (Usage() + Usage()).turns is None
    assert (CLAUDE + Usage(final=False)).final is False
    assert (CLAUDE + CODEX).final is True


# -- limits ------------------------------------------------------------------------------------


def test_a_token_limit_is_reached_at_its_bound_counting_every_kind() -> None:
    limit = Limit(max_tokens=1560)
    assert CLAUDE.over(limit)  # 1200 + 300 + 50 + 10: exactly the bound
    assert not CLAUDE.over(Limit(max_tokens=1561))
    assert Usage(0, 0, 0, 1560).over(limit)  # cache writes count too


def test_a_cost_limit_is_reached_at_its_bound() -> None:
    assert CLAUDE.over(Limit(max_cost_usd=0.0081))
    assert not CLAUDE.over(Limit(max_cost_usd=0.0082))
    assert CLAUDE.over(Limit(max_cost_usd=100.0, max_tokens=1000))  # either bound


def test_an_unknown_cost_is_never_over_a_cost_limit() -> None:
    huge = Usage(10**9, 10**9, models=("gpt-5",), final=True)
    assert not huge.over(Limit(max_cost_usd=0.000001))
    assert huge.over(Limit(max_cost_usd=0.000001, max_tokens=10**9))  # its tokens still count
    assert not huge.over(Limit())  # no limit is never reached


def test_what_is_left_of_a_limit() -> None:
    limit = Limit(1.0, 2000)
    left = limit.left_after(CLAUDE)
    assert left.max_cost_usd == pytest.approx(0.9919)
    assert left.max_tokens == 440
    assert limit.left_after(CLAUDE + CLAUDE) == Limit(pytest.approx(0.9838), 0)  # never below 0
    assert Limit(0.005, 10).left_after(CLAUDE) == Limit(0.0, 0)
    # an unknown cost spends nothing of a dollar bound; an unbounded limit stays unbounded
    assert Limit(1.0).left_after(CODEX) == Limit(1.0)
    assert Limit().left_after(CLAUDE).unbounded


def test_a_limit_describes_its_bounds() -> None:
    assert Limit(2.5, 100_000).describe() == "$2.5 / 100,000 tokens"
    assert Limit(max_tokens=10).describe() == "10 tokens"
    assert Limit(5.0).describe() == "$5"
    assert Limit().describe() == "no limit"


# -- pricing ---------------------------------------------------------------------------------

SONNET = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
HOUSE = Price(input=1.0, output=2.0)


def test_a_price_counts_each_kind_per_million() -> None:
    assert Price(3.0, 15.0).cost_of(Usage(1_000_000, 1_000_000)) == pytest.approx(18.0)
    assert SONNET.cost_of(Usage(0, 0, 1_000_000, 1_000_000)) == pytest.approx(4.05)
    assert SONNET.cost_of(CODEX) == pytest.approx((500 * 3 + 100 * 15 + 200 * 0.3) / 1e6)


def test_a_reported_cost_is_never_replaced_by_an_estimate() -> None:
    pricing = {"claude-sonnet-4-5": SONNET, "*": HOUSE}
    assert priced(CLAUDE, pricing) is CLAUDE
    assert priced(with_reported_cost(CLAUDE), pricing).cost_source == "reported"
    zero = Usage(100, cost_usd=0.0)  # a vendor's own zero is a figure too
    assert priced(zero, pricing) is zero


def test_an_estimate_takes_the_first_models_price_and_says_so() -> None:
    two_models = Usage(1_000_000, 0, models=("gpt-5", "gpt-5-mini"), final=True)
    pricing = {"gpt-5-mini": HOUSE, "gpt-5": Price(1.25, 10.0)}
    estimated = priced(two_models, pricing)
    assert estimated.cost_usd == pytest.approx(1.25)
    assert estimated.cost_source == "estimated"
    assert dataclasses.replace(estimated, cost_usd=None, cost_source=None) == two_models


def test_a_model_without_a_price_takes_the_star_entry() -> None:
    unknown = Usage(0, 1_000_000, models=("house-model",))
    assert priced(unknown, {"gpt-5": SONNET, "*": HOUSE}).cost_usd == pytest.approx(2.0)
    nameless = Usage(1_000_000)  # a vendor that names no model
    assert priced(nameless, {"*": HOUSE}).cost_usd == pytest.approx(1.0)
    # the first model is unpriced: the star entry, not the second model's price
    second = Usage(1_000_000, models=("house-model", "gpt-5"))
    assert priced(second, {"gpt-5": SONNET, "*": HOUSE}).cost_usd == pytest.approx(1.0)


def test_without_a_matching_price_the_cost_stays_unknown() -> None:
    assert priced(CODEX, {}) is CODEX
    assert priced(CODEX, {"claude-sonnet-4-5": SONNET}) is CODEX
    assert priced(CODEX, {"claude-sonnet-4-5": SONNET}).cost_source is None


def test_a_readers_cost_is_the_vendors_own() -> None:
    assert with_reported_cost(Usage(cost_usd=0.5)).cost_source == "reported"
    assert with_reported_cost(CODEX) is CODEX  # no cost: no source
    estimate = Usage(cost_usd=0.5, cost_source="estimated")
    assert with_reported_cost(estimate) is estimate


# -- totals ------------------------------------------------------------------------------------


def test_a_total_with_an_estimated_part_is_an_estimate() -> None:
    estimated = priced(CODEX, {"*": HOUSE})
    mixed = total([with_reported_cost(CLAUDE), estimated])
    assert mixed.cost_source == "estimated"
    assert mixed.cost_usd == pytest.approx(0.0081 + HOUSE.cost_of(CODEX))
    # in either order
    assert total([estimated, with_reported_cost(CLAUDE)]).cost_source == "estimated"


def test_a_total_of_reported_costs_is_reported_and_of_none_has_no_source() -> None:
    assert total([with_reported_cost(CLAUDE), with_reported_cost(CLAUDE)]).cost_source == "reported"
    assert total([with_reported_cost(CLAUDE), CODEX]).cost_source == "reported"  # one unknown part
    assert total([CODEX, CODEX]).cost_source is None
    assert total([CODEX, CODEX]).cost_usd is None


def test_the_total_of_no_runs_is_nothing_and_final() -> None:
    nothing = total([])
    assert (nothing.tokens, nothing.cost_usd, nothing.final) == (0, None, True)
    assert total([CLAUDE]) == CLAUDE
