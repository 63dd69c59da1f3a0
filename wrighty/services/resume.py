"""Gathering the facts of the resume rule on this installation (the rule itself is pure:
wrighty/domain/resume.py): is the workspace there, and the vendor's transcript."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from wrighty.domain.model import Item, Session
from wrighty.domain.resume import ResumeFacts, resumable, resume_gaps
from wrighty.domain.states import TERMINAL_STATES

if TYPE_CHECKING:
    from wrighty.agents import AgentPlan


def resume_facts(
    session: Session, plan: AgentPlan, *, installation_id: str, environ: Mapping[str, str]
) -> ResumeFacts:
    """What this installation can see of ``session``, for agent ``plan`` to resume it: is the
    workspace there, and the vendor's transcript (looked for with ``environ``, the environment
    wrighty runs in, plus the agent's own ``env``: it says where the vendor keeps it)."""
    workspace = Path(session.workspace)
    workspace_exists = workspace.is_dir()
    transcript_problem = (
        plan.transcript_problem(session.session_id, workspace, {**environ, **plan.env})
        if session.session_id is not None and workspace_exists
        else None
    )
    return ResumeFacts(
        session,
        installation_id=installation_id,
        adapter=plan.adapter,
        can_resume=plan.can_resume,
        workspace_exists=workspace_exists,
        transcript_problem=transcript_problem,
    )


def resume_gaps_here(
    session: Session, plan: AgentPlan, *, installation_id: str, environ: Mapping[str, str]
) -> tuple[str, ...]:
    """What keeps agent ``plan`` from resuming ``session`` on this installation (empty: it can)."""
    facts = resume_facts(session, plan, installation_id=installation_id, environ=environ)
    return resume_gaps(facts)


def resumable_here(
    item: Item,
    session: Session | None,
    plan: AgentPlan | None,
    *,
    installation_id: str,
    environ: Mapping[str, str],
) -> bool:
    """Whether a worker of this installation running ``plan`` (the item's agent; None when the
    config names none it could run) would resume ``item``'s recorded session: the item is not
    finished, and the session's resume address is complete."""
    if session is None or plan is None or item.state in TERMINAL_STATES:
        return False
    facts = resume_facts(session, plan, installation_id=installation_id, environ=environ)
    return resumable(facts)
