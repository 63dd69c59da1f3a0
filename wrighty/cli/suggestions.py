"""Which commands `wrighty show` offers next for an item, by its state and standing."""

from __future__ import annotations

from dataclasses import dataclass

from wrighty.domain.states import ItemState
from wrighty.services.show import Standing


@dataclass(frozen=True)
class Suggestion:
    command: str  # exactly what to type: a whole line, nothing after it
    purpose: str


def next_commands(item_id: int, state: ItemState, standing: Standing) -> list[Suggestion]:
    """The commands that move ``item_id`` on from ``state``, the likeliest first; none for a
    state that needs nobody (todo and queued wait for a person or a worker as they should, done
    and cancelled are final)."""
    logs = [Suggestion(f"wrighty logs {item_id}", "read the last run's output")]
    if not standing.has_logs:
        logs = []
    cancel = Suggestion(f"wrighty cancel {item_id}", "give up on the item (final)")
    raised = "".join(f" {flag}" for flag in standing.raise_budget or ())
    budget = ", with a higher budget" if raised else ""
    if state in (ItemState.NEEDS_ATTENTION, ItemState.RETRY_SCHEDULED) and (
        standing.raise_budget is None
    ):
        return [*logs, cancel]  # the most a budget may be is spent: no requeue would run it
    if state is ItemState.NEEDS_ATTENTION:
        resume = Suggestion(
            f"wrighty requeue {item_id} --resume{raised}",
            f"resume the session where it stopped{budget}",
        )
        fresh = Suggestion(
            f"wrighty requeue {item_id} --fresh{raised}",
            f"start over in a new session, same workspace{budget}",
        )
        return [*([resume] if standing.resumable else []), fresh, *logs, cancel]
    if state is ItemState.RETRY_SCHEDULED:
        return [
            Suggestion(
                f"wrighty requeue {item_id} --resume{raised}",
                f"run the retry now, not when due{budget}",
            ),
            cancel,
            *logs,
        ]
    if state is ItemState.RUNNING and standing.lease_expired:
        return [
            Suggestion("wrighty reap", "settle it now: its worker stopped renewing the claim"),
            *logs,
        ]
    if state is ItemState.RUNNING:
        follow = Suggestion(f"wrighty logs {item_id} --follow", "watch the agent's output live")
        return [
            *([follow] if standing.has_logs else []),
            Suggestion(f"wrighty cancel {item_id}", "stop the agent and give up on the item"),
        ]
    return []
