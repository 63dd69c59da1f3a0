"""One decision per claim: where an item goes once its run has ended, and which step is due
before that can be said (docs/worker.md#7-settle).

A claim's life gathers facts as it goes (the run's ending, its checks, its commit) into one
`ClaimEnding`; `decide` reads them with the worker's `Policies` and answers either the
`Settlement` to write, or the next step that must add its facts first (`ChecksDue`,
`FinishDue`), or None when the claim was lost on the way and nothing more is written. The
precedence between the producers (a stopped worker, a spent budget, the checks, the crash and
usage policies, the branch guard, the commit, review) lives here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from wrighty.domain import budgets, decisions, review, verify
from wrighty.domain.check_evidence import CheckEvidence
from wrighty.domain.claims import Settlement
from wrighty.domain.classify import Classification, StopReason
from wrighty.domain.landing import after_fix_turn
from wrighty.domain.model import Item, RunEnd
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.retry import CrashPolicy, UsagePolicy
from wrighty.domain.states import ItemState
from wrighty.domain.usage import Limit, Usage
from wrighty.domain.verify import Check, VerifyPolicy
from wrighty.domain.work_product import CommitResult, Completion, Ending


@dataclass(frozen=True)
class Policies:
    """What the worker's configuration says about every claim's ending."""

    timeout_seconds: float  # the run's time limit, as a reason for a timeout names it
    crash_policy: CrashPolicy | None = None
    usage_policy: UsagePolicy | None = None
    verify: VerifyPolicy | None = None  # the agent's checks (None: wrighty.json has none)
    review_by_person: bool = False  # completion.review "person"
    # A landing's fix turn (docs/landing.md): completion.reviewAfterFix; None: not one.
    landing_fix: Literal["person", "auto"] | None = None


@dataclass(frozen=True)
class BudgetFacts:
    """The budgets a run was measured against: the item's, what it spent, and its agent's day
    hold when that is what stopped it."""

    limit: Limit
    spent: Usage
    hold: budgets.AgentHold | None = None


@dataclass(frozen=True)
class ChecksRun:
    """What the verify step found: the worktree off the item's branch (why, before any check
    ran), or why the checks were stopped, or their evidence."""

    off_branch: str | None = None
    stopped_by: StopReason | None = None  # SHUTDOWN, or the claim lost (FENCED, CANCELLED)
    evidence: tuple[CheckEvidence, ...] = ()


@dataclass(frozen=True)
class CommitFacts:
    """What the commit after a done run did, as the settlement needs it."""

    failed: bool = False
    why: str = ""  # why it failed
    uncommitted: bool = False  # completion.commit agent: the agent left changes
    unchanged: bool = False  # the branch is still its base: nothing was changed


@dataclass(frozen=True)
class Finished:
    """What the finish step found: the worktree off the item's branch (why; nothing was
    committed), else what its commit did (None: the item has no branch)."""

    off_branch: str | None = None
    commit: CommitFacts | None = None


@dataclass(frozen=True)
class ClaimEnding:
    """The plain facts of one claim's ending, as its steps have gathered them so far."""

    item: Item
    result: Classification
    run_end: RunEnd
    stopped_by: StopReason | None = None  # why wrighty stopped the agent, if it did
    resume_missing: tuple[str, ...] = ()  # what the session lacks for a resume
    budget: BudgetFacts | None = None
    usage: decisions.UsageFacts | None = None
    checks: ChecksRun | None = None  # None: the verify step has not run
    finished: Finished | None = None  # None: the finish step has not run


@dataclass(frozen=True)
class ChecksDue:
    """The verify step is due: these checks, after the names the item chose that its agent
    has no check for."""

    checks: tuple[Check, ...]
    unknown: tuple[str, ...] = ()


@dataclass(frozen=True)
class FinishDue:
    """The finish step is due (the branch guard, then the commit) for a run whose item would
    be done."""

    settlement: Settlement


Decision = Settlement | ChecksDue | FinishDue | None


def decide(ending: ClaimEnding, policies: Policies) -> Decision:
    """Where the item goes, or the step due first; None when the claim was lost."""
    settlement = _before_finish(ending, policies)
    if settlement is None or isinstance(settlement, ChecksDue):
        return settlement
    if settlement.to_state is not ItemState.DONE:
        return settlement
    finished = ending.finished
    if finished is None:
        return FinishDue(settlement)
    if finished.off_branch is not None:
        return decisions.off_branch(ending.item, ending.run_end, finished.off_branch)
    settled = after_commit(
        ending.item, settlement, finished.commit, review_by_person=policies.review_by_person
    )
    if policies.landing_fix is not None:
        return after_fix_turn(ending.item, settled, policies.landing_fix)
    return settled


def checks_due(ending: ClaimEnding, policies: Policies) -> ChecksDue | None:
    """The checks that verify the run: only a succeeded run is verified, and only when its
    item has checks to run (docs/verify.md)."""
    if ending.result.outcome_class is not OutcomeClass.SUCCEEDED:
        return None
    available = policies.verify.checks if policies.verify is not None else ()
    checks, unknown = verify.select_checks(available, ending.item.verify_checks)
    if not checks and not unknown:
        return None
    return ChecksDue(tuple(checks), tuple(unknown))


def commit_facts(done: CommitResult) -> CommitFacts:
    """What the commit step did, as the settlement reads it."""
    return CommitFacts(
        failed=done.ending is Ending.FAILED,
        why=done.why or "",
        uncommitted=done.ending is Ending.UNCOMMITTED,
        unchanged=done.ending is Ending.UNCHANGED,
    )


def done_goes(
    item: Item, settlement: Settlement, done: CommitResult | None, completion: Completion
) -> Settlement:
    """Where ``item`` goes once its work is done (``settlement``: to done) and ``done`` is what
    its commit did (None: it has no branch), as `after_commit` says: `wrighty verify`'s way
    for an item whose checks passed by hand, the same as a worker's done run."""
    facts = commit_facts(done) if done is not None else None
    return after_commit(item, settlement, facts, review_by_person=completion.review == "person")


def after_commit(
    item: Item, settlement: Settlement, commit: CommitFacts | None, *, review_by_person: bool
) -> Settlement:
    """Where ``item`` goes once its work is done (``settlement``: to done) and ``commit`` is
    what its commit did (None: it has no branch): a failed commit waits for a person, changes
    the agent left uncommitted are said, so is a run that changed nothing, and with
    completion.review person it waits for review. A worker's done run and a passing
    `wrighty verify` go this one way (docs/work-product.md)."""
    if commit is not None and commit.failed:
        return decisions.commit_failed(item, settlement.run_end, commit.why)
    if commit is not None and commit.uncommitted:
        settlement = decisions.uncommitted(settlement)
    if commit is not None and commit.unchanged:
        settlement = decisions.unchanged(settlement)
    if settlement.to_state is ItemState.DONE and review_by_person:
        return review.to_review(item, settlement)
    return settlement


def _before_finish(ending: ClaimEnding, policies: Policies) -> Settlement | ChecksDue | None:
    """The settlement before the finish step: a stopped worker, a spent budget, the checks,
    then the run's own outcome under the crash and usage policies."""
    item, run_end = ending.item, ending.run_end
    resumable = not ending.resume_missing
    if ending.stopped_by is StopReason.SHUTDOWN:
        return decisions.after_shutdown(item, run_end, resumable=resumable)
    if ending.result.outcome_class is OutcomeClass.BUDGET_EXCEEDED:
        spent = ending.budget or BudgetFacts(Limit(), Usage(final=True))
        return budgets.after_budget_stop(
            item, run_end, limit=spent.limit, spent=spent.spent, hold=spent.hold,
            resumable=resumable,
        )  # fmt: skip
    due = checks_due(ending, policies)
    if due is None:
        return decisions.after_run(
            item, ending.result, run_end, timeout_seconds=policies.timeout_seconds,
            crash_policy=policies.crash_policy, usage_policy=policies.usage_policy,
            usage=ending.usage, resume_missing=ending.resume_missing,
        )  # fmt: skip
    checks = ending.checks
    if checks is None:
        return due
    if checks.off_branch is not None:
        return decisions.off_branch(item, run_end, checks.off_branch)
    if checks.stopped_by is StopReason.SHUTDOWN:
        return decisions.after_shutdown(item, run_end, resumable=resumable)
    if checks.stopped_by is not None:
        return None
    return verify.after_checks(
        item, run_end, checks.evidence, policy=policies.verify or VerifyPolicy(()),
        fix_turns=item.fix_turns, resume_missing=ending.resume_missing,
    )  # fmt: skip
