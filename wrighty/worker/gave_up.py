"""Items a worker gave up: the store failed until their claims' leases ran out (or, with a
known outcome, until the worker was stopped). Each is left to the reaper, and the worker's
exit line tells where it stands now (docs/worker.md#when-the-claim-is-lost)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from wrighty.domain.model import Change, Item
from wrighty.domain.states import ItemState
from wrighty.domain.worker_events import Emit, WorkerEvent
from wrighty.errors import StoreError, WrightyError
from wrighty.store.deadlines import call_deadline
from wrighty.store.port import Store
from wrighty.worker.patient import same_settlement

# How long a stopping worker waits for the store to say where an item it gave up stands now.
FINAL_READ_SECONDS = 5.0
FINAL_READ_RETRY_SECONDS = 0.25


class GaveUpError(WrightyError):
    """The worker gave up items because the store failed until their claims' leases ran out
    (or, with a known outcome, until the worker was stopped); the worker exits non-zero."""

    exit_code = 1


@dataclass(frozen=True)
class GaveUp:
    """An item whose claim this worker gave up, and the settlement it could not record."""

    item: Item
    cause: str
    pending: bool  # its agent's outcome was known: the worker was stopped before it landed
    settlement: Change | None  # the settlement it was writing then, if it got that far


def read_at_the_end(store: Store, item_id: int) -> Item | None:
    """The item as the store holds it now, tried again (every 1/4 s) for at most
    FINAL_READ_SECONDS while the store does not answer; StoreError after that."""
    deadline = time.monotonic() + FINAL_READ_SECONDS
    while True:
        try:
            with call_deadline(deadline):
                return store.get_item(item_id)
        except StoreError:
            if time.monotonic() + FINAL_READ_RETRY_SECONDS >= deadline:
                raise
            time.sleep(FINAL_READ_RETRY_SECONDS)


def gave_up_line(store: Store, gave_up: GaveUp, emit: Emit) -> str | None:
    """The exit line's words for an item given up, told from the item as the store holds
    it now (one read, bounded: it may have been settled or reaped meanwhile); None if the
    settlement did land after all."""
    claimed, pending = gave_up.item, gave_up.settlement
    if gave_up.pending:
        outcome = f" ({pending.after.state.value})" if pending is not None else ""
        what = (
            f"its agent's outcome{outcome} was not recorded: the store failed until the "
            f"worker was stopped ({gave_up.cause})"
        )
    else:
        what = f"its claim's lease ran out before the store renewed it ({gave_up.cause})"
    try:
        current = read_at_the_end(store, claimed.id)
    except StoreError as error:
        return f"gave up item {claimed.id}: {what}; where it stands now does not read ({error})"
    if current is not None and pending is not None and same_settlement(current, pending.after):
        emit(
            WorkerEvent.SETTLED, item_id=claimed.id, state=current.state.value,
            reason_code=current.reason_code,
        )  # fmt: skip
        return None
    line = f"gave up item {claimed.id}: {what}"
    if current is None:
        return f"{line}; it is gone from the store"
    if (
        current.state is ItemState.RUNNING
        and current.generation == claimed.generation
        and current.claimed_by == claimed.claimed_by
    ):
        return f"{line}; the item stays running until its lease is reaped"
    state = current.state.value
    if current.reason_code:
        state += f" ({current.reason_code})"
    return f"{line}; it has moved on since: now {state}, generation {current.generation}"


def give_up_exit(store: Store, gave_up: list[GaveUp], emit: Emit) -> None:
    """GaveUpError naming the first item given up whose settlement did not land after all
    (and how many more); nothing when every one did."""
    lines = [line for one in gave_up if (line := gave_up_line(store, one, emit))]
    if lines:
        more = len(lines) - 1
        raise GaveUpError(lines[0] + (f" (and {more} more)" if more else ""))
