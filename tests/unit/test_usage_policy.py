"""worker.usageFailure: when a usage retry is due, and where a refused run sends its item (pure)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wrighty.domain.claims import settle
from wrighty.domain.classify import Classification
from wrighty.domain.decisions import (
    UsageFacts,
    after_run,
    choose_run,
)
from wrighty.domain.model import Item, RunEnd, Session
from wrighty.domain.outcomes import USAGE_RETRY_FRESH, Confidence, OutcomeClass, RunKind
from wrighty.domain.resume import ResumeFacts
from wrighty.domain.retry import (
    MIN_USAGE_WAIT_SECONDS,
    USAGE_JITTER,
    CrashPolicy,
    ResetHint,
    UsagePolicy,
)
from wrighty.domain.states import ItemState

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
MINUTE = 60.0
RETRY = UsagePolicy(
    "retry",
    initial_seconds=30 * MINUTE,
    multiplier=2,
    max_seconds=360 * MINUTE,
    max_attempts=5,
    reset_grace_seconds=2 * MINUTE,
)
RESET = ResetHint("rate_limit_event", resets_at=NOW + timedelta(hours=1))


def running(usage_retries: int = 0, crash_retries: int = 0, item_id: int = 7) -> Item:
    return Item(
        id=item_id, title="t", body="b", agent=None, timeout_seconds=None, workspace=None,
        state=ItemState.RUNNING, generation=3, claimed_by="w-1", lease_expires_at=NOW,
        queued_at=NOW, not_before=None, reason_code=None, reason=None, next_action=None,
        crash_retries=crash_retries, requeues=0, created_at=NOW, updated_at=NOW,
        usage_retries=usage_retries,
    )  # fmt: skip


def refused(
    outcome_class: OutcomeClass = OutcomeClass.RATE_LIMITED,
) -> tuple[Classification, RunEnd]:
    classification = Classification(outcome_class, Confidence.AUTHORITATIVE, "api error 429")
    return classification, RunEnd(NOW, outcome_class, Confidence.AUTHORITATIVE, exit_code=1)


def settle_refused(
    item: Item,
    usage: UsageFacts | None = None,
    *,
    outcome_class: OutcomeClass = OutcomeClass.RATE_LIMITED,
    policy: UsagePolicy = RETRY,
    resume_missing: tuple[str, ...] = (),
):
    classification, run_end = refused(outcome_class)
    return after_run(
        item,
        classification,
        run_end,
        timeout_seconds=3600,
        usage_policy=policy,
        usage=usage,
        resume_missing=resume_missing,
    )


# -- when it is due ----------------------------------------------------------------------------


def test_a_reported_reset_is_waited_for_plus_the_grace() -> None:
    due = RETRY.due(1, ended_at=NOW, hint=RESET, key=7)
    assert (due.at, due.basis, due.reset) == (NOW + timedelta(minutes=62), "reset", RESET.resets_at)


def test_a_wait_the_provider_gave_counts_from_the_end_of_the_run() -> None:
    hint = ResetHint("retry-after", after_seconds=600)
    assert RETRY.due(1, ended_at=NOW, hint=hint, key=7).at == NOW + timedelta(minutes=12)


def test_a_far_reset_is_capped_at_the_longest_wait() -> None:
    weekly = ResetHint("rate_limit_event", resets_at=NOW + timedelta(days=6))
    due = RETRY.due(1, ended_at=NOW, hint=weekly, key=7)
    assert (due.at, due.basis) == (NOW + timedelta(minutes=360), "reset")


@pytest.mark.parametrize("resets_at", [NOW - timedelta(hours=3), NOW, NOW + timedelta(seconds=1)])
def test_a_reset_that_has_passed_is_never_an_immediate_retry(resets_at: datetime) -> None:
    no_grace = dataclasses.replace(RETRY, reset_grace_seconds=0)
    due = no_grace.due(1, ended_at=NOW, hint=ResetHint("result text", resets_at=resets_at), key=7)
    assert due.at == NOW + timedelta(seconds=MIN_USAGE_WAIT_SECONDS)


def test_without_a_reset_the_backoff_doubles_up_to_the_cap_less_a_bounded_jitter() -> None:
    waits = [RETRY.backoff_seconds(n, key=7) for n in range(1, 7)]
    nominal = [30, 60, 120, 240, 360, 360]
    for wait, minutes in zip(waits, nominal, strict=True):
        assert minutes * MINUTE * (1 - USAGE_JITTER) <= wait <= minutes * MINUTE
    due = RETRY.due(2, ended_at=NOW, hint=None, key=7)
    assert (due.at, due.basis, due.reset) == (NOW + timedelta(seconds=waits[1]), "backoff", None)


def test_the_jitter_is_fixed_by_the_item_and_spreads_a_fleet() -> None:
    assert RETRY.backoff_seconds(1, key=7) == RETRY.backoff_seconds(1, key=7)
    waits = {RETRY.backoff_seconds(1, key=item) for item in range(1, 101)}
    assert len(waits) > 90  # a hundred items hit by one limit come back at different times
    assert max(waits) - min(waits) > 0.5 * USAGE_JITTER * 30 * MINUTE


@given(
    initial=st.floats(min_value=0.001, max_value=1440 * MINUTE),
    multiplier=st.floats(min_value=1, max_value=100),
    extra=st.floats(min_value=0, max_value=10080 * MINUTE),
    retry=st.integers(min_value=1, max_value=50),
    key=st.integers(min_value=1, max_value=2**63 - 1),
    reset_in=st.none() | st.floats(min_value=-1e9, max_value=1e9),
)
def test_a_usage_retry_is_never_immediate_and_never_unbounded(
    initial: float, multiplier: float, extra: float, retry: int, key: int, reset_in: float | None
) -> None:
    policy = UsagePolicy("retry", initial, multiplier, initial + extra, 50, 120)
    hint = None if reset_in is None else ResetHint("retry-after", after_seconds=reset_in)
    due = policy.due(retry, ended_at=NOW, hint=hint, key=key)
    wait = (due.at - NOW).total_seconds()
    shortest = min(MIN_USAGE_WAIT_SECONDS, initial)
    # (datetimes keep microseconds: a wait may round below the float it came from)
    assert 0 < shortest - 1e-6 <= wait <= max(policy.max_seconds, shortest) + 1e-6


def test_a_policy_asking_for_less_than_a_minute_gets_it() -> None:
    quick = dataclasses.replace(RETRY, initial_seconds=0.5, reset_grace_seconds=0)
    passed = ResetHint("result text", resets_at=NOW - timedelta(hours=1))
    assert quick.due(1, ended_at=NOW, hint=passed, key=7).at == NOW + timedelta(seconds=0.5)


def test_an_unreadable_wait_is_no_reset() -> None:
    assert ResetHint("retry-after", after_seconds=float("nan")).moment(NOW) is None
    assert ResetHint("retry-after").moment(NOW) is None


# -- where the item goes -----------------------------------------------------------------------


def test_a_rate_limit_under_the_policy_schedules_a_resume_at_the_reset_and_counts_it() -> None:
    settlement = settle_refused(running(), UsageFacts(RESET))
    assert settlement.to_state is ItemState.RETRY_SCHEDULED
    assert settlement.not_before == NOW + timedelta(minutes=62)
    assert settlement.reason_code == "rate-limited"
    assert settlement.run_end is not None
    assert settlement.run_end.outcome_class is OutcomeClass.RATE_LIMITED  # the run stays failed
    change = settle(running(), settlement, at=NOW)
    assert (change.after.usage_retries, change.after.crash_retries) == (1, 0)
    assert change.after.claimed_by is None
    reason = change.after.reason or ""
    assert "usage retry 1 of 5 resumes its session at 2026-11-30T13:02:00.000Z" in reason
    assert "the provider reported its reset at 2026-11-30T13:00:00.000Z" in reason


def test_a_provider_outage_without_a_reset_takes_the_backoff() -> None:
    settlement = settle_refused(running(), None, outcome_class=OutcomeClass.PROVIDER_UNAVAILABLE)
    assert settlement.to_state is ItemState.RETRY_SCHEDULED
    assert settlement.reason_code == "provider-unavailable"
    assert settlement.not_before == NOW + timedelta(seconds=RETRY.backoff_seconds(1, key=7))
    assert "backoff: the provider named no reset" in (settlement.reason or "")


@pytest.mark.parametrize(
    "outcome_class",
    [
        OutcomeClass.AUTH,
        OutcomeClass.PERMISSION,
        OutcomeClass.BILLING,
        OutcomeClass.CONTEXT_LIMIT,
        OutcomeClass.AGENT_FAILURE,
        OutcomeClass.TIMEOUT,
        OutcomeClass.PROCESS_CRASH,
        OutcomeClass.UNKNOWN,
    ],
)
def test_the_policy_never_opens_for_anything_but_a_limit_or_an_outage(
    outcome_class: OutcomeClass,
) -> None:
    settlement = settle_refused(running(), UsageFacts(RESET), outcome_class=outcome_class)
    assert settlement.to_state is ItemState.NEEDS_ATTENTION
    assert settlement.reason_code == outcome_class.value


def test_without_the_policy_a_rate_limit_needs_attention_as_before() -> None:
    settlement = settle_refused(running(), UsageFacts(RESET), policy=UsagePolicy())
    assert (settlement.to_state, settlement.reason_code) == (
        ItemState.NEEDS_ATTENTION,
        "rate-limited",
    )
    assert settlement.next_action == "wrighty requeue 7 --resume"


def test_usage_retries_have_a_counter_of_their_own() -> None:
    crashed_twice = running(usage_retries=4, crash_retries=2)
    last = settle_refused(crashed_twice, UsageFacts(RESET))
    assert last.to_state is ItemState.RETRY_SCHEDULED  # crashes did not use up the budget
    assert "usage retry 5 of 5" in (last.reason or "")
    change = settle(crashed_twice, last, at=NOW)
    assert (change.after.usage_retries, change.after.crash_retries) == (5, 2)
    crash = CrashPolicy("retry", 120, 2, 900, 2)
    classification, run_end = refused(OutcomeClass.PROCESS_CRASH)
    after_crash = after_run(
        running(usage_retries=5), classification, run_end, timeout_seconds=60, crash_policy=crash
    )
    assert after_crash.to_state is ItemState.RETRY_SCHEDULED  # and refusals not the crashes'


def test_the_refusal_after_the_last_usage_retry_needs_attention_naming_it_all() -> None:
    settlement = settle_refused(running(usage_retries=5), UsageFacts(RESET))
    assert (settlement.to_state, settlement.reason_code) == (
        ItemState.NEEDS_ATTENTION,
        "retries-exhausted",
    )
    reason = settlement.reason or ""
    assert "refused 6 times, the first run and 5 usage retries" in reason
    assert "rate-limited" in reason
    assert "the last reset it reported was 2026-11-30T13:00:00.000Z" in reason
    assert settlement.next_action == "wrighty requeue 7 --resume"


def test_a_session_that_cannot_be_resumed_is_no_silent_fresh_start() -> None:
    settlement = settle_refused(
        running(), UsageFacts(RESET, provider_answered=True), resume_missing=("no transcript",)
    )
    assert (settlement.to_state, settlement.reason_code) == (
        ItemState.NEEDS_ATTENTION,
        "resume-state-missing",
    )
    assert settlement.next_action == "wrighty requeue 7 --fresh"


def test_a_run_refused_before_any_answer_retries_in_a_new_session() -> None:
    settlement = settle_refused(
        running(), UsageFacts(RESET, provider_answered=False), resume_missing=("no transcript",)
    )
    assert (settlement.to_state, settlement.reason_code) == (
        ItemState.RETRY_SCHEDULED,
        USAGE_RETRY_FRESH,
    )
    assert "usage retry 1 of 5 starts a new session" in (settlement.reason or "")
    # When due, its claim starts fresh even though the session cannot be resumed.
    session = Session(7, "claude", "s-1", "/tmp/gone", "inst-a")
    facts = ResumeFacts(session, installation_id="inst-a", adapter="claude", can_resume=True,
                        workspace_exists=False, transcript_problem=None)  # fmt: skip
    fresh = choose_run(
        claimed_from=ItemState.RETRY_SCHEDULED, resume=facts, retry_reason=USAGE_RETRY_FRESH
    )
    assert fresh.kind is RunKind.FRESH
    resume = choose_run(
        claimed_from=ItemState.RETRY_SCHEDULED, resume=facts, retry_reason="rate-limited"
    )
    assert (resume.kind, bool(resume.missing)) == (RunKind.RESUME, True)
