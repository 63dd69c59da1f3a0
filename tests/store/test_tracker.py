"""What wrighty wrote on a tracker, as the store keeps it (docs/sources.md#talking-on-the-issue),
on both stores: an item's status comment and pull request written whole and read back, the
open pull requests listed, an answer taken once by its comment's id, and a row that does not
read left out and named, never shown."""

from __future__ import annotations

import dataclasses

import pytest

from tests.conftest import FakeClock
from tests.store.test_contract import new_item
from tests.store.test_row_boundary import poison
from wrighty.domain.conversation import ACTED, ANSWERED, TAKEN, AnswerRecord, TrackerItem
from wrighty.domain.sources import SourceState
from wrighty.store import Store


def test_an_items_comment_and_pull_request_round_trip(store: Store, clock: FakeClock) -> None:
    item = store.create_item(new_item(), at=clock(), actor="op")
    assert store.get_tracker_item(item.id) is None
    record = TrackerItem(item.id, comment_id=2**40, comment_digest="a" * 32)
    store.write_tracker_item(record)
    assert store.get_tracker_item(item.id) == record
    assert list(store.list_open_pulls()) == []
    pulled = dataclasses.replace(
        record, pull_repo="acme/widgets", pull_number=12,
        pull_url="https://github.com/acme/widgets/pull/12", pull_state="open", pull_etag='W/"x"',
    )  # fmt: skip
    store.write_tracker_item(pulled)
    assert list(store.list_open_pulls()) == [pulled]
    store.write_tracker_item(dataclasses.replace(pulled, pull_state="merged"))
    assert list(store.list_open_pulls()) == []


def test_an_answer_is_taken_once_and_followed_to_its_reply(store: Store) -> None:
    taken = AnswerRecord("widgets", 99, 7, None, "alice", "accept", TAKEN, "v", None)
    assert store.take_answer(taken)
    assert not store.take_answer(dataclasses.replace(taken, author="mallory"))
    assert list(store.unfinished_answers("widgets")) == [taken]
    acted = dataclasses.replace(taken, step=ACTED, result="item 1 is landing")
    store.update_answer(acted)
    assert list(store.unfinished_answers("widgets")) == [acted]
    store.update_answer(dataclasses.replace(acted, step=ANSWERED))
    assert list(store.unfinished_answers("widgets")) == []
    assert list(store.unfinished_answers("other")) == []


def test_the_comments_cursor_survives_a_sync_writing_its_source(
    store: Store, clock: FakeClock
) -> None:
    store.write_source(SourceState("widgets"))
    store.write_answers_cursor("widgets", clock(), '"etag-1"')
    store.write_source(SourceState("widgets", synced_at=clock()))  # a sync's whole state
    state = store.get_source("widgets")
    assert state is not None
    assert (state.answers_since, state.answers_etag) == (clock(), '"etag-1"')


PULL_POISONS = [
    ("pull_url", "'javascript:alert(1)'", "it is not a pull request's URL"),
    ("pull_url", "'https://x/' || chr(27) || '[2J'", "it is not a pull request's URL"),
    ("pull_state", "'reopened'", "it is not one of open, merged, closed"),
    ("pull_number", "-3", "-3 is not a whole number"),
    ("pull_repo", "'acme/../w x'", "it is not a repository's owner/name"),
    ("comment_digest", "'<script>'", "it is not a digest"),
    ("pull_etag", "'a' || chr(10) || 'Set-Cookie: x'", "it is not an ETag"),
]


@pytest.mark.parametrize(("field", "value", "problem"), PULL_POISONS)
def test_a_tracker_row_that_does_not_read_is_left_out_and_named(
    store: Store, clock: FakeClock, field: str, value: str, problem: str
) -> None:
    item = store.create_item(new_item(), at=clock(), actor="op")
    store.write_tracker_item(
        TrackerItem(item.id, comment_digest="b" * 32, pull_repo="acme/widgets", pull_number=3,
                    pull_url="https://x/pull/3", pull_state="open", pull_etag='"e"')
    )  # fmt: skip
    statement = f"UPDATE tracker_items SET {field} = {value}"
    poison(store, statement.replace("chr(", "char(") if _sqlite(store) else statement)
    assert store.get_tracker_item(item.id) is None
    assert list(store.list_open_pulls()) == []
    error = store.unreadable_rows()[-1]
    assert error.field == field
    assert problem in error.problem
    assert "javascript" not in str(error)
    assert "\x1b" not in str(error)


def _sqlite(store: Store) -> bool:
    from wrighty.store.sqlite import SqliteStore

    return isinstance(store, SqliteStore)
