"""Items with runs, written straight to a project's store, as a worker would leave them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tests.cli.conftest import wrighty
from wrighty.domain.claims import ClaimRequest, LeaseTerms
from wrighty.domain.model import Item, NewRun, Run, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition
from wrighty.installation import installation_id
from wrighty.store.sqlite import SqliteStore

TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)


def open_store(project: Path) -> SqliteStore:
    return SqliteStore.open(project / ".wrighty" / "wrighty.db")


def create_queued(title: str = "t") -> int:
    result = wrighty("create", "--title", title, "--body", "b", "--queue", "--json")
    assert result.exit_code == 0, result.output
    item_id: int = json.loads(result.stdout)["id"]
    return item_id


@dataclass
class Started:
    claimed: Item
    run: Run


def start_run(
    project: Path,
    item_id: int,
    *,
    at: datetime,
    installation: str | None = None,
    session_id: str | None = None,
    kind: RunKind = RunKind.FRESH,
) -> Started:
    """Claim a queued or due item and record a run (and, with ``session_id``, a session)."""
    inst = installation or installation_id()
    store = open_store(project)
    try:
        request = ClaimRequest("w-test", inst, TERMS, "claude", item_id=item_id)
        held = store.acquire(request, now=at)
        assert held is not None
        claimed = held.item
        run_id = f"run-{item_id}-{len(store.list_runs(item_id)) + 1}"
        session = (
            Session(item_id, "command", session_id, str(project), inst) if session_id else None
        )
        run = store.start_run(
            claimed, NewRun(run_id, kind, "w-test", inst, at, session_id), session=session
        )
        assert run is not None
        return Started(claimed, run)
    finally:
        store.close()


def settle(
    project: Path,
    started: Started,
    to_state: ItemState,
    *,
    at: datetime,
    outcome: OutcomeClass = OutcomeClass.AGENT_FAILURE,
    exit_code: int | None = None,
    signal: int | None = None,
    diagnostic: str | None = None,
    reason: str = "the agent failed",
    not_before: datetime | None = None,
) -> None:
    """End the started run and move its item out of running, as the worker would."""
    store = open_store(project)
    try:
        change = transition(
            started.claimed,
            to_state,
            at=at,
            actor="worker:w-test",
            reason_code=outcome.value,
            reason=reason,
            next_action=f"wrighty show {started.claimed.id}",
            not_before=not_before,
            run_end=RunEnd(at, outcome, Confidence.AUTHORITATIVE, exit_code, signal, diagnostic),
        )
        assert store.write_transition(change)
    finally:
        store.close()


def write_logs(project: Path, run: Run, *, stdout: bytes = b"", stderr: bytes = b"") -> Path:
    """The run's log files where the worker puts them; their directory."""
    log_dir = project / ".wrighty" / "runs" / str(run.item_id) / run.run_id
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / "stdout.log").write_bytes(stdout)
    (log_dir / "stderr.log").write_bytes(stderr)
    return log_dir
