"""Which commands `wrighty show` offers next for an item, by its state."""

from __future__ import annotations

from dataclasses import dataclass

from wrighty.domain.states import ItemState


@dataclass(frozen=True)
class Suggestion:
    command: str  # exactly what to type
    purpose: str


def next_commands(item_id: int, state: ItemState, *, resumable: bool) -> list[Suggestion]:
    """The commands that move ``item_id`` on from ``state``, the likeliest first; none for a
    state that needs nobody (todo and queued wait for a person or a worker as they should, done
    and cancelled are final). ``resumable``: this installation can resume the item's session."""
    logs = Suggestion(f"wrighty logs {item_id}", "read the last run's output")
    cancel = Suggestion(f"wrighty cancel {item_id}", "give up on the item (final)")
    if state is ItemState.NEEDS_ATTENTION:
        resume = Suggestion(
            f"wrighty requeue {item_id} --resume", "resume the session where it stopped"
        )
        fresh = Suggestion(
            f"wrighty requeue {item_id} --fresh", "start over in a new session, same workspace"
        )
        return [resume, fresh, logs, cancel] if resumable else [fresh, logs, cancel]
    if state is ItemState.RETRY_SCHEDULED:
        return [
            Suggestion(f"wrighty requeue {item_id} --resume", "run the retry now, not when due"),
            cancel,
            logs,
        ]
    if state is ItemState.RUNNING:
        return [
            Suggestion(f"wrighty logs {item_id} --follow", "watch the agent's output live"),
            Suggestion(f"wrighty cancel {item_id}", "stop the agent and give up on the item"),
        ]
    return []
