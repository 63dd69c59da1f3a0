"""Scheduling on the command line: `create --priority/--after/--label`, `wrighty edit`, and
what `list`, `show` and `status` say (text and JSON) about priorities, dependencies, blocked
items and concurrency limits."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.cli.conftest import wrighty
from tests.conftest import FakeClock
from wrighty.domain.claims import ClaimRequest, LeaseTerms
from wrighty.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
STATUS_SCHEMA = json.loads((ROOT / "schemas" / "status.schema.json").read_text())
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)


def create(*extra: str) -> dict:
    result = wrighty("create", "--title", "t", "--body", "b", "--queue", "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def show(item_id: int) -> dict:
    result = wrighty("show", str(item_id), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def claim(project: Path, worker: str = "w1") -> int | None:
    store = SqliteStore.open(project / ".wrighty" / "wrighty.db")
    try:
        held = store.acquire(
            ClaimRequest(worker, "inst-a", TERMS, default_agent="claude"), now=FakeClock()()
        )
        return None if held is None else held.item.id
    finally:
        store.close()


def configure(project: Path, **sections: object) -> None:
    path = project / "wrighty.json"
    document = json.loads(path.read_text())
    document.update(sections)
    path.write_text(json.dumps(document))


def test_create_takes_a_priority_dependencies_and_labels(
    initialised: Path, clock: FakeClock
) -> None:
    first = create()
    made = wrighty(
        "create", "--title", "second", "--body", "b", "--priority", "P0", "--after",
        str(first["id"]), "--label", "web", "--label", "docs", "--label", "web",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    assert (
        made.stdout == f"created item 2 (todo, P0, after {first['id']}, labels docs, web): second\n"
    )
    detail = show(2)
    assert (detail["priority"], detail["labels"]) == (0, ["docs", "web"])
    assert detail["after"] == [{"id": first["id"], "state": "queued"}]
    assert detail["waits"] == {
        "kind": "after",
        "reason": f"waits for item {first['id']} (queued)",
        "items": [first["id"]],
        "setting": None,
    }
    assert show(first["id"])["before"] == [2]
    assert (
        detail["events"][0]["reason"] == f"priority P0; after item {first['id']}; labels docs, web"
    )
    assert create("--priority", "1")["priority"] == 1
    assert create("--priority", "p3")["priority"] == 3
    assert create()["priority"] == 2


def test_the_claim_order_follows_the_priorities(initialised: Path, clock: FakeClock) -> None:
    low = create("--priority", "3")["id"]
    normal = create()["id"]
    high = create("--priority", "0")["id"]
    assert [claim(initialised, f"w{n}") for n in range(3)] == [high, normal, low]


def test_list_shows_the_priority_and_what_each_waiting_item_waits_for(
    initialised: Path, clock: FakeClock
) -> None:
    first = create()["id"]
    gone = create()["id"]
    assert wrighty("cancel", str(gone)).exit_code == 0
    waiting = create("--after", str(first))["id"]
    blocked = create("--after", str(gone), "--priority", "1")["id"]
    listed = wrighty("list")
    assert listed.exit_code == 0
    lines = listed.stdout.splitlines()
    assert lines[0].split()[:3] == ["ID", "STATE", "PRI"]
    assert f"item {waiting} waits for item {first} (queued)" in lines
    assert (
        f"item {blocked} blocked: item {gone} was cancelled; `wrighty edit {blocked} "
        f"--not-after {gone}` lets it start without it"
    ) in lines
    document = json.loads(wrighty("list", "--json").stdout)
    by_id = {entry["id"]: entry for entry in document}
    assert by_id[blocked]["priority"] == 1
    assert by_id[blocked]["waits"]["kind"] == "blocked"
    assert by_id[waiting]["after"] == [{"id": first, "state": "queued"}]
    assert by_id[first]["waits"] is None


def test_a_dependency_that_needs_attention_blocks_what_comes_after_it_further_down(
    initialised: Path, clock: FakeClock
) -> None:
    first = create()["id"]
    second = create("--after", str(first))["id"]
    third = create("--after", str(second))["id"]
    taken = claim(initialised)
    assert taken == first
    assert wrighty("release", str(first), "--force").exit_code == 0  # now needs-attention
    detail = show(third)
    assert detail["waits"]["kind"] == "blocked"
    assert detail["waits"]["reason"] == (
        f"blocked: item {first} needs attention (item {second} waits for it); "
        f"`wrighty show {first}` says what it needs"
    )
    text = wrighty("show", str(third)).stdout
    assert f"blocked    item {first} needs attention" in text
    result = wrighty("status", "--json")
    document = json.loads(result.stdout)
    jsonschema.validate(document, STATUS_SCHEMA)
    assert (document["waiting"], document["waiting_on_dependencies"], document["blocked"]) == (
        0,
        2,
        2,
    )
    assert any(w["check"] == "blocked_items" for w in document["warnings"])
    assert "waiting for the items they come after 2, blocked 2" in wrighty("status").stdout
    prometheus = wrighty("status", "--format", "prometheus").stdout
    assert "wrighty_blocked_items 2\n" in prometheus
    assert "wrighty_dependency_waiting_items 2\n" in prometheus
    assert 'wrighty_warnings{check="blocked_items"} 1\n' in prometheus


def test_show_says_which_limit_holds_a_queued_item(initialised: Path, clock: FakeClock) -> None:
    configure(
        initialised,
        agents={"claude": {"maxConcurrent": 1}},
        limits={"labels": {"docs": {"maxConcurrent": 1}}},
    )
    running = create("--label", "docs")["id"]
    held = create()["id"]
    other = create("--agent", "codex", "--label", "docs")["id"]
    assert claim(initialised) == running
    assert show(held)["waits"] == {
        "kind": "held",
        "reason": "held: agent claude runs 1 of 1 (agents.claude.maxConcurrent)",
        "items": [],
        "setting": "agents.claude.maxConcurrent",
    }
    assert show(other)["waits"]["reason"] == (
        "held: label docs runs 1 of 1 (limits.labels.docs.maxConcurrent)"
    )
    assert "held       agent claude runs 1 of 1 (agents.claude.maxConcurrent)" in (
        wrighty("show", str(held)).stdout
    )
    listed = wrighty("list").stdout.splitlines()
    assert f"item {held} held: agent claude runs 1 of 1 (agents.claude.maxConcurrent)" in listed
    assert show(running)["waits"] is None


def test_edit_changes_the_priority_and_the_dependencies(
    initialised: Path, clock: FakeClock
) -> None:
    first = create()["id"]
    second = create()["id"]
    edited = wrighty("edit", str(second), "--priority", "0")
    assert edited.exit_code == 0, edited.output
    assert edited.stdout == f"item {second} (queued): priority P2 -> P0\n"
    assert wrighty("edit", str(first), "--after", str(second)).stdout == (
        f"item {first} (queued): now after item {second}\n"
    )
    document = json.loads(wrighty("edit", str(first), "--not-after", str(second), "--json").stdout)
    assert (document["id"], document["priority"], document["state"]) == (first, 2, "queued")
    events = show(first)["events"]
    assert [(e["from_state"], e["to_state"], e["reason_code"]) for e in events] == [
        (None, "queued", None),
        ("queued", "queued", "edited"),
        ("queued", "queued", "edited"),
    ]
    assert "edited, queued" in wrighty("show", str(first)).stdout
    assert claim(initialised) == second


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--priority", "4"), "--priority 4: give 0 to 3 or P0 to P3"),
        (("--after", "1"), "--after 1: an item cannot come after itself"),
        (("--after", "99"), "--after 99: no item 99"),
        (("--not-after", "2"), "--not-after 2: item 1 does not come after item 2"),
        ((), "say what to change"),
        (("--priority", "2"), "item 1 already is as asked"),
    ],
)
def test_edit_refuses_in_one_line(
    initialised: Path, clock: FakeClock, args: tuple[str, ...], says: str
) -> None:
    create()
    create()
    result = wrighty("edit", "1", *args)
    assert result.exit_code == 2
    assert says in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_edit_refuses_a_cycle_and_a_running_item(initialised: Path, clock: FakeClock) -> None:
    first = create()["id"]
    second = create("--after", str(first))["id"]
    third = create("--after", str(second))["id"]
    cycle = wrighty("edit", str(first), "--after", str(third))
    assert cycle.exit_code == 2
    assert cycle.stderr == (
        f"wrighty: --after {third}: that would make a cycle: item {third} already comes after "
        f"item {first} ({third} after {second} after {first})\n"
    )
    assert claim(initialised) == first
    running = wrighty("edit", str(first), "--priority", "0")
    assert running.exit_code == 2
    assert running.stderr == (
        f"wrighty: item {first} is running: its worker holds it; edit it once it has settled\n"
    )
