"""Operator actions on items, shared by every entry point (CLI today, others later).

Each action reads the item, lets the domain decide the move, and writes it with the store's
compare-and-set; if another writer moved the item in between, it decides again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from wrighty.domain.model import Event, Item, NewItem, Run, Session
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition, validate_new_item
from wrighty.errors import ConflictError, IllegalTransitionError, NotFoundError
from wrighty.store.port import Store

OPERATOR = "operator"
_CAS_ATTEMPTS = 5

Plan = Callable[[Item], tuple[Item, Event]]


@dataclass(frozen=True)
class ItemDetail:
    """Everything `wrighty show` reports about one item."""

    item: Item
    session: Session | None
    runs: list[Run]
    events: list[Event]


def create_item(store: Store, new: NewItem, *, now: datetime, actor: str = OPERATOR) -> Item:
    validate_new_item(new)
    return store.create_item(new, at=now, actor=actor)


def require_item(store: Store, item_id: int) -> Item:
    item = store.get_item(item_id)
    if item is None:
        raise NotFoundError(f"no item {item_id}; `wrighty list` shows the items there are")
    return item


def item_detail(store: Store, item_id: int) -> ItemDetail:
    item = require_item(store, item_id)
    return ItemDetail(
        item=item,
        session=store.get_session(item_id),
        runs=store.list_runs(item_id),
        events=store.list_events(item_id),
    )


def resume_address_complete(session: Session, *, installation_id: str) -> bool:
    """Whether this installation could resume ``session``: id known, same installation,
    workspace present. (The vendor transcript check joins with the vendor adapters.)"""
    return (
        session.session_id is not None
        and session.installation_id == installation_id
        and Path(session.workspace).is_dir()
    )


def queue_item(store: Store, item_id: int, *, now: datetime, actor: str = OPERATOR) -> Item:
    """todo -> queued: the item becomes eligible for workers."""

    def plan(item: Item) -> tuple[Item, Event]:
        if item.state is not ItemState.TODO:
            raise IllegalTransitionError(
                f"item {item.id} is {item.state}; `wrighty queue` moves todo items only"
            )
        return transition(item, ItemState.QUEUED, at=now, actor=actor)

    return _apply(store, item_id, plan)


def cancel_item(store: Store, item_id: int, *, now: datetime, actor: str = OPERATOR) -> Item:
    """Any unfinished item -> cancelled (final)."""

    def plan(item: Item) -> tuple[Item, Event]:
        return transition(
            item,
            ItemState.CANCELLED,
            at=now,
            actor=actor,
            reason_code="operator-cancelled",
            reason="cancelled by an operator",
        )

    return _apply(store, item_id, plan)


def _apply(store: Store, item_id: int, plan: Plan) -> Item:
    for _ in range(_CAS_ATTEMPTS):
        before = require_item(store, item_id)
        after, event = plan(before)
        if store.write_transition(before, after, event):
            return after
    raise ConflictError(f"item {item_id} kept changing while this command ran; try again")
