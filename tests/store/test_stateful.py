"""Random operator sequences against a real store: the history always replays to the state,
final states never change, and a write based on a stale read never lands.

Claims and releases start new generations, and the few worker ids claim the same item again,
so a stale read can match the item's state and owner and differ only in its generation.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import timedelta
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tests.conftest import START
from tests.store.test_contract import new_item
from wrighty.domain.claims import CLAIMABLE_STATES, ClaimRequest, LeaseTerms, claim, release
from wrighty.domain.model import Change, Item
from wrighty.domain.states import TERMINAL_STATES, ItemState, can_move
from wrighty.domain.transitions import replay, transition
from wrighty.errors import IllegalTransitionError
from wrighty.store.sqlite import SqliteStore

TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=300)


def moves_from(read: Item) -> list[str]:
    """The moves the domain allows from ``read`` (a refused one never reaches the store): to
    a state, as an operator would; a claim by one of two worker ids; a release. Claims and
    releases start a new generation."""
    moves = [state.value for state in ItemState if can_move(read.state, state)]
    if read.state in CLAIMABLE_STATES:
        moves += ["claim:w1", "claim:w2"]
    if read.state is ItemState.RUNNING:
        moves.append("release")
    return moves


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="wrighty-stateful-"))
        self.store = SqliteStore.open(self.directory / "wrighty.db")
        self.now = START
        self.ids: list[int] = []
        self.snapshots: list[Item] = []  # reads taken at some point, possibly stale now
        self.moves: dict[int, int] = {}
        self.finals: dict[int, Item] = {}

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _tick(self) -> None:
        self.now += timedelta(seconds=1)

    @initialize(queued=st.booleans())
    def an_item_to_start_with(self, queued: bool) -> None:
        self.create(queued)

    # A few items, so that each one lives through many moves and generations.
    @precondition(lambda self: len(self.ids) < 3)
    @rule(queued=st.booleans())
    def create(self, queued: bool) -> None:
        self._tick()
        item = self.store.create_item(new_item(queued=queued), at=self.now, actor="operator")
        self.ids.append(item.id)
        self.moves[item.id] = 0
        self.snapshots.append(item)

    def _plan(self, read: Item, move: str, actor: str) -> Change:
        if move == "release":
            return release(read, at=self.now, actor=actor)
        if move.startswith("claim:"):
            request = ClaimRequest(move.removeprefix("claim:"), "inst-a", TERMS, "claude")
            return claim(read, request, at=self.now)
        to_state = ItemState(move)
        not_before = self.now if to_state is ItemState.RETRY_SCHEDULED else None
        return transition(read, to_state, at=self.now, actor=actor, not_before=not_before)

    def _try_move(self, read: Item, move: str, actor: str) -> bool | None:
        """Write a move planned from ``read``; None when the domain refuses it."""
        self._tick()
        try:
            change = self._plan(read, move, actor)
        except IllegalTransitionError:
            return None
        landed = self.store.write_transition(change)
        if landed:
            self.moves[read.id] += 1
            self.snapshots.append(change.after)
            if change.after.state in TERMINAL_STATES:
                self.finals[read.id] = change.after
        return landed

    @precondition(lambda self: self.ids)
    @rule(index=st.integers(min_value=0), data=st.data())
    def move(self, index: int, data: st.DataObject) -> None:
        item = self.store.get_item(self.ids[index % len(self.ids)])
        assert item is not None
        if moves := moves_from(item):
            move = data.draw(st.sampled_from(moves), label="move")
            assert self._try_move(item, move, "operator") is not False

    @precondition(lambda self: self.snapshots)
    @rule(index=st.integers(min_value=0), data=st.data())
    def write_from_an_old_read(self, index: int, data: st.DataObject) -> None:
        old = self._old_read(index)
        current = self.store.get_item(old.id)
        assert current is not None
        still_matches = _guard(current) == _guard(old)
        if moves := moves_from(old):
            move = data.draw(st.sampled_from(moves), label="move")
            landed = self._try_move(old, move, "late")
            assert landed is None or landed == still_matches

    def _old_read(self, index: int) -> Item:
        """Small indexes first name the reads that differ from their item only in generation
        (only the generation guard can refuse a write from them), then the others."""
        items = {item.id: item for item in self.store.list_items()}

        def generation_alone_differs(read: Item) -> bool:
            now = items[read.id]
            return (now.state, now.claimed_by) == (read.state, read.claimed_by) and (
                now.generation != read.generation
            )

        ordered = sorted(self.snapshots, key=generation_alone_differs, reverse=True)
        return ordered[index % len(ordered)]

    @invariant()
    def histories_replay_to_the_current_state(self) -> None:
        for item_id in self.ids:
            item = self.store.get_item(item_id)
            assert item is not None
            events = self.store.list_events(item_id)
            assert len(events) == 1 + self.moves[item_id]
            assert replay(events) is item.state

    @invariant()
    def final_items_never_change(self) -> None:
        for item_id, final in self.finals.items():
            assert self.store.get_item(item_id) == final


def _guard(item: Item) -> tuple[ItemState, int, str | None]:
    """What a write about ``item`` names as the item it read."""
    return item.state, item.generation, item.claimed_by


StoreMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
test_store_under_random_operations = StoreMachine.TestCase
