"""Provider circuits on SQL: read, salvaged for a reset, and written by compare-and-set on the
version the caller read (with the notice an opening makes, in the same transaction)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from wrighty.store.fields import to_db_time
from wrighty.store.fleet_rows import circuit_from_row, circuit_params, notice_params
from wrighty.store.sqlbase import Refused, SqlBase

if TYPE_CHECKING:  # loaded by the commands that read or write a circuit, not by every store
    from wrighty.domain.circuits import Circuit
    from wrighty.domain.outbox import Notice
    from wrighty.store.port import Rows, Salvaged


class CircuitsSql(SqlBase):
    def get_circuit(self, name: str) -> Circuit:
        rows = self._rows("select_circuit", {"name": name})
        from wrighty.domain.circuits import Circuit

        return circuit_from_row(rows[0]) if rows else Circuit(name)

    def list_circuits(self) -> Rows[Circuit]:
        return self._read_all(self._rows("select_circuits", {}), circuit_from_row)

    def salvage_circuit(self, name: str) -> Salvaged[Circuit] | None:
        return self._salvage("select_circuit", {"name": name}, circuit_from_row)

    def write_circuit(
        self, before: Circuit, after: Circuit, *, at: datetime, notice: Notice | None = None
    ) -> bool:
        if after.name != before.name:
            raise ValueError("a circuit write must describe one circuit")
        params = {
            **circuit_params(after),
            "version": before.version + 1,
            "expected_version": before.version,
            "updated_at": to_db_time(at),
        }
        try:
            with self._write() as tx:
                first = before.version == 0  # the caller read no row
                cursor = tx.run("insert_circuit" if first else "update_circuit_guarded", params)
                if cursor.rowcount != 1:
                    raise Refused
                if notice is not None:
                    tx.run("insert_notice", notice_params(notice))
        except Refused:
            return False
        return True
