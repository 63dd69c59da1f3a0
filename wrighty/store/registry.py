"""The worker registry on SQL: each worker's row (its heartbeat, state and items), kept by the
worker and pruned once it has long gone quiet."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from wrighty.store.fields import to_db_time
from wrighty.store.fleet_rows import worker_from_row, worker_params
from wrighty.store.sqlbase import SqlBase

if TYPE_CHECKING:  # the workers' rows, loaded by the commands that show or keep them
    from wrighty.domain.health import WorkerRow
    from wrighty.store.port import Rows


class RegistrySql(SqlBase):
    def upsert_worker(self, row: WorkerRow) -> None:
        with self._write() as tx:
            tx.run("upsert_worker", worker_params(row))

    def remove_worker(self, worker_id: str) -> None:
        with self._write() as tx:
            tx.run("delete_worker", {"worker_id": worker_id})

    def prune_workers(self, *, older_than: datetime) -> int:
        with self._write() as tx:
            cursor = tx.run("prune_workers", {"older_than": to_db_time(older_than)})
            return cursor.rowcount

    def list_workers(self) -> Rows[WorkerRow]:
        return self._read_all(self._rows("select_workers", {}), worker_from_row)
