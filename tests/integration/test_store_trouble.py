"""A store that stops answering while agents run: the worker keeps supervising, and only stops
an agent when its claim is really lost (the lease ran out while the store was unreachable)."""

from __future__ import annotations

import json
import sys
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import postgres_schema
from tests.helpers import process_ended
from wrighty.config import LoadedConfig, check_config_text
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.errors import StoreError
from wrighty.store.port import Store
from wrighty.store.postgres import PostgresStore
from wrighty.store.sqlite import SqliteStore
from wrighty.worker.gave_up import GaveUpError
from wrighty.worker.loop import Worker, WorkerOptions

# Sleeps as long as its task says, printing its pid first.
AGENT = "import os, sys, time; print(os.getpid(), flush=True); time.sleep(float(sys.stdin.read()))"


class FlakyStore:
    """A store whose chosen operations fail (as an unreachable store does) while `down` is
    set."""

    def __init__(self, store: Store, failing: set[str]) -> None:
        self._store = store
        self._failing = failing
        self.down = threading.Event()
        self.refused: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)

        def maybe(*args: Any, **kwargs: Any) -> Any:
            if self.down.is_set() and name in self._failing:
                self.refused.append(name)
                raise StoreError("the database is unreachable (planted)")
            return method(*args, **kwargs)

        return maybe


def loaded_config(root: Path, lease: float) -> LoadedConfig:
    document = {
        "worker": {"defaultAgent": "py", "leaseSeconds": lease, "heartbeatSeconds": lease / 5,
                   "pollSeconds": 0.05, "workspaceMode": "directory"},
        "agents": {"py": {"adapter": "command", "command": [sys.executable, "-c", AGENT]}},
    }  # fmt: skip
    config, problems = check_config_text(json.dumps(document))
    assert config is not None, problems
    (root / "wrighty.json").write_text(json.dumps(document))
    return LoadedConfig(root / "wrighty.json", config)


def test_a_store_down_for_less_than_a_lease_does_not_disturb_the_run(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / ".wrighty" / "wrighty.db")
    loaded = loaded_config(tmp_path, lease=5.0)
    item = store.create_item(
        NewItem("t", "3", None, None, None, ItemState.QUEUED), at=datetime.now(UTC), actor="op"
    )
    flaky = FlakyStore(store, {"renew", "record_session", "get_run", "write_transition"})
    events: list[dict[str, Any]] = []

    def emit(event: dict[str, Any]) -> None:
        events.append(event)
        if event["event"] == "spawned":
            flaky.down.set()  # the store goes away while the agent works...
            threading.Timer(2.5, flaky.down.clear).start()  # ...and comes back

    Worker(flaky, loaded, installation_id="inst-a", output=emit).run(  # type: ignore[arg-type]
        WorkerOptions(once=True, stop_grace_seconds=1)
    )
    after = store.get_item(item.id)
    assert after is not None
    assert after.state is ItemState.DONE
    assert "renew" in flaky.refused
    assert any(e["event"] == "store-unreachable" for e in events)
    store.close()


def test_a_lease_that_runs_out_while_the_store_is_down_stops_the_agent_and_writes_nothing(
    tmp_path: Path,
) -> None:
    store = SqliteStore.open(tmp_path / ".wrighty" / "wrighty.db")
    loaded = loaded_config(tmp_path, lease=1.0)
    item = store.create_item(
        NewItem("t", "60", None, None, None, ItemState.QUEUED), at=datetime.now(UTC), actor="op"
    )
    everything = {"renew", "record_process", "record_session", "get_run", "write_transition",
                  "get_item", "list_runs", "start_run"}  # fmt: skip
    flaky = FlakyStore(store, everything)
    events: list[dict[str, Any]] = []

    def emit(event: dict[str, Any]) -> None:
        events.append(event)
        if event["event"] == "spawned":
            flaky.down.set()  # gone for good

    worker = Worker(flaky, loaded, installation_id="inst-a", output=emit)  # type: ignore[arg-type]
    with pytest.raises(GaveUpError, match=r"gave up item \d+: .*\(the database is unreachable"):
        worker.run(WorkerOptions(once=True, stop_grace_seconds=1))
    [spawned] = [e for e in events if e["event"] == "spawned"]
    assert process_ended(spawned["pid"])
    lost = [e for e in events if e["event"] == "claim-lost"]
    assert (lost[-1]["reason"], lost[-1]["cause"]) == (
        "lease-ended", "the database is unreachable (planted)")  # fmt: skip
    after = store.get_item(item.id)
    assert after is not None
    # Nothing was settled: the item waits, claimed, for the reaper once its lease has expired.
    assert (after.state, after.claimed_by is not None) == (ItemState.RUNNING, True)
    store.close()


@pytest.mark.slow
def test_postgresql_connections_terminated_mid_run_are_replaced(tmp_path: Path) -> None:
    with postgres_schema() as schema_url:
        name = f"wrighty-test-{uuid.uuid4().hex[:8]}"  # only this test's connections are cut
        url = f"{schema_url}&application_name={name}"
        store = PostgresStore.open(url, create=True)
        loaded = loaded_config(tmp_path, lease=5.0)
        item = store.create_item(
            NewItem("t", "1.5", None, None, None, ItemState.QUEUED), at=datetime.now(UTC),
            actor="op",
        )  # fmt: skip
        terminated: list[int] = []

        def emit(event: dict[str, Any]) -> None:
            if event["event"] == "spawned":
                with psycopg.connect(schema_url, autocommit=True) as admin:
                    rows = admin.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE application_name = %s AND datname = current_database()",
                        (name,),
                    ).fetchall()
                terminated.append(len(rows))

        Worker(store, loaded, installation_id="inst-a", output=emit).run(
            WorkerOptions(once=True, stop_grace_seconds=1)
        )
        after = store.get_item(item.id)
        store.close()
    assert terminated[0] >= 1  # the worker's connections were cut mid-run
    assert after is not None
    assert after.state is ItemState.DONE


class AnswerLostStore(FlakyStore):
    """A store whose first settlement lands, but whose answer is lost: the call raises."""

    def __init__(self, store: Store) -> None:
        super().__init__(store, set())
        self._store_itself = store
        self.lost_answers = 0

    def write_transition(self, change: Any) -> bool:
        landed = self._store_itself.write_transition(change)
        if self.lost_answers == 0:
            self.lost_answers += 1
            raise StoreError("the connection dropped before the commit's answer came (planted)")
        return landed


def test_a_settlement_whose_answer_was_lost_counts_as_settled(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / ".wrighty" / "wrighty.db")
    loaded = loaded_config(tmp_path, lease=5.0)
    item = store.create_item(
        NewItem("t", "0", None, None, None, ItemState.QUEUED), at=datetime.now(UTC), actor="op"
    )
    answer_lost = AnswerLostStore(store)
    events: list[dict[str, Any]] = []
    worker = Worker(answer_lost, loaded, installation_id="inst-a", output=events.append)  # type: ignore[arg-type]
    worker.run(WorkerOptions(once=True, stop_grace_seconds=1))  # no GaveUpError
    after = store.get_item(item.id)
    assert after is not None
    assert after.state is ItemState.DONE
    names = [event["event"] for event in events]
    assert answer_lost.lost_answers == 1
    assert names.index("store-unreachable") < names.index("settled")  # the retry was refused...
    assert "claim-lost" not in names  # ...and the item read back holds exactly this settlement
    store.close()
