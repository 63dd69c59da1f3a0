"""What the Operations and Spend pages read, written through the store as workers leave it:
workers of each liveness, provider circuits, notifications in the outbox, and runs that spent
tokens and dollars on given days and agents."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tests.inbox.seed import TERMS, new
from wrighty.domain.circuits import Circuit, opened
from wrighty.domain.claims import ClaimRequest
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.model import NewRun, RunEnd
from wrighty.domain.notices import Source, after_attempt, circuit_notice
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition
from wrighty.domain.usage import Usage
from wrighty.installation import installation_id
from wrighty.store.port import Store

ELSEWHERE = "other-installation"  # liveness by heartbeat alone


def register(
    store: Store,
    worker: str,
    *,
    at: datetime,
    here: bool = False,
    label: str | None = None,
    agent: str | None = None,
    held_reason: str | None = None,
    waiting_for: str | None = None,
) -> None:
    """A worker whose last heartbeat was ``at``; ``here``: of this installation, with a
    process that is not running (this test's pid, started at another time): dead."""
    store.upsert_worker(
        WorkerRow(
            worker_id=worker,
            label=label,
            installation_id=installation_id() if here else ELSEWHERE,
            pid=os.getpid(),
            process_started_at=1.0,
            version="0.0.0",
            state=WorkerState.RUNNING,
            items=(),
            started_at=at,
            last_heartbeat_at=at,
            agent=agent,
            held_reason=held_reason,
            waiting_for=waiting_for,
        )
    )


def open_circuit(
    store: Store,
    name: str,
    *,
    at: datetime,
    until: datetime,
    reason: str,
    notice_reason: str | None = None,
) -> Circuit:
    """The circuit opened at ``at`` until ``until``, as a worker opens it; with a
    ``notice_reason``, its notification goes to the outbox in the same write."""
    before = store.get_circuit(name)
    after = opened(before, at=at, until=until, reason=reason)
    notice = (
        circuit_notice(
            name, until=until, reason=notice_reason, failures=after.failures, at=at,
            source=Source(ELSEWHERE, "w-opener-0001"),
        )
        if notice_reason is not None
        else None
    )  # fmt: skip
    assert store.write_circuit(before, after, at=at, notice=notice)
    return store.get_circuit(name)


def give_up_notice(store: Store, *, now: datetime, error: str) -> None:
    """The oldest due notice: one attempt that failed with ``error``, and given up."""
    claimed = store.claim_notice("d-test", now=now, lease_seconds=60)
    assert claimed is not None
    outcome = after_attempt(claimed, {"ntfy": error}, (), now=now, max_attempts=1)
    assert store.finish_notice(claimed, outcome)


def spent(store: Store, *, at: datetime, agent: str, usage: Usage) -> int:
    """An item run by ``agent`` started at ``at``, which spent ``usage`` and finished."""
    title = f"spend {agent[:40]} {at:%m-%d %H:%M}"
    made = store.create_item(new(title, agent=agent), at=at, actor="operator")
    held = store.acquire(
        ClaimRequest("w-spend-0001", ELSEWHERE, TERMS, agent, item_id=made.id), now=at
    )
    assert held is not None
    claimed = held.item
    run = store.start_run(
        claimed,
        NewRun(f"run-{made.id}", RunKind.FRESH, "w-spend-0001", ELSEWHERE, at, None, agent=agent),
    )
    assert run is not None
    store.record_usage(claimed, run.run_id, usage)
    end = RunEnd(at, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, 0)
    change = transition(
        claimed, ItemState.DONE, at=at + timedelta(minutes=1), actor="worker", run_end=end
    )
    assert store.write_transition(change)
    return made.id


def configure(project: Path, **sections: Any) -> None:
    """wrighty.json with these sections replaced."""
    path = project / "wrighty.json"
    config = json.loads(path.read_text())
    config.update(sections)
    path.write_text(json.dumps(config))
