"""One run's meter: its spend as its output is read, against its item's budget.

The output pump's thread feeds each reading of the vendor's usage in; the run's thread reads
whether the budget is spent (the pump wakes it the moment it is) and what to record at the
next heartbeat. Costs the vendor does not report are estimated from wrighty.json's pricing.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from wrighty.domain.usage import Limit, Price, Usage, priced, with_reported_cost

NOTHING_YET = Usage()


class RunMeter:
    def __init__(
        self,
        *,
        prior: Usage,
        limit: Limit,
        pricing: Mapping[str, Price],
        wake: threading.Event,
    ) -> None:
        self.prior = prior  # the item's earlier runs together
        self.limit = limit  # the item's budget
        self._pricing = pricing
        self._wake = wake
        self.run_usage: Usage | None = None  # this run's, as last read (priced)
        self.over = False  # the item's total reached its budget
        self._recorded: Usage | None = None
        self._read: Usage | None = None  # as the vendor reported it

    def seen(self, usage: Usage | None) -> None:
        """The run's usage as the vendor now reports it. Final figures (the vendor's
        end-of-run record) stop nothing: the run has ended its spending, and is exiting on its
        own; stopping it then would make its outcome a race between its exit and the stop."""
        if usage is None or usage == self._read:
            return
        self._read = usage
        self.run_usage = priced(with_reported_cost(usage), self._pricing)
        if usage.final or self.over or self.limit.unbounded:
            return
        if self.item_total.over(self.limit):
            self.over = True
            self._wake.set()

    @property
    def item_total(self) -> Usage:
        return self.prior + (self.run_usage or NOTHING_YET)

    def unrecorded(self) -> Usage | None:
        """The run's usage if it changed since it was last recorded."""
        return self.run_usage if self.run_usage != self._recorded else None

    def recorded(self, usage: Usage) -> None:
        self._recorded = usage
