"""What a run spent, as its vendor CLI reported it: the usage ledger's lines (pure).

A reader builds a run's Usage line by line, so a run that is killed keeps what was seen before
(``final`` False: partial). Totals across runs add field by field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

# Where a cost comes from: the vendor's own figure, or wrighty's from the `pricing` table.
CostSource = Literal["reported", "estimated"]


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None  # the vendor's own figure; None when it reports none
    models: tuple[str, ...] = ()  # in the order first seen
    turns: int | None = None
    api_ms: int | None = None  # time spent waiting on the provider, as the vendor counts it
    final: bool = False  # the vendor's end-of-run figures were read (otherwise partial)
    cost_source: CostSource | None = None  # set with cost_usd (a reader's is "reported")

    @property
    def tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )

    def __add__(self, other: Usage) -> Usage:
        """Two runs together (an item's total): a cost is known when either run's is."""
        costs = [cost for cost in (self.cost_usd, other.cost_usd) if cost is not None]
        sources = {u.cost_source for u in (self, other) if u.cost_usd is not None}
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=sum(costs) if costs else None,
            models=self.models + tuple(m for m in other.models if m not in self.models),
            turns=_sum(self.turns, other.turns),
            api_ms=_sum(self.api_ms, other.api_ms),
            final=self.final and other.final,
            # A total with any estimated part is an estimate.
            cost_source="estimated" if "estimated" in sources else ("reported" if costs else None),
        )

    def over(self, limit: Limit) -> bool:
        """Whether this spend reached ``limit`` (either of its bounds)."""
        if limit.max_tokens is not None and self.tokens >= limit.max_tokens:
            return True
        return (
            limit.max_cost_usd is not None
            and self.cost_usd is not None
            and self.cost_usd >= limit.max_cost_usd
        )


def total(usages: Iterable[Usage]) -> Usage:
    """Every run together; ``Usage()`` (nothing, final) for none."""
    summed: Usage | None = None
    for usage in usages:
        summed = usage if summed is None else summed + usage
    return summed if summed is not None else Usage(final=True)


@dataclass(frozen=True)
class Limit:
    """A budget's bounds: a cost in USD, a number of tokens (every kind), or both."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None

    @property
    def unbounded(self) -> bool:
        return self.max_cost_usd is None and self.max_tokens is None

    def left_after(self, spent: Usage) -> Limit:
        """What remains of this budget once ``spent`` is spent (never below zero)."""
        cost = None
        if self.max_cost_usd is not None:
            cost = max(0.0, self.max_cost_usd - (spent.cost_usd or 0.0))
        tokens = None if self.max_tokens is None else max(0, self.max_tokens - spent.tokens)
        return Limit(cost, tokens)

    def describe(self) -> str:
        parts = []
        if self.max_cost_usd is not None:
            parts.append(f"${self.max_cost_usd:,.6f}".rstrip("0").rstrip("."))
        if self.max_tokens is not None:
            parts.append(f"{self.max_tokens:,} tokens")
        return " / ".join(parts) or "no limit"


NO_LIMIT = Limit()


@dataclass(frozen=True)
class Price:
    """USD per million tokens of each kind (`pricing.<model>` in wrighty.json)."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0

    def cost_of(self, usage: Usage) -> float:
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * self.cache_read
            + usage.cache_write_tokens * self.cache_write
        ) / 1_000_000


# The `pricing` entry that prices a run whose model has no entry of its own.
ANY_MODEL = "*"


def priced(usage: Usage, pricing: Mapping[str, Price]) -> Usage:
    """``usage`` with an estimated cost from ``pricing`` when its vendor reported none.

    A run is priced at its first model's price (the model it was started with; a vendor that
    names no model, or one without an entry, takes the ``"*"`` entry). A vendor's own figure is
    never replaced.
    """
    if usage.cost_usd is not None or not pricing:
        return usage
    model = usage.models[0] if usage.models else None
    price = pricing.get(model) if model is not None else None
    price = price or pricing.get(ANY_MODEL)
    if price is None:
        return usage
    return dataclasses.replace(usage, cost_usd=price.cost_of(usage), cost_source="estimated")


def cost_label(usage: Usage) -> str | None:
    """``$0.0123``, or ``$0.0123 est.`` for wrighty's estimate; None when no cost is known.
    Every place that shows a cost writes it so."""
    if usage.cost_usd is None:
        return None
    estimated = " est." if usage.cost_source == "estimated" else ""
    return f"${usage.cost_usd:.4f}{estimated}"


UNKNOWN_COST = "—"


def cost_text(usage: Usage) -> str:
    """``$0.0123``, ``$0.0123 est.`` for wrighty's estimate, ``—`` when no cost is known."""
    return cost_label(usage) or UNKNOWN_COST


def with_reported_cost(usage: Usage) -> Usage:
    """A reader's usage: its cost, if any, is the vendor's own."""
    if usage.cost_usd is None or usage.cost_source is not None:
        return usage
    return dataclasses.replace(usage, cost_source="reported")


@dataclass(frozen=True)
class LedgerEntry:
    """One run's line in the books."""

    run_id: str
    item_id: int
    agent: str | None  # the agent that ran (None: recorded before the ledger existed)
    started_at: datetime
    usage: Usage


def _sum(first: int | None, second: int | None) -> int | None:
    if first is None and second is None:
        return None
    return (first or 0) + (second or 0)
