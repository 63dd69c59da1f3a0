"""Review's moves (docs/work-product.md#review), pure: a done run's settlement waits for a
person, accept, reject with its bounds and counters, the note of a failed integration, the
prompt a rejection gives the next run, and the run it asks for."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from tests.factories import make_item
from tests.unit.test_transitions import T0
from wrighty.domain import review
from wrighty.domain.claims import Settlement
from wrighty.domain.decisions import choose_run
from wrighty.domain.model import REJECTED, Item, NewItem, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.resume import ResumeFacts
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import ReplayError, creation_event, replay, transition
from wrighty.errors import IllegalTransitionError, WrightyError

LATER = T0 + timedelta(minutes=5)


def test_a_done_settlement_waits_for_a_person_and_keeps_what_it_said() -> None:
    end = RunEnd(T0, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, exit_code=0)
    done = Settlement(
        ItemState.DONE, process_started=True, run_end=end, reason="every check passed (2 checks)"
    )
    waiting = review.to_review(make_item(ItemState.RUNNING, id=4), done)
    assert waiting.to_state is ItemState.REVIEW
    assert waiting.reason_code == "ready-for-review"
    assert waiting.reason == "every check passed (2 checks); it waits for a person's review"
    assert waiting.next_action == "wrighty accept 4"
    assert waiting.run_end == end
    plain = review.to_review(make_item(ItemState.RUNNING), dataclasses.replace(done, reason=None))
    assert plain.reason == "the run succeeded; it waits for a person's review"


def test_accept_moves_review_to_done_and_says_what_was_integrated() -> None:
    item = make_item(ItemState.REVIEW, generation=2)
    change = review.accept(item, at=LATER, actor="operator", integrated="pushed b to origin")
    assert change.after.state is ItemState.DONE
    assert change.after.generation == 2
    assert (change.event.reason_code, change.event.reason) == (
        "accepted",
        "pushed b to origin",
    )
    # the reason code says it was accepted; the reason says only what is more
    assert review.accept(item, at=LATER, actor="op").after.reason is None


@pytest.mark.parametrize("state", [s for s in ItemState if s is not ItemState.REVIEW])
def test_accept_and_reject_take_only_items_in_review(state: ItemState) -> None:
    item = make_item(state)
    with pytest.raises(IllegalTransitionError, match=f"item 1 is {state}; accept takes items"):
        review.accept(item, at=LATER, actor="op")
    with pytest.raises(IllegalTransitionError, match=f"item 1 is {state}; reject takes items"):
        review.reject(item, "do better", at=LATER, actor="op", max_rejections=3)
    with pytest.raises(IllegalTransitionError):
        review.integration_failed(item, "conflict", at=LATER, actor="op")


def test_reject_sends_the_item_back_now_with_its_feedback_and_fresh_counters() -> None:
    item = make_item(ItemState.REVIEW, rejections=1, crash_retries=2, usage_retries=1, fix_turns=3)
    change = review.reject(
        item, "  Sign the note\nand date it  ", at=LATER, actor="operator", max_rejections=3
    )
    after = change.after
    assert after.state is ItemState.RETRY_SCHEDULED
    assert after.not_before == LATER  # due now: the next worker takes it up
    assert after.reason_code == REJECTED
    assert after.reason == "rejection 2 of 3: Sign the note\\nand date it"
    assert after.feedback == "  Sign the note\nand date it  "  # kept whole for the prompt
    assert (after.rejections, after.crash_retries, after.usage_retries, after.fix_turns) == (
        2, 0, 0, 0)  # fmt: skip
    assert change.event.reason_code == REJECTED


def test_reject_refuses_past_its_bound_and_bad_feedback() -> None:
    spent = make_item(ItemState.REVIEW, rejections=3)
    with pytest.raises(WrightyError, match=r"item 1 was rejected 3 times, completion\.maxRej"):
        review.reject(spent, "again", at=LATER, actor="op", max_rejections=3)
    item = make_item(ItemState.REVIEW)
    for feedback, says in (
        ("", "the feedback is empty"),
        (" \n\t", "the feedback is empty"),
        ("x" * (review.MAX_FEEDBACK_BYTES + 1), "larger than 64 KiB"),
        ("caf\udce9", "not valid UTF-8"),
    ):
        with pytest.raises(WrightyError, match=says):
            review.reject(item, feedback, at=LATER, actor="op", max_rejections=3)
    # The most there may be, exactly, is taken.
    most = "é" * (review.MAX_FEEDBACK_BYTES // 2)
    assert review.reject(item, most, at=LATER, actor="op", max_rejections=3).after.feedback


def test_a_failed_integration_leaves_the_item_in_review_and_its_history_replays() -> None:
    item = make_item(ItemState.REVIEW, generation=2)
    change = review.integration_failed(
        item, "the merge conflicts in a.txt", at=LATER, actor="operator"
    )
    assert change.after.state is ItemState.REVIEW
    assert change.after.generation == item.generation
    assert change.after.reason == "accept failed to integrate: the merge conflicts in a.txt"
    assert change.after.next_action == "wrighty accept 1"
    assert (change.event.from_state, change.event.to_state) == (ItemState.REVIEW,) * 2

    created = make_item(ItemState.QUEUED)
    events = [
        creation_event(NewItem("t", "b", None, None, None, ItemState.QUEUED), 1, at=T0, actor="op"),
        transition(created, ItemState.RUNNING, at=T0, actor="w").event,
        transition(make_item(ItemState.RUNNING), ItemState.REVIEW, at=T0, actor="w").event,
        change.event,
        review.accept(item, at=LATER, actor="op").event,
    ]  # fmt: skip
    assert replay(events) is ItemState.DONE
    # The same note anywhere else is not a legal history.
    stray = dataclasses.replace(
        change.event, from_state=ItemState.QUEUED, to_state=ItemState.QUEUED
    )
    with pytest.raises(ReplayError):
        replay([*events[:1], stray])


def test_the_feedback_prompt_is_the_feedback_neutralised_redacted_and_bounded() -> None:
    secret = "s3cr3t-token-value"
    prompt = review.feedback_prompt(
        f"Use the key {secret}\r\nand drop \x1b[2J the escape\tplease", secrets=[secret]
    )
    assert prompt.startswith("A person reviewed your work on this task and rejected it.")
    assert secret not in prompt
    assert "\x1b" not in prompt
    assert "\r" not in prompt
    assert "\\x1b[2J the escape\tplease" in prompt
    assert prompt.rstrip().endswith("checked and reviewed again.")
    huge = review.feedback_prompt("y" * (3 * review.MAX_FEEDBACK_BYTES))
    assert len(huge.encode()) < review.MAX_FEEDBACK_BYTES + 1024
    assert "the feedback was cut here" in huge


def test_only_the_run_a_rejection_asked_for_owes_the_feedback() -> None:
    assert review.owes_feedback(REJECTED)
    for code in (None, "process-crash", "operator-resume", "verification-failed"):
        assert not review.owes_feedback(code)


def test_a_rejected_item_whose_session_cannot_resume_starts_a_new_one() -> None:
    session = Session(1, "claude", "s-1", "/w/1", "inst-a")
    whole = ResumeFacts(session, "inst-a", "claude", can_resume=True, workspace_exists=True)
    gone = dataclasses.replace(whole, transcript_problem="its transcript is gone")
    retry = ItemState.RETRY_SCHEDULED
    assert choose_run(claimed_from=retry, resume=whole, retry_reason=REJECTED).kind is (
        RunKind.RESUME
    )
    assert choose_run(claimed_from=retry, resume=gone, retry_reason=REJECTED) == (
        choose_run(claimed_from=ItemState.QUEUED, resume=None)
    )
    # Any other retry whose session is gone is never silently run fresh.
    crashed = choose_run(claimed_from=retry, resume=gone, retry_reason="process-crash")
    assert crashed.kind is RunKind.RESUME
    assert crashed.missing


def _in_review(item_id: int, minutes: int) -> Item:
    return make_item(id=item_id, state=ItemState.REVIEW, updated_at=T0 + timedelta(minutes=minutes))


def test_accept_all_takes_items_after_those_they_come_after_then_in_review_order() -> None:
    # 1 entered review last, 2 comes after 1, 3 after nothing, 4 after 5 (done), 6 has no checks
    items = [_in_review(1, 9), _in_review(2, 1), _in_review(3, 5), _in_review(4, 3),
             _in_review(6, 7)]  # fmt: skip
    after = {2: [(1, ItemState.REVIEW)], 4: [(5, ItemState.DONE)]}

    found = review.ready_to_accept(items, {1: True, 2: True, 3: True, 4: True}, after)

    assert [item.id for item in found.ready] == [4, 3, 6, 1, 2]
    assert found.waiting == ()


def test_accept_all_leaves_red_checks_and_whatever_comes_after_an_item_not_ready() -> None:
    items = [_in_review(1, 1), _in_review(2, 2), _in_review(3, 3), _in_review(4, 4)]
    # 1's checks failed; 2 comes after 1; 3 after 2; 4 after 9, which still runs
    after = {2: [(1, ItemState.REVIEW)], 3: [(2, ItemState.REVIEW)], 4: [(9, ItemState.RUNNING)]}

    found = review.ready_to_accept(items, {1: False, 2: True, 3: True, 4: True}, after)

    assert found.ready == ()
    assert [(item.id, why) for item, why in found.waiting] == [
        (1, "its latest checks did not pass"),
        (2, "it comes after item 1, which is not ready"),
        (3, "it comes after item 2, which is not ready"),
        (4, "it comes after item 9, which is not ready"),
    ]


def test_accept_all_takes_an_item_after_one_that_is_landing_already() -> None:
    found = review.ready_to_accept([_in_review(2, 0)], {}, {2: [(1, ItemState.LANDING)]})
    assert [item.id for item in found.ready] == [2]
