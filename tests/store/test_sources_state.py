"""The sources' state and a source's items in the store (both stores): a sync's state is kept
whole and read back, one row per source; a source's items are found by their key's prefix
alone; an item's title, task and fingerprint are rewritten by a guarded change."""

from __future__ import annotations

from datetime import UTC, datetime

from wrighty.domain.model import NewItem
from wrighty.domain.sources import SourceIssue, SourceState, issue_item, rewrite
from wrighty.domain.states import ItemState
from wrighty.store.port import Store

AT = datetime(2026, 12, 6, 22, 0, tzinfo=UTC)


def test_a_sources_state_is_kept_whole_and_replaced_by_the_next(store: Store) -> None:
    assert store.get_source("widgets") is None
    first = SourceState(
        "widgets", synced_at=AT, attempted_at=AT, rate_remaining=4990, rate_reset=AT,
        last_error=None, failures=0, settings="fp", pages=(('"e1"', (3, 2)), ('"e2"', (1,))),
    )  # fmt: skip
    store.write_source(first)
    store.write_source(SourceState("other", attempted_at=AT, last_error="no", failures=2))
    assert store.get_source("widgets") == first
    failed = SourceState("widgets", synced_at=AT, attempted_at=AT, last_error="GitHub: 502",
                         failures=1, settings="fp", pages=first.pages)  # fmt: skip
    store.write_source(failed)
    assert store.get_source("widgets") == failed
    assert [s.name for s in store.list_sources()] == ["other", "widgets"]


def test_a_sources_items_are_found_by_their_keys_prefix(store: Store) -> None:
    def made(key: str | None) -> int:
        new = NewItem("t", "b", None, None, None, ItemState.QUEUED, import_key=key)
        return store.create_item(new, at=AT, actor="op").id

    ours = [made("github:acme/widgets#1"), made("github:acme/widgets#12")]
    made("github:acme/widgets-two#1")
    made("github:Acme/widgets#2")
    made("tasks.md#setup")
    made(None)
    assert [item.id for item in store.list_imported("github:acme/widgets#")] == ours


def test_a_rewrite_changes_the_title_the_task_and_the_fingerprint(store: Store) -> None:
    key = "github:acme/widgets#1"
    item = store.create_item(
        NewItem("old", "old body", None, None, None, ItemState.QUEUED, import_key=key,
                import_fingerprint="old"), at=AT, actor="op",
    )  # fmt: skip
    wanted = issue_item(
        "github:acme/widgets", SourceIssue(1, "new", "new body", ("wrighty",), ""), {}
    )
    assert store.write_transition(rewrite(item, wanted, at=AT, actor="source:w"))
    found = store.get_item(item.id)
    assert found is not None
    assert (found.title, found.body, found.import_fingerprint) == (
        "new",
        wanted.body,
        wanted.fingerprint,
    )
    assert store.list_events(item.id)[-1].reason_code == "source-edited"
