"""The usage ledger in the store (docs/usage.md): a run's usage recorded under its claim, the
agent's own report, settlements, the ledger read, an agent's spend and the period budget that
acquire checks, and items' own budgets — on SQLite and on PostgreSQL."""

from __future__ import annotations

import dataclasses
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import START, FakeClock
from tests.store.older_store import store_before
from tests.store.test_claims import LEASE, acquire, queued, request, settlement
from tests.store.test_contract import new_item
from wrighty.domain.claims import PeriodBudget, settle
from wrighty.domain.model import Change, Item, NewRun, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition
from wrighty.domain.usage import LedgerEntry, Limit, Usage
from wrighty.services import items as item_service
from wrighty.services import reaper
from wrighty.store import Store
from wrighty.store.sqlfiles import migrations

# Models in an order no sort would keep: the ledger keeps the order they were first seen in.
PARTIAL = Usage(1200, 300, 50, 10, cost_usd=0.0081, models=("zeta-large", "alpha-small"),
                turns=3, api_ms=900, final=False, cost_source="reported")  # fmt: skip
FINAL = Usage(2500, 640, 75, 20, cost_usd=0.0172, models=("zeta-large", "alpha-small", "mid"),
              turns=5, api_ms=2100, final=True, cost_source="reported")  # fmt: skip
UNPRICED = Usage(400, 90, 0, 0, models=("gpt-5",), turns=1, api_ms=300, final=True)


def begin(
    store: Store,
    clock: FakeClock,
    *,
    agent: str | None = "codex",
    token: str = "tok-1",
    run_id: str | None = None,
    worker: str = "w1",
    item_agent: str | None = None,
) -> tuple[Item, str]:
    """A queued item (of ``item_agent``) claimed by ``worker``, with a run of ``agent``
    started under the claim."""
    made = queued(store, clock, agent=item_agent)
    claimed = acquire(store, clock, worker, item_id=made.id)
    run_id = run_id or f"run-{made.id}"
    run = NewRun(run_id, RunKind.FRESH, worker, "inst-a", clock(), None, claim_token=token,
                 agent=agent)  # fmt: skip
    assert store.start_run(claimed, run) is not None
    return claimed, run_id


def recorded(store: Store, run_id: str) -> Usage | None:
    run = store.get_run(run_id)
    assert run is not None
    return run.usage


def end_run_keeping_the_claim(store: Store, claimed: Item, clock: FakeClock) -> None:
    """The run ends while the claim is still held (same state, generation and owner). The
    domain never writes this; a hand-made change does, so the store's own guard must hold."""
    still = dataclasses.replace(claimed, updated_at=clock.advance(1))
    event = dataclasses.replace(store.list_events(claimed.id)[-1], at=clock(), actor="by hand")
    end = RunEnd(clock(), OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, exit_code=0)
    assert store.write_transition(Change(claimed, still, event, run_end=end))
    assert store.get_item(claimed.id) == still


def moved_by_another_writer(
    store: Store, claimed: Item, clock: FakeClock, moved: dict[str, object]
) -> Item:
    """Another writer changes exactly one of the claim's state, generation or owner."""
    other = dataclasses.replace(claimed, **moved, updated_at=clock.advance(1))
    event = dataclasses.replace(store.list_events(claimed.id)[-1], at=clock(), actor="another",
                                generation=other.generation, to_state=other.state)  # fmt: skip
    assert store.write_transition(Change(claimed, other, event))
    return other


MOVED = pytest.mark.parametrize(
    "moved",
    [{"state": ItemState.NEEDS_ATTENTION}, {"generation": 2}, {"claimed_by": "w2"}],
    ids=["state", "generation", "claimed_by"],
)


# -- record_usage: the worker's reading, under the claim ----------------------------------------


def test_usage_recorded_under_the_claim_reads_back_exactly(store: Store, clock: FakeClock) -> None:
    claimed, run_id = begin(store, clock)
    assert recorded(store, run_id) is None  # nothing reported yet
    assert store.record_usage(claimed, run_id, PARTIAL) is True
    [run] = store.list_runs(claimed.id)
    assert run.usage == PARTIAL
    assert run.agent == "codex"
    assert recorded(store, run_id) == PARTIAL
    assert run.usage is not None
    assert run.usage.models == ("zeta-large", "alpha-small")
    assert (run.usage.final, run.usage.cost_source, run.usage.tokens) == (False, "reported", 1560)
    [entry] = store.list_ledger(default_agent="claude")
    assert entry == LedgerEntry(run_id, claimed.id, "codex", START, PARTIAL)


def test_a_second_record_replaces_the_first(store: Store, clock: FakeClock) -> None:
    claimed, run_id = begin(store, clock)
    assert store.record_usage(claimed, run_id, PARTIAL)
    assert store.record_usage(claimed, run_id, FINAL)
    assert recorded(store, run_id) == FINAL
    # Replaced, not added: a figure the second reading lacks is gone (no cost, no sum).
    assert store.record_usage(claimed, run_id, UNPRICED)
    usage = recorded(store, run_id)
    assert usage == UNPRICED
    assert usage is not None
    assert (usage.cost_usd, usage.cost_source, usage.final) == (None, None, True)
    [entry] = store.list_ledger(default_agent="claude")
    assert entry.usage == UNPRICED


def test_an_estimated_cost_keeps_its_label(store: Store, clock: FakeClock) -> None:
    claimed, run_id = begin(store, clock)
    estimated = dataclasses.replace(UNPRICED, cost_usd=0.00125, cost_source="estimated")
    assert store.record_usage(claimed, run_id, estimated)
    assert recorded(store, run_id) == estimated


@pytest.mark.parametrize(
    "stale", [{"generation": 0}, {"claimed_by": "w-other"}], ids=["generation", "other-worker"]
)
def test_a_record_without_the_claim_changes_nothing(
    store: Store, clock: FakeClock, stale: dict[str, object]
) -> None:
    claimed, run_id = begin(store, clock)
    assert store.record_usage(claimed, run_id, PARTIAL)
    impostor = dataclasses.replace(claimed, **stale)
    assert store.record_usage(impostor, run_id, FINAL) is False
    assert recorded(store, run_id) == PARTIAL


@MOVED
def test_a_moved_on_claim_takes_no_usage_from_its_old_holder(
    store: Store, clock: FakeClock, moved: dict[str, object]
) -> None:
    """Both writes of usage check the item's state, generation and owner themselves."""
    claimed, run_id = begin(store, clock)
    assert store.record_usage(claimed, run_id, PARTIAL)
    moved_by_another_writer(store, claimed, clock, moved)
    runs = store.list_runs(claimed.id)
    assert store.record_usage(claimed, run_id, FINAL) is False
    assert store.report_usage(run_id, claim_token="tok-1", usage=FINAL) is False
    assert store.list_runs(claimed.id) == runs
    assert recorded(store, run_id) == PARTIAL


def test_a_record_after_the_run_ended_changes_nothing(store: Store, clock: FakeClock) -> None:
    claimed, run_id = begin(store, clock)
    assert store.record_usage(claimed, run_id, PARTIAL)
    done = settle(claimed, settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), at=clock())
    assert store.write_transition(done)
    assert store.record_usage(claimed, run_id, FINAL) is False
    assert recorded(store, run_id) == PARTIAL


def test_a_run_that_ended_takes_no_usage_while_its_claim_is_held(
    store: Store, clock: FakeClock
) -> None:
    claimed, run_id = begin(store, clock)
    assert store.record_usage(claimed, run_id, PARTIAL)
    end_run_keeping_the_claim(store, claimed, clock)
    held = store.get_item(claimed.id)
    assert store.record_usage(claimed, run_id, FINAL) is False
    assert store.report_usage(run_id, claim_token="tok-1", usage=FINAL) is False
    assert recorded(store, run_id) == PARTIAL
    assert store.get_item(claimed.id) == held


def test_a_record_names_its_own_run(store: Store, clock: FakeClock) -> None:
    claimed, run_id = begin(store, clock)
    other, other_run = begin(store, clock, run_id="run-other", worker="w2", token="tok-2")
    # w1's claim does not reach w2's run, nor a run that does not exist.
    assert store.record_usage(claimed, other_run, FINAL) is False
    assert store.record_usage(claimed, "run-nowhere", FINAL) is False
    assert recorded(store, other_run) is None
    assert store.record_usage(other, other_run, FINAL)
    assert (recorded(store, run_id), recorded(store, other_run)) == (None, FINAL)


# -- report_usage: `wrighty report-usage`, from inside the run ---------------------------------


def test_a_report_lands_only_with_the_runs_token_under_its_claim(
    store: Store, clock: FakeClock
) -> None:
    _, run_id = begin(store, clock)
    assert store.report_usage(run_id, claim_token="guess", usage=PARTIAL) is False
    assert recorded(store, run_id) is None
    assert store.report_usage(run_id, claim_token="tok-1", usage=PARTIAL) is True
    assert recorded(store, run_id) == PARTIAL
    assert store.report_usage(run_id, claim_token="tok-1", usage=FINAL) is True
    assert recorded(store, run_id) == FINAL
    assert store.report_usage("run-nowhere", claim_token="tok-1", usage=PARTIAL) is False


def test_a_report_after_the_claim_was_lost_changes_nothing(store: Store, clock: FakeClock) -> None:
    _, run_id = begin(store, clock)
    assert store.report_usage(run_id, claim_token="tok-1", usage=PARTIAL)
    clock.advance(LEASE + 1)
    assert reaper.reap_expired(store, now=clock(), max_requeues=3)
    assert store.report_usage(run_id, claim_token="tok-1", usage=FINAL) is False
    assert recorded(store, run_id) == PARTIAL


def test_a_report_into_an_ended_run_changes_nothing(store: Store, clock: FakeClock) -> None:
    claimed, run_id = begin(store, clock)
    done = settle(claimed, settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), at=clock())
    assert store.write_transition(done)
    assert store.report_usage(run_id, claim_token="tok-1", usage=FINAL) is False
    assert recorded(store, run_id) is None


# -- settling --------------------------------------------------------------------------------


def test_a_settlement_writes_the_final_usage_with_the_runs_end(
    store: Store, clock: FakeClock
) -> None:
    claimed, run_id = begin(store, clock)
    assert store.record_usage(claimed, run_id, PARTIAL)
    clock.advance(90)
    end = RunEnd(clock(), OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, exit_code=0,
                 usage=FINAL)  # fmt: skip
    done = settle(
        claimed,
        dataclasses.replace(settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), run_end=end),
        at=clock(),
    )
    assert store.write_transition(done)
    run = store.get_run(run_id)
    assert run is not None
    assert (run.ended_at, run.outcome_class, run.usage) == (clock(), OutcomeClass.SUCCEEDED, FINAL)
    [entry] = store.list_ledger(default_agent="claude")
    assert entry.usage == FINAL


def test_a_settlement_carrying_usage_records_it_when_none_was_recorded(
    store: Store, clock: FakeClock
) -> None:
    claimed, run_id = begin(store, clock)
    end = RunEnd(clock(), OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, usage=UNPRICED)
    settled = dataclasses.replace(
        settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), run_end=end
    )
    assert store.write_transition(settle(claimed, settled, at=clock()))
    assert recorded(store, run_id) == UNPRICED


def test_a_settlement_without_usage_keeps_the_partial_usage(store: Store, clock: FakeClock) -> None:
    claimed, run_id = begin(store, clock)
    assert store.record_usage(claimed, run_id, PARTIAL)
    failed = settle(
        claimed,
        settlement(ItemState.NEEDS_ATTENTION, OutcomeClass.PROCESS_CRASH, clock),
        at=clock.advance(5),
    )
    assert failed.run_end is not None
    assert failed.run_end.usage is None
    assert store.write_transition(failed)
    run = store.get_run(run_id)
    assert run is not None
    assert (run.outcome_class, run.usage) == (OutcomeClass.PROCESS_CRASH, PARTIAL)


def test_a_killed_run_keeps_what_was_seen_when_the_reaper_settles_it(
    store: Store, clock: FakeClock
) -> None:
    claimed, run_id = begin(store, clock)
    assert store.record_usage(claimed, run_id, PARTIAL)
    clock.advance(LEASE + 1)
    [change] = reaper.reap_expired(store, now=clock(), max_requeues=3)
    assert change.run_end is not None
    assert change.run_end.usage is None
    run = store.get_run(run_id)
    assert run is not None
    assert (run.ended_at, run.outcome_class) == (clock(), OutcomeClass.WORKER_LOST)
    assert run.usage == PARTIAL
    assert run.usage is not None
    assert run.usage.final is False


def test_a_cancelled_run_keeps_its_partial_usage(store: Store, clock: FakeClock) -> None:
    claimed, run_id = begin(store, clock)
    assert store.record_usage(claimed, run_id, PARTIAL)
    item_service.cancel_item(store, claimed.id, now=clock.advance(5))
    run = store.get_run(run_id)
    assert run is not None
    assert (run.outcome_class, run.usage) == (OutcomeClass.CANCELLED, PARTIAL)


# -- the ledger ------------------------------------------------------------------------------


def test_the_ledger_lists_every_run_oldest_first_with_its_agent(
    store: Store, clock: FakeClock
) -> None:
    own, own_run = begin(store, clock, agent="codex", run_id="r-own")
    assert store.record_usage(own, own_run, PARTIAL)
    clock.advance(60)
    # A run recorded without an agent counts for its item's agent, else the default.
    items_agent, items_run = begin(store, clock, agent=None, run_id="r-item", token="t2",
                                   item_agent="gemini")  # fmt: skip
    clock.advance(60)
    _, default_run = begin(store, clock, agent=None, run_id="r-default", token="t3")
    assert items_agent.agent == "gemini"
    entries = store.list_ledger(default_agent="claude")
    assert [(e.run_id, e.agent, e.started_at) for e in entries] == [
        (own_run, "codex", START),
        (items_run, "gemini", START + timedelta(seconds=60)),
        (default_run, "claude", START + timedelta(seconds=120)),
    ]
    assert [e.usage for e in entries] == [PARTIAL, Usage(), Usage()]
    assert store.list_ledger(default_agent="command")[2].agent == "command"


def test_the_ledger_filters_by_start_and_by_item(store: Store, clock: FakeClock) -> None:
    first, first_run = begin(store, clock, run_id="r-1")
    clock.advance(60)
    second, second_run = begin(store, clock, run_id="r-2", token="t2")
    clock.advance(60)
    # The first item again, under a new claim: its second run.
    assert store.write_transition(
        settle(first, settlement(ItemState.NEEDS_ATTENTION, OutcomeClass.PROCESS_CRASH, clock),
               at=clock())
    )  # fmt: skip
    item_service.requeue_item(store, first.id, resume=False, now=clock())
    again = acquire(store, clock, item_id=first.id)
    assert store.start_run(again, NewRun("r-3", RunKind.FRESH, "w1", "inst-a", clock(), None))

    def ids(
        *,
        since: datetime | None = None,
        item_id: int | None = None,
        item_ids: list[int] | None = None,
    ) -> list[str]:
        entries = store.list_ledger(
            default_agent="claude", since=since, item_id=item_id, item_ids=item_ids
        )
        return [e.run_id for e in entries]

    assert ids() == [first_run, second_run, "r-3"]
    assert ids(since=START + timedelta(seconds=60)) == [second_run, "r-3"]  # at or after
    assert ids(since=START + timedelta(seconds=61)) == ["r-3"]
    assert ids(since=clock() + timedelta(seconds=1)) == []
    assert ids(item_id=first.id) == [first_run, "r-3"]
    assert ids(item_id=second.id) == [second_run]
    assert ids(item_id=first.id, since=START + timedelta(seconds=1)) == ["r-3"]
    assert ids(item_id=second.id + 100) == []
    # of a set of items, in one read (`wrighty list --since --json`'s totals)
    assert ids(item_ids=[first.id]) == [first_run, "r-3"]
    assert ids(item_ids=[second.id, first.id, second.id + 100]) == [first_run, second_run, "r-3"]
    assert ids(item_ids=[first.id, second.id], since=START + timedelta(seconds=1)) == [
        second_run,
        "r-3",
    ]
    assert ids(item_ids=[]) == []
    with pytest.raises(ValueError, match="not both"):
        ids(item_id=first.id, item_ids=[first.id])


# -- an agent's spend and the period budget ----------------------------------------------------


def _spent_run(store: Store, clock: FakeClock, usage: Usage, *, agent: str, run_id: str) -> None:
    claimed, run = begin(store, clock, agent=agent, run_id=run_id, token=run_id)
    assert store.record_usage(claimed, run, usage)
    end = RunEnd(clock(), OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, usage=usage)
    done = dataclasses.replace(
        settlement(ItemState.DONE, OutcomeClass.SUCCEEDED, clock), run_end=end
    )
    assert store.write_transition(settle(claimed, done, at=clock()))


def test_an_agents_spend_sums_its_runs_since_a_time(store: Store, clock: FakeClock) -> None:
    _spent_run(store, clock, FINAL, agent="codex", run_id="before")  # before the period
    clock.advance(3600)
    since = clock()
    _spent_run(store, clock, PARTIAL, agent="codex", run_id="at-start")  # started at `since`
    clock.advance(60)
    _spent_run(store, clock, UNPRICED, agent="codex", run_id="unpriced")
    _spent_run(store, clock, FINAL, agent="claude", run_id="another-agent")
    spent = store.agent_spend("codex", since=since)
    assert spent.tokens == PARTIAL.tokens + UNPRICED.tokens
    assert spent.cost_usd == pytest.approx(0.0081)
    assert spent.cost_source == "reported"
    assert store.agent_spend("claude", since=since).tokens == FINAL.tokens
    assert store.agent_spend("codex", since=START).tokens == (
        FINAL.tokens + PARTIAL.tokens + UNPRICED.tokens
    )
    nothing = store.agent_spend("gemini", since=START)
    assert (nothing.tokens, nothing.cost_usd, nothing.cost_source) == (0, None, None)


def test_an_agents_spend_with_an_estimated_part_is_an_estimate(
    store: Store, clock: FakeClock
) -> None:
    _spent_run(store, clock, PARTIAL, agent="codex", run_id="reported")
    estimated = dataclasses.replace(UNPRICED, cost_usd=0.5, cost_source="estimated")
    _spent_run(store, clock, estimated, agent="codex", run_id="estimated")
    spent = store.agent_spend("codex", since=START)
    assert spent.cost_usd == pytest.approx(0.5081)
    assert spent.cost_source == "estimated"


def test_a_running_run_counts_with_its_usage_as_last_recorded(
    store: Store, clock: FakeClock
) -> None:
    claimed, run_id = begin(store, clock, agent="codex")
    assert store.record_usage(claimed, run_id, PARTIAL)
    assert store.agent_spend("codex", since=START).tokens == PARTIAL.tokens


def _budget(limit: Limit, since: datetime = START) -> PeriodBudget:
    return PeriodBudget(since=since, limit=limit)


@pytest.mark.parametrize(
    "limit",
    [Limit(max_tokens=FINAL.tokens), Limit(max_cost_usd=0.0172), Limit(0.5, FINAL.tokens - 1)],
    ids=["tokens", "cost", "either"],
)
def test_acquire_claims_nothing_while_the_agents_period_budget_is_spent(
    store: Store, clock: FakeClock, limit: Limit
) -> None:
    _spent_run(store, clock, FINAL, agent="claude", run_id="spent")
    waiting = queued(store, clock, "waits")
    events = store.list_events(waiting.id)
    held = request(agent="claude", budget=_budget(limit))
    assert store.acquire(held, now=clock.advance(1)) is None
    assert store.get_item(waiting.id) == waiting
    assert store.list_events(waiting.id) == events
    # The next period starts with nothing spent: the same request claims.
    later = request(agent="claude", budget=_budget(limit, since=clock()))
    taken = store.acquire(later, now=clock())
    assert taken is not None
    assert taken.item.id == waiting.id


def test_acquire_with_budget_left_claims_as_usual(store: Store, clock: FakeClock) -> None:
    _spent_run(store, clock, FINAL, agent="claude", run_id="spent")
    _spent_run(store, clock, FINAL, agent="codex", run_id="another-agent")
    waiting = queued(store, clock, "goes")
    left = request(agent="claude", budget=_budget(Limit(1.0, FINAL.tokens + 1)))
    taken = store.acquire(left, now=clock.advance(1))
    assert taken is not None
    assert (taken.item.id, taken.item.state) == (waiting.id, ItemState.RUNNING)
    assert store.get_item(waiting.id) == taken.item


def test_an_unknown_cost_never_spends_a_cost_budget(store: Store, clock: FakeClock) -> None:
    _spent_run(store, clock, UNPRICED, agent="claude", run_id="unpriced")
    waiting = queued(store, clock)
    # The run counts: its tokens spend a token budget of just that many...
    tokens_only = request(agent="claude", budget=_budget(Limit(max_tokens=UNPRICED.tokens)))
    assert store.acquire(tokens_only, now=clock.advance(1)) is None
    # ...but its cost, unknown, spends nothing of a cost budget however small.
    only_cost = request(agent="claude", budget=_budget(Limit(max_cost_usd=0.000001)))
    taken = store.acquire(only_cost, now=clock())
    assert taken is not None
    assert taken.item.id == waiting.id


# -- items' own budgets --------------------------------------------------------------------------


def test_an_items_own_budget_is_kept_through_its_moves(store: Store, clock: FakeClock) -> None:
    item = store.create_item(new_item(max_cost_usd=2.5, max_tokens=1000), at=clock(),
                             actor="op")  # fmt: skip
    assert (item.max_cost_usd, item.max_tokens) == (2.5, 1000)
    assert store.get_item(item.id) == item
    queued_change = transition(item, ItemState.QUEUED, at=clock.advance(1), actor="op")
    assert store.write_transition(queued_change)
    claimed = acquire(store, clock, item_id=item.id)
    assert (claimed.max_cost_usd, claimed.max_tokens) == (2.5, 1000)
    stopped = settle(
        claimed,
        settlement(ItemState.NEEDS_ATTENTION, OutcomeClass.PROCESS_CRASH, clock),
        at=clock.advance(1),
    )
    assert store.write_transition(stopped)
    after = store.get_item(item.id)
    assert after is not None
    assert (after.state, after.max_cost_usd, after.max_tokens) == (
        ItemState.NEEDS_ATTENTION,
        2.5,
        1000,
    )


def test_a_move_writes_the_items_new_budget(store: Store, clock: FakeClock) -> None:
    item = store.create_item(new_item(max_tokens=1000), at=clock(), actor="op")
    change = transition(item, ItemState.QUEUED, at=clock.advance(1), actor="op")
    raised = dataclasses.replace(change.after, max_cost_usd=9.0, max_tokens=4000)
    assert store.write_transition(dataclasses.replace(change, after=raised))
    after = store.get_item(item.id)
    assert after == raised
    assert (after.max_cost_usd, after.max_tokens) == (9.0, 4000)  # type: ignore[union-attr]


def test_an_item_without_a_budget_reads_back_without_one(store: Store, clock: FakeClock) -> None:
    item = store.create_item(new_item(), at=clock(), actor="op")
    assert (item.max_cost_usd, item.max_tokens) == (None, None)


# -- a store from before the ledger --------------------------------------------------------------

OLD_RUN = (
    "INSERT INTO runs (run_id, item_id, generation, attempt, kind, worker_id, installation_id, "
    "started_at, ended_at, outcome_class, confidence) VALUES ('old-run', 1, 1, 1, 'fresh', 'w1', "
    "'inst-a', '2026-01-01T00:00:01.000000Z', '2026-01-01T00:05:00.000000Z', 'succeeded', "
    "'authoritative')"
)
OLD_ITEM = (
    "INSERT INTO items (title, body, agent, state, generation, created_at, updated_at) VALUES "
    "('kept', 'task', {agent}, 'done', 1, '2026-01-01T00:00:00.000000Z', "
    "'2026-01-01T00:05:00.000000Z')"
)


def store_before_the_ledger(
    backend: str, tmp_path: Path, agent: str
) -> AbstractContextManager[Store]:
    """A store at the schema just before the ledger's migration, with one item and its run,
    then opened by this wrighty (which migrates it)."""
    item_sql = OLD_ITEM.format(agent=f"'{agent}'" if agent else "NULL")
    return store_before(backend, tmp_path, "ledger", [item_sql, OLD_RUN])


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_store_from_before_the_ledger_keeps_its_runs_readable(
    backend: str, tmp_path: Path
) -> None:
    with store_before_the_ledger(backend, tmp_path, agent="") as store:
        assert store.opened == "migrated"  # type: ignore[attr-defined]
        assert store.schema_version() == migrations(backend)[-1].version
        [item] = store.list_items()
        assert (item.title, item.state, item.max_cost_usd, item.max_tokens) == (
            "kept",
            ItemState.DONE,
            None,
            None,
        )
        [run] = store.list_runs(item.id)
        assert (run.run_id, run.outcome_class, run.agent, run.usage) == (
            "old-run",
            OutcomeClass.SUCCEEDED,
            None,
            None,
        )
        assert store.get_run("old-run") == run
        [entry] = store.list_ledger(default_agent="claude")
        assert (entry.run_id, entry.agent, entry.usage) == ("old-run", "claude", Usage())
        spent = store.agent_spend("claude", since=START - timedelta(days=365))
        assert (spent.tokens, spent.cost_usd) == (0, None)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_an_old_run_counts_in_the_ledger_for_its_items_agent(backend: str, tmp_path: Path) -> None:
    with store_before_the_ledger(backend, tmp_path, agent="gemini") as store:
        [entry] = store.list_ledger(default_agent="claude")
        assert entry.agent == "gemini"
