"""Which agent each worker runs, and the items that wait for an agent no live worker runs:
the registry keeps the agent, the store counts waiting items by agent, and `status`'s report
warns about each agent left without a worker (both stores)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from tests.conftest import FakeClock
from wrighty.domain.claims import ClaimRequest, LeaseTerms, Settlement, settle
from wrighty.domain.health import Thresholds, Unserved, WorkerRow, WorkerState
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.services.status import status_report
from wrighty.store.port import Store

TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)
ELSEWHERE = "inst-elsewhere"  # liveness by heartbeat alone: no pid is checked


def _row(clock: FakeClock, worker_id: str, agent: str | None) -> WorkerRow:
    return WorkerRow(worker_id, None, ELSEWHERE, 7, 1.0, "1.0", WorkerState.IDLE, (),
                     clock(), clock(), agent)  # fmt: skip


def _queue(store: Store, clock: FakeClock, agent: str | None, count: int = 1) -> list[int]:
    return [
        store.create_item(
            NewItem("t", "b", agent, None, None, ItemState.QUEUED), at=clock(), actor="op"
        ).id
        for _ in range(count)
    ]


def _report(store: Store, clock: FakeClock):  # type: ignore[no-untyped-def]
    return status_report(
        store,
        now=clock(),
        thresholds=Thresholds(),
        worker_max_age_seconds=60,
        installation_id="inst-reader",
        default_agent="claude",
    )


def test_the_registry_keeps_the_agent_a_worker_runs(store: Store, clock: FakeClock) -> None:
    named, unknown = _row(clock, "w-00000000000a", "codex"), _row(clock, "w-00000000000b", None)
    store.upsert_worker(named)
    store.upsert_worker(unknown)
    beat = dataclasses.replace(named, state=WorkerState.RUNNING, items=(4,))
    store.upsert_worker(beat)
    assert {row.worker_id: row.agent for row in store.list_workers()} == {
        "w-00000000000a": "codex",
        "w-00000000000b": None,
    }


def test_waiting_items_are_counted_by_the_agent_they_name(store: Store, clock: FakeClock) -> None:
    _queue(store, clock, None, 2)
    _queue(store, clock, "codex", 3)
    store.create_item(NewItem("t", "b", "codex", None, None, ItemState.TODO), at=clock(), actor="o")
    [running] = _queue(store, clock, "gemini")
    held = store.acquire(ClaimRequest("w-1", "inst", TERMS, "claude", agent="gemini"), now=clock())
    assert held is not None
    assert held.item.id == running
    figures = store.queue_figures(now=clock())
    assert dict(figures.waiting_by_agent) == {None: 2, "codex": 3}
    # A retry waits for its agent too, due or not.
    later = Settlement(
        ItemState.RETRY_SCHEDULED, process_started=False, reason_code="process-crash",
        not_before=clock() + timedelta(hours=1),
    )  # fmt: skip
    assert store.write_transition(settle(held.item, later, at=clock()))
    assert dict(store.queue_figures(now=clock()).waiting_by_agent) == {
        None: 2, "codex": 3, "gemini": 1,
    }  # fmt: skip


def test_status_warns_about_each_agent_no_live_worker_runs(store: Store, clock: FakeClock) -> None:
    _queue(store, clock, None, 2)  # the default agent's: claude
    _queue(store, clock, "codex", 3)
    _queue(store, clock, "gemini")
    store.upsert_worker(_row(clock, "w-00000000000a", "claude"))
    stale = dataclasses.replace(
        _row(clock, "w-00000000000c", "gemini"), last_heartbeat_at=clock() - timedelta(hours=1)
    )
    store.upsert_worker(stale)  # runs gemini, but is not live
    report = _report(store, clock)
    assert report.unserved == [Unserved("codex", 3), Unserved("gemini", 1)]
    messages = [c.message for c in report.concerns if c.check == "unserved_agent"]
    assert messages == [
        "3 items wait for agent codex; no live worker runs it",
        "1 item waits for agent gemini; no live worker runs it",
    ]
    store.upsert_worker(_row(clock, "w-00000000000b", "codex"))
    assert _report(store, clock).unserved == [Unserved("gemini", 1)]


def test_nothing_is_claimed_about_agents_a_live_worker_may_run(
    store: Store, clock: FakeClock
) -> None:
    """A live worker that did not say its agent (an older wrighty's) may run any; with no live
    worker at all, `no_live_worker` is the warning."""
    _queue(store, clock, "codex")
    assert _report(store, clock).unserved == []
    assert [c.check for c in _report(store, clock).concerns] == ["no_live_worker"]
    store.upsert_worker(_row(clock, "w-00000000000a", "claude"))
    store.upsert_worker(_row(clock, "w-00000000000b", None))
    assert _report(store, clock).unserved == []
