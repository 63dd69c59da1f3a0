"""The state review in the stores: a store from before it (SQLite rebuilds items to allow it)
keeps every row and every reference, and its rules still hold after."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import FakeClock
from tests.store.older_store import store_before
from tests.store.test_checks import fetched
from tests.store.test_claims import acquire, queued, request, settlement, start
from wrighty.domain.claims import settle
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition
from wrighty.errors import StoreError
from wrighty.store.sqlfiles import migrations
from wrighty.store.sqlite import SqliteStore

REVIEW_MIGRATION = 17  # SQLite's, which rebuilds items
T0 = "2026-01-01T00:00:00.000000Z"
T1 = "2026-01-01T00:05:00.000000Z"


def _item(state: str, extra: str = "", values: str = "") -> str:
    return (
        "INSERT INTO items (title, body, state, generation, queued_at, created_at, updated_at"
        f"{extra}) VALUES ('in {state}', 'task', '{state}', 3, '{T0}', '{T0}', '{T1}'{values})"
    )


# A check's evidence (seq: given on SQLite, PostgreSQL's identity column makes its own).
CHECK_ROW = (
    "INSERT INTO checks (verification_id, position, item_id, run_id, generation, actor, "
    "started_at, name, argv, exit_code, duration_seconds{}) VALUES ('v-1', 0, 6, 'r-6', 3, "
    f"'worker w1', '{T1}', 'tests', '[\"pytest\"]', 0, 1.25{{}})"
)


def old_rows(backend: str) -> list[str]:
    seq = (", seq", ", 1") if backend == "sqlite" else ("", "")
    rows = [CHECK_ROW.format(*seq) if row is CHECK_ROW else row for row in OLD_ROWS]
    if backend == "sqlite":  # an id taken by an item since gone: it is never given again
        rows.append("UPDATE sqlite_sequence SET seq = 10 WHERE name = 'items'")
    return rows


# One item in each state a store before review can hold, ids 1 to 7 in this order.
OLD_STATES = ["todo", "queued", "running", "retry-scheduled", "needs-attention", "done",
              "cancelled"]  # fmt: skip
OLD_ROWS = [
    _item("todo", ", priority", ", 0"),
    _item("queued", ", import_key, import_fingerprint", ", 'plan.md#a', 'fp-a'"),
    _item("running", ", claimed_by, lease_expires_at, claimed_at", f", 'w1', '{T1}', '{T0}'"),
    _item("retry-scheduled", ", not_before, reason_code", f", '{T1}', 'process-crash'"),
    _item("needs-attention", ", reason_code, reason, fix_turns", ", 'agent-failure', 'no luck', 2"),
    _item("done", ", verify_checks, max_cost_usd", ", '[\"tests\"]', 1.5"),
    _item("cancelled", ", reason", ", 'not wanted'"),
    "INSERT INTO item_events (item_id, at, actor, generation, from_state, to_state) "
    f"VALUES (6, '{T0}', 'worker w1', 3, 'running', 'done')",
    "INSERT INTO item_events (item_id, at, actor, generation, from_state, to_state) "
    f"VALUES (3, '{T0}', 'worker w1', 3, 'queued', 'running')",
    "INSERT INTO sessions (item_id, vendor, session_id, workspace, installation_id, updated_at, "
    f"branch, base_commit) VALUES (4, 'claude', 'sess-4', '/w/4', 'inst-a', '{T1}', "
    f"'wrighty/4-a', '{'a' * 40}')",
    "INSERT INTO runs (run_id, item_id, generation, attempt, kind, worker_id, installation_id, "
    f"started_at, ended_at, exit_code) VALUES ('r-6', 6, 3, 1, 'fresh', 'w1', 'inst-a', '{T0}', "
    f"'{T1}', 0)",
    CHECK_ROW,
    "INSERT INTO item_dependencies (item_id, depends_on) VALUES (2, 6), (1, 5)",
    "INSERT INTO item_labels (item_id, label) VALUES (1, 'backend'), (6, 'docs')",
]


def _dump(connection: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table (but the migrations' own), in rowid order (sqlite_sequence's
    rows sorted: the rebuild moves the items counter's row to its end)."""
    tables = [
        name
        for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'wrighty_migrations'"
        )
    ]
    rows = {
        table: connection.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
        for table in tables
    }
    rows["sqlite_sequence"].sort()
    return rows


def test_a_sqlite_store_from_before_review_keeps_every_row_and_reference(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with store_before("sqlite", tmp_path, "review", old_rows("sqlite")) as store:
        assert store.schema_version() == migrations("sqlite")[-1].version
        # What the store reads back: every item in its state, the session's branch, the
        # dependencies, labels and checks.
        assert [(i.id, i.state.value) for i in store.list_items()] == list(
            enumerate(OLD_STATES, start=1)
        )
        session = store.get_session(4)
        assert session is not None
        assert (session.branch, session.base_commit) == ("wrighty/4-a", "a" * 40)
        assert [c.evidence.name for c in store.list_checks(6)] == ["tests"]
    # The raw rows, compared with a copy that was never migrated.
    # (the migrations after review's add columns with their defaults)
    with sqlite3.connect(tmp_path / "expected.db", isolation_level=None) as expected:
        known = migrations("sqlite")
        expected.executescript("".join(m.sql for m in known if m.version < REVIEW_MIGRATION))
        for row in old_rows("sqlite"):
            expected.execute(row)
        expected.executescript("".join(m.sql for m in known if m.version > REVIEW_MIGRATION))
        before = _dump(expected)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA foreign_keys = ON")
    after = _dump(connection)
    assert after == before
    assert ("items", 10) in after["sqlite_sequence"]  # the counter carried on
    for table in ("item_events", "sessions", "runs", "checks", "item_dependencies", "item_labels"):
        parents = {fk[2] for fk in connection.execute(f"PRAGMA foreign_key_list({table})")}
        assert "items" in parents, table
    assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
    # The references are enforced, the terminal write-once trigger fires, review is allowed
    # and a state that does not exist is not.
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
        connection.execute("INSERT INTO item_labels (item_id, label) VALUES (99, 'x')")
    with pytest.raises(sqlite3.IntegrityError, match="a done or cancelled item is final"):
        connection.execute("UPDATE items SET title = 'changed' WHERE id = 6")
    connection.execute("UPDATE items SET state = 'review' WHERE id = 3")
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        connection.execute("UPDATE items SET state = 'reviewed' WHERE id = 3")
    connection.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_migrated_store_moves_an_item_into_review_and_out(backend: str, tmp_path: Path) -> None:
    """The store writes the new state (the CHECK allows it), lists it by state, keeps it out
    of the claim, and the moves out of it are written too."""
    clock = FakeClock()
    with store_before(backend, tmp_path, "review", old_rows(backend)) as store:
        assert store.schema_version() == migrations(backend)[-1].version
        made = queued(store, clock, "verified")
        claimed = acquire(store, clock, item_id=made.id)
        start(store, claimed, clock, session_id="sess-r")
        waiting = settlement(ItemState.REVIEW, OutcomeClass.SUCCEEDED, clock)
        assert store.write_transition(settle(claimed, waiting, at=clock()))
        [review] = store.list_items([ItemState.REVIEW])
        assert (review.id, review.claimed_by, review.lease_expires_at) == (made.id, None, None)
        assert store.acquire(request("w2", item_id=made.id), now=clock.advance(1)) is None
        rejected = transition(review, ItemState.RETRY_SCHEDULED, at=clock(), actor="op",
                              not_before=clock())  # fmt: skip
        assert store.write_transition(rejected)
        assert store.list_items([ItemState.REVIEW]) == []
        assert fetched(store, made).state is ItemState.RETRY_SCHEDULED


def test_a_migration_that_would_leave_a_broken_reference_changes_nothing(tmp_path: Path) -> None:
    """Migrations run with foreign keys off, so the runner checks every reference before it
    commits: a dangling one (written by hand, with checks off) fails the migration whole."""
    dangling = "INSERT INTO item_labels (item_id, label) VALUES (99, 'orphan')"
    broken = [*old_rows("sqlite"), dangling]
    with (
        pytest.raises(StoreError, match=r"item_labels row 3 -> items\); nothing was changed"),
        store_before("sqlite", tmp_path, "review", broken),
    ):
        pass
    connection = sqlite3.connect(tmp_path / "old.db")
    versions = [v for (v,) in connection.execute("SELECT version FROM wrighty_migrations")]
    assert versions[-1] == REVIEW_MIGRATION - 1  # still before review
    item_sql = connection.execute("SELECT sql FROM sqlite_master WHERE name = 'items'").fetchone()
    assert "'review'" not in item_sql[0]
    connection.close()


def test_after_migrating_the_store_enforces_foreign_keys_again(tmp_path: Path) -> None:
    with store_before("sqlite", tmp_path, "review", old_rows("sqlite")) as store:
        assert isinstance(store, SqliteStore)
        pragmas = store._connection.execute("PRAGMA foreign_keys").fetchone()[0]
        legacy = store._connection.execute("PRAGMA legacy_alter_table").fetchone()[0]
        assert (pragmas, legacy) == (1, 0)
