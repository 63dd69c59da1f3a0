"""Where an accepted item's landing stands, as `show` (its text, its JSON, the console's item
page) says it (docs/landing.md#where-it-shows). Pure: from the item, its landing and its
history.

A landing item: `domain/landing.where` (waiting in line, updating, checking on the target's
commit, integrating). An item in a landing's fix turn (retry-scheduled or running since its
landing sent it back to its agent): which fix turn of how many. A landed one (done by a
`landed` event): that it landed, what the integration did, and the target's commit it was
checked on. One that left landing for a person (review, needs-attention): that it did not land.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from wrighty.domain.model import LANDED, LANDING_FIX_TURNS, Event, Item
from wrighty.domain.states import ItemState

if TYPE_CHECKING:
    from wrighty.domain.landing import Landing

SHORT = 12  # a commit as the landing's words show it


@dataclass(frozen=True)
class LandingView:
    """An item's landing as `show` says it: ``where`` in a few words; ``fix_turn``, the fix
    turn it is in (None: not in one); ``landed``, what the integration did (the `landed`
    event's reason) and ``landed_at``, once it landed."""

    landing: Landing
    where: str
    fix_turn: int | None = None
    landed: str | None = None
    landed_at: datetime | None = None


def in_fix_turn(events: list[Event]) -> bool:
    """Whether an item with this history (oldest first) is in a fix turn its landing asked
    for (a conflict, a red check): its latest moves are a retry and its runs since its landing
    sent it back to its agent (a rework after a rejection is not one)."""
    for event in reversed(events):
        if event.to_state not in (ItemState.RETRY_SCHEDULED, ItemState.RUNNING):
            return False
        if event.from_state is ItemState.LANDING:
            return event.reason_code in LANDING_FIX_TURNS
    return False


def landing_view(
    landing: Landing, item: Item, events: list[Event], *, max_fix_turns: int | None
) -> LandingView:
    """Where ``item``'s ``landing`` stands (``events``: its history, oldest first;
    ``max_fix_turns``: its agent's verify.maxFixTurns, None when not known)."""
    from wrighty.domain.landing import where

    target = landing.target
    if item.state is ItemState.LANDING:
        return LandingView(landing, where(landing, item))
    if item.state in (ItemState.RETRY_SCHEDULED, ItemState.RUNNING) and in_fix_turn(events):
        of = f" of {max_fix_turns}" if max_fix_turns is not None else ""
        turn = item.fix_turns
        return LandingView(landing, f"fix turn {turn}{of} before it lands on {target}", turn)
    left = _last_left_landing(events, since=landing.accepted_at)
    if left is not None and left.to_state is ItemState.DONE and left.reason_code == LANDED:
        checked = f", checked at {landing.target_commit[:SHORT]}" if landing.target_commit else ""
        return LandingView(landing, f"landed on {target}{checked}", None, left.reason, left.at)
    if left is not None and item.state in (ItemState.REVIEW, ItemState.NEEDS_ATTENTION):
        return LandingView(landing, f"did not land on {target} (see its reason)")
    return LandingView(landing, where(landing, item))


def _last_left_landing(events: list[Event], *, since: datetime) -> Event | None:
    """The item's last move out of landing at or after its acceptance (None: none yet)."""
    for event in reversed(events):
        if event.at < since:
            return None
        if event.from_state is ItemState.LANDING and event.to_state is not ItemState.LANDING:
            return event
    return None
