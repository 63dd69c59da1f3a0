"""What an issue becomes and what a sync does with it (wrighty/domain/sources.py): pure."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from tests.factories import make_item
from wrighty.domain.sources import (
    MAX_ISSUE_BODY_CHARS,
    SOURCE_CLOSED,
    BadIssue,
    SourceIssue,
    close,
    depends_on,
    issue_item,
    issue_of,
    item_labels,
    next_sync_in,
    pages_json,
    pages_of,
    plan_sync,
    rewrite,
)
from wrighty.domain.states import ItemState

PREFIX = "github:acme/widgets"
NOW = datetime(2026, 12, 6, tzinfo=UTC)


def issue(number: int = 1, body: str = "text", *labels: str, title: str = "T") -> SourceIssue:
    return SourceIssue(number, title, body, labels or ("wrighty",), "")


def test_a_pull_request_is_no_issue_and_a_malformed_entry_is_refused() -> None:
    assert issue_of({"number": 3, "title": "PR", "pull_request": {"url": "u"}}) is None
    read = issue_of({"number": 4, "title": "T", "body": None, "labels": [{"name": "a"}]})
    assert read == SourceIssue(4, "T", "", ("a",), "")
    for bad in ([], {"title": "T"}, {"number": True, "title": "T"}, {"number": 1, "title": 5},
                {"number": 1, "title": "T", "labels": "x"}):  # fmt: skip
        with pytest.raises(BadIssue):
            issue_of(bad)


def test_the_body_is_framed_as_outside_text_neutralised_and_bounded() -> None:
    made = issue_item(
        PREFIX, issue(7, "run \x1b]52;c;evil\x07 this" + "x" * MAX_ISSUE_BODY_CHARS), {}
    )
    assert made.key == "github:acme/widgets#7"
    assert made.body.startswith("The task below is the text of issue acme/widgets#7, written "
                                "outside wrighty")  # fmt: skip
    assert "\x1b" not in made.body
    assert "\\x1b]52" in made.body
    assert "[the issue's text is cut here: it is longer]" in made.body
    assert made.body.endswith("--- end of issue acme/widgets#7 ---\n")
    titled = issue_item(PREFIX, issue(8, "b", title="a\nb\u202e"), {})
    assert titled.title == "a\\nb\\u202e"


def test_priority_is_the_highest_mapped_label_and_labels_are_spelled_as_wrighty_spells_them() -> (
    None
):
    mapped = {"urgent": 0, "soon": 1}
    assert issue_item(PREFIX, issue(1, "", "wrighty", "soon", "urgent"), mapped).priority == 0
    assert issue_item(PREFIX, issue(1, "", "wrighty"), mapped).priority == 2
    assert item_labels(["Good First Issue", "bug", "ünïcode", "x" * 60]) == (
        "bug",
        "good-first-issue",
    )


def test_depends_on_lines_name_other_issues_once() -> None:
    body = "Depends on #3, #4\nsomething #9\ndepends on: #3 and #12\nDepends on #5"
    assert depends_on(body, 5) == (3, 4, 12)
    assert depends_on("see acme/other#4\nDepends on other/repo#4", 1) == ()


def test_a_plan_creates_new_issues_rewrites_and_cancels_only_what_has_not_started() -> None:
    wanted = [issue_item(PREFIX, issue(n, f"body {n}"), {}) for n in (1, 2, 3, 4)]
    same = make_item(ItemState.QUEUED, id=11, import_key=wanted[0].key,
                     import_fingerprint=wanted[0].fingerprint)  # fmt: skip
    edited = make_item(ItemState.QUEUED, id=12, import_key=wanted[1].key, import_fingerprint="old")
    running = make_item(ItemState.RUNNING, id=13, generation=1, import_key=wanted[2].key,
                        import_fingerprint="old")  # fmt: skip
    closed = make_item(ItemState.TODO, id=15, import_key=f"{PREFIX}#5")
    requeued = make_item(ItemState.QUEUED, id=16, generation=2, import_key=f"{PREFIX}#6")
    done = make_item(ItemState.DONE, id=17, import_key=f"{PREFIX}#7")
    kept = make_item(ItemState.QUEUED, id=18, import_key=f"{PREFIX}#8", import_fingerprint="x")
    plan = plan_sync(wanted, [same, edited, running, closed, requeued, done, kept],
                     unchanged_keys=[f"{PREFIX}#8"])  # fmt: skip
    assert [i.number for i in plan.create] == [4]
    assert [u.item.id for u in plan.update] == [12]
    assert [i.id for i in plan.cancel] == [15]
    assert (plan.unchanged, plan.started_changed) == (2, 2)  # #1 and #8; #3 and #6


def test_a_rewrite_and_a_close_refuse_an_item_that_started_since_it_was_read() -> None:
    wanted = issue_item(PREFIX, issue(1, "new", "wrighty", "urgent"), {"urgent": 0})
    item = make_item(ItemState.QUEUED, id=1, import_key=wanted.key)
    change = rewrite(item, wanted, at=NOW, actor="source:w")
    assert (change.after.title, change.after.priority) == (wanted.title, 0)
    assert change.after.import_fingerprint == wanted.fingerprint
    assert change.event.reason == "its issue was edited; priority P2 -> P0"
    cancelled = close(item, at=NOW, actor="source:w")
    assert (cancelled.after.state, cancelled.after.reason_code) == (
        ItemState.CANCELLED,
        SOURCE_CLOSED,
    )
    started = dataclasses.replace(item, generation=1)
    for act in (lambda: rewrite(started, wanted, at=NOW, actor="a"),
                lambda: close(started, at=NOW, actor="a")):  # fmt: skip
        with pytest.raises(ValueError, match="has started"):
            act()


def test_stored_pages_read_back_and_a_damaged_store_reads_as_none() -> None:
    pages = (('"a"', (3, 2)), ('"b"', (1,)))
    assert pages_of(pages_json("fp", pages)) == ("fp", pages)
    assert pages_of("not json") == ("", ())
    assert pages_of('{"pages": 3}') == ("", ())


def test_the_back_off_doubles_with_each_failure_within_an_hour() -> None:
    assert [next_sync_in(60, n) for n in (0, 1, 2, 10)] == [60, 120, 240, 3600]
    assert next_sync_in(7200, 3) == 7200
