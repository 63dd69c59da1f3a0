"""`wrighty show`, `show --json` and `list --state landing` of an accepted item
(docs/landing.md#where-it-shows), on both stores: where its landing is (waiting in line,
checking on the target's commit, a fix turn), who accepted it, the commit they saw and its
target; once landed, what landed and the target's commit it was checked on."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.conftest import FakeClock, migrated_postgres_schema, open_postgres, open_sqlite
from tests.store.test_claims import request
from tests.store.test_landings import accepted, in_review
from wrighty.domain import landing
from wrighty.domain.claims import worker_actor
from wrighty.domain.model import LANDING_CHECKS_FAILED, Item
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition
from wrighty.store.port import Store

TIP = "c0ffee" + "1" * 34


@pytest.fixture
def on_store(backend: str, tmp_path: Path) -> Iterator[tuple[str, Store]]:
    """A store URL of each backend, with the store open on it."""
    if backend == "sqlite":
        path = tmp_path / "store" / "wrighty.db"
        opened = open_sqlite(path)
        yield f"sqlite:///{path}", opened
        opened.close()
        return
    with migrated_postgres_schema() as url:
        opened = open_postgres(url)
        yield url, opened
        opened.close()


def show_text(url: str, item_id: int) -> list[str]:
    result = wrighty("--store", url, "show", str(item_id))
    assert result.exit_code == 0, result.output
    return [" ".join(line.split()) for line in result.stdout.splitlines()]


def show_json(url: str, item_id: int) -> dict:
    result = wrighty("--store", url, "show", str(item_id), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def checking(store: Store, clock: FakeClock) -> tuple[Item, landing.Landing]:
    """The head of main's line claimed by lander l1, its checks running on the target's TIP."""
    claimed, held = store.acquire_landing(request("l1"), now=clock())  # type: ignore[misc]
    step = dataclasses.replace(held, step=landing.Step.CHECKING, target_commit=TIP)
    change = transition(claimed, ItemState.LANDING, at=clock(), actor=worker_actor("l1"))
    assert store.write_landing(landing.LandingChange(change, step))
    return change.after, step


def test_show_says_where_a_landing_is_and_then_what_landed(
    project: Path, on_store: tuple[str, Store], clock: FakeClock
) -> None:
    url, store = on_store
    item = accepted(store, clock, in_review(store, clock, "lands"))
    reviewed = in_review(store, clock, "waits for review")
    assert show_json(url, reviewed.id)["landing"] is None
    assert not any(line.startswith("landing ") for line in show_text(url, reviewed.id))

    text = show_text(url, item.id)
    assert "landing waiting in line to land on main" in text
    assert any(
        line.startswith("accepted ") and line.endswith("by op at aaaaaaaaaaaa; lands on main")
        for line in text
    )
    document = show_json(url, item.id)
    assert document["state"] == "landing"
    assert document["landing"] == {
        "where": "waiting in line to land on main", "step": "waiting", "target": "main",
        "accepted_at": "2026-11-30T09:00:00.000Z", "accepted_by": "op",
        "accepted_commit": "a" * 40, "target_commit": None, "checked_commit": None,
        "attempt": 0, "fix_turn": None, "landed": None, "landed_at": None,
    }  # fmt: skip
    listed = wrighty("--store", url, "list", "--state", "landing", "--json")
    assert [entry["id"] for entry in json.loads(listed.stdout)] == [item.id]
    assert f"{item.id}" in wrighty("--store", url, "list", "--state", "landing").stdout

    claimed, step = checking(store, clock)
    assert "landing checking on main at c0ffee111111" in show_text(url, item.id)
    assert show_json(url, item.id)["landing"]["target_commit"] == TIP

    clock.advance(30)
    done = landing.landed(claimed, step, "fast-forwarded main to c0ffee2", at=clock())
    assert store.write_landing(done)
    text = show_text(url, item.id)
    assert "landing landed on main, checked at c0ffee111111" in text
    assert "landed fast-forwarded main to c0ffee2" in text
    document = show_json(url, item.id)["landing"]
    assert (document["landed"], document["landed_at"]) == (
        "fast-forwarded main to c0ffee2",
        "2026-11-30T09:00:30.000Z",
    )


def test_show_says_which_fix_turn_a_landing_is_in(
    project: Path, on_store: tuple[str, Store], clock: FakeClock
) -> None:
    url, store = on_store
    item = accepted(store, clock, in_review(store, clock, "red on main"))
    claimed, step = checking(store, clock)
    turn = landing.fix_turn(
        claimed, step, reason_code=LANDING_CHECKS_FAILED, why="tests failed on main",
        prompt="fix them", max_fix_turns=2, at=clock(),
    )  # fmt: skip
    assert store.write_landing(turn)
    assert "landing fix turn 1 before it lands on main" in show_text(url, item.id)
    assert show_json(url, item.id)["landing"]["fix_turn"] == 1
