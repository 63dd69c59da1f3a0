"""Items on SQL: creating one (with its dependencies, labels and first event), reading them,
the board, the queue's figures, and the one guarded write of a change that every move of an
item goes through."""

from __future__ import annotations

import json
from collections.abc import Collection
from datetime import datetime
from typing import TYPE_CHECKING

from wrighty.domain.model import Change, Dependency, Event, Item, NewItem, Run
from wrighty.domain.scheduling import EDITED
from wrighty.domain.states import ItemState
from wrighty.errors import AlreadyImported, NotFoundError, UnreadableError, WrightyError
from wrighty.store.fields import to_db_time
from wrighty.store.fleet_rows import notice_params
from wrighty.store.port import Rows, Salvaged
from wrighty.store.rows import (
    dependency_from_row,
    event_from_row,
    event_params,
    item_from_row,
    item_mutable_params,
    labels_from_rows,
    landing_from_row,
    new_item_params,
    open_item_from_row,
    queue_figures_from_rows,
    run_end_params,
    run_from_row,
)
from wrighty.store.sqlbase import Refused, SqlBase, Tx

if TYPE_CHECKING:  # a read that needs neither the board nor the queue's figures loads neither
    from wrighty.domain.board import OpenItem
    from wrighty.domain.health import QueueFigures
    from wrighty.domain.landing import Landing


# The states of an item in a landing's fix turn (docs/landing.md): leaving them ends it.
_FIX_TURN_STATES = frozenset({ItemState.RUNNING, ItemState.RETRY_SCHEDULED})


class ItemsSql(SqlBase):
    def create_item(self, new: NewItem, *, at: datetime, actor: str) -> Item:
        with self._write() as tx:
            inserted = tx.run("insert_item", new_item_params(new, at=at)).fetchone()
            if inserted is None:  # another import made the item of this key first
                raise AlreadyImported(new.import_key or "")
            item_id = int(inserted["id"])
            for depends_on in dict.fromkeys(new.after):
                try:
                    add_dependency(tx, item_id, depends_on)
                except Refused:  # a new item closes no cycle, unless it names its own id
                    raise WrightyError(
                        f"--after {depends_on}: an item cannot come after itself"
                    ) from None
            for label in dict.fromkeys(new.labels):
                tx.run("insert_label", {"item_id": item_id, "label": label})
            from wrighty.domain.transitions import creation_event  # a write's, not a read's

            event = creation_event(new, item_id, at=at, actor=actor)
            tx.run("insert_event", event_params(event))
            item = item_from_row(tx.run("select_item", {"id": item_id}).fetchone())
            from wrighty.domain.claims import CLAIMABLE_STATES  # a write's, not a read's

            if item.state in CLAIMABLE_STATES:
                self._work_eligible(tx, item)
        return item

    def list_dependencies(self, item_id: int | None = None) -> list[Dependency]:
        rows = self._rows("select_dependencies", {"item_id": item_id})
        return [dependency_from_row(row) for row in rows]

    def list_labels(self, item_id: int | None = None) -> dict[int, tuple[str, ...]]:
        return labels_from_rows(self._rows("select_labels", {"item_id": item_id}))

    def find_imported(self, keys: Collection[str]) -> dict[str, Item]:
        rows = self._rows("select_imported", {"keys": json.dumps(sorted(set(keys)))})
        return {item.import_key or "": item for item in self._read_all(rows, item_from_row)}

    def list_imported(self, prefix: str) -> Rows[Item]:
        rows = self._rows("select_imported_from", {"prefix": prefix, "length": len(prefix)})
        return self._read_all(rows, item_from_row)

    def get_item(self, item_id: int) -> Item | None:
        rows = self._rows("select_item", {"id": item_id})
        return item_from_row(rows[0]) if rows else None

    def list_items(self, states: Collection[ItemState] = ()) -> Rows[Item]:
        if not states:
            return self._read_all(self._rows("select_all_items", {}), item_from_row)
        wanted = json.dumps(sorted(s.value for s in states))
        return self._read_all(self._rows("select_items", {"states": wanted}), item_from_row)

    def list_items_moved_since(self, moment: datetime) -> Rows[Item]:
        rows = self._rows("select_items_moved_since", {"moment": to_db_time(moment)})
        return self._read_all(rows, item_from_row)

    def salvage_item(self, item_id: int) -> Salvaged[Item] | None:
        return self._salvage("select_item", {"id": item_id}, item_from_row)

    def list_events(self, item_id: int) -> list[Event]:
        return [event_from_row(row) for row in self._rows("select_events", {"item_id": item_id})]

    def list_open_items(self, *, limit: int) -> Rows[OpenItem]:
        if limit < 0:
            raise ValueError(f"limit must not be negative (got {limit})")
        with self._snapshot() as tx:  # one snapshot: the items, their latest runs, their edges
            rows = tx.run("select_open_items", {"limit": limit, "edited": EDITED}).fetchall()
            wanted = [row["last_run_id"] for row in rows if row["last_run_id"] is not None]
            found = (
                tx.run("select_runs_by_id", {"run_ids": json.dumps(wanted)}).fetchall()
                if wanted
                else []
            )
            landing_rows = (
                tx.run("select_open_landings", {}).fetchall()
                if any(row["state"] == ItemState.LANDING.value for row in rows)
                else []
            )
        runs: dict[str, Run | UnreadableError] = {}
        for row in found:
            try:
                runs[row["run_id"]] = run_from_row(row)
            except UnreadableError as error:
                runs[row["run_id"]] = error
        landings: dict[int, Landing | UnreadableError] = {}
        if landing_rows:
            for row in landing_rows:
                try:
                    landings[int(row["item_id"])] = landing_from_row(row)
                except UnreadableError as error:
                    landings[int(row["item_id"])] = error
        return self._read_all(rows, lambda row: open_item_from_row(row, runs, landings))

    def queue_figures(self, *, now: datetime) -> QueueFigures:
        with self._snapshot() as tx:  # one snapshot for the counts and the figures
            counted = tx.run("select_state_counts").fetchall()
            row = tx.run("select_queue_figures", {"now": to_db_time(now)}).fetchone()
            by_agent = tx.run("select_waiting_by_agent").fetchall()
        return queue_figures_from_rows(counted, row, by_agent)

    def write_transition(self, change: Change) -> bool:
        try:
            with self._write() as tx:
                self._apply(tx, change)
        except Refused:
            return False
        return True

    def _apply(
        self,
        tx: Tx,
        change: Change,
        *,
        expired_before: datetime | None = None,
        stack: bool = False,
    ) -> None:
        """Write ``change`` inside the open transaction, or raise Refused (rolled back).
        ``stack``: a claim under completion.stack (a move to running may stack on an item in
        review or landing)."""
        before, after, event = change.before, change.after, change.event
        if before.id != after.id or event.item_id != before.id:
            raise ValueError("a change must describe one item")
        cursor = tx.run(
            "update_item_guarded",
            {
                **item_mutable_params(after),
                "expected_state": before.state.value,
                "expected_generation": before.generation,
                "expected_claimed_by": before.claimed_by,
                "expired_before": to_db_time(expired_before),
                "stack": stack,
            },
        )
        if cursor.rowcount != 1:
            raise Refused
        if change.run_end is not None:
            tx.run(
                "end_open_runs",
                run_end_params(change.run_end, before.id, before.generation),
            )
        if change.after_added:
            tx.run("lock_dependencies")
            for depends_on in change.after_added:
                add_dependency(tx, before.id, depends_on)
        for depends_on in change.after_removed:
            tx.run("delete_dependency", {"item_id": before.id, "depends_on": depends_on})
        tx.run("insert_event", event_params(event))
        if before.state in _FIX_TURN_STATES and after.state not in _FIX_TURN_STATES:
            tx.run("end_landing_fix_turn", {"item_id": before.id})
        for notice in change.notices:
            tx.run("insert_notice", notice_params(notice))
        from wrighty.domain.claims import CLAIMABLE_STATES  # a write's, not a read's

        if after.state in CLAIMABLE_STATES or (
            after.state is ItemState.LANDING and after.claimed_by is None
        ):  # work for an agent, or a landing waiting for a lander (docs/landing.md)
            self._work_eligible(tx, after)


def add_dependency(tx: Tx, item_id: int, depends_on: int) -> None:
    """Write one dependency through its guard (the item depended on exists; no cycle), or
    raise NotFoundError / Refused (rolled back) when it is refused."""
    cursor = tx.run("insert_dependency_guarded", {"item_id": item_id, "depends_on": depends_on})
    if cursor.rowcount == 1:
        return
    if tx.run("select_item", {"id": depends_on}).fetchone() is None:
        raise NotFoundError(f"--after {depends_on}: no item {depends_on}")
    raise Refused  # a cycle, or already there: the caller reads again and decides
