"""The items a worker handles, for `wrighty worker start --max-items N` (docs/worker.md): each
item counts once, however many runs it takes (a crash retry, a usage retry, a fix turn).

Once N items were claimed, the worker claims no new item, but still claims those of its N that
wait for a retry, so that the N are carried as far as this worker can take them; it stops
when none waits (or its idle timeout ends first).
"""

from __future__ import annotations

from collections.abc import Callable

from wrighty.domain.states import ItemState


class HandledItems:
    """The items this worker claimed, each once, against ``limit`` (None: no limit)."""

    def __init__(self, limit: int | None) -> None:
        self._limit = limit
        self._items: list[int] = []

    def claimed(self, item_id: int) -> None:
        if item_id not in self._items:
            self._items.append(item_id)

    @property
    def count(self) -> int:
        return len(self._items)

    @property
    def full(self) -> bool:
        """No new item may be claimed: ``limit`` items were."""
        return self._limit is not None and len(self._items) >= self._limit

    def waiting(self, state_of: Callable[[int], ItemState | None]) -> list[int]:
        """Those of its items that wait for a retry, in the order they were first claimed
        (``state_of``: an item's state, None when it cannot be read now: it may wait)."""
        return [
            item_id
            for item_id in self._items
            if state_of(item_id) in (ItemState.RETRY_SCHEDULED, None)
        ]
