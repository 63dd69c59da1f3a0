"""What a run spent, as its vendor CLI reported it (issue 16, the usage ledger; pure).

A reader builds a run's Usage line by line, so a run that is killed keeps what was seen before
(``final`` False: partial). Totals across runs add field by field.
"""

from __future__ import annotations

from dataclasses import dataclass


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
        )


def _sum(first: int | None, second: int | None) -> int | None:
    if first is None and second is None:
        return None
    return (first or 0) + (second or 0)
