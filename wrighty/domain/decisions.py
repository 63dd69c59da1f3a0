"""Where an item goes after its run, from the run's classification (pure)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta

from wrighty.domain import suggestions
from wrighty.domain.claims import Settlement
from wrighty.domain.classify import Classification
from wrighty.domain.durations import format_duration
from wrighty.domain.model import COMMIT_FAILED, HANDED_OFF, OFF_BRANCH, REJECTED, Item, RunEnd
from wrighty.domain.outcomes import (
    USAGE_CLASSES,
    USAGE_RETRY_FRESH,
    Confidence,
    OutcomeClass,
    RunKind,
)
from wrighty.domain.redact import redact
from wrighty.domain.resume import ResumeFacts, resume_gaps
from wrighty.domain.retry import (
    AGENT_REPORTED,
    CrashPolicy,
    Fallback,
    ResetHint,
    UsageDue,
    UsagePolicy,
    choose_fallback,
)
from wrighty.domain.states import ItemState
from wrighty.domain.text import clip, plural
from wrighty.domain.times import rfc3339

_ATTENTION_REASONS = {
    OutcomeClass.TIMEOUT: "the run passed its time limit{limit} and was stopped",
    OutcomeClass.PROCESS_CRASH: "the agent process crashed ({summary})",
    OutcomeClass.AGENT_FAILURE: "the agent failed ({summary})",
}


@dataclass(frozen=True)
class UsageFacts:
    """What the run's vendor output said about a usage failure."""

    hint: ResetHint | None = None  # when the provider said its limit lifts
    provider_answered: bool = True  # whether the provider answered at least once
    # The agent's fallbacks (agents.<name>.fallback), in order, as the worker found them.
    fallbacks: tuple[Fallback, ...] = ()


def after_run(
    item: Item,
    classification: Classification,
    run_end: RunEnd,
    *,
    timeout_seconds: float,
    crash_policy: CrashPolicy | None = None,
    usage_policy: UsagePolicy | None = None,
    usage: UsageFacts | None = None,
    resume_missing: tuple[str, ...] = (),
) -> Settlement:
    """The settlement for a finished run whose claim is still held. Only a process crash or
    a usage failure, under a policy that says retry, can lead to a retry; ``resume_missing``
    names what the session lacks for a resume (empty when the resume address is complete)."""
    outcome = classification.outcome_class
    if outcome is OutcomeClass.SUCCEEDED:
        return Settlement(ItemState.DONE, process_started=True, run_end=run_end)
    if outcome is OutcomeClass.PROCESS_CRASH and crash_policy and crash_policy.action == "retry":
        return _after_crash(item, classification, run_end, crash_policy, resume_missing)
    if outcome in USAGE_CLASSES and usage_policy and usage_policy.action == "retry":
        facts = usage or UsageFacts()
        return _after_usage(item, classification, run_end, usage_policy, facts, resume_missing)
    template = _ATTENTION_REASONS.get(
        classification.outcome_class, "the run ended as {cls} ({summary})"
    )
    reason = template.format(
        summary=classification.summary,
        cls=classification.outcome_class,
        limit=f" of {format_duration(timeout_seconds)}",
    )
    return attention(
        item,
        run_end,
        classification.outcome_class.value,
        f"{reason}; the workspace is kept",
        resumable=not resume_missing,
    )


def _after_crash(
    item: Item,
    classification: Classification,
    run_end: RunEnd,
    policy: CrashPolicy,
    resume_missing: tuple[str, ...],
) -> Settlement:
    crash = f"the agent process crashed ({classification.summary})"
    if resume_missing:
        return _not_resumable(item, run_end, crash, resume_missing)
    retry = item.crash_retries + 1
    if retry > policy.max_attempts:
        return attention(
            item,
            run_end,
            "retries-exhausted",
            f"{crash}; it crashed {retry} times, the first run and "
            f"{policy.max_attempts} {plural(policy.max_attempts, 'retry', 'retries')} "
            "(worker.processCrash.maxAttempts)",
            resumable=True,
        )
    due = run_end.ended_at + timedelta(seconds=policy.delay_seconds(retry))
    return Settlement(
        ItemState.RETRY_SCHEDULED,
        process_started=True,
        run_end=run_end,
        reason_code="process-crash",
        reason=f"{crash}; retry {retry} of {policy.max_attempts} resumes its session at "
        f"{rfc3339(due)}",
        not_before=due,
        counts_as_crash_retry=True,
    )


def _after_usage(
    item: Item,
    classification: Classification,
    run_end: RunEnd,
    policy: UsagePolicy,
    usage: UsageFacts,
    resume_missing: tuple[str, ...],
) -> Settlement:
    """A rate limit or an outage under `worker.usageFailure`: a retry at the provider's reset
    (or after the backoff) that resumes the session. A run the provider refused before it
    answered once did no work: when its session cannot be resumed, its retry starts a new one
    (in the same workspace) rather than waiting for a person."""
    cls = classification.outcome_class
    said = f"the provider refused the run ({cls}: {classification.summary})"
    retry = item.usage_retries + 1
    due = policy.due(retry, ended_at=run_end.ended_at, hint=usage.hint, key=item.id)
    wait = (due.at - run_end.ended_at).total_seconds()
    choice = choose_fallback(policy, usage.fallbacks, handoffs=item.handoffs, wait_seconds=wait)
    if choice.agent is not None:
        return Settlement(
            ItemState.RETRY_SCHEDULED,
            process_started=True,
            run_end=run_end,
            reason_code=HANDED_OFF,
            reason=f"{said}; its retry would wait until {rfc3339(due.at)} "
            f"({_basis(due, usage.hint)}), longer than worker.usageFailure.handoffAfterMinutes: "
            f"handed off to {choice.agent}",
            not_before=run_end.ended_at,
            handoff_to=choice.agent,
        )
    said += choice.why  # why it waits although it may be handed off, if it may
    fresh = bool(resume_missing) and not usage.provider_answered
    if resume_missing and not fresh:
        return _not_resumable(item, run_end, said, resume_missing)
    reset = usage.hint.moment(run_end.ended_at) if usage.hint is not None else None
    if retry > policy.max_attempts:
        last = f"; the last reset it reported was {rfc3339(reset)}" if reset else ""
        return attention(
            item,
            run_end,
            "retries-exhausted",
            f"{said}; it was refused {retry} times, the first run and "
            f"{policy.max_attempts} usage {plural(policy.max_attempts, 'retry', 'retries')} "
            f"(worker.usageFailure.maxAttempts){last}",
            resumable=not resume_missing,
        )
    what = "starts a new session" if fresh else "resumes its session"
    return Settlement(
        ItemState.RETRY_SCHEDULED,
        process_started=True,
        run_end=run_end,
        reason_code=USAGE_RETRY_FRESH if fresh else cls.value,
        reason=f"{said}; usage retry {retry} of {policy.max_attempts} {what} at "
        f"{rfc3339(due.at)} ({_basis(due, usage.hint)})",
        not_before=due.at,
        counts_as_usage_retry=True,
    )


def _basis(due: UsageDue, hint: ResetHint | None) -> str:
    if due.basis == "backoff":
        return "backoff: the provider named no reset"
    who = "the agent" if hint is not None and hint.source == AGENT_REPORTED else "the provider"
    return f"{who} reported its reset at {rfc3339(due.reset)}"


def _not_resumable(
    item: Item, run_end: RunEnd, said: str, resume_missing: tuple[str, ...]
) -> Settlement:
    """A run that would be retried, but whose session cannot be resumed: a person decides."""
    why = "; ".join(resume_missing)
    reason = f"{said}; no retry, as its session cannot be resumed: {why}"
    return attention(item, run_end, "resume-state-missing", reason, resumable=False)


def attention(
    item: Item, run_end: RunEnd, reason_code: str, reason: str, *, resumable: bool
) -> Settlement:
    """A finished run's item waits for a person, with the command that puts it back to work."""
    return Settlement(
        ItemState.NEEDS_ATTENTION,
        process_started=True,
        run_end=run_end,
        reason_code=reason_code,
        reason=reason,
        next_action=suggestions.requeue(item.id, resume=resumable),
    )


def start_failed(item: Item, run_end: RunEnd, *, why: str, resumable: bool = False) -> Settlement:
    """No agent process was started. A person decides: putting the item straight back in the
    queue would make the next claim fail the same way, many times a second. ``resumable``:
    the run was to resume a session that can still be resumed."""
    return Settlement(
        ItemState.NEEDS_ATTENTION,
        process_started=False,
        run_end=run_end,
        reason_code="start-failed",
        reason=f"the agent could not be started: {why}",
        next_action=suggestions.requeue(item.id, resume=resumable),
    )


INTERNAL_ERROR_SUMMARY_CHARS = 300


def describe_error(error: BaseException) -> str:
    """An unexpected exception as one redacted, bounded line: its class and the first line of
    its message (never a traceback)."""
    lines = str(error).strip().splitlines()
    summary = clip(redact(lines[0]), INTERNAL_ERROR_SUMMARY_CHARS) if lines else ""
    return f"{type(error).__name__}: {summary}" if summary else type(error).__name__


def internal_error(
    item: Item,
    error: BaseException,
    *,
    at: datetime,
    run_recorded: bool,
    process_started: bool,
    resumable: bool,
    diagnostic: str = "",
) -> Settlement:
    """wrighty itself failed on this item (a bug, or a value it could not handle): a person
    looks, and the worker goes on with other items. ``run_recorded``: a run was started under
    the claim, and ends as internal-error; ``diagnostic`` adds to its first line (the
    agent's output, if it ran)."""
    what = describe_error(error)
    run_end = (
        RunEnd(
            at,
            OutcomeClass.INTERNAL_ERROR,
            Confidence.AUTHORITATIVE,
            diagnostic="\n".join(part for part in (f"wrighty failed: {what}", diagnostic) if part),
        )
        if run_recorded
        else None
    )
    return Settlement(
        ItemState.NEEDS_ATTENTION,
        process_started=process_started,
        run_end=run_end,
        reason_code=OutcomeClass.INTERNAL_ERROR.value,
        reason=f"wrighty failed on this item ({what}); the workspace is kept",
        next_action=suggestions.requeue(item.id, resume=resumable),
    )


CONTINUATION_PROMPT = (
    "The previous attempt at this task ended before it finished (its process crashed, its "
    "provider refused it for a while, or its worker stopped). Continue from where it left off: "
    "the workspace holds its partial work.\n\n"
    "The task was:\n"
)


@dataclass(frozen=True)
class RunChoice:
    """Whether the next run starts fresh or resumes the recorded session."""

    kind: RunKind
    missing: tuple[str, ...] = ()  # why a needed resume is impossible; empty when fine


def choose_run(
    *, claimed_from: ItemState, resume: ResumeFacts | None, retry_reason: str | None = None
) -> RunChoice:
    """A due retry resumes its session; anything else starts fresh. A retry whose resume
    address is incomplete is never silently run fresh: only a usage retry whose settlement
    said so (``retry_reason``, the reason code it waited with) starts a new session, and so
    does a rejected item's when its session cannot be resumed.
    ``resume``: what this installation sees of the item's recorded session; None when none is
    recorded (or, as it starts fresh anyway, when the claim did not take a due retry)."""
    # A usage retry whose settlement said so, and a handoff (another agent: a session of its
    # own), start a new session.
    fresh_retry = retry_reason in (USAGE_RETRY_FRESH, HANDED_OFF)
    if claimed_from is not ItemState.RETRY_SCHEDULED or resume is None or fresh_retry:
        return RunChoice(RunKind.FRESH)
    gaps = resume_gaps(resume)
    if gaps and retry_reason == REJECTED:
        # The rejected work is in the workspace, and the feedback is about it: a new session
        # is told the task and the feedback (docs/work-product.md#review).
        return RunChoice(RunKind.FRESH)
    return RunChoice(RunKind.RESUME, gaps)


def resume_state_missing(item: Item, missing: tuple[str, ...]) -> Settlement:
    return Settlement(
        ItemState.NEEDS_ATTENTION,
        process_started=False,
        reason_code="resume-state-missing",
        reason="the retry cannot resume its session: " + "; ".join(missing),
        next_action=suggestions.requeue(item.id, resume=False),
    )


def after_shutdown(item: Item, run_end: RunEnd, *, resumable: bool) -> Settlement:
    """The worker was asked to stop while the agent ran: leave the item where the next worker
    can continue it — a resume when the session can be resumed, otherwise a person decides."""
    if resumable:
        return Settlement(
            ItemState.RETRY_SCHEDULED,
            process_started=True,
            run_end=run_end,
            reason_code="worker-stopped",
            reason="the worker was stopped; the next worker resumes the session",
            not_before=run_end.ended_at,
        )
    return attention(
        item,
        run_end,
        "worker-stopped",
        "the worker was stopped while the agent ran and its session cannot be resumed; "
        "the workspace is kept",
        resumable=False,
    )


def commit_failed(item: Item, run_end: RunEnd | None, why: str) -> Settlement:
    """A done run whose commit failed waits for a person: its changes stay in the worktree,
    and a resumed run (or a person's own commit) finishes it. ``run_end``: None when no run
    ends with it (the checks passed by hand)."""
    return Settlement(
        ItemState.NEEDS_ATTENTION,
        process_started=True,
        run_end=run_end,
        reason_code=COMMIT_FAILED,
        reason=f"the run succeeded but wrighty could not commit its changes: {why}; they are "
        "still in the item's worktree (fix the cause, e.g. the hook or completion.author, "
        "then resume it, or commit them by hand)",
        next_action=suggestions.requeue(item.id, resume=True),
    )


def off_branch(item: Item, run_end: RunEnd, why: str) -> Settlement:
    """A done run whose worktree is not on the item's branch waits for a person, before its
    checks and its commit: nothing is committed anywhere (work_product.off_branch_reason)."""
    return Settlement(
        ItemState.NEEDS_ATTENTION,
        process_started=True,
        run_end=run_end,
        reason_code=OFF_BRANCH,
        reason=why,
        next_action=suggestions.requeue(item.id, resume=True),
    )


# The start of a done item's reason when its run changed nothing (docs/work-product.md#review).
NO_CHANGE = "no change"


def unchanged(settlement: Settlement) -> Settlement:
    """A done run that changed nothing: its branch is still the commit it was made from, and
    nothing was left to commit. Said first in its reason, for the person who reviews it."""
    did = settlement.reason or "the run succeeded"
    reason = f"{NO_CHANGE}: {did}, but its branch is still its base (nothing was changed)"
    return dataclasses.replace(settlement, reason=reason)


def uncommitted(settlement: Settlement) -> Settlement:
    """A done run whose agent (completion.commit "agent") left changes it did not commit."""
    said = "the agent left uncommitted changes in its worktree (completion.commit is agent)"
    reason = f"{settlement.reason}; {said}" if settlement.reason else said
    return dataclasses.replace(settlement, reason=reason)
