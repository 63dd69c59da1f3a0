"""The first step of a claim's life: prepare its run (docs/architecture.md#one-items-path).

It meters the item's budget, chooses how the run starts (fresh or resumed, the workspace and
the item's branch, the argv), records the run and its session under the claim, stops what is
left of the item's earlier runs before a resume, and says what the agent is told. When the run
cannot start, it settles the item instead.
"""

from __future__ import annotations

import os
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wrighty.agents import AgentPlan
from wrighty.domain import budgets, decisions, handoff, machine, review, verify
from wrighty.domain.check_evidence import CheckEvidence
from wrighty.domain.claims import settle
from wrighty.domain.model import NewRun, Run, Session
from wrighty.domain.outcomes import RunKind
from wrighty.domain.run_kind import RUN_KIND_VARIABLE, AgentRunKind, agent_run_kind, stdin_text
from wrighty.domain.sandbox import Sandbox
from wrighty.domain.sources import withheld
from wrighty.domain.states import ItemState
from wrighty.domain.text import printable
from wrighty.domain.transitions import OPERATOR_REQUEUE
from wrighty.domain.usage import Usage, total
from wrighty.domain.verify import VerifyPolicy
from wrighty.domain.verify_limits import MAX_FEEDBACK_BYTES
from wrighty.domain.worker_events import WorkerEvent
from wrighty.services.resume import resume_facts
from wrighty.services.runlogs import logs_of
from wrighty.supervisor.process import LaunchSpec, stop_earlier_run
from wrighty.supervisor.sandboxing import SandboxMaker
from wrighty.vendors.base import VendorError
from wrighty.worker.life import ClaimLife
from wrighty.worker.meter import RunMeter
from wrighty.workproduct.diff import change_stat
from wrighty.workproduct.worktree import WorkspaceError, choose_workspace

# How much of the end of an earlier run's output a handoff reads for its last message.
LAST_MESSAGE_WINDOW_BYTES = 1024 * 1024


# Claims whose fresh run passes over a recorded workspace it will not use, for the item's own:
# a person asked to start over, or the last start's machine failed (the worker that recorded
# it may be another project's on the same store: its workspace is not one this one uses).
_STARTS_OVER = frozenset({OPERATOR_REQUEUE, machine.MACHINE_FAILURE})


@dataclass(frozen=True)
class Start:
    """How a claimed item's run starts."""

    kind: RunKind
    told: AgentRunKind  # what the run is for, as its agent is told (WRIGHTY_RUN_KIND)
    workspace: Path
    session_id: str | None
    argv: tuple[str, ...]
    feedback: tuple[CheckEvidence, ...] = ()  # a fix turn's: the checks that failed
    branch: str | None = None  # the worktree's branch, made or attached now
    base_commit: str | None = None  # the commit a branch made now starts from


@dataclass(frozen=True)
class Prepared:
    """A run recorded under the claim, ready to launch."""

    run_id: str
    start: Start
    session: Session  # as recorded at the run's start (maybe without an id yet)
    meter: RunMeter
    spec: LaunchSpec


def prepare(life: ClaimLife) -> Prepared | None:
    """The claimed item's run, recorded and ready to launch; None when it was settled instead
    (or the claim was lost, and that was told)."""
    claimed, setting, plan = life.claimed, life.setting, life.plan
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    life.emit(WorkerEvent.CLAIMED, item_id=claimed.id, generation=claimed.generation, run_id=run_id)
    meter = _meter_or_settle(life)
    if meter is None:
        return None
    start = _start_or_settle(life, run_id, meter)
    if start is None:
        return None
    claim_token = secrets.token_urlsafe(24)
    life.started_at = life.now()
    new_run = NewRun(
        run_id,
        start.kind,
        setting.worker_id,
        setting.installation_id,
        life.started_at,
        start.session_id,
        claim_token,
        agent=plan.name,
    )
    session = Session(
        claimed.id,
        plan.adapter,
        start.session_id,
        str(start.workspace),
        setting.installation_id,
        branch=start.branch,
        base_commit=start.base_commit,
    )
    if life.store.start_run(claimed, new_run, session=session) is None:
        life.claim_lost(reason="fenced")
        return None
    life.run_id = run_id
    life.branch = start.branch or _recorded_branch(life.claim.session, start.workspace)
    if start.kind.resumes:
        if not _stop_earlier_runs(life, run_id):
            life.claim_lost(reason="fenced")
            return None
        life.emit(
            WorkerEvent.RESUMED, item_id=claimed.id, run_id=run_id,
            session_id=start.session_id, kind=start.kind.value,
        )  # fmt: skip
    spec = _launch_spec(life, run_id, start, claim_token, _prompt(life, start))
    return Prepared(run_id, start, session, meter, spec)


def _meter_or_settle(life: ClaimLife) -> RunMeter | None:
    """The run's meter: the item's budget and what its earlier runs spent. When that is
    already spent, it settles the item instead and returns None: no run is started."""
    claimed, setting = life.claimed, life.setting
    limit = setting.budgets.item_limit(claimed)
    prior = Usage(final=True)
    if not limit.unbounded:
        ledger = life.store.list_ledger(default_agent=setting.default_agent, item_id=claimed.id)
        prior = total(entry.usage for entry in ledger)
        if prior.over(limit):
            life.outcome_known()
            session = life.claim.session
            settlement = budgets.item_budget_spent(
                claimed,
                limit,
                prior,
                run_end=None,
                resumable=session is not None and session.session_id is not None,
            )
            life.write_settlement(settle(claimed, settlement, at=life.now()), None)
            return None
    return RunMeter(prior=prior, limit=limit, pricing=setting.pricing, wake=life.wake)


def _start_or_settle(life: ClaimLife, run_id: str, meter: RunMeter) -> Start | None:
    """How the run starts: fresh or resumed, the workspace and the argv. When it cannot
    start, it settles the item instead and returns None."""
    claimed, recorded, plan = life.claimed, life.claim.session, life.plan
    claimed_from = life.claim.claimed_from
    # Only a due retry resumes: the disk is looked at for nothing else.
    retry = claimed_from is ItemState.RETRY_SCHEDULED
    facts = None
    if retry and recorded is not None:
        facts = resume_facts(
            recorded,
            plan,
            installation_id=life.setting.installation_id,
            environ=os.environ,
        )
    choice = decisions.choose_run(
        claimed_from=claimed_from, resume=facts, retry_reason=life.claim.claimed_reason_code
    )
    if choice.missing:
        life.outcome_known()
        settlement = decisions.resume_state_missing(claimed, choice.missing)
        life.write_settlement(settle(claimed, settlement, at=life.now()), None)
        return None
    resume = choice.kind.resumes
    resumed_id = recorded.session_id if resume and recorded else None
    feedback = _owed_feedback(life) if resume else ()
    session_id = resumed_id or (str(uuid.uuid4()) if plan.preassigns_session else None)
    try:
        chosen = choose_workspace(
            life.setting.workspace_mode,
            project_root=life.setting.project_root,
            state_dir=life.setting.state_dir,
            item=claimed,
            session=recorded,
            resume=resume,
            start_over=life.claim.claimed_reason_code in _STARTS_OVER,
            completion=life.setting.completion,
            stack_on=stacked.branch if (stacked := life.claim.stacked_on) else None,
        )
        left = meter.limit.left_after(meter.prior).max_cost_usd
        argv = (
            plan.resume_argv(resumed_id, max_cost_usd=left)
            if resumed_id
            else plan.start_argv(session_id, max_cost_usd=left)
        )
    except WorkspaceError as error:
        life.settle_start_failed(run_id, error.failure, kind=choice.kind)
        return None
    except VendorError as error:
        failure = machine.StartFailure(machine.Step.ARGV, str(error))
        life.settle_start_failed(run_id, failure, kind=choice.kind)
        return None
    if chosen.taken is not None:
        life.emit(
            WorkerEvent.BRANCH_RENAMED,
            item_id=claimed.id, run_id=run_id, branch=chosen.branch, taken=chosen.taken,
        )  # fmt: skip
    kind = RunKind.FIX if feedback else choice.kind
    told = agent_run_kind(
        kind,
        claimed_reason_code=life.claim.claimed_reason_code,
        has_feedback=bool(claimed.feedback),
    )
    return Start(
        kind, told, chosen.path, session_id, argv, feedback, chosen.branch, chosen.base_commit
    )


def _owed_feedback(life: ClaimLife) -> tuple[CheckEvidence, ...]:
    """The failed checks a resumed run is to hear of: a fix turn's feedback (empty when
    the item's latest verification passed, or a run has followed it)."""
    item_id = life.claimed.id
    runs = life.store.list_runs(item_id)
    latest = max(runs, key=lambda run: run.started_at, default=None)
    return verify.owed_feedback(
        life.store.list_checks(item_id),
        latest_run_id=latest.run_id if latest else None,
        latest_run_started=latest.started_at if latest else None,
    )


def _prompt(life: ClaimLife, start: Start) -> str:
    """What the agent is told on standard input, by the run's kind
    (docs/worker.md#what-a-run-is-told)."""
    claimed, kind = life.claimed, start.told
    known = life.setting.secrets
    if kind is AgentRunKind.HANDOFF:
        told = handoff.handoff_prompt(
            claimed.body, _earlier_work(life, start), claimed.handoff_note, secrets=known
        )
    elif kind is AgentRunKind.LANDING:  # the lander's prompt, as stored: bounded again
        told = verify.fit_text(printable(claimed.feedback or ""), MAX_FEEDBACK_BYTES)
    elif kind is AgentRunKind.REJECTED:
        told = review.feedback_prompt(claimed.feedback or "", secrets=known)
    elif kind is AgentRunKind.FIX:
        policy = life.setting.verify or VerifyPolicy(())
        told = verify.feedback_prompt(
            start.feedback, feedback_bytes=policy.feedback_bytes, secrets=known
        )
    else:
        told = decisions.CONTINUATION_PROMPT + claimed.body
    return stdin_text(kind, resumes=start.kind.resumes, task=claimed.body, told=told)


def _earlier_work(life: ClaimLife, start: Start) -> handoff.EarlierWork | None:
    """What the agent before a handoff left (None: it never ran): how its last run ended,
    the stat of the item's change against its base in this workspace, its latest checks."""
    item_id = life.claimed.id
    ended = [run for run in life.store.list_runs(item_id) if run.ended_at is not None]
    latest = max(ended, key=lambda run: run.started_at, default=None)  # not this one's
    if latest is None:
        return None
    recorded = life.claim.session
    base = start.base_commit or (recorded.base_commit if recorded else None)
    checks = verify.latest_verification(life.store.list_checks(item_id))
    agent = latest.agent or life.setting.default_agent
    return handoff.EarlierWork(
        agent=agent,
        outcome=latest.outcome_class.value if latest.outcome_class else None,
        diagnostic=latest.diagnostic,
        stat=change_stat(start.workspace, base) if base else None,
        checks=tuple(record.evidence for record in checks),
        last_message=_last_message(life, agent, latest),
    )


def _last_message(life: ClaimLife, agent: str, run: Run) -> str | None:
    """``agent``'s last message in ``run``, read from the end of its standard output's log
    by that agent's vendor reader (None: its output is not read, or holds none)."""
    reader = life.setting.reader_of(agent)
    if reader is None:
        return None
    log = logs_of(life.setting.state_dir, run.item_id, run.run_id) / "stdout.log"
    try:
        with log.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - LAST_MESSAGE_WINDOW_BYTES))
            data = handle.read()
    except OSError:
        return None
    lines = data.split(b"\n")
    for line in lines[1:] if size > LAST_MESSAGE_WINDOW_BYTES else lines:
        reader.feed("stdout", line)  # a reader never raises on bad input
    return reader.last_text


def _launch_spec(
    life: ClaimLife, run_id: str, start: Start, claim_token: str, task: str
) -> LaunchSpec:
    claimed = life.claimed
    given = {
        **life.plan.env,
        **life.setting.agent_env,
        "WRIGHTY_ITEM_ID": str(claimed.id),
        "WRIGHTY_RUN_ID": run_id,
        "WRIGHTY_CLAIM_TOKEN": claim_token,
        RUN_KIND_VARIABLE: start.told.value,
    }
    if start.session_id is not None:
        given["WRIGHTY_SESSION_ID"] = start.session_id
    return LaunchSpec(
        argv=start.argv,
        cwd=start.workspace,
        env={**withheld(os.environ, life.setting.withheld), **given},
        task=task,
        log_dir=logs_of(life.setting.state_dir, claimed.id, run_id),
        marker=("WRIGHTY_RUN_ID", run_id),
        sandbox=agent_sandbox(life.setting.sandbox, life.plan, start.workspace, given),
    )


def agent_sandbox(
    maker: SandboxMaker | None, plan: AgentPlan, workspace: Path, given: Mapping[str, str]
) -> Sandbox | None:
    """An agent run's sandbox in ``workspace`` (None: none configured). Of the worker's
    variables it passes in those the run is ``given`` (the agent's env, the run's own) and its
    vendor CLI's own (docs/sandbox.md#the-environment); a check's sandbox gets none of these."""
    if maker is None:
        return None
    return maker.at(workspace, passed=(*given, *plan.sandbox_variables))


def _stop_earlier_runs(life: ClaimLife, run_id: str) -> bool:
    """Never two live agents on one session (invariant 5): before resuming, stop what is
    still alive of the item's earlier runs on this installation. The stopping takes at
    most two stop graces per run (SIGTERM, grace, SIGKILL, grace: stop_earlier_run); the
    claim is renewed at every heartbeat meanwhile. False if the claim was lost."""
    here, grace = life.setting.installation_id, life.setting.stop_grace_seconds
    earlier = [
        run
        for run in life.store.list_runs(life.claimed.id)
        if run.run_id != run_id and run.installation_id == here
    ]
    if not earlier:
        return True

    def stop_them() -> bool:
        for run in earlier:
            stop_earlier_run(run.run_id, run.pid, run.process_started_at, grace_seconds=grace)
        return True

    return life.renewing(stop_them, name="earlier") is not None


def _recorded_branch(recorded: Session | None, workspace: Path) -> str | None:
    """The branch the item's session recorded for ``workspace``, the run's (a worktree kept
    as it was keeps its branch)."""
    if recorded is None or recorded.workspace != str(workspace):
        return None
    return recorded.branch
