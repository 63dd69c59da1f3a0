"""The morning view's read (`list_items_moved_since`, docs/storage.md's items_by_update), on
both stores: the items whose latest event is at or after a moment, oldest id first; a store
from before the index migrated to it with its items found. A row that does not read is left
out and listed, as by every list read: tests/store/test_row_boundary.py."""

from __future__ import annotations

from datetime import timedelta, timezone
from pathlib import Path

from tests.conftest import FakeClock
from tests.store.older_store import store_before
from tests.store.test_contract import new_item
from wrighty.domain.durations import DAY_SECONDS
from wrighty.domain.morning import parse_digest_time
from wrighty.domain.notices import Source
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339
from wrighty.domain.transitions import transition
from wrighty.notify.delivery import note_digest
from wrighty.store import Store

TOKYO = timezone(timedelta(hours=9))
SOURCE = Source("inst-a", "w-0123456789ab")


def test_the_items_moved_at_or_after_the_moment_oldest_id_first(
    store: Store, clock: FakeClock
) -> None:
    before = clock()
    quiet = store.create_item(new_item("quiet"), at=before, actor="op")
    moved_later = store.create_item(new_item("moved later"), at=before, actor="op")
    moved_before = store.create_item(new_item("moved just before"), at=before, actor="op")
    moment = clock.advance(3600)
    just_before = moment - timedelta(microseconds=1)
    assert store.write_transition(
        transition(moved_before, ItemState.QUEUED, at=just_before, actor="op")
    )
    at = store.create_item(new_item("made at the moment"), at=moment, actor="op")
    assert store.write_transition(
        transition(moved_later, ItemState.CANCELLED, at=clock.advance(60), actor="op")
    )

    moved = store.list_items_moved_since(moment)
    # by id, not by time: the item moved last comes first, as its id is the older
    assert [(item.id, item.state) for item in moved] == [
        (moved_later.id, ItemState.CANCELLED),
        (at.id, ItemState.TODO),
    ]
    assert moved.unreadable == []
    # the same instant in another zone is the same moment
    assert [item.id for item in store.list_items_moved_since(moment.astimezone(TOKYO))] == [
        moved_later.id,
        at.id,
    ]
    assert [item.id for item in store.list_items_moved_since(before)] == [
        quiet.id,
        moved_later.id,
        moved_before.id,
        at.id,
    ]
    assert store.list_items_moved_since(clock.advance(1)) == []


T0 = "2026-01-01T00:00:00.000000Z"
T1 = "2026-01-02T00:00:00.000000Z"


def test_a_store_from_before_the_index_finds_the_items_that_moved(
    backend: str, tmp_path: Path
) -> None:
    rows = [
        "INSERT INTO items (title, body, state, created_at, updated_at) "
        f"VALUES ('{title}', 'task', 'todo', '{T0}', '{updated}')"
        for title, updated in (("old", T0), ("moved", T1))
    ]
    with store_before(backend, tmp_path, "items_by_update", rows) as store:
        [moved] = store.list_items_moved_since(store.list_items()[1].updated_at)
        assert (moved.id, moved.title) == (2, "moved")
        assert [item.title for item in store.list_items()] == ["old", "moved"]


def test_the_days_digest_counts_what_moved_in_the_last_day(store: Store, clock: FakeClock) -> None:
    """notify.digest through the store: the notice counts the items that moved in the 24
    hours before it is due (at the edge included), and none before."""
    now = clock() + timedelta(days=2)
    day_ago = now - timedelta(days=1)
    store.create_item(new_item("just too old"), at=day_ago - timedelta(microseconds=1), actor="op")
    store.create_item(new_item("at the edge"), at=day_ago, actor="op")
    cancelled = store.create_item(new_item("cancelled"), at=clock(), actor="op")
    assert store.write_transition(
        transition(cancelled, ItemState.CANCELLED, at=now - timedelta(hours=1), actor="op")
    )
    at = parse_digest_time(now.strftime("%H:%M"))
    day = note_digest(store, at, now=now, retention_seconds=DAY_SECONDS, source=SOURCE)
    assert day == now.date()
    [stored] = store.list_notices(["pending"])
    assert stored.notice.payload["since"] == rfc3339(day_ago)
    assert stored.notice.payload["counts"] == {
        "moved": 2, "finished": 0, "landed": 0, "failed": 0, "waiting": 0}  # fmt: skip
