"""What a run is for, as its agent is told (``WRIGHTY_RUN_KIND``), and what it gets on standard
input (pure; docs/worker.md#what-a-run-is-told).

The store's `RunKind` (fresh, resume, fix) says whether a run continues the item's session; an
agent also needs to know why it was started: a rejection's feedback and a handoff come to a
session that may be new or resumed, and are worded apart from a crash's resume.
"""

from __future__ import annotations

from enum import StrEnum

from wrighty.domain.handoff import owes_handoff
from wrighty.domain.model import LANDING_FIX_TURNS
from wrighty.domain.outcomes import RunKind
from wrighty.domain.review import owes_feedback

RUN_KIND_VARIABLE = "WRIGHTY_RUN_KIND"


class AgentRunKind(StrEnum):
    """What the run is for, as ``WRIGHTY_RUN_KIND`` tells its agent."""

    FRESH = "fresh"  # a new session on the task: the item's first run, or a start over
    RESUME = "resume"  # the session again, after a crash, a refusal or a stopped worker
    FIX = "fix"  # the session again, told what its checks said (docs/verify.md)
    REJECTED = "rejected"  # told a person's feedback (docs/work-product.md#review)
    HANDOFF = "handoff"  # a new agent, told what the one before it left (docs/handoff.md)
    LANDING = "landing"  # told why its accepted work could not land as it is (docs/landing.md)


def agent_run_kind(
    session: RunKind, *, claimed_reason_code: str | None, has_feedback: bool
) -> AgentRunKind:
    """The kind of a run whose session starts as ``session``, claimed from a retry scheduled
    with ``claimed_reason_code`` (None: not a retry), for an item that holds a person's
    feedback or not (``has_feedback``)."""
    if owes_handoff(claimed_reason_code) and not session.resumes:
        return AgentRunKind.HANDOFF
    if owes_feedback(claimed_reason_code) and has_feedback:
        return AgentRunKind.REJECTED
    if claimed_reason_code in LANDING_FIX_TURNS and has_feedback:
        return AgentRunKind.LANDING
    return {
        RunKind.FRESH: AgentRunKind.FRESH,
        RunKind.RESUME: AgentRunKind.RESUME,
        RunKind.FIX: AgentRunKind.FIX,
    }[session]


def stdin_text(kind: AgentRunKind, *, resumes: bool, task: str, told: str) -> str:
    """What the agent reads on standard input. ``told``: what the kind adds to the task (the
    continuation prompt, the checks' or the person's feedback, the handoff prompt). A resumed
    session holds the task already and is told ``told`` alone; a new session gets the task
    first, unless ``told`` carries it (a handoff's)."""
    if kind is AgentRunKind.FRESH:
        return task
    if resumes or kind is AgentRunKind.HANDOFF:
        return told
    return f"{task}\n\n{told}"
