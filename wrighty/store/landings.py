"""Landing on SQL (docs/landing.md): the accept's move with its landing, a lander's claim of
the first landing item of a target's line, and each step of a landing written under its
claim, with the item's guarded move in one transaction."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from wrighty.store.claims import ClaimsSql
from wrighty.store.fields import aggregate, to_db_time
from wrighty.store.rows import item_from_row, landing_from_row, landing_params
from wrighty.store.sqlbase import Refused, Tx

if TYPE_CHECKING:
    from wrighty.domain.claims import ClaimRequest
    from wrighty.domain.landing import Landing, LandingChange
    from wrighty.domain.model import Item

_CLAIM_ATTEMPTS = 3


class LandingsSql(ClaimsSql):
    def write_landing(self, move: LandingChange) -> bool:
        try:
            with self._write() as tx:
                self._apply(tx, move.change)
                self._write_landing_parts(tx, move)
        except Refused:
            return False
        return True

    @staticmethod
    def _write_landing_parts(tx: Tx, move: LandingChange) -> None:
        at = to_db_time(move.change.after.updated_at)
        if move.landing is not None:
            params = {**landing_params(move.landing), "updated_at": at}
            if move.landing.seq == 0:  # a new acceptance
                tx.run("insert_landing", params)
            else:
                tx.run("update_landing", params)
        if move.base_commit is not None:
            tx.run(
                "update_session_base",
                {"item_id": move.change.after.id, "base_commit": move.base_commit,
                 "updated_at": at},
            )  # fmt: skip

    def record_landing(
        self, claimed: Item, landing: Landing, *, at: datetime, base_commit: str | None = None
    ) -> bool:
        with self._write() as tx:
            cursor = tx.run(
                "update_landing_guarded",
                {**landing_params(landing), "updated_at": to_db_time(at),
                 "generation": claimed.generation, "claimed_by": claimed.claimed_by},
            )  # fmt: skip
            if cursor.rowcount != 1:
                return False
            if base_commit is not None:
                tx.run(
                    "update_session_base",
                    {"item_id": claimed.id, "base_commit": base_commit,
                     "updated_at": to_db_time(at)},
                )  # fmt: skip
        return True

    def get_landing(self, item_id: int) -> Landing | None:
        rows = self._rows("select_landing", {"item_id": item_id})
        return landing_from_row(rows[0]) if rows else None

    def acquire_landing(
        self, request: ClaimRequest, *, now: datetime, item_id: int | None = None
    ) -> tuple[Item, Landing] | None:
        from wrighty.domain.landing import InLine, claim, head_to_claim
        from wrighty.domain.leases import lease_expired

        for _ in range(_CLAIM_ATTEMPTS):
            try:
                with self._write() as tx:
                    tx.run("lock_landing_lines", {"installation_id": request.installation_id})
                    rows = tx.run(
                        "select_landing_lines", {"installation_id": request.installation_id}
                    ).fetchall()
                    line = [
                        InLine(int(row["item_id"]), str(row["target"]),
                               row["state"] == "landing",
                               row["claimed_by"] is not None
                               and not lease_expired(aggregate(row).time("lease_expires_at"), now),
                               bool(row["waits_for_dependency"]))
                        for row in rows
                    ]  # fmt: skip
                    wanted = None
                    if item_id is not None:
                        mine = next((e for e in line if e.item_id == item_id), None)
                        if mine is None:
                            return None
                        wanted = mine.target
                    chosen = head_to_claim(line, target=wanted)
                    if chosen is not None:
                        item = item_from_row(tx.run("select_item", {"id": chosen}).fetchone())
                        landing = landing_from_row(
                            tx.run("select_landing", {"item_id": item.id}).fetchone()
                        )
                        move = claim(item, landing, request, at=now)
                        self._apply(tx, move.change)
                        return move.change.after, landing
                    return None
            except Refused:
                continue
        return None
