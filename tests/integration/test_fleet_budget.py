"""A day budget shared by a fleet: workers racing their claims on one store (SQLite file, or
PostgreSQL) never launch a run once the recorded spend reached the budget, and the overrun is
within the bound docs/usage.md gives (the runs in flight: at most one run's spend per worker)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import START, open_postgres, open_sqlite, postgres_schema
from tests.store.test_contract import new_item
from wrighty.domain.claims import ClaimRequest, LeaseTerms, PeriodBudget, Settlement, settle
from wrighty.domain.model import NewRun, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.usage import Limit, Usage
from wrighty.store.port import Store

TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)
WORKERS = 4
ITEMS = 40
PER_RUN = Usage(input_tokens=80, output_tokens=20, final=True)  # 100 tokens a run
BUDGET = Limit(max_tokens=1000)


@pytest.fixture(params=["sqlite", "postgresql"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    if request.param == "sqlite":
        path = tmp_path / "wrighty.db"
        yield lambda: open_sqlite(path)
        return
    with postgres_schema() as url:
        yield lambda: open_postgres(url)


def _worker(name: str, open_store: Callable[[], Store], start: threading.Barrier,
            ran: list[str], errors: list[str]) -> None:  # fmt: skip
    store = open_store()
    request = ClaimRequest(
        name, "inst", TERMS, default_agent="claude", agent="claude",
        budget=PeriodBudget(START, BUDGET),
    )  # fmt: skip
    try:
        start.wait()
        while (held := store.acquire(request, now=START)) is not None:
            claimed = held.item
            run_id = f"run-{claimed.id}"
            new = NewRun(run_id, RunKind.FRESH, name, "inst", START, None, agent="claude")
            assert store.start_run(claimed, new) is not None
            ran.append(run_id)
            # The run's spend as its heartbeat records it, then the settlement's final figure.
            assert store.record_usage(claimed, run_id, PER_RUN)
            end = RunEnd(START, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, usage=PER_RUN)
            done = Settlement(ItemState.DONE, process_started=True, run_end=end)
            assert store.write_transition(settle(claimed, done, at=START))
    except Exception as caught:  # reported to the test
        errors.append(f"{name}: {type(caught).__name__}: {caught}")
    finally:
        store.close()


@pytest.mark.slow
def test_racing_workers_stop_launching_once_the_day_budget_is_spent(opener) -> None:
    store = opener()
    items = [store.create_item(new_item(f"item {n}", queued=True), at=START, actor="op")
             for n in range(ITEMS)]  # fmt: skip
    start = threading.Barrier(WORKERS)
    ran: list[str] = []
    errors: list[str] = []
    threads = [
        threading.Thread(target=_worker, args=(f"w{n}", opener, start, ran, errors))
        for n in range(WORKERS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    spent = store.agent_spend("claude", since=START)
    # The budget was used up, and passed by no more than the runs in flight when the last one
    # was admitted: each claim saw less than 1,000 tokens recorded, and at most the other
    # workers' runs had not recorded theirs yet.
    assert spent.tokens >= BUDGET.max_tokens  # type: ignore[operator]
    assert spent.tokens < BUDGET.max_tokens + WORKERS * PER_RUN.tokens  # type: ignore[operator]
    assert len(ran) == spent.tokens // PER_RUN.tokens
    waiting = [i for i in items if store.get_item(i.id).state is ItemState.QUEUED]  # type: ignore[union-attr]
    assert len(waiting) == ITEMS - len(ran)
    # And once spent, nobody claims, whatever the order.
    late = ClaimRequest("late", "inst", TERMS, default_agent="claude", agent="claude",
                        budget=PeriodBudget(START, BUDGET))  # fmt: skip
    assert store.acquire(late, now=START) is None
    store.close()
