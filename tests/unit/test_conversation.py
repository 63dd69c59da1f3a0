"""Talking on an issue, pure (wrighty/domain/conversation.py): the answers a comment gives, who
may give them, and the status comment each state says, with outside text shown as text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wrighty.domain.conversation import (
    Answer,
    StatusView,
    answer_reply,
    is_ours,
    may_answer,
    quoted,
    read_answer,
    status_comment,
)
from wrighty.domain.model import PULL_OPEN
from wrighty.domain.states import ItemState


def test_each_answer_reads_with_its_words() -> None:
    assert read_answer("/wrighty accept") == Answer("accept")
    assert read_answer("\n  /wrighty   Accept  \nthanks") == Answer("accept")
    assert read_answer("/wrighty reject more tests\nand docs") == Answer(
        "reject", text="more tests\nand docs"
    )
    assert read_answer("/wrighty retry") == Answer("retry")
    assert read_answer("/wrighty handoff codex try the other way") == Answer(
        "handoff", agent="codex", text="try the other way"
    )
    assert read_answer("/wrighty cancel") == Answer("cancel")
    assert read_answer("/wrighty priority p1") == Answer("priority", priority=1)


def test_what_is_not_an_answer_or_cannot_be_acted_on() -> None:
    assert read_answer("LGTM, /wrighty accept") is None  # not at the start
    assert read_answer("> /wrighty accept") is None  # a quote
    assert read_answer("") is None
    assert read_answer("/wrightyaccept") is None
    assert read_answer("<!-- wrighty:answer comment=5 -->\n/wrighty accept") is None  # ours
    unknown = read_answer("/wrighty merge")
    assert unknown is not None
    assert unknown.problem is not None
    assert "/wrighty accept" in unknown.problem
    for text in (
        "/wrighty reject",
        "/wrighty handoff",
        "/wrighty handoff ../x",
        "/wrighty priority P9",
    ):
        answer = read_answer(text)
        assert answer is not None
        assert answer.problem is not None, text


def test_who_may_answer() -> None:
    assert may_answer("alice", "write", ())
    assert may_answer("alice", "admin", ())
    assert not may_answer("mallory", "read", ())
    assert not may_answer("mallory", "triage", ())
    assert may_answer("Bob", "none", ("bob",))  # a configured login, any case


@given(st.text(max_size=300))
def test_quoted_text_stays_inside_its_fence(text: str) -> None:
    block = quoted(text)
    lines = block.split("\n")
    fence = lines[0][: len(lines[0]) - len("text")]
    assert set(fence) == {"`"}
    assert lines[-1] == fence
    inside = "\n".join(lines[1:-1])
    assert fence not in inside  # nothing inside closes it
    assert "\x1b" not in inside


def view(state: ItemState, **fields: object) -> StatusView:
    defaults: dict[str, object] = {"reason_code": None, "reason": None, "agent": "claude"}
    defaults.update(fields)
    return StatusView(7, state, **defaults)  # type: ignore[arg-type]


def test_each_state_says_where_the_item_stands_and_what_to_answer() -> None:
    assert "queued for an agent" in status_comment(view(ItemState.QUEUED))
    running = status_comment(view(ItemState.RUNNING, branch="wrighty/7-x"))
    assert "`claude` is working on it on branch `wrighty/7-x`" in running
    attention = status_comment(view(ItemState.NEEDS_ATTENTION, reason="it crashed"))
    assert "/wrighty retry" in attention
    assert "it crashed" in attention
    review = status_comment(view(ItemState.REVIEW, branch="b", summary="Change:\n a | 1 +"))
    assert "/wrighty accept" in review
    assert "a | 1 +" in review
    pulled = status_comment(
        view(ItemState.REVIEW, reason_code=PULL_OPEN, pull_url="https://x/pull/3")
    )
    assert "Its pull request is open: https://x/pull/3" in pulled
    done = status_comment(view(ItemState.DONE, reason="landed", pull_url="https://x/pull/3"))
    assert "It is done. Its pull request: https://x/pull/3" in done
    assert status_comment(view(ItemState.CANCELLED)).startswith("<!-- wrighty:status item=7 -->")
    assert is_ours(status_comment(view(ItemState.LANDING, target="main")))


def test_outside_text_in_a_comment_does_nothing_on_github() -> None:
    hostile = "@everyone ```\n<img src=x onerror=alert(1)> [click](https://evil) \x1b[2J"
    body = status_comment(view(ItemState.NEEDS_ATTENTION, reason=hostile))
    block = body.split("It needs a person:\n", 1)[1]
    assert block.startswith("````text\n")  # a fence longer than the text's own
    assert "\x1b" not in body
    reply = answer_reply(5, "alice", hostile)
    assert reply.startswith("<!-- wrighty:answer comment=5 -->\n@alice\n\n````text\n")
    branch = status_comment(view(ItemState.RUNNING, branch="x`@everyone`"))
    assert "`x'@everyone'`" in branch
