"""A run's usage and an item's total across its runs (pure)."""

from __future__ import annotations

from wrighty.domain.usage import Usage

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
