"""The inbox with an item ready for review: its own section, right after the items that need
attention, with its tag, its words and its count in the header."""

from __future__ import annotations

from pathlib import Path

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
from tests.inbox.test_inbox_app import board_ids, screen_text
from wrighty.domain.board import Section
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.inbox.app import InboxApp


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
