"""Random operator sequences against a real store: the history always replays to the state,
final states never change, and a write based on a stale read never lands."""

from __future__ import annotations

import shutil
import tempfile
from datetime import timedelta
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tests.conftest import START
from tests.store.test_contract import new_item
from wrighty.domain.model import Item
from wrighty.domain.states import TERMINAL_STATES, ItemState
from wrighty.domain.transitions import replay, transition
from wrighty.errors import IllegalTransitionError
from wrighty.store.sqlite import SqliteStore

TARGETS = st.sampled_from(list(ItemState))


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

    @rule(queued=st.booleans())
    def create(self, queued: bool) -> None:
        self._tick()
        item = self.store.create_item(new_item(queued=queued), at=self.now, actor="operator")
        self.ids.append(item.id)
        self.moves[item.id] = 0
        self.snapshots.append(item)

    def _try_move(self, read: Item, to_state: ItemState, actor: str) -> bool | None:
        """Write a move planned from ``read``; None when the domain refuses it."""
        self._tick()
        extra = {"not_before": self.now} if to_state is ItemState.RETRY_SCHEDULED else {}
        try:
            change = transition(read, to_state, at=self.now, actor=actor, **extra)
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
    @rule(index=st.integers(min_value=0), to_state=TARGETS)
    def move(self, index: int, to_state: ItemState) -> None:
        item = self.store.get_item(self.ids[index % len(self.ids)])
        assert item is not None
        assert self._try_move(item, to_state, "operator") is not False

    @precondition(lambda self: self.snapshots)
    @rule(index=st.integers(min_value=0), to_state=TARGETS)
    def write_from_an_old_read(self, index: int, to_state: ItemState) -> None:
        old = self.snapshots[index % len(self.snapshots)]
        current = self.store.get_item(old.id)
        assert current is not None
        still_matches = (current.state, current.generation, current.claimed_by) == (
            old.state,
            old.generation,
            old.claimed_by,
        )
        landed = self._try_move(old, to_state, "late")
        assert landed is None or landed == still_matches

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


StoreMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
test_store_under_random_operations = StoreMachine.TestCase
