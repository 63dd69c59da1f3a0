"""Verification's evidence on SQL (docs/verify.md): each check's record written once, under
the item as its writer read it, and an item's records read back, oldest verification first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wrighty.store.rows import check_from_row, check_params
from wrighty.store.sqlbase import SqlBase

if TYPE_CHECKING:  # a check's types, for the commands that show evidence
    from wrighty.domain.model import Item
    from wrighty.domain.verify import CheckRecord
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
