"""The worker's side of its agent's day budget (docs/usage.md): before each claim, whether
what the agent spent today holds the worker back, told once when the hold starts and once when
a new day lifts it; a spend that does not read holds it too, told once until it reads again.
The claim checks the budget again in its own transaction."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from wrighty.domain import decisions
from wrighty.domain.budgets import AgentHold, Budgets, agent_hold
from wrighty.domain.times import rfc3339
from wrighty.domain.worker_events import Emit, WorkerEvent
from wrighty.errors import StoreError, UnreadableError
from wrighty.store.port import Store


class BudgetHold:
    """Whether the agent's budget for the day holds the worker's claims, as last looked."""

    def __init__(
        self,
        store: Store,
        budgets: Budgets,
        *,
        now: Callable[[], datetime],
        emit: Emit,
        unreachable: Callable[[str, StoreError], None],
    ) -> None:
        self._store = store
        self._budgets = budgets
        self._now = now
        self._emit = emit
        self._unreachable = unreachable  # tells that the store could not be reached
        self._held: AgentHold | None = None  # the agent's day budget, while it is spent
        self._spend_unreadable = False  # its spend did not read at the last look (told once)

    def held(self, agent: str) -> bool:
        """Whether the agent's budget for the day is spent (said once, when it becomes so, and
        when a new day lifts it), or what it spent does not read (said once, until it reads
        again)."""
        limit = self._budgets.agent_limit(agent)
        if limit.unbounded:
            return False
        now = self._now()
        try:
            spent = self._store.agent_spend(agent, since=self._budgets.period(now).start)
        except UnreadableError as error:  # held: what the agent spent cannot be read
            if not self._spend_unreadable:
                cause = decisions.describe_error(error)
                self._emit(WorkerEvent.BUDGET_UNREADABLE, agent=agent, cause=cause)
            self._spend_unreadable = True
            return True
        except StoreError as error:
            self._unreachable("agent_spend", error)
            return True
        self._spend_unreadable = False
        hold = agent_hold(self._budgets, agent, spent, now=now)
        if hold is not None and self._held is None:
            self._emit(
                WorkerEvent.BUDGET_HELD,
                agent=agent,
                until=rfc3339(hold.until),
                reason=hold.reason(),
            )
        elif hold is None and self._held is not None:
            self._emit(WorkerEvent.BUDGET_RELEASED, agent=agent)
        self._held = hold
        return hold is not None
