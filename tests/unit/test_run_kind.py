"""What kind of run an agent is told it is (WRIGHTY_RUN_KIND) and what it reads on standard
input (docs/worker.md#what-a-run-is-told)."""

from __future__ import annotations

import pytest

from wrighty.domain.model import HANDED_OFF, REJECTED
from wrighty.domain.outcomes import RunKind
from wrighty.domain.run_kind import AgentRunKind, agent_run_kind, stdin_text


@pytest.mark.parametrize(
    ("session", "reason", "feedback", "kind"),
    [
        (RunKind.FRESH, None, False, AgentRunKind.FRESH),
        (RunKind.FRESH, "usage-retry-fresh", False, AgentRunKind.FRESH),
        (RunKind.RESUME, "process-crash", False, AgentRunKind.RESUME),
        (RunKind.FIX, "verification-failed", False, AgentRunKind.FIX),
        (RunKind.RESUME, REJECTED, True, AgentRunKind.REJECTED),
        (RunKind.FRESH, REJECTED, True, AgentRunKind.REJECTED),
        (RunKind.FIX, REJECTED, True, AgentRunKind.REJECTED),
        (RunKind.FRESH, HANDED_OFF, False, AgentRunKind.HANDOFF),
        (RunKind.FRESH, HANDED_OFF, True, AgentRunKind.HANDOFF),
    ],
)
def test_each_run_is_told_what_it_is_for(
    session: RunKind, reason: str | None, feedback: bool, kind: AgentRunKind
) -> None:
    assert agent_run_kind(session, claimed_reason_code=reason, has_feedback=feedback) is kind


def test_a_resumed_session_hears_only_what_is_new_and_a_new_one_the_task_first() -> None:
    told = "A person reviewed your work..."
    assert stdin_text(AgentRunKind.FRESH, resumes=False, task="T", told=told) == "T"
    assert stdin_text(AgentRunKind.REJECTED, resumes=True, task="T", told=told) == told
    assert stdin_text(AgentRunKind.FIX, resumes=True, task="T", told=told) == told
    # a new session after a rejection would not know the task: it comes first
    assert stdin_text(AgentRunKind.REJECTED, resumes=False, task="T", told=told) == f"T\n\n{told}"
    # a handoff's prompt carries the task itself
    assert stdin_text(AgentRunKind.HANDOFF, resumes=False, task="T", told="T\n---") == "T\n---"
