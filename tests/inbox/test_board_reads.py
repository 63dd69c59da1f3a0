"""What one refresh of the inbox reads (services/inbox.read_board), on both stores: each reason
a waiting item is held for, and a board cut short at its limit."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from tests.conftest import FakeClock
from tests.inbox.seed import TERMS, claim, new, settle, start
from wrighty.domain.board import Section
from wrighty.domain.budgets import Budgets
from wrighty.domain.circuits import Circuit
from wrighty.domain.claims import ClaimRequest
from wrighty.domain.model import NewRun
from wrighty.domain.outcomes import OutcomeClass, RunKind
from wrighty.domain.scheduling import ConcurrencyLimits
from wrighty.domain.states import ItemState
from wrighty.domain.usage import Limit, Usage
from wrighty.services.inbox import BoardSettings, read_board
from wrighty.store import Store

SETTINGS = BoardSettings(installation_id="here", default_agent="claude-code")


def run(store: Store, item_id: int, clock: FakeClock, *, agent: str, usage: Usage) -> None:
    held = store.acquire(ClaimRequest("w", "here", TERMS, agent, item_id=item_id), now=clock())
    assert held is not None
    started = store.start_run(
        held.item, NewRun(f"r{item_id}", RunKind.FRESH, "w", "here", clock(), None, agent=agent)
    )
    assert started is not None
    assert store.record_usage(held.item, started.run_id, usage)


def test_each_reason_to_hold_a_waiting_item_is_on_its_row(store: Store, clock: FakeClock) -> None:
    def make(title: str, **changes: object) -> int:
        return store.create_item(new(title, **changes), at=clock(), actor="o").id

    gpu = make("train", labels=("gpu",))
    run(store, gpu, clock, agent="claude-code", usage=Usage(input_tokens=10))
    spender = make("spend", agent="codex")
    run(store, spender, clock, agent="codex", usage=Usage(input_tokens=5_000))
    first = make("first")
    after = make("after", after=(first,))
    by_label = make("also gpu", labels=("gpu",))
    by_budget = make("codex again", agent="codex")
    by_circuit = make("gemini", agent="gemini")
    free = make("nothing holds it")
    store.write_circuit(
        Circuit("agent:gemini@here"),
        Circuit("agent:gemini@here", until=clock() + timedelta(hours=1), reason="429"),
        at=clock(),
    )
    settings = dataclasses.replace(
        SETTINGS,
        limits=ConcurrencyLimits(labels={"gpu": 1}),
        budgets=Budgets(per_day={"codex": Limit(max_tokens=1_000)}),
        circuits={"gemini": "agent:gemini@here"},
    )
    board = read_board(store, settings, now=clock())
    rows = {row.item.id: row for row in board.rows}
    assert rows[after].why == f"waits for item {first} (queued)"
    assert rows[by_label].why == "held: label gpu runs 1 of 1 (limits.labels.gpu.maxConcurrent)"
    assert rows[by_budget].why.startswith("held: codex's budget for the day")
    assert rows[by_circuit].why.startswith("held: provider circuit agent:gemini@here is open")
    for item_id in (after, by_label, by_budget, by_circuit):
        assert rows[item_id].section is Section.HELD
    assert rows[free].section is Section.WAITING
    assert rows[first].section is Section.WAITING
    assert list(board.holds) == ["codex"]
    assert board.listed == board.open_total == 8


def test_a_board_cut_short_counts_what_it_left_out_and_still_sees_every_limit(
    store: Store, clock: FakeClock
) -> None:
    retry = store.create_item(new("retries", labels=("gpu",)), at=clock(), actor="o")
    claimed = claim(store, retry.id, at=clock())
    start(store, claimed, at=clock(), worker=claimed.claimed_by or "")
    settle(
        store,
        claimed,
        ItemState.RETRY_SCHEDULED,
        at=clock(),
        outcome=OutcomeClass.PROCESS_CRASH,
        reason="killed",
        not_before=clock(),
    )
    running = store.create_item(new("runs", labels=("gpu",)), at=clock(), actor="o").id
    run(store, running, clock, agent="claude-code", usage=Usage())
    for n in range(3):
        store.create_item(new(f"waits {n}", labels=("gpu",)), at=clock(), actor="o")
    settings = dataclasses.replace(SETTINGS, limits=ConcurrencyLimits(labels={"gpu": 1}), limit=1)
    board = read_board(store, settings, now=clock())
    assert board.listed == 1
    assert board.open_total == 5
    # The retry comes before the running item, which the cut leaves off the board: its label
    # is counted all the same (read from the store), so the retry shows as held.
    [row] = board.rows
    assert row.item.id == retry.id
    assert row.section is Section.HELD
    assert row.why.startswith("held: label gpu runs 1 of 1")


def test_an_item_whose_row_does_not_read_is_left_off_the_board_with_its_line(
    store: Store, clock: FakeClock
) -> None:
    from tests.store.txhooks import execute_raw

    poison = store.create_item(new("poison", queued=True), at=clock(), actor="o").id
    good = store.create_item(new("good", queued=True), at=clock(), actor="o").id
    execute_raw(store, f"UPDATE items SET queued_at = 'yesterday' WHERE id = {poison}")
    board = read_board(store, SETTINGS, now=clock())
    assert [row.item.id for row in board.rows] == [good]
    assert board.unreadable == (
        f"item {poison}: its queued_at does not read ('yesterday' is not a time)",
    )
