"""The Source contract (wrighty/services/importing.py), held against every source of items
from outside wrighty: a Markdown file today. A source is made from the same items (title,
body) in each of its forms; importing it twice creates each item once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from wrighty.services.importing import MarkdownSource, Source, import_key, import_sections
from wrighty.store.port import Store

Items = list[tuple[str, str]]  # (title, body), in the source's order


def markdown(name: str, items: Items) -> Source:
    return MarkdownSource.read(name, "".join(f"## {title}\n\n{body}\n\n" for title, body in items))


SOURCES: dict[str, Callable[[str, Items], Source]] = {"markdown": markdown}
ITEMS: Items = [
    ("Set up the database", "Create the schema."),
    ("Fix the flaky login test", "It fails one run in ten."),
    ("Fix the flaky logout test", "It fails too."),
]
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

pytestmark = pytest.mark.parametrize("make", list(SOURCES.values()), ids=list(SOURCES))


def test_a_source_describes_its_items_in_its_order_under_the_name_it_was_given(
    make: Callable[[str, Items], Source],
) -> None:
    source = make("sprint.md", ITEMS)
    assert source.name == "sprint.md"
    assert [(s.title, s.body.strip()) for s in source.sections()] == ITEMS


def test_its_keys_are_unique_and_the_same_on_every_read(
    make: Callable[[str, Items], Source],
) -> None:
    first = make("sprint.md", ITEMS).sections()
    again = make("sprint.md", ITEMS).sections()
    keys = [import_key("sprint.md", s) for s in first]
    assert len(set(keys)) == len(keys)
    assert [import_key("sprint.md", s) for s in again] == keys
    assert [s.fingerprint for s in again] == [s.fingerprint for s in first]


def test_an_edited_item_keeps_its_key_and_changes_its_fingerprint(
    make: Callable[[str, Items], Source],
) -> None:
    [before] = make("sprint.md", ITEMS[:1]).sections()
    [after] = make("sprint.md", [(ITEMS[0][0], "Create the schema, and seed it.")]).sections()
    assert after.key == before.key
    assert after.fingerprint != before.fingerprint


def test_importing_a_source_twice_creates_each_item_once(
    make: Callable[[str, Items], Source], store: Store
) -> None:
    def imported() -> list[tuple[str, int | None]]:
        results = import_sections(
            store, make("sprint.md", ITEMS), agents={"claude"}, queue=False, dry_run=False, now=NOW
        )
        return [(r.outcome, r.item_id) for r in results]

    first = imported()
    assert [outcome for outcome, _ in first] == ["created"] * len(ITEMS)
    assert imported() == [("unchanged", item_id) for _, item_id in first]
    assert len(store.list_items()) == len(ITEMS)
