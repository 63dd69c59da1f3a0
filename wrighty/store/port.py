"""The store contract every backend implements (SQLite now, PostgreSQL later).

All writes about an item are compare-and-set: they name the state, generation and claim the
caller read, and change nothing if the item moved meanwhile.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Protocol

from wrighty.domain.model import Event, Item, NewItem, Run, Session
from wrighty.domain.states import ItemState


class Store(Protocol):
    def close(self) -> None: ...

    def schema_version(self) -> int:
        """The newest migration applied to this store."""
        ...

    def create_item(self, new: NewItem, *, at: datetime, actor: str) -> Item:
        """Insert the item and its creation event in one transaction."""
        ...

    def get_item(self, item_id: int) -> Item | None: ...

    def list_items(self, states: Collection[ItemState] = ()) -> list[Item]:
        """Items in any of ``states`` (every item when empty), oldest id first."""
        ...

    def list_events(self, item_id: int) -> list[Event]:
        """The item's history, oldest first."""
        ...

    def list_runs(self, item_id: int) -> list[Run]: ...

    def get_session(self, item_id: int) -> Session | None: ...

    def write_transition(self, before: Item, after: Item, event: Event) -> bool:
        """Store ``after`` and append ``event`` if the item still matches ``before``.

        The guard is ``before``'s state, generation and claim owner. Returns False, having
        changed nothing, when the item moved meanwhile.
        """
        ...
