"""One time for the fleet: a worker whose machine's clock is ten minutes off (libfaketime),
beside a correct one, on one PostgreSQL store (docs/fleet.md#one-time-for-the-fleet).

Uncorrected, the fast worker reaped the correct one's live claims as soon as it started, and a
slow one's leases looked expired to the correct one; retries were scheduled ten minutes off and
history ran backwards. Here: no live claim is reaped, no reclaim is spent, every stored time is
the database's, and `workers` and `status` name the skewed worker.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import postgres_schema
from tests.faults.skewed import libfaketime, skewed_env
from tests.helpers import wait_for
from wrighty.domain.clocks import CLOCK_BOUND_SECONDS, MAX_ROUND_TRIP_SECONDS
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.store.postgres import PostgresStore

ROOT = Path(__file__).resolve().parents[2]
AGENT = [sys.executable, str(ROOT / "examples" / "agent.py")]
# How far a worker's corrected time may be from the database's: a reading's error.
ERROR = timedelta(seconds=MAX_ROUND_TRIP_SECONDS / 2 + 0.01)
RETRY_SECONDS = 1.2  # processCrash.initialRetryMinutes 0.02


# Each worker's agent waits until the test opens its gate (for two minutes at the most), then
# runs the example agent. So the correct worker, which starts first, cannot take every item
# before the skewed one has started, however slowly a loaded machine starts it; and both hold
# claims while the test reads the fleet.
GATED = """#!/bin/sh
for _ in $(seq 1200); do [ -e "$SKEW_TEST_GATE" ] && break; sleep 0.1; done
exec "$@"
"""


def installation(
    root: Path, name: str, url: str, *, gate: Path | None = None
) -> tuple[Path, dict[str, str]]:
    project = root / name
    project.mkdir()
    agent: dict[str, Any] = {"adapter": "command", "command": AGENT, "resumeCommand": AGENT}
    if gate is not None:
        script = project / "gated.sh"
        script.write_text(GATED)
        script.chmod(0o755)
        gated = [str(script), *AGENT]
        agent.update(command=gated, resumeCommand=gated, env={"SKEW_TEST_GATE": str(gate)})
    document = {
        "store": {"url": url},
        "worker": {
            "defaultAgent": "example",
            "workspaceMode": "directory",
            "leaseSeconds": 3,
            "heartbeatSeconds": 0.5,
            "pollSeconds": 0.1,
            "processCrash": {"action": "retry", "initialRetryMinutes": RETRY_SECONDS / 60,
                             "maxRetryMinutes": 0.1, "maxAttempts": 2},
        },
        "agents": {"example": agent},
    }  # fmt: skip
    (project / "wrighty.json").write_text(json.dumps(document))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    env["XDG_CONFIG_HOME"] = str(root / f"{name}-config")
    return project, env


def wrighty(project: Path, env: dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "wrighty", *args], cwd=project, env=env, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if "--json" in args else done.stdout


def start_worker(project: Path, env: dict[str, str], log: Path) -> subprocess.Popen[str]:
    # It stops once idle for 10 s, when its items are done (the crash's retry is due sooner).
    return subprocess.Popen(
        [sys.executable, "-m", "wrighty", "worker", "start", "--concurrency", "2",
         "--idle-timeout", "10s", "--json"],
        cwd=project, env=env, stdout=log.open("w"), stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("skew", ["+10m", "-10m"])
def test_a_worker_ten_minutes_off_keeps_the_fleets_time(tmp_path: Path, skew: str) -> None:
    libfaketime()  # skip (fail in CI) without it, before anything starts
    ahead = 600.0 if skew.startswith("+") else -600.0
    with postgres_schema() as url:
        store = PostgresStore.open(url, create=True)
        try:
            began = store.store_time()
            gate, gate_b = tmp_path / "gate", tmp_path / "gate-b"
            correct, correct_env = installation(tmp_path, "site-a", url, gate=gate)
            off, off_env = installation(tmp_path, "site-b", url, gate=gate_b)
            off_env = skewed_env(off_env, skew)
            for n in range(4):
                slow = NewItem(f"slow {n}", "wrighty-example: slow 2", None, None, None,
                               ItemState.QUEUED)  # fmt: skip
                store.create_item(slow, at=began, actor="test")
            # A command on the skewed machine writes the database's time.
            wrighty(off, off_env, "create", "--title", "crash once", "--queue", "--body",
                    "wrighty-example: crash-kill-until 1")  # fmt: skip

            a_log, b_log = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
            a = start_worker(correct, correct_env, a_log)
            b = None
            try:
                # A holds live claims before B starts (B reaps before its first claim).
                wait_for(
                    lambda: len(store.list_items([ItemState.RUNNING])) == 2,
                    timeout=30,
                    what="A's claims",
                )
                b = start_worker(off, off_env, b_log)
                wait_for(lambda: _measured(store), timeout=30, what="both workers' clock offsets")
                # B has work of its own before A's agents (held so far) can end and take more.
                wait_for(
                    lambda: _skewed_ran(store), timeout=120, what="the skewed worker's first run"
                )
                # Both read while every agent waits at its gate: both workers hold claims, so
                # both are live and registered however slowly a loaded machine runs the reads.
                listed = wrighty(correct, correct_env, "workers", "--json")
                status = wrighty(correct, correct_env, "status", "--json")
                gate.touch()
                gate_b.touch()
                for worker in (a, b):
                    _, err = worker.communicate(timeout=120)
                    assert worker.returncode == 0, err
            finally:
                for worker in (a, b):
                    if worker is not None:
                        worker.kill()
                        worker.wait()
            ended = store.store_time()
            items = store.list_items()
            history = {item.id: store.list_events(item.id) for item in items}
            runs = {item.id: store.list_runs(item.id) for item in items}
        finally:
            store.close()

    a_events, b_events = events(a_log), events(b_log)
    b_id = b_events[0]["worker_id"]
    # The skewed worker said so, once; the correct one said nothing about its clock.
    skewed_said = [e for e in b_events if e["event"] == "clock-skewed"]
    assert len(skewed_said) == 1
    assert skewed_said[0]["offset_seconds"] == pytest.approx(ahead, abs=1)
    assert not [e for e in a_events if e["event"].startswith("clock-")]
    # `workers` and `status`, from the correct machine, name the skewed worker and by how much.
    by_id = {row["worker_id"]: row for row in listed}
    assert by_id[b_id]["clock_offset_seconds"] == pytest.approx(ahead, abs=1)
    assert by_id[b_id]["clock_skewed"] is True
    assert by_id[b_id]["liveness"] == "live"
    others = [row for worker_id, row in by_id.items() if worker_id != b_id]
    assert [(row["clock_offset_seconds"], row["clock_skewed"]) for row in others] == [(0.0, False)]
    warned = [w["message"] for w in status["warnings"] if w["check"] == "clock_skew"]
    assert len(warned) == 1
    assert b_id in warned[0]
    assert status["expired_leases"] == 0

    # Both workers did work; nothing was reaped, no reclaim spent, no claim lost.
    assert {item.state for item in items} == {ItemState.DONE}
    assert all(item.requeues == 0 for item in items)
    reasons = {event.reason_code for events in history.values() for event in events}
    assert "worker-lost" not in reasons
    assert not [e for e in a_events + b_events if e["event"] == "claim-lost"]
    workers_that_ran = {run.worker_id for item_runs in runs.values() for run in item_runs}
    assert len(workers_that_ran) == 2
    # Every stored time is the database's (to within a reading's error), never ten minutes off;
    # a retry's not_before is its settlement's time plus the backoff; history runs forward.
    assert began is not None
    assert ended is not None
    for item in items:
        times = [event.at for event in history[item.id]]
        times += [t for run in runs[item.id] for t in (run.started_at, run.ended_at) if t]
        times += [item.created_at, item.updated_at]
        for moment in times:
            assert began - ERROR <= moment <= ended + ERROR, (item.id, moment, began, ended)
        assert all(x.at <= y.at for x, y in itertools.pairwise(history[item.id])), item.id
    retried = [e for e in b_events + a_events if e["event"] == "retry-scheduled"]
    assert len(retried) == 1
    [crashed] = [item for item in items if item.title == "crash once"]
    crash_event = next(e for e in history[crashed.id] if e.to_state is ItemState.RETRY_SCHEDULED)
    crashed_run = runs[crashed.id][0]  # the first run crashed; the second resumed it
    # due when the run ended plus the backoff (decided between the run's start and the
    # settlement; printed to the millisecond), not ten minutes off
    due = datetime.fromisoformat(retried[0]["not_before"]) - timedelta(seconds=RETRY_SECONDS)
    millisecond = timedelta(milliseconds=1)
    assert crashed_run.started_at - millisecond <= due <= crash_event.at + millisecond


def _measured(store: PostgresStore) -> bool:
    """Both workers registered, and the skewed one's offset measured."""
    rows = store.list_workers()
    offsets = [row.clock_offset_seconds for row in rows]
    return len(rows) == 2 and any(o is not None and abs(o) > CLOCK_BOUND_SECONDS for o in offsets)


def _skewed_ran(store: PostgresStore) -> bool:
    """A run of the skewed worker (the one whose offset is past the bound) is recorded."""
    skewed = {
        row.worker_id
        for row in store.list_workers()
        if row.clock_offset_seconds is not None
        and abs(row.clock_offset_seconds) > CLOCK_BOUND_SECONDS
    }
    return any(
        run.worker_id in skewed for item in store.list_items() for run in store.list_runs(item.id)
    )
