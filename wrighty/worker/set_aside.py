"""Setting aside an item whose claim wrighty cannot compute, or whose row does not read
(docs/worker.md#when-wrighty-fails-on-an-item): it is taken under a claim that reads none of
its values and settled at once as internal-error, so that it stops no worker's claims."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from wrighty.agents import AgentPlan
from wrighty.domain import decisions
from wrighty.domain.claims import CLAIMABLE_STATES, ClaimRequest, claim, claim_to_set_aside
from wrighty.domain.model import Item
from wrighty.domain.notices import Source
from wrighty.domain.worker_events import Emit, WorkerEvent
from wrighty.errors import StoreError, UnreadableError
from wrighty.store.port import Store
from wrighty.worker.life import internal_error_change, write_settlement


@dataclass(frozen=True)
class SetAside:
    """What a set-aside needs of its worker."""

    store: Store
    installation_id: str
    now: Callable[[], datetime]
    emit: Emit
    unreachable: Callable[[str, StoreError], None]  # tells that the store could not be reached
    notify: Source | None = None  # who tells of settlements through the outbox
    notify_wake: Callable[[], None] | None = None  # the deliverer's: a notice just committed

    def unclaimable(self, request: ClaimRequest, plan: AgentPlan) -> bool:
        """Settle as internal-error every claimable item whose claim cannot be computed, so
        that it does not stop every worker's claims; whether any was."""
        now = self.now()
        found = False
        try:
            for item in self.store.list_items(CLAIMABLE_STATES):
                if request.item_id is not None and item.id != request.item_id:
                    continue
                try:
                    claim(item, request, at=now)
                except Exception as error:  # the claim of this one item cannot be computed
                    found = self.one(item, request, plan, error) or found
        except StoreError as error:
            self.unreachable("set-aside", error)
        return found

    def unreadable(self, error: UnreadableError, request: ClaimRequest, plan: AgentPlan) -> bool:
        """Set aside the item whose row did not read (docs/worker.md): read with a safe value
        in place of each bad one, so that the set-aside's write writes none of them back (nor
        trips a constraint the bad value breaks); whether it was."""
        if error.item_id is None:
            return False  # not an item's row: nothing to set aside
        try:
            salvaged = self.store.salvage_item(error.item_id)
        except StoreError as again:
            self.unreachable("set-aside", again)
            return False
        if salvaged is None or salvaged.value.state not in CLAIMABLE_STATES:
            return False
        return self.one(salvaged.value, request, plan, error)

    def one(self, item: Item, request: ClaimRequest, plan: AgentPlan, error: Exception) -> bool:
        """Take ``item`` under a claim that reads none of its values, and settle it at once
        as internal-error (two guarded writes, as for any claim); False if another worker
        moved it first."""
        try:
            change = claim_to_set_aside(item, request, at=self.now())
            if not self.store.write_transition(change):
                return False
            claimed = change.after
            self.emit(WorkerEvent.CLAIMED, item_id=claimed.id, generation=claimed.generation)
            change = internal_error_change(
                self.store, claimed, error, plan=plan, installation_id=self.installation_id,
                now=self.now, run_recorded=False, process_started=False,
            )  # fmt: skip
            write_settlement(
                self.store, change, None, self.emit, notify=self.notify, wake=self.notify_wake
            )
        except StoreError:
            raise
        except Exception as again:  # reported; the loop goes on
            self.emit(
                WorkerEvent.CLAIM_FAILED,
                item_id=item.id,
                error=type(again).__name__,
                cause=decisions.describe_error(again),
            )
            return False
        return True
