"""Running a store state machine on PostgreSQL: one schema for the test, every table emptied
for each example."""

from __future__ import annotations

from typing import Any

import psycopg
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from tests.conftest import postgres_schema
from wrighty.store.port import Store
from wrighty.store.postgres import PostgresStore

TABLES = "items, item_events, sessions, runs, workers, circuits"


def run_on_postgresql(machine: type[RuleBasedStateMachine], settings: Any) -> None:
    """Run ``machine`` (whose ``open_store`` and ``teardown`` open and close its store) with
    a PostgreSQL store in a schema of its own."""

    class OnPostgres(machine):  # type: ignore[valid-type, misc]
        url = ""

        def open_store(self) -> Store:
            store = PostgresStore.open(self.url, create=True)
            with psycopg.connect(self.url, autocommit=True) as connection:
                connection.execute(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE")
            return store

        def teardown(self) -> None:
            self.store.close()

    OnPostgres.__name__ = f"Postgres{machine.__name__}"
    with postgres_schema() as url:
        OnPostgres.url = url
        run_state_machine_as_test(OnPostgres, settings=settings)
