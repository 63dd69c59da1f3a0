"""The usage ledger on SQL: a run's usage recorded under its claim or reported from inside it,
the runs' usage read back, and an agent's spend since a time."""

from __future__ import annotations

import json
from collections.abc import Collection
from datetime import datetime

from wrighty.domain.model import Item
from wrighty.domain.usage import LedgerEntry, Usage
from wrighty.store.fields import EPOCH, to_db_time
from wrighty.store.port import Rows
from wrighty.store.rows import claim_guard, ledger_entry_from_row, spend_from_row, usage_params
from wrighty.store.sqlbase import SqlBase, Tx


class LedgerSql(SqlBase):
    def record_usage(self, claimed: Item, run_id: str, usage: Usage) -> bool:
        with self._write() as tx:
            cursor = tx.run(
                "record_usage_guarded",
                {**claim_guard(claimed), "run_id": run_id, **usage_params(usage)},
            )
        return cursor.rowcount == 1

    def report_usage(self, run_id: str, *, claim_token: str, usage: Usage) -> bool:
        with self._write() as tx:
            cursor = tx.run(
                "report_usage_guarded",
                {"run_id": run_id, "claim_token": claim_token, **usage_params(usage)},
            )
        return cursor.rowcount == 1

    def list_ledger(
        self,
        *,
        default_agent: str,
        since: datetime | None = None,
        item_id: int | None = None,
        item_ids: Collection[int] | None = None,
    ) -> Rows[LedgerEntry]:
        # No "IS NULL OR" in the queries: each keeps to its index (runs_by_start, runs_by_item).
        params = {"since": to_db_time(since or EPOCH), "default_agent": default_agent}
        if item_id is not None and item_ids is not None:
            raise ValueError("give item_id or item_ids, not both")
        if item_ids is not None:
            wanted = json.dumps(sorted(set(item_ids)))
            rows = self._rows("select_items_ledger", {**params, "item_ids": wanted})
        elif item_id is None:
            rows = self._rows("select_ledger", params)
        else:
            rows = self._rows("select_item_ledger", {**params, "item_id": item_id})
        return self._read_all(rows, ledger_entry_from_row)

    def agent_spend(self, agent: str, *, since: datetime) -> Usage:
        with self._snapshot() as tx:
            return spend_in(tx, agent, since)


def spend_in(tx: Tx, agent: str, since: datetime) -> Usage:
    """What ``agent``'s runs started since ``since`` spent, read in ``tx`` (a claim's budget
    check reads it in the claim's transaction)."""
    row = tx.run("select_agent_spend", {"agent": agent, "since": to_db_time(since)}).fetchone()
    return spend_from_row(row, agent)
