"""A pytest plugin that runs tests against the store's SQL with one guard taken out.

Only tests/store/test_guards_mutation.py loads it, in the pytest it starts as a subprocess
(``-p tests.store.guard_mutation``); a normal run never imports it. ``WRIGHTY_TEST_MUTATION``
holds the mutation as JSON (the fields of `Mutation`): the plugin makes the stores of that run
load the SQL with the guard's text replaced. ``WRIGHTY_TEST_OUTCOMES`` names a file where it
writes each test's outcome, ``{node id: "passed" | "failed: <why>" | "skipped"}``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

MUTATION_VARIABLE = "WRIGHTY_TEST_MUTATION"
OUTCOMES_VARIABLE = "WRIGHTY_TEST_OUTCOMES"


@dataclass(frozen=True)
class Mutation:
    """One guard taken out: in ``sql/<dialect>/<file>`` (or, for ``queries.sql``, inside the
    named query ``block`` as the dialect runs it, from its own file or sql/common), the text
    ``guard``, which must occur there exactly once, becomes ``replacement``."""

    dialect: str
    file: str
    block: str | None
    guard: str
    replacement: str

    def original(self) -> str:
        """The SQL the guard is in: the named query, or the whole file."""
        from wrighty.store.sqlfiles import queries, read_sql

        if self.block is None:
            return read_sql(self.dialect, self.file)
        return queries(self.dialect)[self.block]

    def apply(self, text: str) -> str:
        found = text.count(self.guard)
        if found != 1:
            raise ValueError(f"{self}: the guard occurs {found} times, not once")
        return text.replace(self.guard, self.replacement)


def pytest_configure(config: pytest.Config) -> None:
    given = os.environ.get(MUTATION_VARIABLE)
    if given:
        _install(Mutation(**json.loads(given)), config)


def _install(mutation: Mutation, config: pytest.Config) -> None:
    """Make every store this run opens load the mutated SQL."""
    import wrighty.store.postgres
    import wrighty.store.sqlite
    import wrighty.store.sqlstore
    from wrighty.store.sqlfiles import queries, read_sql

    patch = pytest.MonkeyPatch()
    config.add_cleanup(patch.undo)
    if mutation.block is not None:
        block = mutation.block
        mutated = dict(queries(mutation.dialect))
        mutated[block] = mutation.apply(mutated[block])
        adapter = {"sqlite": wrighty.store.sqlite, "postgresql": wrighty.store.postgres}
        patch.setattr(adapter[mutation.dialect], "queries", lambda dialect: mutated)
        return

    def read_mutated_sql(dialect: str, filename: str) -> str:
        text = read_sql(dialect, filename)
        if (dialect, filename) == (mutation.dialect, mutation.file):
            return mutation.apply(text)
        return text

    mutation.apply(read_sql(mutation.dialect, mutation.file))  # fails now if the guard is gone
    patch.setattr(wrighty.store.sqlstore, "read_sql", read_mutated_sql)


_outcomes: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        _outcomes[report.nodeid] = f"failed: {getattr(crash, 'message', report.longrepr)}"
    elif report.skipped:
        _outcomes.setdefault(report.nodeid, "skipped")
    elif report.when == "call":
        _outcomes.setdefault(report.nodeid, "passed")


def pytest_sessionfinish(session: pytest.Session, exitstatus: Any) -> None:
    path = os.environ.get(OUTCOMES_VARIABLE)
    if path:
        Path(path).write_text(json.dumps(_outcomes), encoding="utf-8")


def as_environment(mutation: Mutation) -> str:
    return json.dumps(dataclasses.asdict(mutation))
