"""One answer to "can this session be resumed here?": what `wrighty show` is told
(resume.resumable_here) is what the worker decides, before a due retry (choose_run) and when
it settles a crash (after_run's resume_missing), for every combination of the six facts of a
resume address, each made real on disk (a workspace, a Claude transcript)."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.factories import claimed_item
from wrighty.agents import AgentPlan
from wrighty.domain import decisions
from wrighty.domain.classify import Classification
from wrighty.domain.model import Item, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.retry import CrashPolicy
from wrighty.domain.states import TERMINAL_STATES, ItemState
from wrighty.services import resume
from wrighty.vendors.claude import project_folder
from wrighty.vendors.registry import VENDORS

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
HERE = "inst-a"
SESSION_ID = str(uuid.UUID(int=7))
FACTS = (
    "session_id_recorded",
    "same_installation",
    "agent_can_resume",
    "same_vendor",
    "workspace_exists",
    "transcript_found",
)
COMBINATIONS = list(itertools.product([True, False], repeat=len(FACTS)))
CRASHED = Classification(OutcomeClass.PROCESS_CRASH, Confidence.AUTHORITATIVE, "killed")
RETRY = CrashPolicy("retry", max_attempts=2)


def item(state: ItemState) -> Item:
    return claimed_item(state, id=7, generation=3, lease_expires_at=NOW, queued_at=NOW,
                        created_at=NOW, updated_at=NOW)  # fmt: skip


def situation(tmp_path: Path, facts: dict[str, bool]) -> tuple[Session, AgentPlan]:
    """A recorded session and the item's Claude agent, with the facts made true or false."""
    workspace = tmp_path / "workspace"
    if facts["workspace_exists"]:
        workspace.mkdir()
    claude_home = tmp_path / "claude"
    if facts["transcript_found"]:
        folder = claude_home / "projects" / project_folder(str(workspace.resolve()))
        folder.mkdir(parents=True)
        (folder / f"{SESSION_ID}.jsonl").write_text("{}\n")
    session = Session(
        7,
        "claude" if facts["same_vendor"] else "codex",
        SESSION_ID if facts["session_id_recorded"] else None,
        str(workspace),
        HERE if facts["same_installation"] else "inst-b",
    )
    plan = AgentPlan(
        name="claude",
        adapter="claude",
        executable="claude",
        env={"CLAUDE_CONFIG_DIR": str(claude_home)},
        vendor=VENDORS["claude"],
        resume=facts["agent_can_resume"],
    )
    return session, plan


@pytest.mark.parametrize(
    "combination",
    COMBINATIONS,
    ids=["-".join(name if ok else f"no_{name}" for name, ok in zip(FACTS, c, strict=True))
         for c in COMBINATIONS],
)  # fmt: skip
def test_show_and_the_worker_agree_on_every_combination_of_the_resume_facts(
    tmp_path: Path, combination: tuple[bool, ...]
) -> None:
    facts = dict(zip(FACTS, combination, strict=True))
    session, plan = situation(tmp_path, facts)
    here = {"installation_id": HERE, "environ": {}}

    shown = resume.resumable_here(item(ItemState.NEEDS_ATTENTION), session, plan, **here)
    due = decisions.choose_run(
        claimed_from=ItemState.RETRY_SCHEDULED,
        resume=resume.resume_facts(session, plan, **here),
    )
    run_end = RunEnd(NOW, OutcomeClass.PROCESS_CRASH, Confidence.AUTHORITATIVE, signal=9)
    settled = decisions.after_run(
        item(ItemState.RUNNING),
        CRASHED,
        run_end,
        timeout_seconds=60,
        crash_policy=RETRY,
        resume_missing=resume.resume_gaps_here(session, plan, **here),
    )

    complete = all(combination)
    assert shown is complete
    assert due.kind is RunKind.RESUME
    assert (due.missing == ()) is complete
    if complete:
        assert settled.to_state is ItemState.RETRY_SCHEDULED
    else:
        assert (settled.to_state, settled.reason_code) == (
            ItemState.NEEDS_ATTENTION, "resume-state-missing")  # fmt: skip
        assert settled.next_action == "wrighty requeue 7 --fresh"


@pytest.mark.parametrize("state", sorted(TERMINAL_STATES))
def test_a_finished_item_is_never_offered_a_resume(tmp_path: Path, state: ItemState) -> None:
    session, plan = situation(tmp_path, dict.fromkeys(FACTS, True))
    here = {"installation_id": HERE, "environ": {}}
    assert resume.resumable_here(item(ItemState.NEEDS_ATTENTION), session, plan, **here)
    assert not resume.resumable_here(item(state), session, plan, **here)


def test_no_agent_to_run_the_item_means_no_resume(tmp_path: Path) -> None:
    session, _ = situation(tmp_path, dict.fromkeys(FACTS, True))
    assert not resume.resumable_here(
        item(ItemState.NEEDS_ATTENTION), session, None, installation_id=HERE, environ={}
    )
