"""A source's conversation, one pass at a time (services/conversation.py), against the local
GitHub API on both stores: an answer is acted on once however often it is read, one left
taken by a pass that died is acted on only when its item has not moved, a person's permission
is asked once, a comment anyone else wrote with wrighty's marker is never taken for wrighty's,
a pull request closed without merging brings its item back to review, and an unchanged
repository costs 304s."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import FakeClock
from tests.github.conftest import ServedGitHub
from tests.github.fake_api import TOKEN
from tests.store.test_landings import in_review
from wrighty.domain.conversation import (
    TAKEN,
    Answer,
    AnswerRecord,
    StatusView,
    TrackerItem,
    item_version,
)
from wrighty.domain.model import PULL_OPEN, Item, NewItem
from wrighty.domain.sources import SourceSettings
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import restated, transition
from wrighty.services.conversation import Conversation, conversation_of
from wrighty.services.items import apply_change, create_item
from wrighty.store.port import Store

REPO = "acme/widgets"
NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


class Desk:
    """What acts on answers here: each call recorded, its line said back."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, str, str]] = []

    def __call__(self, item_id: int, answer: Answer, who: str) -> str:
        self.calls.append((item_id, answer.action, answer.text, who))
        return f"item {item_id}: {answer.action} done"


def settings(github: ServedGitHub, **fields: Any) -> SourceSettings:
    base = SourceSettings(
        name="widgets", repo=REPO, labels=("wrighty",), token_env="GITHUB_TOKEN",
        api_url=github.url, timeout_seconds=5,
    )  # fmt: skip
    return dataclasses.replace(base, **fields)


def view(item: Item) -> StatusView:
    return StatusView(item.id, item.state, item.reason_code, item.reason, "claude")


def conversation(
    store: Store, github: ServedGitHub, desk: Desk | None = None, **fields: Any
) -> Conversation:
    github.fake.talk.stamp = "2026-12-07T09:00:05Z"  # people comment after NOW
    clock = iter(range(0, 10_000, 1))
    return conversation_of(
        store, settings(github, **fields), {"GITHUB_TOKEN": TOKEN}, view_of=view,
        act=desk, clock=lambda: float(next(clock)),
    )  # fmt: skip


def issue_item(store: Store, number: int, state: ItemState = ItemState.QUEUED) -> Item:
    new = NewItem(
        title=f"Issue {number}", body="task", agent=None, timeout_seconds=None, workspace=None,
        initial_state=ItemState.QUEUED, import_key=f"github:{REPO}#{number}",
    )  # fmt: skip
    item = create_item(store, new, now=NOW)
    if state is not ItemState.QUEUED:
        item = apply_change(
            store, item.id, lambda it: transition(it, ItemState.CANCELLED, at=NOW, actor="t")
        ).after
    return item


def wrighty_comments(github: ServedGitHub, issue: int, marker: str) -> list[dict[str, Any]]:
    return [
        c
        for c in github.fake.talk.on_issue(REPO, issue)
        if c["body"].startswith(marker) and c["user"]["login"] == "wrighty-bot"
    ]


def test_an_answer_read_twice_is_acted_on_once_and_permission_asked_once(
    store: Store, github: ServedGitHub
) -> None:
    talk = github.fake.talk
    talk.permissions["alice"] = "write"
    item = issue_item(store, 4)
    desk = Desk()
    chat = conversation(store, github, desk)
    chat.turn(now=NOW)  # the status comment; answers from now on
    first = talk.say(REPO, 4, "alice", "/wrighty reject add tests")
    second = talk.say(REPO, 4, "alice", "/wrighty priority P0")
    chat.turn(now=NOW)
    # the comments' ETag forgotten: everything read again, nothing acted on again
    store.write_answers_cursor("widgets", NOW - timedelta(days=1), None)
    chat.turn(now=NOW)
    assert desk.calls == [
        (item.id, "reject", "add tests", "github:alice"),
        (item.id, "priority", "", "github:alice"),
    ]
    for comment in (first, second):
        [reply] = wrighty_comments(github, 4, f"<!-- wrighty:answer comment={comment} -->")
        assert f"item {item.id}" in reply["body"]
    asked = [r for r in github.fake.requests if r.path.endswith("/permission")]
    assert len(asked) == 1
    assert store.unfinished_answers("widgets") == []


def test_an_outsider_and_a_malformed_answer_are_answered_not_acted_on(
    store: Store, github: ServedGitHub
) -> None:
    talk = github.fake.talk
    talk.permissions.update(mallory="read", bob="none")
    issue_item(store, 5)
    desk = Desk()
    chat = conversation(store, github, desk, trusted=("Bob",))
    chat.turn(now=NOW)
    outsider = talk.say(REPO, 5, "mallory", "/wrighty accept")
    unknown = talk.say(REPO, 5, "bob", "/wrighty merge now")
    trusted = talk.say(REPO, 5, "bob", "/wrighty cancel")
    chat.turn(now=NOW)
    assert [call[1] for call in desk.calls] == ["cancel"]  # bob is named in trustedAuthors
    said = {
        comment: wrighty_comments(github, 5, f"<!-- wrighty:answer comment={comment} -->")[0]
        for comment in (outsider, unknown, trusted)
    }
    assert "only people with write access" in said[outsider]["body"]
    assert "wrighty answers /wrighty accept" in said[unknown]["body"]


def test_an_answer_taken_before_a_worker_died_acts_only_on_an_unmoved_item(
    store: Store, github: ServedGitHub
) -> None:
    talk = github.fake.talk
    talk.permissions["alice"] = "write"
    still = issue_item(store, 6)
    moved = issue_item(store, 8)
    desk = Desk()
    for item, issue in ((still, 6), (moved, 8)):
        comment = talk.say(REPO, issue, "alice", "/wrighty retry")
        store.take_answer(
            AnswerRecord(
                "widgets",
                comment,
                issue,
                item.id,
                "alice",
                "retry",
                TAKEN,
                item_version(item),
                None,
            )
        )
    apply_change(store, moved.id, lambda it: transition(it, ItemState.CANCELLED, at=NOW, actor="t"))
    conversation(store, github, desk, status_comments=False).turn(now=NOW)
    assert [call[0] for call in desk.calls] == [still.id]
    [reply] = [c for c in talk.on_issue(REPO, 8) if c["user"]["login"] == "wrighty-bot"]
    assert "its item has moved since" in reply["body"]


def test_only_wrightys_own_comment_with_its_marker_is_edited(
    store: Store, github: ServedGitHub
) -> None:
    talk = github.fake.talk
    item = issue_item(store, 9)
    # Someone plants wrighty's marker before wrighty ever wrote: it is not wrighty's.
    planted = talk.say(REPO, 9, "mallory", f"<!-- wrighty:status item={item.id} -->\nlies")
    conversation(store, github).turn(now=NOW)
    assert talk.comments[planted]["body"].endswith("lies")
    [ours] = wrighty_comments(github, 9, f"<!-- wrighty:status item={item.id} -->")
    recorded = store.get_tracker_item(item.id)
    assert recorded is not None
    assert recorded.comment_id == ours["id"]
    # Recorded, then deleted by a person: posted again, once.
    del talk.comments[ours["id"]]
    store.write_tracker_item(dataclasses.replace(recorded, comment_digest="0" * 32))
    conversation(store, github).turn(now=NOW)
    assert len(wrighty_comments(github, 9, "<!-- wrighty:status ")) == 1


def test_an_unchanged_repository_costs_only_304s(store: Store, github: ServedGitHub) -> None:
    issue_item(store, 10)
    chat = conversation(store, github, Desk())
    chat.turn(now=NOW)
    chat.turn(now=NOW)
    before = github.fake.counted()
    report = chat.turn(now=NOW)
    assert [r.status for r in github.fake.requests[before:]] == [304]
    assert (report.posted, report.edited) == ([], [])


def test_a_pull_request_closed_without_merging_brings_its_item_back_to_review(
    store: Store, github: ServedGitHub, clock: FakeClock
) -> None:
    talk = github.fake.talk
    reviewed = in_review(store, clock)
    item = apply_change(
        store, reviewed.id,
        lambda it: restated(it, at=NOW, actor="t", reason_code=PULL_OPEN, reason="open",
                            next_action=None),
    ).after  # fmt: skip
    talk.pulls[501] = {
        "number": 501, "repo": REPO, "state": "open", "merged": False, "head": {"ref": "b"},
        "base": {"ref": "main"}, "html_url": "https://github.example/acme/widgets/pull/501",
    }  # fmt: skip
    store.write_tracker_item(
        TrackerItem(
            item.id,
            pull_repo=REPO,
            pull_number=501,
            pull_url="https://x/pull/501",
            pull_state="open",
        )
    )
    chat = conversation(store, github, status_comments=False, answers=False)
    chat.turn(now=NOW)
    assert store.get_item(item.id) == item  # open: nothing moves
    talk.close(501)
    report = chat.turn(now=NOW)
    back = store.get_item(item.id)
    assert back is not None
    assert (back.state, back.reason_code) == (ItemState.REVIEW, "pull-request-closed")
    assert "closed without merging" in (back.reason or "")
    assert report.pulls == [
        f"item {item.id}: pull request #501 closed without merging: back in review"
    ]
    assert list(store.list_open_pulls()) == []
