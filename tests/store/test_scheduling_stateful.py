"""Random interleavings of claims, settles, operators, the reaper and the clock against a real
store, with items of every priority, dependencies, labels and concurrency limits.

Several simulated workers (of two installations) claim under the same limits. Before every
claim the machine works out, from the store's state as it reads it (items, dependencies,
labels, sessions) and with its own rules rather than the SQL's, which item is the best
eligible one: queued or a due retry (a retry with a recorded session id only on its
installation), every dependency done, no agent or label limit reached by the running items;
then the lowest (priority, retry before fresh, queue entry, id). The claim must return exactly
that item, or nothing when there is none.

After every step: no limit is exceeded, and every running item's dependencies are done.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from tests.conftest import START
from tests.store.machines import run_on_postgresql
from tests.store.test_contract import new_item
from wrighty.domain.claims import ClaimRequest, LeaseTerms, Settlement, settle
from wrighty.domain.model import Item, NewRun, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.scheduling import ConcurrencyLimits
from wrighty.domain.states import TERMINAL_STATES, ItemState
from wrighty.domain.transitions import EDITABLE_STATES, replay
from wrighty.errors import WrightyError
from wrighty.services import items as item_service
from wrighty.services import reaper
from wrighty.store.port import Store
from wrighty.store.sqlite import SqliteStore

DEFAULT_AGENT = "claude"
AGENTS = ["claude", "codex"]
LABELS = ["docs", "web"]
WORKERS = [("w1", "inst-a"), ("w2", "inst-a"), ("w3", "inst-b")]
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=300)
INDEX = st.integers(min_value=0, max_value=1000)
OUTCOMES = [
    ItemState.DONE,
    ItemState.DONE,
    ItemState.RETRY_SCHEDULED,
    ItemState.RETRY_SCHEDULED,
    ItemState.NEEDS_ATTENTION,
    ItemState.REVIEW,
    ItemState.QUEUED,
    ItemState.CANCELLED,
]
SOON = datetime.min.replace(tzinfo=START.tzinfo)  # sorts before any queue entry


class SchedulingMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = self.open_store()
        self.now = START
        self.limits = ConcurrencyLimits()
        self.held: dict[int, tuple[str, Item]] = {}  # item id -> (worker, the claim)
        self.runs = 0
        self.claims = 0

    def open_store(self) -> Store:
        self.directory = Path(tempfile.mkdtemp(prefix="wrighty-scheduling-"))
        return SqliteStore.open(self.directory / "wrighty.db")

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    # -- the machine's own rules --------------------------------------------------------------

    def _pick(self, index: int, states: frozenset[ItemState] | None = None) -> Item | None:
        items = [item for item in self.store.list_items() if states is None or item.state in states]
        return items[index % len(items)] if items else None

    def _expected(self, installation: str, agent: str | None) -> int | None:
        """The best eligible item, from the store's state as read here."""
        items = self.store.list_items()
        state_of = {item.id: item.state for item in items}
        after: dict[int, list[int]] = {}
        for edge in self.store.list_dependencies():
            after.setdefault(edge.item_id, []).append(edge.depends_on)
        labels = self.store.list_labels()
        running = [item for item in items if item.state is ItemState.RUNNING]
        by_agent = Counter(item.agent or DEFAULT_AGENT for item in running)
        by_label = Counter(label for item in running for label in labels.get(item.id, ()))

        def eligible(item: Item) -> bool:
            why = _ineligible(item)
            if why is not None and item.state in (ItemState.QUEUED, ItemState.RETRY_SCHEDULED):
                event(f"passed over: {why}")
            return why is None

        def _ineligible(item: Item) -> str | None:
            if item.state is ItemState.RETRY_SCHEDULED:
                assert item.not_before is not None
                if item.not_before > self.now:
                    return "retry not due"
                session = self.store.get_session(item.id)
                if (
                    session is not None
                    and session.session_id is not None
                    and session.installation_id != installation
                ):
                    return "another installation's session"
            elif item.state is not ItemState.QUEUED:
                return "not waiting"
            own_agent = item.agent or DEFAULT_AGENT
            if agent is not None and own_agent != agent:
                return "another agent"
            if any(state_of[d] is not ItemState.DONE for d in after.get(item.id, ())):
                return "a dependency not done"
            limit = self.limits.agents.get(own_agent)
            if limit is not None and by_agent[own_agent] >= limit:
                return "agent limit"
            for label in labels.get(item.id, ()):
                limit = self.limits.labels.get(label)
                if limit is not None and by_label[label] >= limit:
                    return "label limit"
            return None

        candidates = [item for item in items if eligible(item)]
        if not candidates:
            return None
        best = min(
            candidates,
            key=lambda item: (
                item.priority,
                0 if item.state is ItemState.RETRY_SCHEDULED else 1,
                item.queued_at or SOON,
                item.id,
            ),
        )
        return best.id

    def _owned(self, claimed: Item) -> bool:
        item = self.store.get_item(claimed.id)
        assert item is not None
        return (
            item.state is ItemState.RUNNING
            and item.generation == claimed.generation
            and item.claimed_by == claimed.claimed_by
        )

    def _forget_lost(self) -> None:
        for item_id, (_, claimed) in list(self.held.items()):
            if not self._owned(claimed):
                del self.held[item_id]

    # -- rules --------------------------------------------------------------------------------

    @initialize(
        agent_limits=st.dictionaries(st.sampled_from(AGENTS), st.integers(1, 2), min_size=1),
        label_limits=st.dictionaries(st.sampled_from(LABELS), st.integers(1, 2), min_size=1),
    )
    def set_limits(self, agent_limits: dict[str, int], label_limits: dict[str, int]) -> None:
        self.limits = ConcurrencyLimits(agents=agent_limits, labels=label_limits)

    @initialize(
        backlog=st.lists(
            st.tuples(
                st.integers(0, 3),
                st.sampled_from([None, *AGENTS]),
                st.sampled_from([(), ("docs",), ("web",), ("docs", "web")]),
                st.sets(INDEX, max_size=2),
            ),
            min_size=2,
            max_size=8,
        )
    )
    def fill(self, backlog: list[tuple[int, str | None, tuple[str, ...], set[int]]]) -> None:
        """A backlog to start from, queued, some after others."""
        for priority, agent, labels, after in backlog:
            self.create(priority, agent, labels, after, queued=True)

    @rule(
        priority=st.integers(0, 3),
        agent=st.sampled_from([None, *AGENTS]),
        labels=st.sampled_from([(), ("docs",), ("web",), ("docs",), ("docs", "web")]),
        after=st.sets(INDEX, max_size=2),
        queued=st.sampled_from([True, True, True, False]),
    )
    def create(
        self,
        priority: int,
        agent: str | None,
        labels: tuple[str, ...],
        after: set[int],
        queued: bool,
    ) -> None:
        existing = [item.id for item in self.store.list_items()]
        depends_on = tuple(sorted({existing[i % len(existing)] for i in after})) if existing else ()
        new = new_item(
            queued=queued,
            priority=priority,
            agent=agent,
            labels=labels,
            after=depends_on,
        )
        item_service.create_item(self.store, new, now=self.now)

    @rule(index=INDEX)
    def queue(self, index: int) -> None:
        item = self._pick(index, frozenset({ItemState.TODO}))
        if item is not None:
            item_service.queue_item(self.store, item.id, now=self.now)

    @rule(worker=st.integers(0, len(WORKERS) - 1), by_agent=st.sampled_from([None, *AGENTS]))
    def claim(self, worker: int, by_agent: str | None) -> None:
        worker_id, installation = WORKERS[worker]
        expected = self._expected(installation, by_agent)
        request = ClaimRequest(
            worker_id,
            installation,
            TERMS,
            default_agent=DEFAULT_AGENT,
            agent=by_agent,
            limits=self.limits,
        )
        taken = self.store.acquire(request, now=self.now)
        assert (taken.item.id if taken is not None else None) == expected
        event("claim: an item" if taken is not None else "claim: nothing eligible")
        if taken is not None:
            self.claims += 1
            self.held[taken.item.id] = (worker_id, taken.item)

    @rule(worker=st.integers(0, len(WORKERS) - 1))
    def claim_any(self, worker: int) -> None:
        """A worker of no particular agent (a second rule, so that claims come often)."""
        self.claim(worker, None)

    @precondition(lambda self: self.held)
    @rule(
        index=INDEX,
        outcome=st.sampled_from(OUTCOMES),
        delay=st.sampled_from([0, 0, 30, 90]),
        with_session=st.sampled_from([True, True, False]),
    )
    def settle_one(self, index: int, outcome: ItemState, delay: int, with_session: bool) -> None:
        item_id = sorted(self.held)[index % len(self.held)]
        worker_id, claimed = self.held.pop(item_id)
        if not self._owned(claimed):
            return
        started = outcome is not ItemState.QUEUED
        if started:
            self.runs += 1
            installation = dict(WORKERS)[worker_id]
            run = NewRun(f"run-{self.runs}", RunKind.FRESH, worker_id, installation, self.now, None)
            assert self.store.start_run(claimed, run) is not None
            if with_session:
                session = Session(item_id, "claude", f"s-{self.runs}", "/tmp/p", installation)
                assert self.store.record_session(claimed, session, at=self.now)
        end = RunEnd(self.now, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE)
        plan = Settlement(
            outcome,
            process_started=started,
            run_end=end,
            not_before=self.now + timedelta(seconds=delay)
            if outcome is ItemState.RETRY_SCHEDULED
            else None,
        )
        assert self.store.write_transition(settle(claimed, plan, at=self.now))

    @rule(seconds=st.sampled_from([1, 30, 61, 120]))
    def advance(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @rule()
    def reap(self) -> None:
        reaper.reap_expired(self.store, now=self.now, max_requeues=3)
        self._forget_lost()

    @rule(index=INDEX)
    def cancel(self, index: int) -> None:
        item = self._pick(index, frozenset(ItemState) - TERMINAL_STATES)
        if item is not None:
            item_service.cancel_item(self.store, item.id, now=self.now)
            self._forget_lost()

    @rule(index=INDEX)
    def requeue(self, index: int) -> None:
        item = self._pick(index, frozenset({ItemState.NEEDS_ATTENTION}))
        if item is not None:
            item_service.requeue_item(self.store, item.id, resume=False, now=self.now)

    @rule(index=INDEX, priority=st.integers(0, 3))
    def edit_priority(self, index: int, priority: int) -> None:
        item = self._pick(index)
        if item is None:
            return
        editable = item.state in EDITABLE_STATES
        try:
            change = item_service.edit_item(self.store, item.id, now=self.now, priority=priority)
        except WrightyError:
            assert not editable or item.priority == priority
            return
        assert editable
        assert change.after.priority == priority

    @rule(index=INDEX, other=INDEX, remove=st.booleans())
    def edit_dependency(self, index: int, other: int, remove: bool) -> None:
        item = self._pick(index)
        depends_on = self._pick(other)
        if item is None or depends_on is None:
            return
        before = self.store.list_dependencies()
        upstream: dict[int, set[int]] = {}
        for edge in before:
            upstream.setdefault(edge.item_id, set()).add(edge.depends_on)
        has = depends_on.id in upstream.get(item.id, set())
        # A cycle: the item is depends_on itself, or something depends_on comes after.
        reach, frontier = {depends_on.id}, [depends_on.id]
        while frontier:
            for earlier in upstream.get(frontier.pop(), ()):
                if earlier not in reach:
                    reach.add(earlier)
                    frontier.append(earlier)
        editable = item.state in EDITABLE_STATES
        allowed = editable and (has if remove else not has and item.id not in reach)
        wanted = {"not_after": [depends_on.id]} if remove else {"after": [depends_on.id]}
        try:
            item_service.edit_item(self.store, item.id, now=self.now, **wanted)  # type: ignore[arg-type]
        except WrightyError:
            assert not allowed
            assert self.store.list_dependencies() == before
            return
        assert allowed

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def no_limit_is_exceeded(self) -> None:
        running = self.store.list_items([ItemState.RUNNING])
        labels = self.store.list_labels()
        by_agent = Counter(item.agent or DEFAULT_AGENT for item in running)
        by_label = Counter(label for item in running for label in labels.get(item.id, ()))
        for agent, limit in self.limits.agents.items():
            assert by_agent[agent] <= limit, (agent, by_agent[agent], limit)
        for label, limit in self.limits.labels.items():
            assert by_label[label] <= limit, (label, by_label[label], limit)

    @invariant()
    def nothing_runs_before_its_dependencies_are_done(self) -> None:
        running = {item.id for item in self.store.list_items([ItemState.RUNNING])}
        for edge in self.store.list_dependencies():
            if edge.item_id in running:
                assert edge.state is ItemState.DONE, edge

    @invariant()
    def every_history_replays(self) -> None:
        for item in self.store.list_items():
            assert replay(self.store.list_events(item.id)) is item.state


SchedulingMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=60, deadline=None
)
test_scheduling_under_random_interleavings = SchedulingMachine.TestCase


def test_scheduling_under_random_interleavings_on_postgresql() -> None:
    run_on_postgresql(
        SchedulingMachine, settings(max_examples=40, stateful_step_count=30, deadline=None)
    )
