"""An item's own budget from the command line: `create --max-cost-usd / --max-tokens`, and
`requeue --max-cost-usd / --max-tokens`, which replace only the bounds they give."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from wrighty.domain.claims import ClaimRequest, LeaseTerms
from wrighty.domain.model import Item, NewRun, Session
from wrighty.domain.outcomes import RunKind
from wrighty.domain.states import ItemState
from wrighty.store.sqlite import SqliteStore


@pytest.fixture
def store(initialised: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore.open(initialised / ".wrighty" / "wrighty.db", create=False)
    yield opened
    opened.close()


def create(*args: str) -> int:
    result = wrighty("create", "--title", "t", "--body", "b", *args, "--json")
    assert result.exit_code == 0, result.output
    return int(json.loads(result.stdout)["id"])


def stored(store: SqliteStore, item_id: int) -> Item:
    item = store.get_item(item_id)
    assert item is not None
    return item


def needs_attention(store: SqliteStore, item_id: int, *, session: bool = False) -> None:
    """The item queued, claimed, its run (and session) recorded, then released by an
    operator."""
    queued = wrighty("queue", str(item_id))
    assert queued.exit_code == 0, queued.output
    now = datetime.now(UTC)
    request = ClaimRequest("w1", "inst-a", LeaseTerms(60.0, 600.0), "claude", item_id=item_id)
    held = store.acquire(request, now=now)
    assert held is not None
    run = NewRun("r-1", RunKind.FRESH, "w1", "inst-a", now, "s-1" if session else None)
    recorded = Session(item_id, "claude", "s-1", "/tmp/ws", "inst-a") if session else None
    assert store.start_run(held.item, run, session=recorded) is not None
    released = wrighty("release", str(item_id), "--force")
    assert released.exit_code == 0, released.output
    assert stored(store, item_id).state is ItemState.NEEDS_ATTENTION


def test_create_stores_the_items_own_budget(store: SqliteStore) -> None:
    item_id = create("--max-cost-usd", "5", "--max-tokens", "1000")
    item = stored(store, item_id)
    assert (item.max_cost_usd, item.max_tokens) == (5.0, 1000)


def test_create_takes_either_bound_alone_and_a_fraction_of_a_dollar(store: SqliteStore) -> None:
    cost_only = stored(store, create("--max-cost-usd", "2.5"))
    tokens_only = stored(store, create("--max-tokens", "250000"))
    neither = stored(store, create())
    assert (cost_only.max_cost_usd, cost_only.max_tokens) == (2.5, None)
    assert (tokens_only.max_cost_usd, tokens_only.max_tokens) == (None, 250_000)
    assert (neither.max_cost_usd, neither.max_tokens) == (None, None)


def test_a_queued_items_budget_goes_with_its_claim(store: SqliteStore) -> None:
    item_id = create("--max-cost-usd", "5", "--max-tokens", "1000", "--queue")
    request = ClaimRequest("w1", "inst-a", LeaseTerms(60.0, 600.0), "claude")
    held = store.acquire(request, now=datetime.now(UTC))
    assert held is not None
    assert (held.item.id, held.item.max_cost_usd, held.item.max_tokens) == (item_id, 5.0, 1000)


def test_requeue_fresh_with_a_new_cost_replaces_only_the_cost(store: SqliteStore) -> None:
    item_id = create("--max-cost-usd", "5", "--max-tokens", "1000")
    needs_attention(store, item_id)
    result = wrighty("requeue", str(item_id), "--fresh", "--max-cost-usd", "9")
    assert result.exit_code == 0, result.output
    item = stored(store, item_id)
    assert (item.state, item.max_cost_usd, item.max_tokens) == (ItemState.QUEUED, 9.0, 1000)
    event = store.list_events(item_id)[-1]
    assert (event.reason_code, event.to_state) == ("operator-requeue", ItemState.QUEUED)
    assert event.reason == (
        "an operator asked to start over in a new session; its own budget is now $9 / 1,000 tokens"
    )


def test_requeue_resume_with_new_tokens_replaces_only_the_tokens(store: SqliteStore) -> None:
    item_id = create("--max-cost-usd", "5", "--max-tokens", "1000")
    needs_attention(store, item_id, session=True)
    result = wrighty("requeue", str(item_id), "--resume", "--max-tokens", "4000")
    assert result.exit_code == 0, result.output
    item = stored(store, item_id)
    assert (item.state, item.max_cost_usd, item.max_tokens) == (
        ItemState.RETRY_SCHEDULED,
        5.0,
        4000,
    )
    event = store.list_events(item_id)[-1]
    assert event.reason is not None
    assert event.reason.endswith("; its own budget is now $5 / 4,000 tokens")


def test_a_requeue_without_budget_options_keeps_the_budget_and_says_nothing_of_it(
    store: SqliteStore,
) -> None:
    item_id = create("--max-tokens", "1000")
    needs_attention(store, item_id)
    result = wrighty("requeue", str(item_id), "--fresh")
    assert result.exit_code == 0, result.output
    item = stored(store, item_id)
    assert (item.max_cost_usd, item.max_tokens) == (None, 1000)
    assert store.list_events(item_id)[-1].reason == (
        "an operator asked to start over in a new session"
    )


def test_a_requeue_gives_a_budget_to_an_item_that_had_none(store: SqliteStore) -> None:
    item_id = create()
    needs_attention(store, item_id)
    result = wrighty("requeue", str(item_id), "--fresh", "--max-cost-usd", "0.5")
    assert result.exit_code == 0, result.output
    item = stored(store, item_id)
    assert (item.max_cost_usd, item.max_tokens) == (0.5, None)
    assert (store.list_events(item_id)[-1].reason or "").endswith("its own budget is now $0.5")


def test_a_refused_budget_on_requeue_leaves_the_item_as_it_was(store: SqliteStore) -> None:
    item_id = create("--max-cost-usd", "5")
    needs_attention(store, item_id)
    before, events = stored(store, item_id), store.list_events(item_id)
    result = wrighty("requeue", str(item_id), "--fresh", "--max-cost-usd", "-3")
    assert result.exit_code == 2
    assert "--max-cost-usd -3: must be more than 0" in result.output
    assert stored(store, item_id) == before
    assert store.list_events(item_id) == events
