"""`wrighty list --since`: the items that moved since a time, with their current state, as a
table and as JSON, on each store; a time without an offset is this machine's."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import clock, wrighty
from tests.conftest import START, FakeClock, migrated_postgres_schema
from tests.inbox.conftest import make_project

__all__ = ["clock"]


@pytest.fixture
def store_args(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[str]]:
    """An initialised project as the current directory; the options that name its store."""
    make_project(tmp_path / "project", monkeypatch)
    if backend == "sqlite":
        yield []
        return
    with migrated_postgres_schema() as url:
        yield ["--store", url]


def run(store_args: list[str], *args: str) -> str:
    result = wrighty(*store_args, *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def listed(store_args: list[str], since: str) -> list[tuple[int, str]]:
    document = json.loads(run(store_args, "list", "--since", since, "--json"))
    return [(entry["id"], entry["state"]) for entry in document]


def test_list_since_shows_what_moved_since_then_in_its_current_state(
    store_args: list[str], clock: FakeClock
) -> None:
    for title in ("quiet", "cancelled later", "queued later"):
        run(store_args, "create", "--title", title, "--body", "b")
    clock.advance(3 * 3600)
    run(store_args, "cancel", "2")
    clock.advance(1800)
    run(store_args, "queue", "3")
    run(store_args, "create", "--title", "new", "--body", "b")
    clock.advance(1800)  # now START + 4h

    assert listed(store_args, "2h") == [(2, "cancelled"), (3, "queued"), (4, "todo")]
    assert listed(store_args, "45m") == [(3, "queued"), (4, "todo")]
    assert listed(store_args, "5h") == [(1, "todo"), (2, "cancelled"), (3, "queued"), (4, "todo")]
    assert listed(store_args, "10m") == []
    # a time, with its offset: the cancel at START + 3h is at or after it
    at = (START.replace(hour=START.hour + 3)).isoformat().replace("+00:00", "Z")
    assert listed(store_args, at) == [(2, "cancelled"), (3, "queued"), (4, "todo")]
    # with --state, of those only
    document = json.loads(run(store_args, "list", "--since", "2h", "--state", "todo", "--json"))
    assert [entry["id"] for entry in document] == [4]

    table = run(store_args, "list", "--since", "45m")
    assert "queued later" in table
    assert "new" in table
    assert "quiet" not in table
    assert run(store_args, "list", "--since", "10m").strip() == "no items moved since 10m"


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_time_without_an_offset_is_this_machines(
    store_args: list[str], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # UTC+9: START (09:00 UTC) is 18:00 there
    time.tzset()
    try:
        run(store_args, "create", "--title", "at six", "--body", "b")
        clock.advance(3600)
        assert listed(store_args, "18:00") == [(1, "todo")]
        assert listed(store_args, "18:01") == []
        assert listed(store_args, "2026-11-30T18:00") == [(1, "todo")]
        assert listed(store_args, "2026-11-30T09:01Z") == []  # with an offset: as given
    finally:
        monkeypatch.undo()
        time.tzset()
