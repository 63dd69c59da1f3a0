"""The worker's event vocabulary and its docs name the same events: every event the worker can
print has a row in docs/json.md's table and a mention in docs/worker.md's list, and every row
of that table is an event the worker can print."""

from __future__ import annotations

import re
from pathlib import Path

from wrighty.domain.worker_events import WorkerEvent

DOCS = Path(__file__).resolve().parents[2] / "docs"


def section(page: str, heading: str) -> str:
    """The text under ``heading`` (a whole heading line), up to the next heading of its level."""
    text = (DOCS / page).read_text(encoding="utf-8")
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n")
    end = text.find(f"\n{level} ", start + len(heading) + 2)
    return text[start : end if end != -1 else len(text)]


def test_the_json_page_has_one_row_for_each_event_and_no_other() -> None:
    table = section("json.md", "## `wrighty worker start --json`")
    rows = re.findall(r"^\| `([a-z-]+)` \| (?!string \|)", table, flags=re.MULTILINE)
    documented = [row for row in rows if row not in ("event", "at", "worker_id")]
    assert len(documented) == len(set(documented))
    assert set(documented) == {event.value for event in WorkerEvent}


def test_the_worker_page_names_every_event() -> None:
    named = set(re.findall(r"`([a-z-]+)`", section("worker.md", "## Events")))
    assert {event.value for event in WorkerEvent} - named == set()
