"""One decision per claim (domain/decide.py), row by row: what wins when a run's ending holds
several facts at once. Each row sets two or more facts that would each decide alone, and says
which one wins; a change of precedence makes the row fail."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.factories import claimed_item
from wrighty.domain.budgets import AgentHold
from wrighty.domain.check_evidence import CheckEvidence
from wrighty.domain.claims import Settlement
from wrighty.domain.classify import Classification, StopReason
from wrighty.domain.decide import (
    BudgetFacts,
    ChecksDue,
    ChecksRun,
    ClaimEnding,
    CommitFacts,
    Decision,
    FinishDue,
    Finished,
    Policies,
    decide,
)
from wrighty.domain.model import Item, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.retry import CrashPolicy, UsagePolicy
from wrighty.domain.states import ItemState
from wrighty.domain.usage import Limit, Usage
from wrighty.domain.verify import Check, VerifyPolicy

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TESTS = Check("tests", ("pytest",))
CHECKS = VerifyPolicy((TESTS,), max_fix_turns=2)
PLAIN = Policies(timeout_seconds=600)
STRICT = Policies(
    timeout_seconds=600,
    crash_policy=CrashPolicy("retry"),
    usage_policy=UsagePolicy("retry"),
    verify=CHECKS,
    review_by_person=True,
)
PASSED = (CheckEvidence("tests", ("pytest",), 1.0, exit_code=0),)
FAILED = (CheckEvidence("tests", ("pytest",), 1.0, exit_code=1, output_tail="1 failed"),)
# a check that failed as it fails on the item's base too (docs/verify.md)
ON_BASE = (CheckEvidence("tests", ("pytest",), 1.0, exit_code=1, fails_on_base=True),)
OVER = BudgetFacts(Limit(max_cost_usd=1.0), Usage(cost_usd=2.0, final=True))
HOLD = AgentHold("claude", Limit(max_cost_usd=5.0), Usage(cost_usd=6.0, final=True), NOW)
UNDER_HELD = BudgetFacts(Limit(max_cost_usd=10.0), Usage(cost_usd=2.0, final=True), HOLD)
COMMITTED = Finished(commit=CommitFacts())
NO_BRANCH = Finished()


def item(**changes: Any) -> Item:
    """Item 7 as a worker holds it under generation 3, its lease a minute ahead."""
    held = {
        "id": 7, "generation": 3, "lease_expires_at": NOW + timedelta(minutes=1),
        "queued_at": NOW, "created_at": NOW, "updated_at": NOW,
    }  # fmt: skip
    return claimed_item(**{**held, **changes})


def ending(outcome: OutcomeClass, **facts: object) -> ClaimEnding:
    result = Classification(outcome, Confidence.AUTHORITATIVE, outcome.value)
    claimed = facts.pop("item", item())
    run_end = RunEnd(NOW, outcome, Confidence.AUTHORITATIVE, exit_code=0)
    return ClaimEnding(claimed, result, run_end, **facts)  # type: ignore[arg-type]


SUCCEEDED = OutcomeClass.SUCCEEDED
SHUTDOWN = StopReason.SHUTDOWN

# (the row's name, the ending, the policies, what is decided: a step due, or the settlement's
# state and reason code, or None for a lost claim)
ROWS: list[tuple[str, ClaimEnding, Policies, object]] = [
    # a stopped worker wins over everything the run itself says
    (
        "shutdown over a spent budget",
        ending(OutcomeClass.BUDGET_EXCEEDED, stopped_by=SHUTDOWN, budget=OVER),
        STRICT,
        (ItemState.RETRY_SCHEDULED, "worker-stopped"),
    ),
    (
        "shutdown over checks due",
        ending(SUCCEEDED, stopped_by=SHUTDOWN),
        STRICT,
        (ItemState.RETRY_SCHEDULED, "worker-stopped"),
    ),
    (
        "shutdown over a crash retry",
        ending(OutcomeClass.PROCESS_CRASH, stopped_by=SHUTDOWN),
        STRICT,
        (ItemState.RETRY_SCHEDULED, "worker-stopped"),
    ),
    (
        "shutdown without a resumable session",
        ending(SUCCEEDED, stopped_by=SHUTDOWN, resume_missing=("session id",)),
        STRICT,
        (ItemState.NEEDS_ATTENTION, "worker-stopped"),
    ),
    (
        "shutdown over a finished commit",
        ending(SUCCEEDED, stopped_by=SHUTDOWN, finished=COMMITTED),
        PLAIN,
        (ItemState.RETRY_SCHEDULED, "worker-stopped"),
    ),
    # a spent budget wins over the retry policies and the checks
    (
        "budget over a usage retry",
        ending(OutcomeClass.BUDGET_EXCEEDED, budget=OVER),
        STRICT,
        (ItemState.NEEDS_ATTENTION, "budget-exceeded"),
    ),
    (
        "the agent's day budget, the item's not spent",
        ending(OutcomeClass.BUDGET_EXCEEDED, budget=UNDER_HELD),
        STRICT,
        (ItemState.NEEDS_ATTENTION, "budget-exceeded"),
    ),
    (
        "budget over stale checks",
        ending(OutcomeClass.BUDGET_EXCEEDED, budget=OVER, checks=ChecksRun(evidence=PASSED)),
        STRICT,
        (ItemState.NEEDS_ATTENTION, "budget-exceeded"),
    ),
    # the run's own outcome under the policies, when no checks are due
    (
        "a crash under a retry policy",
        ending(OutcomeClass.PROCESS_CRASH),
        STRICT,
        (ItemState.RETRY_SCHEDULED, "process-crash"),
    ),
    (
        "a crash without one",
        ending(OutcomeClass.PROCESS_CRASH),
        PLAIN,
        (ItemState.NEEDS_ATTENTION, "process-crash"),
    ),
    (
        "a refusal under a usage retry",
        ending(OutcomeClass.RATE_LIMITED),
        STRICT,
        (ItemState.RETRY_SCHEDULED, "rate-limited"),
    ),
    (
        "a failed agent ignores a finish's facts",
        ending(OutcomeClass.AGENT_FAILURE, finished=COMMITTED),
        STRICT,
        (ItemState.NEEDS_ATTENTION, "agent-failure"),
    ),
    (
        "a failed run has no checks due",
        ending(OutcomeClass.AGENT_FAILURE),
        STRICT,
        (ItemState.NEEDS_ATTENTION, "agent-failure"),
    ),
    # checks come before the finish of a succeeded run
    (
        "checks due before the finish",
        ending(SUCCEEDED, finished=COMMITTED),
        STRICT,
        ChecksDue((TESTS,)),
    ),
    (
        "an item that chose no check is finished",
        ending(SUCCEEDED, item=item(verify_checks=())),
        STRICT,
        FinishDue,
    ),
    (
        "a check the agent does not have is still due",
        ending(SUCCEEDED, item=item(verify_checks=("lint",))),
        STRICT,
        ChecksDue((), ("lint",)),
    ),
    (
        "off the branch before the checks, over a shutdown during them",
        ending(SUCCEEDED, checks=ChecksRun(off_branch="detached", stopped_by=SHUTDOWN)),
        STRICT,
        (ItemState.NEEDS_ATTENTION, "off-branch"),
    ),
    (
        "off the branch before the checks, over a commit",
        ending(SUCCEEDED, checks=ChecksRun(off_branch="detached"), finished=COMMITTED),
        STRICT,
        (ItemState.NEEDS_ATTENTION, "off-branch"),
    ),
    (
        "a shutdown during the checks",
        ending(SUCCEEDED, checks=ChecksRun(stopped_by=SHUTDOWN)),
        STRICT,
        (ItemState.RETRY_SCHEDULED, "worker-stopped"),
    ),
    (
        "the claim lost during the checks, over a commit",
        ending(SUCCEEDED, checks=ChecksRun(stopped_by=StopReason.FENCED), finished=COMMITTED),
        STRICT,
        None,
    ),
    (
        "failed checks with fix turns left, over a commit",
        ending(SUCCEEDED, checks=ChecksRun(evidence=FAILED), finished=COMMITTED),
        STRICT,
        (ItemState.RETRY_SCHEDULED, "verification-failed"),
    ),
    (
        "failed checks with no fix turn left",
        ending(SUCCEEDED, item=item(fix_turns=2), checks=ChecksRun(evidence=FAILED)),
        STRICT,
        (ItemState.NEEDS_ATTENTION, "verification-failed"),
    ),
    (
        "a check failing on the base too spends no fix turn: the finish is due",
        ending(SUCCEEDED, checks=ChecksRun(evidence=ON_BASE)),
        STRICT,
        FinishDue,
    ),
    (
        "a check failing on the base too, with no fix turn left: the finish is due",
        ending(SUCCEEDED, item=item(fix_turns=2), checks=ChecksRun(evidence=ON_BASE)),
        STRICT,
        FinishDue,
    ),
    (
        "a check failing on the base too waits for review with its commit",
        ending(SUCCEEDED, checks=ChecksRun(evidence=ON_BASE), finished=COMMITTED),
        STRICT,
        (ItemState.REVIEW, "ready-for-review"),
    ),
    (
        "the agent's own failure beside one failing on the base: a fix turn",
        ending(SUCCEEDED, checks=ChecksRun(evidence=(*ON_BASE, *FAILED)), finished=COMMITTED),
        STRICT,
        (ItemState.RETRY_SCHEDULED, "verification-failed"),
    ),
    (
        "passed checks: the finish is due",
        ending(SUCCEEDED, checks=ChecksRun(evidence=PASSED)),
        STRICT,
        FinishDue,
    ),
    # the finish: the branch guard, then the commit, then review
    (
        "off the branch at the finish, over a failed commit and review",
        ending(
            SUCCEEDED,
            finished=Finished(off_branch="detached", commit=CommitFacts(failed=True, why="hook")),
        ),
        PLAIN,
        (ItemState.NEEDS_ATTENTION, "off-branch"),
    ),
    (
        "a failed commit over review",
        ending(
            SUCCEEDED,
            checks=ChecksRun(evidence=PASSED),
            finished=Finished(commit=CommitFacts(failed=True, why="hook", uncommitted=True)),
        ),
        STRICT,
        (ItemState.NEEDS_ATTENTION, "commit-failed"),
    ),
    (
        "passed checks and a commit wait for review",
        ending(SUCCEEDED, checks=ChecksRun(evidence=PASSED), finished=COMMITTED),
        STRICT,
        (ItemState.REVIEW, "ready-for-review"),
    ),
    (
        "a commit without review is done",
        ending(SUCCEEDED, finished=COMMITTED),
        PLAIN,
        (ItemState.DONE, None),
    ),
    ("no branch: done", ending(SUCCEEDED, finished=NO_BRANCH), PLAIN, (ItemState.DONE, None)),
    (
        "a succeeded run with nothing configured: the finish is due",
        ending(SUCCEEDED),
        PLAIN,
        FinishDue,
    ),
]


def _shape(decision: Decision) -> object:
    if isinstance(decision, Settlement):
        return (decision.to_state, decision.reason_code)
    if isinstance(decision, FinishDue):
        assert decision.settlement.to_state is ItemState.DONE
        return FinishDue
    return decision


@pytest.mark.parametrize(
    ("the_ending", "policies", "decided"),
    [pytest.param(row[1], row[2], row[3], id=row[0]) for row in ROWS],
)
def test_what_wins(the_ending: ClaimEnding, policies: Policies, decided: object) -> None:
    assert _shape(decide(the_ending, policies)) == decided


def test_a_budget_stop_by_the_agents_day_says_so() -> None:
    settled = decide(ending(OutcomeClass.BUDGET_EXCEEDED, budget=UNDER_HELD), PLAIN)
    assert isinstance(settled, Settlement)
    assert "claude's budget for the day" in (settled.reason or "")


def test_changes_left_uncommitted_are_said_and_still_reviewed() -> None:
    finished = Finished(commit=CommitFacts(uncommitted=True))
    settled = decide(ending(SUCCEEDED, checks=ChecksRun(evidence=PASSED), finished=finished),
                     STRICT)  # fmt: skip
    assert isinstance(settled, Settlement)
    assert settled.to_state is ItemState.REVIEW
    assert "uncommitted changes" in (settled.reason or "")


def test_a_run_that_changed_nothing_says_so_first() -> None:
    finished = Finished(commit=CommitFacts(unchanged=True))
    settled = decide(ending(SUCCEEDED, finished=finished), PLAIN)
    assert isinstance(settled, Settlement)
    assert settled.to_state is ItemState.DONE
    assert (settled.reason or "").startswith("no change")


def test_a_fix_turn_counts_as_one() -> None:
    settled = decide(ending(SUCCEEDED, checks=ChecksRun(evidence=FAILED)), STRICT)
    assert isinstance(settled, Settlement)
    assert settled.counts_as_fix_turn


def test_there_are_enough_rows() -> None:
    assert len(ROWS) >= 25
    assert len({row[0] for row in ROWS}) == len(ROWS)
