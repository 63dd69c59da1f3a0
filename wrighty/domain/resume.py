"""Whether a recorded session can be resumed here: its resume address (docs/worker.md) (pure).

Two questions are asked about a session, and they are different on purpose:

- "Can this installation resume it now?" (`resume_gaps`, `resumable`): the worker before it
  resumes a due retry and when it settles a run, and `wrighty show`. The facts come from
  `services.resume_facts`, which looks at this installation's disk.
- "Is there a session to resume at all?" (`session_id_recorded`): `wrighty requeue --resume`,
  `wrighty release` and the reaper, which may run on any installation and cannot see the
  workspace or the vendor's transcript. An item they send to a resume waits for a worker of the
  session's installation (invariant 7), which asks the first question before it starts anything
  and settles the item as `resume-state-missing` when the answer is no.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

from wrighty.domain.model import Session


@dataclass(frozen=True)
class ResumeFacts:
    """What decides whether ``session`` can be resumed on this installation by this agent."""

    session: Session
    installation_id: str  # this installation's
    adapter: str  # the adapter of the agent that would resume it
    can_resume: bool  # that agent is set up to resume (resume on; a resume command)
    workspace_exists: bool
    # Why the vendor's local transcript cannot back a resume; None when it can, when the
    # adapter keeps none, or when it was not looked for (no session id, no workspace).
    transcript_problem: str | None = None


def resume_gaps(facts: ResumeFacts) -> tuple[str, ...]:
    """What keeps the session from being resumed here (empty: its resume address is complete)."""
    session, adapter = facts.session, facts.adapter
    checks = (
        (session.session_id is not None, "no session id was recorded"),
        (session.vendor == adapter, f"the session belongs to {session.vendor}, not {adapter}"),
        (
            session.installation_id == facts.installation_id,
            "the session lives on another installation",
        ),
        (facts.workspace_exists, f"the workspace {session.workspace} is gone"),
        (
            facts.can_resume,
            f"the {adapter} agent cannot resume (no resume command, or resume off)",
        ),
        (facts.transcript_problem is None, facts.transcript_problem or ""),
    )
    return tuple(why for ok, why in checks if not ok)


def resumable(facts: ResumeFacts) -> bool:
    return not resume_gaps(facts)


def session_id_recorded(session: Session | None) -> TypeGuard[Session]:
    """Whether the item has a session that some installation may resume (see the module's
    docstring for why this is not `resumable`)."""
    return session is not None and session.session_id is not None
