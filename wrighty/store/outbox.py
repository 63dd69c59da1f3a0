"""The notification outbox on SQL: notices claimed by one deliverer at a time, renewed while a
sink is slow, finished under that claim, made due, listed and pruned."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from wrighty.errors import UnreadableError
from wrighty.store.fields import to_db_time
from wrighty.store.fleet_rows import (
    finish_params,
    notice_params,
    outbox_figures_from_row,
    stored_notice_from_row,
)
from wrighty.store.sqlbase import MAX_NOTED, SqlBase

if TYPE_CHECKING:  # the outbox's types, loaded by the commands that deliver or list notices
    from wrighty.domain.outbox import Delivered, Notice, OutboxFigures, StoredNotice
    from wrighty.store.port import Rows


class OutboxSql(SqlBase):
    def claim_notice(
        self, deliverer: str, *, now: datetime, lease_seconds: float
    ) -> StoredNotice | None:
        until = to_db_time(now + timedelta(seconds=lease_seconds))
        for _ in range(MAX_NOTED):
            with self._write() as tx:
                rows = tx.run(
                    "claim_notice", {"deliverer": deliverer, "now": to_db_time(now), "until": until}
                ).fetchall()
                if not rows:
                    return None
                problems: list[UnreadableError] = []
                stored = stored_notice_from_row(rows[0], problems)
                if not problems:
                    return stored
                # Undeliverable as stored: given up at once, saying why (docs/notifications.md).
                from wrighty.domain.outbox import Delivered

                given_up = Delivered(
                    "given-up",
                    stored.attempts,
                    now,
                    stored.delivered_to,
                    f"not delivered: {problems[0]}",
                    now,
                )
                tx.run(
                    "finish_notice_guarded",
                    finish_params(rows[0]["id"], deliverer, until, given_up),
                )
                self._note_unreadable(problems[0])
        return None

    def make_notices_due(self, *, now: datetime) -> int:
        with self._write() as tx:
            return tx.run("make_notices_due", {"now": to_db_time(now)}).rowcount

    def finish_notice(self, claimed: StoredNotice, outcome: Delivered) -> bool:
        held_until = to_db_time(claimed.claim_expires_at)
        params = finish_params(claimed.notice.id, claimed.claimed_by, held_until, outcome)
        with self._write() as tx:
            cursor = tx.run("finish_notice_guarded", params)
        return cursor.rowcount == 1

    def renew_notice(
        self, claimed: StoredNotice, *, until: datetime, delivered_to: tuple[str, ...]
    ) -> StoredNotice | None:
        with self._write() as tx:
            cursor = tx.run(
                "renew_notice_claim",
                {
                    "id": claimed.notice.id,
                    "deliverer": claimed.claimed_by,
                    "claimed_until": to_db_time(claimed.claim_expires_at),
                    "until": to_db_time(until),
                    "delivered_to": json.dumps(list(delivered_to)),
                },
            )
        if cursor.rowcount != 1:
            return None
        return dataclasses.replace(claimed, claim_expires_at=until, delivered_to=delivered_to)

    def list_notices(self, states: Collection[str], *, limit: int = 1000) -> Rows[StoredNotice]:
        rows = self._rows("select_notices", {"states": json.dumps(sorted(states)), "limit": limit})
        return self._read_all(rows, stored_notice_from_row)

    def prune_notices(self, *, before: datetime) -> int:
        with self._write() as tx:
            return tx.run("prune_notices", {"before": to_db_time(before)}).rowcount

    def add_notice_once(self, notice: Notice) -> bool:
        with self._write() as tx:
            cursor = tx.run("insert_notice_once", notice_params(notice))
        return cursor.rowcount == 1

    def outbox_figures(self) -> OutboxFigures:
        [row] = self._rows("select_outbox_figures", {})
        return outbox_figures_from_row(row)
