"""The inbox with an item ready for review: its own section, right after the items that need
attention, with its tag, its words and its count in the header."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import FakeClock
from tests.inbox.seed import (
    LIVE_WORKER,
    claim,
    drive,
    make_app,
    new,
    open_project_store,
    settle,
    settled,
    start,
)
from tests.inbox.test_inbox_app import board_ids, message, screen_text, select
from wrighty.domain.board import Section
from wrighty.domain.model import Item
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.inbox.app import READ_ONLY_REFUSAL, InboxApp


def test_an_item_ready_for_review_has_its_own_section_after_attention(
    project: Path, clock: FakeClock
) -> None:
    store = open_project_store(project)
    waiting = store.create_item(new("waits its turn"), at=clock(), actor="op")
    verified = store.create_item(new("verified work"), at=clock(), actor="op")
    stuck = store.create_item(new("stuck work"), at=clock(), actor="op")
    for item, to_state in ((verified, ItemState.REVIEW), (stuck, ItemState.NEEDS_ATTENTION)):
        claimed = claim(store, item.id, at=clock())
        start(store, claimed, at=clock(), session_id=f"s-{item.id}", worker=LIVE_WORKER)
        settle(store, claimed, to_state, at=clock(), outcome=OutcomeClass.SUCCEEDED, reason="r")
    store.close()
    app, opened = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        await settled(app, pilot)
        assert board_ids(app) == [stuck.id, verified.id, waiting.id]
        assert [row.section for row in app.rows] == [
            Section.ATTENTION,
            Section.REVIEW,
            Section.WAITING,
        ]
        screen = screen_text(app)
        assert "1 review" in screen.splitlines()[0]
        [line] = [line for line in screen.splitlines() if "verified work" in line]
        assert line.lstrip().startswith("REVW")
        assert "ready for review" in line

    try:
        drive(app, script, size=(140, 30))
    finally:
        opened.close()


def read_items(project: Path, *ids: int) -> list[Item]:
    """The items ``ids`` as the project's store holds them now."""
    store = open_project_store(project)
    try:
        found = [store.get_item(item_id) for item_id in ids]
    finally:
        store.close()
    assert None not in found
    return [item for item in found if item is not None]


def _two_in_review(project: Path, clock: FakeClock) -> tuple[int, int]:
    store = open_project_store(project)
    ids = []
    for title in ("accept me", "reject me"):
        item = store.create_item(new(title), at=clock(), actor="op")
        claimed = claim(store, item.id, at=clock())
        start(store, claimed, at=clock(), session_id=f"s-{item.id}", worker=LIVE_WORKER)
        settle(store, claimed, ItemState.REVIEW, at=clock(), outcome=OutcomeClass.SUCCEEDED,
               reason="ready")  # fmt: skip
        ids.append(item.id)
    store.close()
    return ids[0], ids[1]


def test_a_accepts_and_d_rejects_with_the_feedback_typed(project: Path, clock: FakeClock) -> None:
    accepted, rejected = _two_in_review(project, clock)
    app, opened = make_app(project)

    async def script(app: InboxApp, pilot: Any) -> None:
        await select(app, pilot, accepted)
        await pilot.press("a")
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        assert f"wrighty accept {accepted}" in screen_text(app)
        await pilot.press("y")
        await settled(app, pilot)
        assert message(app) == f"item {accepted} is done"
        await select(app, pilot, rejected)
        await pilot.press("d")
        assert app.screen.__class__.__name__ == "FeedbackScreen"
        await pilot.press("escape")
        await settled(app, pilot)
        assert message(app) == "nothing done"
        await pilot.press("d", *"Sign it", "enter")
        await settled(app, pilot)
        assert message(app) == (
            f"item {rejected} is retry-scheduled (rejection 1 of 5): its agent takes it up "
            "again with your feedback"
        )
        # a refusal is the command's line: it is not in review any more
        await select(app, pilot, rejected)
        await pilot.press("a", "y")
        await settled(app, pilot)
        assert message(app) == (
            f"wrighty: item {rejected} is retry-scheduled; accept takes items in review"
        )

    try:
        drive(app, script, size=(140, 30))
    finally:
        opened.close()
    done, back = read_items(project, accepted, rejected)
    assert (done.state, done.reason_code) == (ItemState.DONE, "accepted")
    assert (back.state, back.feedback, back.rejections) == (
        ItemState.RETRY_SCHEDULED, "Sign it", 1)  # fmt: skip


def test_read_only_refuses_accept_and_reject(project: Path, clock: FakeClock) -> None:
    accepted, _ = _two_in_review(project, clock)
    app, opened = make_app(project, read_only=True)

    async def script(app: InboxApp, pilot: Any) -> None:
        await select(app, pilot, accepted)
        for key in ("a", "d", "A", "e", "v", "h"):
            await pilot.press(key)
            await settled(app, pilot)
            assert app.screen is app.screen_stack[0], f"{key} asked a question"
            assert message(app) == READ_ONLY_REFUSAL

    try:
        drive(app, script, size=(140, 30))
    finally:
        opened.close()
    [item] = read_items(project, accepted)
    assert item.state is ItemState.REVIEW


def _red(project: Path, item_id: int, clock: FakeClock) -> None:
    """A `wrighty verify` by hand on the item in review, its check failed: not ready."""
    from wrighty.domain.check_evidence import CheckEvidence, CheckRecord

    failed = CheckEvidence("lint", ("ruff", "check", "."), 0.25, "E501\n", exit_code=1)
    store = open_project_store(project)
    try:
        item = store.get_item(item_id)
        assert item is not None
        assert store.record_check(item, CheckRecord(item_id, "v-1", None, 0, "op", clock(), failed))
    finally:
        store.close()


def test_capital_a_accepts_every_ready_item_once_confirmed(project: Path, clock: FakeClock) -> None:
    first, red = _two_in_review(project, clock)
    _red(project, red, clock)
    app, opened = make_app(project)

    async def script(app: InboxApp, pilot: Any) -> None:
        await settled(app, pilot)
        await pilot.press("A")
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        asked = screen_text(app)
        assert f"Accept the 1 item ready: {first} (accept me)?" in asked
        assert "wrighty accept --all" in asked
        await pilot.press("n")
        await settled(app, pilot)
        assert message(app) == "nothing done"
        assert [item.state for item in read_items(project, first)] == [ItemState.REVIEW]
        await pilot.press("A", "y")
        await settled(app, pilot)
        assert message(app) == f"accepted item {first} (accept me): item {first} is done"
        await pilot.press("A")  # none ready now: the red one waits for its checks
        await settled(app, pilot)
        assert app.screen is app.screen_stack[0]
        assert message(app).startswith(
            "wrighty: nothing to accept: none of the 1 item in review is ready"
        )

    try:
        drive(app, script, size=(140, 30))
    finally:
        opened.close()
    done, waiting = read_items(project, first, red)
    assert (done.state, waiting.state) == (ItemState.DONE, ItemState.REVIEW)
