"""Where an item goes when a person must look (pure): every such settlement names the command
that moves the item on, internal errors are one safe line, and no stored timeout can make a
lease deadline overflow."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.factories import claimed_item
from wrighty.domain.claims import (
    ClaimRequest,
    LeaseTerms,
    ReapFacts,
    Settlement,
    claim,
    claim_to_set_aside,
    not_claimable_reason,
    reap,
    release,
)
from wrighty.domain.classify import Classification
from wrighty.domain.decisions import (
    after_run,
    after_shutdown,
    internal_error,
    resume_state_missing,
    start_failed,
)
from wrighty.domain.durations import MAX_ITEM_TIMEOUT_SECONDS
from wrighty.domain.model import Item, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.retry import CrashPolicy
from wrighty.domain.states import ItemState

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)


def item(state: ItemState = ItemState.RUNNING, **changes: object) -> Item:
    fields = {
        "id": 7, "generation": 3, "lease_expires_at": NOW - timedelta(1), "queued_at": NOW,
        "created_at": NOW, "updated_at": NOW,
    }  # fmt: skip
    return claimed_item(state, **{**fields, **changes})


RUN_END = RunEnd(NOW, OutcomeClass.AGENT_FAILURE, Confidence.INFERRED, exit_code=3)
FAILED = Classification(OutcomeClass.AGENT_FAILURE, Confidence.INFERRED, "exit code 3")
CRASHED = Classification(OutcomeClass.PROCESS_CRASH, Confidence.AUTHORITATIVE, "killed")
RETRY = CrashPolicy("retry", max_attempts=1)


def _next_action(build: Callable[[bool], Settlement | str | None]) -> Callable[[bool], str]:
    def next_action(resumable: bool) -> str:
        built = build(resumable)
        action = built.next_action if isinstance(built, Settlement) else built
        assert action is not None
        return action

    return next_action


SETTLEMENTS: dict[str, Callable[[bool], str]] = {
    "after-run": _next_action(
        lambda resumable: after_run(
            item(), FAILED, RUN_END, timeout_seconds=60, resume_missing=() if resumable else ("x",)
        )
    ),
    "start-failed": _next_action(
        lambda resumable: start_failed(item(), RUN_END, why="w", resumable=resumable)
    ),
    "internal-error": _next_action(
        lambda resumable: internal_error(
            item(),
            ValueError("v"),
            at=NOW,
            run_recorded=True,
            process_started=True,
            resumable=resumable,
        )
    ),
    "reaped": _next_action(
        lambda resumable: (
            reap(
                item(requeues=3),
                ReapFacts(True, resumable, ItemState.QUEUED),
                at=NOW,
                max_requeues=3,
            ).after.next_action
        )
    ),
    "released": _next_action(
        lambda resumable: release(item(), at=NOW, actor="op", resumable=resumable).after.next_action
    ),
}


@pytest.mark.parametrize("name", SETTLEMENTS)
@pytest.mark.parametrize("resumable", [True, False])
def test_every_needs_attention_settlement_names_the_command_that_moves_it_on(
    name: str, resumable: bool
) -> None:
    expected = "wrighty requeue 7 --resume" if resumable else "wrighty requeue 7 --fresh"
    assert SETTLEMENTS[name](resumable) == expected


@pytest.mark.parametrize(
    "settlement",
    [
        after_shutdown(item(), RUN_END, resumable=False),
        resume_state_missing(item(), ("the workspace /w is gone",)),
        after_run(
            item(),
            CRASHED,
            RUN_END,
            timeout_seconds=60,
            crash_policy=RETRY,
            resume_missing=("no session id was recorded",),
        ),
    ],
    ids=["stopped", "resume-state-missing", "crash-without-resume"],
)
def test_a_settlement_that_cannot_resume_offers_a_fresh_start(settlement: Settlement) -> None:
    assert settlement.next_action == "wrighty requeue 7 --fresh"


def test_an_internal_error_is_one_redacted_bounded_line_naming_the_exception() -> None:
    error = OverflowError("date value out of range, api_key=abcdef123456 " + "x" * 1000 + "\nmore")
    settlement = internal_error(
        item(), error, at=NOW, run_recorded=True, process_started=False, resumable=False
    )
    assert (settlement.to_state, settlement.reason_code) == (
        ItemState.NEEDS_ATTENTION, "internal-error")  # fmt: skip
    reason = settlement.reason or ""
    assert reason.startswith("wrighty failed on this item (OverflowError: date value out of range")
    assert "abcdef123456" not in reason
    assert "\n" not in reason
    assert "more" not in reason
    assert len(reason) < 400
    assert settlement.run_end is not None
    assert settlement.run_end.outcome_class is OutcomeClass.INTERNAL_ERROR


def test_an_internal_error_before_any_run_ends_no_run() -> None:
    settlement = internal_error(
        item(), KeyError("k"), at=NOW, run_recorded=False, process_started=False, resumable=False
    )
    assert settlement.run_end is None
    assert "KeyError: 'k'" in (settlement.reason or "")


@given(
    timeout=st.one_of(
        st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**30), 10**30)
    )
)
def test_no_stored_timeout_makes_a_claim_overflow(timeout: float | None) -> None:
    request = ClaimRequest("w-2", "inst", TERMS, "demo")
    change = claim(item(ItemState.QUEUED, claimed_by=None, timeout_seconds=timeout), request,
                   at=NOW)  # fmt: skip
    deadline = change.after.renew_deadline
    assert deadline is not None
    assert NOW < deadline <= NOW + timedelta(seconds=MAX_ITEM_TIMEOUT_SECONDS + 60)
    limit = TERMS.time_limit(timeout)
    assert 0 < limit <= MAX_ITEM_TIMEOUT_SECONDS
    if timeout is not None and 0 < timeout <= MAX_ITEM_TIMEOUT_SECONDS:
        assert limit == timeout  # a sound timeout is kept as it is


def test_a_claim_to_set_aside_reads_nothing_of_the_item_but_its_state() -> None:
    request = ClaimRequest("w-2", "inst", TERMS, "demo")
    queued = item(ItemState.QUEUED, claimed_by=None, timeout_seconds=float("nan"))
    after = claim_to_set_aside(queued, request, at=NOW).after
    assert (after.state, after.claimed_by, after.generation) == (ItemState.RUNNING, "w-2", 4)
    assert after.renew_deadline == after.lease_expires_at == NOW + timedelta(seconds=60)


@pytest.mark.parametrize(
    ("state", "not_before"), [(ItemState.QUEUED, None), (ItemState.RETRY_SCHEDULED, NOW)]
)
def test_an_item_a_worker_can_take_now_has_no_reason_not_to(
    state: ItemState, not_before: datetime | None
) -> None:
    claimable = item(state, claimed_by=None, not_before=not_before)
    assert not_claimable_reason(claimable, agent="demo", default_agent="demo", now=NOW) is None


def test_a_worker_told_to_take_an_item_in_review_is_told_it_waits_for_a_person() -> None:
    waiting = item(ItemState.REVIEW, claimed_by=None)
    assert not_claimable_reason(waiting, agent="demo", default_agent="demo", now=NOW) == (
        f"item {waiting.id} is review; it is verified and waits for a person's review, "
        "not for a worker"
    )
