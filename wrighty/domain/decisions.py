"""Where an item goes after its run, from the run's classification (pure)."""

from __future__ import annotations

from wrighty.domain.claims import Settlement
from wrighty.domain.classify import Classification
from wrighty.domain.durations import format_duration
from wrighty.domain.model import Item, RunEnd
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState

_ATTENTION_REASONS = {
    OutcomeClass.TIMEOUT: "the run passed its time limit{limit} and was stopped",
    OutcomeClass.PROCESS_CRASH: "the agent process crashed ({summary})",
    OutcomeClass.AGENT_FAILURE: "the agent reported that the task failed ({summary})",
    OutcomeClass.UNKNOWN: "the run ended without a clear outcome ({summary})",
    OutcomeClass.START_FAILED: "the agent could not be started ({summary})",
}


def after_run(
    item: Item, classification: Classification, run_end: RunEnd, *, timeout_seconds: float
) -> Settlement:
    """The settlement for a finished run whose claim is still held."""
    if classification.outcome_class is OutcomeClass.SUCCEEDED:
        return Settlement(ItemState.DONE, process_started=True, run_end=run_end)
    template = _ATTENTION_REASONS.get(
        classification.outcome_class, "the run ended as {cls} ({summary})"
    )
    reason = template.format(
        summary=classification.summary,
        cls=classification.outcome_class,
        limit=f" of {format_duration(timeout_seconds)}",
    )
    return Settlement(
        ItemState.NEEDS_ATTENTION,
        process_started=True,
        run_end=run_end,
        reason_code=classification.outcome_class.value,
        reason=f"{reason}; the workspace is kept",
        next_action=f"wrighty show {item.id}",
    )


def start_failed(item: Item, run_end: RunEnd, *, why: str, claimed_from: ItemState) -> Settlement:
    """No agent process was started: back where the claim found the item."""
    return Settlement(
        claimed_from,
        process_started=False,
        run_end=run_end,
        reason_code="start-failed",
        reason=f"the agent could not be started: {why}",
        not_before=run_end.ended_at if claimed_from is ItemState.RETRY_SCHEDULED else None,
        next_action=f"wrighty show {item.id}",
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
    return Settlement(
        ItemState.NEEDS_ATTENTION,
        process_started=True,
        run_end=run_end,
        reason_code="worker-stopped",
        reason="the worker was stopped while the agent ran and its session cannot be resumed; "
        "the workspace is kept",
        next_action=f"wrighty show {item.id}",
    )
