"""Review's two actions (docs/work-product.md#review), for every entry point: `accept` (the
change integrated as completion.integrate says, then review -> done) and `reject` (back to work
with a person's feedback)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from wrighty.domain import review
from wrighty.domain.model import Item, Session
from wrighty.errors import WrightyError
from wrighty.services.items import OPERATOR, apply_change, require_item
from wrighty.store.port import Store


@dataclass(frozen=True)
class Integrated:
    """What an accept's integration did: in words (for the done event), and the address a
    command printed (a pull request's), if any."""

    words: str | None
    url: str | None = None


class IntegrationFailed(Exception):
    """The integration of an accepted item failed: it stays in review, its reason saying why
    (``message``: one line, neutralised, no secret)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# Integrates an item's change (its session: where its branch is); IntegrationFailed if it
# cannot. None: nothing to integrate.
Integrator = Callable[[Item, Session | None], Integrated | None]


@dataclass(frozen=True)
class Accepted:
    item: Item
    integrated: Integrated | None


def accept_item(
    store: Store,
    item_id: int,
    *,
    now: datetime,
    actor: str = OPERATOR,
    integrator: Integrator | None = None,
) -> Accepted:
    """review -> done, once ``integrator`` has integrated its change. A failed integration
    leaves the item in review with the failure as its reason, and raises IntegrationFailed."""
    item = require_item(store, item_id)
    review.check_acceptable(item)
    integrated = None
    if integrator is not None:
        try:
            integrated = integrator(item, store.get_session(item.id))
        except IntegrationFailed as failed:
            why = failed.message
            apply_change(
                store,
                item_id,
                lambda current: review.integration_failed(current, why, at=now, actor=actor),
            )
            raise
    words = integrated.words if integrated is not None else None
    try:
        change = apply_change(
            store,
            item_id,
            lambda current: review.accept(current, at=now, actor=actor, integrated=words),
        )
    except WrightyError as moved:
        if words is None:
            raise
        # Integrated, but the item moved meanwhile (cancelled, say): say both.
        raise WrightyError(f"{moved}; its change was integrated already: {words}") from moved
    return Accepted(change.after, integrated)


def reject_item(
    store: Store,
    item_id: int,
    feedback: str,
    *,
    now: datetime,
    max_rejections: int,
    actor: str = OPERATOR,
) -> Item:
    """review -> retry-scheduled, due now: the next claim resumes the item's session with
    ``feedback`` as its prompt (docs/work-product.md#review)."""
    return apply_change(
        store,
        item_id,
        lambda current: review.reject(
            current, feedback, at=now, actor=actor, max_rejections=max_rejections
        ),
    ).after
