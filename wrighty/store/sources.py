"""The sources' state on SQL (docs/sources.md): one row per configured tracker, written by
each sync (its health, and each page's ETag with its issues' numbers) and read by the next
sync and by `wrighty sources`. A sync writes its source's row whole; two syncs racing write
the same facts, the later one's standing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wrighty.store.fleet_rows import source_from_row, source_params
from wrighty.store.sqlbase import SqlBase

if TYPE_CHECKING:  # loaded by the commands that sync or show sources
    from wrighty.domain.sources import SourceState
    from wrighty.store.port import Rows


class SourcesSql(SqlBase):
    def get_source(self, name: str) -> SourceState | None:
        rows = self._read_all(self._rows("select_source", {"name": name}), source_from_row)
        return rows[0] if rows else None

    def list_sources(self) -> Rows[SourceState]:
        return self._read_all(self._rows("select_sources", {}), source_from_row)

    def write_source(self, state: SourceState) -> None:
        with self._write() as tx:
            tx.run("upsert_source", source_params(state))
