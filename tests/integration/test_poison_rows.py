"""A poison row never stops a worker, and never crashes a read (docs/storage.md, "A row that
does not read"). Each poison is written straight into the store, as an older or newer wrighty,
a hand edit or a fleet could leave it: with sqlite3 on the SQLite file (CHECK constraints off
where the schema would refuse it), and with psycopg on PostgreSQL (there the constraint that
refuses it is dropped first). Real `wrighty worker start` and read-command processes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import open_postgres, postgres_schema
from tests.integration.worker_process import EXAMPLE_AGENT, LiveWorker, ProjectOnDisk, make_project
from wrighty.domain.states import ItemState
from wrighty.store import open_store, parse_store_url
from wrighty.store.port import Store

# What PostgreSQL would refuse the poisons with (SQLite: PRAGMA ignore_check_constraints).
REFUSING_CHECKS = (
    ("items", "items_priority_check"),
    ("item_dependencies", "item_dependencies_check"),
)


class Poisoned:
    """A project on one backend, and a way to run raw SQL on its store."""

    def __init__(self, project: ProjectOnDisk, backend: str, url: str | None) -> None:
        self.project = project
        self.backend = backend
        self.url = url

    def store(self) -> Store:
        if self.url is None:
            return self.project.store()
        return open_store(parse_store_url(self.url, base=self.project.root))

    def sql(self, statement: str) -> None:
        """Run ``statement`` past wrighty, with the checks that would refuse it off."""
        if self.url is None:
            connection = sqlite3.connect(self.project.root / ".wrighty" / "wrighty.db")
            connection.execute("PRAGMA ignore_check_constraints = ON")
            connection.execute(statement)
            connection.commit()
            connection.close()
            return
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            for table, check in REFUSING_CHECKS:
                connection.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {check}")
            connection.execute("SET session_replication_role = replica")  # no foreign keys
            connection.execute(statement)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.project.command(*args), cwd=self.project.root, capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip

    def item(self, item_id: int) -> Any:
        store = self.store()
        try:
            return store.get_item(item_id)
        finally:
            store.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def poisoned(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Poisoned]:
    if request.param == "sqlite":
        project = make_project(tmp_path / "project", worker={"workspaceMode": "directory"})
        yield Poisoned(project, "sqlite", None)
        return
    with postgres_schema() as url:
        project = make_project(tmp_path / "project", worker={"workspaceMode": "directory"})
        document = json.loads(project.config.read_text())
        document["store"] = {"url": url}
        project.config.write_text(json.dumps(document))
        open_postgres(url).close()
        yield Poisoned(project, "postgresql", url)


def _plant_item(
    poisoned: Poisoned, body: str = "wrighty-example: succeed", *, agent: str | None = None
) -> int:
    from datetime import UTC, datetime

    from wrighty.domain.model import NewItem

    store = poisoned.store()
    try:
        new = NewItem("t", body, agent, None, None, ItemState.QUEUED)
        return store.create_item(new, at=datetime.now(UTC), actor="op").id
    finally:
        store.close()


ITEM_POISONS = {
    "queued_at": "queued_at = 'yesterday', priority = 0",
    "priority-low": "priority = -3",
    "priority-high": "priority = 7",
    "created_at": "created_at = 'not-a-time', priority = 0",
}


@pytest.mark.parametrize("poison", sorted(ITEM_POISONS))
def test_the_worker_sets_a_poison_item_aside_and_runs_the_next(
    poisoned: Poisoned, poison: str
) -> None:
    bad = _plant_item(poisoned)
    good = _plant_item(poisoned)
    poisoned.sql(f"UPDATE items SET {ITEM_POISONS[poison]} WHERE id = {bad}")
    # Until nothing is left to claim: the poison before the good item (priority 0) or after.
    finished = poisoned.project.worker("--idle-timeout", "1s")
    assert finished.returncode == 0, finished.stderr
    assert "Traceback" not in finished.stderr
    [failed] = finished.named("claim-failed")
    assert failed["item_id"] == bad
    assert failed["error"] == "UnreadableError"
    field = poison.split("-")[0]
    assert f"item {bad}: its {field} does not read" in failed["cause"]
    assert poisoned.item(good).state is ItemState.DONE
    # Set aside, without the bad value written back (but for created_at, which the set-aside
    # does not write: that item still reads as unreadable, and says so).
    listed = poisoned.run("list")
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    if field == "created_at":
        assert f"item {bad}: its created_at does not read" in listed.stderr
        return
    item = poisoned.item(bad)
    assert (item.state, item.reason_code) == (ItemState.NEEDS_ATTENTION, "internal-error")
    assert f"its {field} does not read" in (item.reason or "")
    assert item.priority in range(4)
    # The next worker goes on: nothing fails on it again.
    again = poisoned.project.worker("--idle-timeout", "1s")
    assert again.returncode == 0
    assert again.named("claim-failed") == []


def test_a_poison_circuit_does_not_stop_a_worker_and_its_reset_is_the_way_out(
    poisoned: Poisoned,
) -> None:
    poisoned.sql(
        "INSERT INTO circuits (name, version, opened_at, until, failures, updated_at) "
        "VALUES ('example', 3, 'not-a-time', 'never', 1, 'now')"
    )
    for args in (["providers"], ["providers", "--json"], ["status"], ["status", "--json"]):
        shown = poisoned.run(*args)
        assert "Traceback" not in shown.stderr, args
        assert "circuit example: its opened_at does not read" in shown.stderr, args
    reset = poisoned.run("providers", "reset", "example")
    assert reset.returncode == 0, reset.stderr
    assert "closed" in reset.stdout
    store = poisoned.store()
    try:
        circuit = store.get_circuit("example")  # reads again
    finally:
        store.close()
    assert (circuit.until, circuit.opened_at) == (None, None)


def test_unreadable_run_and_notice_columns_never_crash_a_read(poisoned: Poisoned) -> None:
    item_id = _plant_item(poisoned)
    finished = poisoned.project.worker("--once")
    assert finished.returncode == 0, finished.stderr
    poisoned.sql("UPDATE runs SET usage = 'final', models = '{{{', cost_usd = 1e308")
    poisoned.sql(
        "INSERT INTO notices (id, created_at, event, events, item_id, reason_code, payload, "
        "state, attempts, next_attempt_at, delivered_to) VALUES ('n-poison', "
        "'2020-01-01T00:00:00.000000Z', 'item-failed', '[\"item-failed\"]', "
        f"{item_id}, NULL, '{{{{{{', 'pending', 0, '2020-01-01T00:00:00.000000Z', '[]')"
    )
    for args in (
        ["list", "--json"], ["show", str(item_id)], ["status"], ["status", "--json"],
        ["status", "--format", "prometheus"], ["usage", "--by", "item"], ["usage", "--by", "day"],
        ["notify", "pending"], ["notify", "pending", "--json"],
    ):  # fmt: skip
        shown = poisoned.run(*args)
        assert "Traceback" not in shown.stderr, args
        if "--json" in args:  # JSON, with no NaN or Infinity in it
            json.loads(shown.stdout, parse_constant=_not_json)
        assert "does not read" in shown.stderr, (args, shown.stderr)


def _not_json(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON")


@pytest.mark.parametrize("where", ["../../..", "the folder above the project"])
def test_a_session_workspace_wrighty_would_not_make_is_refused_and_the_next_item_runs(
    poisoned: Poisoned, where: str
) -> None:
    # Relative; or absolute, existing, and not the item's.
    workspace = where if where.startswith(".") else str(poisoned.project.root.parent)
    bad = _plant_item(poisoned)
    good = _plant_item(poisoned)
    poisoned.sql(
        "INSERT INTO sessions (item_id, vendor, session_id, workspace, installation_id, "
        f"updated_at) VALUES ({bad}, 'command', NULL, '{workspace}', 'elsewhere', "
        "'2020-01-01T00:00:00.000000Z')"
    )
    finished = poisoned.project.worker("--idle-timeout", "1s")
    assert finished.returncode == 0, finished.stderr
    assert poisoned.item(good).state is ItemState.DONE
    item = poisoned.item(bad)
    assert (item.state, item.reason_code) == (ItemState.NEEDS_ATTENTION, "start-failed")
    why = "is not an absolute path" if where.startswith(".") else "is not one wrighty makes for it"
    assert f"the workspace {workspace} recorded for item {bad} {why}" in (item.reason or "")
    notes = "WRIGHTY_EXAMPLE_NOTES.md"  # every run of the example agent adds to it
    assert not (poisoned.project.root / workspace / notes).exists()
    # The way out: start over, in the item's own workspace.
    requeued = poisoned.run("requeue", str(bad), "--fresh")
    assert requeued.returncode == 0, requeued.stderr
    again = poisoned.project.worker("--once")
    assert again.returncode == 0, again.stderr
    assert poisoned.item(bad).state is ItemState.DONE
    own = poisoned.project.root / ".wrighty" / "workspaces" / str(bad) / notes
    assert f" item_id={bad} " in own.read_text()


def _configure(poisoned: Poisoned, **sections: dict[str, Any]) -> None:
    """Add ``sections`` to the project's wrighty.json (each merged into what is there)."""
    document = json.loads(poisoned.project.config.read_text())
    for key, value in sections.items():
        document[key] = {**document.get(key, {}), **value}
    poisoned.project.config.write_text(json.dumps(document))


def _held_once_then_freed(
    poisoned: Poisoned, item_id: int, *, held: str, fix: Callable[[], None]
) -> dict[str, Any]:
    """A worker held by ``held`` says so once however many passes it makes (until its idle
    timeout), leaves the item queued and exits 0; another, still held, goes on once ``fix``
    is done, in the same process, and runs the item to done. The event that said so."""
    idled = poisoned.project.worker("--idle-timeout", "1s")
    assert idled.returncode == 0, idled.stderr
    assert "Traceback" not in idled.stderr
    [said] = idled.named(held)
    assert idled.named("idle") != []  # it looked again at each poll until its idle timeout
    assert idled.named("claimed") == []
    assert idled.named("claim-failed") == []  # held before the claim, not failed every pass
    assert poisoned.item(item_id).state is ItemState.QUEUED
    # Its idle timeout only ends a worker the fix did not free: the test then fails, not hangs.
    worker = LiveWorker(poisoned.project, "--max-items", "1", "--idle-timeout", "60s")
    worker.until(held)
    fix()
    worker.until("settled", item_id=item_id, state="done")
    returncode, stderr = worker.finish()
    assert returncode == 0, stderr
    assert [event["event"] for event in worker.events].count(held) == 1
    return said


def test_a_poison_circuit_holds_a_worker_once_and_its_reset_frees_the_same_worker(
    poisoned: Poisoned,
) -> None:
    """Under a usage retry policy the agent's circuit is read before each claim (docs/worker.md,
    "When wrighty fails on an item")."""
    _configure(
        poisoned,
        worker={"usageFailure": {"action": "retry"}},
        agents={"example": {"adapter": "command", "command": EXAMPLE_AGENT, "account": "team"}},
    )
    poisoned.sql(
        "INSERT INTO circuits (name, version, opened_at, until, failures, updated_at) "
        "VALUES ('account:team', 3, 'not-a-time', 'never', 1, 'now')"
    )
    item_id = _plant_item(poisoned)

    def reset() -> None:
        done = poisoned.run("providers", "reset", "account:team")
        assert done.returncode == 0, done.stderr

    said = _held_once_then_freed(poisoned, item_id, held="circuit-unreadable", fix=reset)
    assert said["circuit"] == "account:team"
    assert said["fix"] == "wrighty providers reset account:team"
    assert "circuit account:team: its opened_at does not read" in said["cause"]


def test_an_unreadable_day_spend_holds_its_agent_only_and_a_fix_frees_the_same_worker(
    poisoned: Poisoned,
) -> None:
    """The agent's spend for the day (the sum of its runs' costs) is read before each claim;
    a negative cost makes it unreadable. The other agent's worker goes on meanwhile."""
    _configure(
        poisoned,
        agents={"other": {"adapter": "command", "command": EXAMPLE_AGENT}},
        budgets={"perDay": {"example": {"maxCostUsd": 40}, "*": {"maxCostUsd": 40}}},
    )
    earlier = _plant_item(poisoned)
    assert poisoned.project.worker("--once").returncode == 0
    assert poisoned.item(earlier).state is ItemState.DONE
    poisoned.sql(f"UPDATE runs SET cost_usd = -5 WHERE item_id = {earlier}")
    held = _plant_item(poisoned)
    other = _plant_item(poisoned, agent="other")
    ran = poisoned.project.worker("--agent", "other", "--idle-timeout", "1s")
    assert ran.returncode == 0, ran.stderr
    assert ran.named("budget-unreadable") == []
    assert poisoned.item(other).state is ItemState.DONE

    def fix() -> None:
        poisoned.sql(f"UPDATE runs SET cost_usd = 1 WHERE item_id = {earlier}")

    said = _held_once_then_freed(poisoned, held, held="budget-unreadable", fix=fix)
    assert said["agent"] == "example"
    assert "spend of agent example: its cost_usd does not read" in said["cause"]


def test_a_relative_workspace_pin_is_refused_and_the_next_item_runs(poisoned: Poisoned) -> None:
    """A `--workspace` pin is absolute when the CLI writes it; one read back relative (from the
    worker's directory it would name a folder of the project) is refused before the launch."""
    pinned = poisoned.project.root / "relative"
    pinned.mkdir()
    bad = _plant_item(poisoned)
    good = _plant_item(poisoned)
    poisoned.sql(f"UPDATE items SET workspace = 'relative' WHERE id = {bad}")
    finished = poisoned.project.worker("--idle-timeout", "1s")
    assert finished.returncode == 0, finished.stderr
    assert "Traceback" not in finished.stderr
    item = poisoned.item(bad)
    assert (item.state, item.reason_code) == (ItemState.NEEDS_ATTENTION, "start-failed")
    assert f"the workspace relative recorded for item {bad} is not an absolute path" in (
        item.reason or ""
    )
    assert list(pinned.iterdir()) == []  # the agent never ran there
    assert poisoned.item(good).state is ItemState.DONE
