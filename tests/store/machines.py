"""Running a store state machine on PostgreSQL: one schema for the test (from the pool), every
table emptied for each example as the pool empties a schema between tests: rows deleted, not
truncated (a TRUNCATE of every table cost several times as much)."""

from __future__ import annotations

from typing import Any

from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from tests.conftest import migrated_postgres_schema
from tests.schema_pool import empty
from wrighty.store.port import Store
from wrighty.store.postgres import PostgresStore


def run_on_postgresql(machine: type[RuleBasedStateMachine], settings: Any) -> None:
    """Run ``machine`` (whose ``open_store`` and ``teardown`` open and close its store) with
    a PostgreSQL store in a schema of its own."""

    class OnPostgres(machine):  # type: ignore[valid-type, misc]
        url = ""

        def open_store(self) -> Store:
            store = PostgresStore.open(self.url, create=True)
            empty(self.url)
            return store

        def teardown(self) -> None:
            self.store.close()

    OnPostgres.__name__ = f"Postgres{machine.__name__}"
    with migrated_postgres_schema() as url:
        OnPostgres.url = url
        run_state_machine_as_test(OnPostgres, settings=settings)
