"""Claims across real OS processes on one SQLite file."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import START
from tests.store.test_contract import new_item
from wrighty.domain.claims import ClaimRequest, LeaseTerms, RenewOutcome, Settlement, settle
from wrighty.domain.model import NewRun, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import replay
from wrighty.services import reaper
from wrighty.store.sqlite import SqliteStore

TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)
CONTEXT = multiprocessing.get_context("spawn")


def _done(claimed_at: Any) -> Settlement:
    end = RunEnd(claimed_at, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, exit_code=0)
    return Settlement(ItemState.DONE, process_started=True, run_end=end)


def _burn_down(path: str, worker: str, ready: Any, start: Any, results: Any) -> None:
    """Claim and finish items until none is left; report every (item, generation)."""
    claimed_log: list[tuple[int, int]] = []
    error = None
    try:
        store = SqliteStore.open(Path(path))
        request = ClaimRequest(worker, "inst-a", TERMS, default_agent="claude")
        ready.put(worker)
        start.wait()
        while (held := store.acquire(request, now=START)) is not None:
            claimed = held.item
            claimed_log.append((claimed.id, claimed.generation))
            assert store.write_transition(settle(claimed, _done(START), at=START))
            # The agent's run, outside any transaction. Without it one process re-takes the
            # write lock before the others' busy handlers wake up, and there is no race.
            time.sleep(0.002)
        store.close()
    except Exception as caught:  # reported to the parent, which fails the test
        error = f"{type(caught).__name__}: {caught}"
    results.put((worker, claimed_log, error))


@pytest.mark.slow
def test_racing_processes_claim_every_item_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "wrighty.db"
    store = SqliteStore.open(path)
    items = [store.create_item(new_item(f"item {n}", queued=True), at=START, actor="op")
             for n in range(200)]  # fmt: skip
    ready, start, results = CONTEXT.Queue(), CONTEXT.Event(), CONTEXT.Queue()
    workers = [
        CONTEXT.Process(target=_burn_down, args=(str(path), f"w{n}", ready, start, results))
        for n in range(4)
    ]
    for process in workers:
        process.start()
    for _ in workers:  # every worker has opened the store before the race starts
        ready.get(timeout=60)
    start.set()
    reports = [results.get(timeout=120) for _ in workers]
    for process in workers:
        process.join(timeout=60)
    assert [error for _, _, error in reports] == [None] * 4  # no "database is locked"
    claims = [claim for _, log, _ in reports for claim in log]
    assert sorted(claims) == [(item.id, 1) for item in items]
    assert sum(1 for _, log, _ in reports if log) >= 2, "the race never happened"
    for item in items:
        after = store.get_item(item.id)
        assert after is not None
        assert after.state is ItemState.DONE
        assert replay(store.list_events(item.id)) is ItemState.DONE
    store.close()


def _paused_worker(path: str, ready: Any, go: Any, results: Any) -> None:
    store = SqliteStore.open(Path(path))
    request = ClaimRequest("w-paused", "inst-a", TERMS, default_agent="claude")
    held = store.acquire(request, now=START)
    assert held is not None
    claimed = held.item
    run = NewRun("run-paused", RunKind.FRESH, "w-paused", "inst-a", START, None)
    assert store.start_run(claimed, run) is not None
    session = Session(claimed.id, "claude", "sess-1", "/tmp/w", "inst-a")
    assert store.record_session(claimed, session, at=START)
    ready.put(os.getpid())
    go.wait()  # the parent stops us here, reaps our lease and gives the item to another worker
    later = START + timedelta(seconds=90)
    renewed = store.renew(claimed, now=later, terms=TERMS).outcome
    settled = store.write_transition(settle(claimed, _done(later), at=later))
    recorded = store.record_process(claimed, "run-paused", pid=1, process_started_at=1.0)
    results.put((renewed.value, settled, recorded))
    store.close()


@pytest.mark.slow
def test_a_paused_worker_whose_lease_was_reaped_cannot_write_when_it_resumes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "wrighty.db"
    store = SqliteStore.open(path)
    item = store.create_item(new_item(queued=True), at=START, actor="op")
    ready, go, results = CONTEXT.Queue(), CONTEXT.Event(), CONTEXT.Queue()
    paused = CONTEXT.Process(target=_paused_worker, args=(str(path), ready, go, results))
    paused.start()
    pid = ready.get(timeout=60)
    os.kill(pid, signal.SIGSTOP)  # a long GC pause, a suspended laptop, a stopped container
    try:
        reaped_at = START + timedelta(seconds=61)
        [change] = reaper.reap_expired(store, now=reaped_at, max_requeues=3)
        assert change.after.state is ItemState.RETRY_SCHEDULED
        successor_held = store.acquire(
            ClaimRequest("w-next", "inst-a", TERMS, default_agent="claude"), now=reaped_at
        )
        assert successor_held is not None
        successor = successor_held.item
        assert successor.generation == 2
    finally:
        os.kill(pid, signal.SIGCONT)
    go.set()
    renewed, settled, recorded = results.get(timeout=60)
    paused.join(timeout=60)
    assert (renewed, settled, recorded) == (RenewOutcome.LOST.value, False, False)
    assert store.get_item(item.id) == successor
    [run] = store.list_runs(item.id)
    assert (run.outcome_class, run.pid) == (OutcomeClass.WORKER_LOST, None)
    store.close()
