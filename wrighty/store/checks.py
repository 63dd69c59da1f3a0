"""Verification's evidence on SQL (docs/verify.md): each check's record written once, under
the item as its writer read it, an item's records read back, oldest verification first, and
the latest verification's outcome of many items in one read; a check's result on a base
commit, kept once (docs/verify.md#checks-that-fail-on-the-base)."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import TYPE_CHECKING

from wrighty.store.rows import (
    base_check_from_row,
    base_check_params,
    check_from_row,
    check_params,
)
from wrighty.store.sqlbase import SqlBase

if TYPE_CHECKING:  # a check's types, for the commands that show evidence
    from wrighty.domain.check_evidence import BaseCheck, CheckRecord
    from wrighty.domain.model import Item
    from wrighty.store.port import Rows


class ChecksSql(SqlBase):
    def record_check(self, item: Item, record: CheckRecord) -> bool:
        if record.item_id != item.id:
            raise ValueError("a check's record must name the item it is written under")
        with self._write() as tx:
            cursor = tx.run("insert_check_guarded", check_params(item, record))
        return cursor.rowcount == 1

    def list_checks(self, item_id: int) -> Rows[CheckRecord]:
        rows = self._rows("select_checks", {"item_id": item_id})
        return self._read_all(rows, check_from_row)

    def verified_items(self, item_ids: Collection[int]) -> dict[int, bool]:
        if not item_ids:
            return {}
        wanted = json.dumps(sorted({int(item_id) for item_id in item_ids}))
        rows = self._rows("select_verified_items", {"item_ids": wanted})
        return {int(row["item_id"]): bool(row["passed"]) for row in rows}

    def base_check(self, base_commit: str, name: str, key: str) -> BaseCheck | None:
        rows = self._rows(
            "select_base_check", {"base_commit": base_commit, "check_name": name, "check_key": key}
        )
        return base_check_from_row(rows[0]) if rows else None

    def record_base_check(self, base: BaseCheck) -> None:
        with self._write() as tx:
            tx.run("insert_base_check", base_check_params(base))
