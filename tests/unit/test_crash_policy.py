"""worker.processCrash: the delay math, and where a crashed run sends its item (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wrighty.domain.claims import settle
from wrighty.domain.classify import Classification
from wrighty.domain.decisions import after_run
from wrighty.domain.model import Item, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.retry import CrashPolicy
from wrighty.domain.states import ItemState

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
RETRY = CrashPolicy("retry", initial_seconds=120, multiplier=2, max_seconds=900, max_attempts=2)


def running(crash_retries: int = 0) -> Item:
    return Item(
        id=7, title="t", body="b", agent=None, timeout_seconds=None, workspace=None,
        state=ItemState.RUNNING, generation=3, claimed_by="w-1", lease_expires_at=NOW,
        queued_at=NOW, not_before=None, reason_code=None, reason=None, next_action=None,
        crash_retries=crash_retries, requeues=0, created_at=NOW, updated_at=NOW,
    )  # fmt: skip


def ended(outcome_class: OutcomeClass) -> tuple[Classification, RunEnd]:
    classification = Classification(outcome_class, Confidence.AUTHORITATIVE, "killed by SIGKILL")
    return classification, RunEnd(NOW, outcome_class, Confidence.AUTHORITATIVE, signal=9)


def test_the_documented_example_waits_2_then_4_minutes() -> None:
    assert [RETRY.delay_seconds(n) for n in (1, 2, 3, 4, 5)] == [120, 240, 480, 900, 900]


@given(
    initial=st.floats(min_value=0.001, max_value=1440 * 60),
    multiplier=st.floats(min_value=1, max_value=100),
    extra=st.floats(min_value=0, max_value=10080 * 60),
    retry=st.integers(min_value=1, max_value=20),
)
def test_delays_are_never_zero_never_above_the_cap_and_never_shrink(
    initial: float, multiplier: float, extra: float, retry: int
) -> None:
    policy = CrashPolicy("retry", initial, multiplier, initial + extra, 20)
    delay = policy.delay_seconds(retry)
    assert 0 < initial <= delay <= policy.max_seconds
    if retry > 1:
        assert policy.delay_seconds(retry - 1) <= delay


def test_a_crash_under_the_retry_policy_schedules_a_resume_and_counts_it() -> None:
    classification, run_end = ended(OutcomeClass.PROCESS_CRASH)
    settlement = after_run(
        running(), classification, run_end, timeout_seconds=60, crash_policy=RETRY
    )
    assert settlement.to_state is ItemState.RETRY_SCHEDULED
    assert settlement.not_before == NOW + timedelta(minutes=2)
    assert settlement.run_end == run_end  # the run stays a failed run with its diagnostics
    change = settle(running(), settlement, at=NOW)
    assert (change.after.crash_retries, change.after.claimed_by) == (1, None)
    assert "retry 1 of 2" in (change.after.reason or "")
    second = after_run(
        running(crash_retries=1), classification, run_end, timeout_seconds=60, crash_policy=RETRY
    )
    assert second.not_before == NOW + timedelta(minutes=4)


def test_the_crash_after_the_last_retry_needs_attention_naming_the_attempts() -> None:
    classification, run_end = ended(OutcomeClass.PROCESS_CRASH)
    settlement = after_run(
        running(crash_retries=2), classification, run_end, timeout_seconds=60, crash_policy=RETRY
    )
    assert (settlement.to_state, settlement.reason_code) == (
        ItemState.NEEDS_ATTENTION,
        "retries-exhausted",
    )
    assert "crashed 3 times" in (settlement.reason or "")
    assert "killed by SIGKILL" in (settlement.reason or "")
    assert settlement.next_action == "wrighty requeue 7 --resume"


def test_a_crash_without_a_complete_resume_address_is_never_a_fresh_retry() -> None:
    classification, run_end = ended(OutcomeClass.PROCESS_CRASH)
    settlement = after_run(
        running(),
        classification,
        run_end,
        timeout_seconds=60,
        crash_policy=RETRY,
        resume_missing=("no claude transcript of session s-1 on this installation",),
    )
    assert (settlement.to_state, settlement.reason_code) == (
        ItemState.NEEDS_ATTENTION,
        "resume-state-missing",
    )
    assert "no claude transcript" in (settlement.reason or "")
    assert settlement.next_action == "wrighty requeue 7 --fresh"


@pytest.mark.parametrize(
    "outcome_class",
    [
        OutcomeClass.FENCED,
        OutcomeClass.CANCELLED,
        OutcomeClass.TIMEOUT,
        OutcomeClass.AUTH,
        OutcomeClass.PERMISSION,
        OutcomeClass.BILLING,
        OutcomeClass.CONTEXT_LIMIT,
        OutcomeClass.AGENT_FAILURE,
        OutcomeClass.UNKNOWN,
        OutcomeClass.RATE_LIMITED,
        OutcomeClass.PROVIDER_UNAVAILABLE,
    ],
)
def test_no_other_class_is_ever_retried_by_the_crash_policy(outcome_class: OutcomeClass) -> None:
    classification, run_end = ended(outcome_class)
    settlement = after_run(
        running(), classification, run_end, timeout_seconds=60, crash_policy=RETRY
    )
    assert settlement.to_state is ItemState.NEEDS_ATTENTION
    assert not settlement.counts_as_crash_retry


@pytest.mark.parametrize("policy", [None, CrashPolicy()], ids=["absent", "needs-attention"])
def test_without_the_retry_policy_a_crash_needs_attention_as_before(
    policy: CrashPolicy | None,
) -> None:
    classification, run_end = ended(OutcomeClass.PROCESS_CRASH)
    settlement = after_run(
        running(), classification, run_end, timeout_seconds=60, crash_policy=policy
    )
    assert (settlement.to_state, settlement.reason_code) == (
        ItemState.NEEDS_ATTENTION,
        "process-crash",
    )
    assert (
        settlement.reason == "the agent process crashed (killed by SIGKILL); the workspace is kept"
    )
    assert settlement.next_action == "wrighty requeue 7 --resume"  # its session can resume
