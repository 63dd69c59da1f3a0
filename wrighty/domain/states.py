"""Item states and the transitions between them, as data."""

from enum import StrEnum


class ItemState(StrEnum):
    TODO = "todo"
    QUEUED = "queued"
    RUNNING = "running"
    RETRY_SCHEDULED = "retry-scheduled"
    NEEDS_ATTENTION = "needs-attention"
    # A verified success waiting for a person: accepted it is done, rejected it goes back to
    # work (retry-scheduled, its session resumed). Not claimable, no lease (docs/states.md).
    REVIEW = "review"
    # Accepted by a person: its change is being brought up to date with where it lands, checked
    # there and integrated once, under a landing claim (docs/landing.md). Claimed by a lander,
    # never by an agent's worker.
    LANDING = "landing"
    DONE = "done"
    CANCELLED = "cancelled"


TERMINAL_STATES: frozenset[ItemState] = frozenset({ItemState.DONE, ItemState.CANCELLED})

# States an item may be created in.
INITIAL_STATES: frozenset[ItemState] = frozenset({ItemState.TODO, ItemState.QUEUED})

# from-state -> the states it may move to. Terminal states have no way out.
TRANSITIONS: dict[ItemState, frozenset[ItemState]] = {
    ItemState.TODO: frozenset({ItemState.QUEUED, ItemState.CANCELLED}),
    ItemState.QUEUED: frozenset({ItemState.RUNNING, ItemState.CANCELLED}),
    # running -> landing: a landing's fix turn that passed its checks, with
    # completion.reviewAfterFix auto (docs/landing.md).
    ItemState.RUNNING: frozenset(
        {
            ItemState.DONE,
            ItemState.REVIEW,
            ItemState.LANDING,
            ItemState.RETRY_SCHEDULED,
            ItemState.NEEDS_ATTENTION,
            ItemState.QUEUED,
            ItemState.CANCELLED,
        }
    ),
    # An operator's `requeue --resume` makes a retry due now (retry-scheduled again).
    ItemState.RETRY_SCHEDULED: frozenset(
        {
            ItemState.RUNNING,
            ItemState.RETRY_SCHEDULED,
            ItemState.NEEDS_ATTENTION,
            ItemState.QUEUED,
            ItemState.CANCELLED,
        }
    ),
    # `wrighty verify ID`: an item that waited for its checks is done once they pass by hand
    # (or waits for review, with completion.review person).
    ItemState.NEEDS_ATTENTION: frozenset(
        {
            ItemState.QUEUED,
            ItemState.RETRY_SCHEDULED,
            ItemState.DONE,
            ItemState.REVIEW,
            ItemState.CANCELLED,
        }
    ),
    # Accepted: landing (done at once when there is nothing to land). Rejected: back to work,
    # its session resumed. Or cancelled.
    ItemState.REVIEW: frozenset(
        {ItemState.LANDING, ItemState.DONE, ItemState.RETRY_SCHEDULED, ItemState.CANCELLED}
    ),
    # Landed: done. A conflict or a red check: a fix turn in its session (retry-scheduled),
    # or a person's attention once the fix turns are spent; what a person must decide goes
    # back to review. landing -> landing: a lander claims it, or puts it back in line.
    ItemState.LANDING: frozenset(
        {
            ItemState.LANDING,
            ItemState.DONE,
            ItemState.REVIEW,
            ItemState.RETRY_SCHEDULED,
            ItemState.NEEDS_ATTENTION,
        }
    ),
    ItemState.DONE: frozenset(),
    ItemState.CANCELLED: frozenset(),
}


def can_move(from_state: ItemState, to_state: ItemState) -> bool:
    return to_state in TRANSITIONS[from_state]


def parse_state(text: str) -> ItemState:
    """The state named ``text``; ValueError lists the valid names."""
    try:
        return ItemState(text)
    except ValueError:
        names = ", ".join(s.value for s in ItemState)
        raise ValueError(f"unknown state {text!r} (valid: {names})") from None
