"""One claim's run: prepare, launch, watch, classify, settle.

A ClaimRun is made for one claim, in the thread that will watch its agent, with everything it
needs passed in: the worker's Setting (identity, agent plan, lease terms, retry policy, clock,
output) and a PatientStore bound to the claim's lease. Every write it makes about the item goes
through the store's guarded operations; when one reports the claim lost, the run stops the
agent's whole tree and writes nothing more about the item (invariant 2 of docs/claims.md).
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from wrighty.agents import AgentPlan
from wrighty.domain import budgets, decisions, handoff, machine, review, verify
from wrighty.domain.circuits import CircuitState
from wrighty.domain.claims import Claim, LeaseTerms, RenewOutcome, Settlement, settle
from wrighty.domain.classify import (
    AgentReport,
    Classification,
    RunFacts,
    StopReason,
    classify_exit,
)
from wrighty.domain.model import Change, Item, NewRun, Run, RunEnd, Session, Stream
from wrighty.domain.notices import Source, with_notices
from wrighty.domain.outcomes import USAGE_CLASSES, Confidence, OutcomeClass, RunKind
from wrighty.domain.retry import AGENT_REPORTED, CrashPolicy, Fallback, ResetHint, UsagePolicy
from wrighty.domain.run_kind import RUN_KIND_VARIABLE, AgentRunKind, agent_run_kind, stdin_text
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339
from wrighty.domain.transitions import OPERATOR_REQUEUE
from wrighty.domain.usage import Price, Usage, total
from wrighty.domain.verify import CheckEvidence, VerifyPolicy
from wrighty.domain.work_product import CommitResult, Completion, Ending, done_goes
from wrighty.domain.worker_events import Emit, WorkerEvent
from wrighty.errors import UnreadableError
from wrighty.services.resume import resumable_here, resume_facts, resume_gaps_here
from wrighty.services.runlogs import logs_of
from wrighty.supervisor.process import (
    AgentProcess,
    LaunchError,
    LaunchSpec,
    launch,
    stop_earlier_run,
)
from wrighty.vendors.base import Reader, VendorError
from wrighty.worker.checks import CheckPlace, CheckRunner, Verification
from wrighty.worker.circuit import CircuitGate
from wrighty.worker.lease import LeaseGuard
from wrighty.worker.machine import MachineWatch
from wrighty.worker.meter import RunMeter
from wrighty.worker.patient import LeaseGone, PatientStore
from wrighty.workproduct import commit
from wrighty.workproduct.branch import keep_on_branch
from wrighty.workproduct.diff import change_stat
from wrighty.workproduct.worktree import WorkspaceError, choose_workspace

_T = TypeVar("_T")


# How much of the end of an earlier run's output a handoff reads for its last message.
LAST_MESSAGE_WINDOW_BYTES = 1024 * 1024


# Claims whose fresh run passes over a recorded workspace it will not use, for the item's own:
# a person asked to start over, or the last start's machine failed (the worker that recorded
# it may be another project's on the same store: its workspace is not one this one uses).
_STARTS_OVER = frozenset({OPERATOR_REQUEUE, machine.MACHINE_FAILURE})


@dataclass(frozen=True)
class Setting:
    """What every claim's run of one worker shares."""

    worker_id: str
    installation_id: str
    plan: AgentPlan
    terms: LeaseTerms
    crash_policy: CrashPolicy
    usage_policy: UsagePolicy
    circuit: CircuitGate | None  # the agent's provider circuit, under a usage retry policy
    budgets: budgets.Budgets
    pricing: Mapping[str, Price]
    default_agent: str  # worker.defaultAgent: whose an item without an agent is
    notify: Source | None  # who tells of settlements through the outbox (None: nobody listens)
    heartbeat_seconds: float
    stop_grace_seconds: float
    workspace_mode: str
    project_root: Path
    state_dir: Path
    agent_env: dict[str, str]  # how `wrighty finish` / `wrighty fail` find the store
    stop_requested: threading.Event
    now: Callable[[], datetime]
    emit: Emit
    notify_wake: Callable[[], None] | None = None  # the deliverer's: a notice just committed
    machine: MachineWatch | None = None  # the worker's machine: its back-off and hold
    verify: VerifyPolicy | None = None  # the agent's checks (None: wrighty.json has none)
    # worktree items' branches and commits
    completion: Completion = dataclasses.field(default_factory=Completion)
    # The agent's fallbacks (agents.<name>.fallback), in order, each with its provider circuit
    # (None: it has none); looked at when a run is refused (docs/handoff.md).
    fallbacks: Mapping[str, str | None] = dataclasses.field(default_factory=dict)
    # A new reader of an agent's output, by the agent's name (None: the agent's output is
    # not read, or it is unknown now): what a handoff reads the earlier agent's last message with.
    reader_of: Callable[[str], Reader | None] = lambda _: None
    # The values no prompt shows (config.known_secrets): the worker's environment's credential
    # variables and every agents.<name>.env value.
    secrets: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Start:
    """How a claimed item's run starts."""

    kind: RunKind
    told: AgentRunKind  # what the run is for, as its agent is told (WRIGHTY_RUN_KIND)
    workspace: Path
    session_id: str | None
    argv: tuple[str, ...]
    feedback: tuple[CheckEvidence, ...] = ()  # a fix turn's: the checks that failed
    branch: str | None = None  # the worktree's branch, made or attached now
    base_commit: str | None = None  # the commit a branch made now starts from


class _Output:
    """One run's vendor output reader, and the session id it learned (read by the run's
    thread; fed by the output pump's)."""

    def __init__(
        self, reader: Reader | None, wake: threading.Event, session: Session, meter: RunMeter
    ) -> None:
        self.reader = reader
        self.meter = meter
        self._wake = wake
        self._started = session  # as recorded when the run started (maybe without an id)
        self.recorded: Session | None = None  # completed with the id the vendor told

    def on_line(self, stream: Stream, line: bytes) -> None:
        if self.reader is None:
            return
        known = self.reader.session_id
        self.reader.feed(stream, line)
        if known is None and self.reader.session_id is not None:
            self._wake.set()  # the run's thread records it at once
        self.meter.seen(self.reader.usage())

    def unrecorded_session(self) -> Session | None:
        learned = self.reader.session_id if self.reader else None
        if self._started.session_id is not None or learned is None or self.recorded is not None:
            return None
        return dataclasses.replace(self._started, session_id=learned)

    @property
    def session(self) -> Session:
        """The run's session, with its id once known."""
        return self.recorded or self._started


class ClaimRun:
    """The life of one claim, from the claim to the item's settlement (or to the claim's loss).

    ``wake`` is set when the agent exits, when its vendor tells the session id, and when the
    worker is asked to stop.
    """

    def __init__(
        self,
        setting: Setting,
        store: PatientStore,
        claim: Claim,
        wake: threading.Event,
        guard: LeaseGuard,
    ) -> None:
        self._setting = setting
        self._store = store
        self._guard = guard
        self._claim = claim
        self._claimed = claim.item
        self._wake = wake
        self._plan = setting.plan
        self._now = setting.now
        self._emit = setting.emit
        # How far the run got, for settling the item if wrighty fails on the way.
        self.started_at = setting.now()  # when its run began (or was about to)
        self.run_id: str | None = None  # set once the run is recorded
        self.agent: AgentProcess | None = None  # set once the agent is started
        self._hold: budgets.AgentHold | None = None  # the agent's day budget, if it stopped the run
        self.pending: Change | None = None  # the settlement being written, until it is
        self._branch: str | None = None  # the item's branch, in worktree mode

    # -- the way through --------------------------------------------------------------------

    def work(self) -> None:
        claimed = self._claimed
        run_id = f"run-{uuid.uuid4().hex[:12]}"
        self._emit(
            WorkerEvent.CLAIMED, item_id=claimed.id, generation=claimed.generation, run_id=run_id
        )
        meter = self._meter_or_settle()
        if meter is None:
            return
        start = self._start_or_settle(run_id, meter)
        if start is None:
            return
        claim_token = secrets.token_urlsafe(24)
        setting = self._setting
        self.started_at = self._now()
        new_run = NewRun(
            run_id,
            start.kind,
            setting.worker_id,
            setting.installation_id,
            self.started_at,
            start.session_id,
            claim_token,
            agent=self._plan.name,
        )
        session = Session(
            claimed.id,
            self._plan.adapter,
            start.session_id,
            str(start.workspace),
            setting.installation_id,
            branch=start.branch,
            base_commit=start.base_commit,
        )
        if self._store.start_run(claimed, new_run, session=session) is None:
            self._claim_lost(claimed, reason="fenced")
            return
        self.run_id = run_id
        self._branch = start.branch or _recorded_branch(self._claim.session, start.workspace)
        if start.kind.resumes:
            if not self._stop_earlier_runs(run_id):
                self._claim_lost(claimed, reason="fenced")
                return
            self._emit(
                WorkerEvent.RESUMED, item_id=claimed.id, run_id=run_id,
                session_id=start.session_id, kind=start.kind.value,
            )  # fmt: skip
        task = self._prompt(start)
        output = _Output(self._plan.reader(), self._wake, session, meter)
        try:
            spec = self._launch_spec(run_id, start, claim_token, task)
            agent = launch(dataclasses.replace(spec, wake=self._wake, on_line=output.on_line))
        except LaunchError as error:
            self._settle_start_failed(run_id, error.failure, kind=start.kind)
            return
        self.agent = agent
        if not self._guard.attach(agent):  # the lease guard fired while it started
            self._stop(agent)
            raise LeaseGone(self._guard.cause())
        if setting.machine is not None:
            setting.machine.started()
        self._emit(WorkerEvent.SPAWNED, item_id=claimed.id, run_id=run_id, pid=agent.pid)
        try:
            self._watch_and_settle(agent, run_id, output)
        except LeaseGone:
            self._stop(agent)
            raise

    def _meter_or_settle(self) -> RunMeter | None:
        """The run's meter: the item's budget and what its earlier runs spent. When that is
        already spent, it settles the item instead and returns None: no run is started."""
        claimed, setting = self._claimed, self._setting
        limit = setting.budgets.item_limit(claimed)
        prior = Usage(final=True)
        if not limit.unbounded:
            ledger = self._store.list_ledger(
                default_agent=setting.default_agent, item_id=claimed.id
            )
            prior = total(entry.usage for entry in ledger)
            if prior.over(limit):
                self._outcome_known()
                session = self._claim.session
                settlement = budgets.item_budget_spent(
                    claimed,
                    limit,
                    prior,
                    run_end=None,
                    resumable=session is not None and session.session_id is not None,
                )
                self._write_settlement(settle(claimed, settlement, at=self._now()), None)
                return None
        return RunMeter(prior=prior, limit=limit, pricing=setting.pricing, wake=self._wake)

    def _start_or_settle(self, run_id: str, meter: RunMeter) -> _Start | None:
        """How the run starts: fresh or resumed, the workspace and the argv. When it cannot
        start, it settles the item instead and returns None."""
        claimed, recorded, plan = self._claimed, self._claim.session, self._plan
        claimed_from = self._claim.claimed_from
        # Only a due retry resumes: the disk is looked at for nothing else.
        retry = claimed_from is ItemState.RETRY_SCHEDULED
        facts = None
        if retry and recorded is not None:
            facts = resume_facts(
                recorded,
                plan,
                installation_id=self._setting.installation_id,
                environ=os.environ,
            )
        choice = decisions.choose_run(
            claimed_from=claimed_from, resume=facts, retry_reason=self._claim.claimed_reason_code
        )
        if choice.missing:
            self._outcome_known()
            settlement = decisions.resume_state_missing(claimed, choice.missing)
            self._write_settlement(settle(claimed, settlement, at=self._now()), None)
            return None
        resume = choice.kind.resumes
        resumed_id = recorded.session_id if resume and recorded else None
        feedback = self._owed_feedback() if resume else ()
        session_id = resumed_id or (str(uuid.uuid4()) if plan.preassigns_session else None)
        try:
            chosen = choose_workspace(
                self._setting.workspace_mode,
                project_root=self._setting.project_root,
                state_dir=self._setting.state_dir,
                item=claimed,
                session=recorded,
                resume=resume,
                start_over=self._claim.claimed_reason_code in _STARTS_OVER,
                completion=self._setting.completion,
            )
            left = meter.limit.left_after(meter.prior).max_cost_usd
            argv = (
                plan.resume_argv(resumed_id, max_cost_usd=left)
                if resumed_id
                else plan.start_argv(session_id, max_cost_usd=left)
            )
        except WorkspaceError as error:
            self._settle_start_failed(run_id, error.failure, kind=choice.kind)
            return None
        except VendorError as error:
            failure = machine.StartFailure(machine.Step.ARGV, str(error))
            self._settle_start_failed(run_id, failure, kind=choice.kind)
            return None
        if chosen.taken is not None:
            self._emit(
                WorkerEvent.BRANCH_RENAMED,
                item_id=claimed.id, run_id=run_id, branch=chosen.branch, taken=chosen.taken,
            )  # fmt: skip
        kind = RunKind.FIX if feedback else choice.kind
        told = agent_run_kind(
            kind,
            claimed_reason_code=self._claim.claimed_reason_code,
            has_feedback=bool(claimed.feedback),
        )
        return _Start(
            kind, told, chosen.path, session_id, argv, feedback, chosen.branch, chosen.base_commit
        )

    def _owed_feedback(self) -> tuple[CheckEvidence, ...]:
        """The failed checks a resumed run is to hear of: a fix turn's feedback (empty when
        the item's latest verification passed, or a run has followed it)."""
        item_id = self._claimed.id
        runs = self._store.list_runs(item_id)
        latest = max(runs, key=lambda run: run.started_at, default=None)
        return verify.owed_feedback(
            self._store.list_checks(item_id),
            latest_run_id=latest.run_id if latest else None,
            latest_run_started=latest.started_at if latest else None,
        )

    def _prompt(self, start: _Start) -> str:
        """What the agent is told on standard input, by the run's kind
        (docs/worker.md#what-a-run-is-told)."""
        claimed, kind = self._claimed, start.told
        known = self._setting.secrets
        if kind is AgentRunKind.HANDOFF:
            told = handoff.handoff_prompt(
                claimed.body, self._earlier_work(start), claimed.handoff_note, secrets=known
            )
        elif kind is AgentRunKind.REJECTED:
            told = review.feedback_prompt(claimed.feedback or "", secrets=known)
        elif kind is AgentRunKind.FIX:
            policy = self._setting.verify or VerifyPolicy(())
            told = verify.feedback_prompt(
                start.feedback, feedback_bytes=policy.feedback_bytes, secrets=known
            )
        else:
            told = decisions.CONTINUATION_PROMPT + claimed.body
        return stdin_text(kind, resumes=start.kind.resumes, task=claimed.body, told=told)

    def _fallbacks(self, result: Classification) -> tuple[Fallback, ...]:
        """The agent's fallbacks and whether each can take the item now, when the run was
        refused and the policy hands off (docs/handoff.md); else none (nothing is read)."""
        setting = self._setting
        if result.outcome_class not in USAGE_CLASSES or not setting.fallbacks:
            return ()
        if setting.usage_policy.handoff_after_seconds is None:
            return ()
        now = self._now()
        return tuple(
            Fallback(agent, self._unavailable(agent, circuit, now))
            for agent, circuit in setting.fallbacks.items()
        )

    def _unavailable(self, agent: str, circuit: str | None, now: datetime) -> str | None:
        """Why ``agent`` cannot take a handed-off item now: its provider circuit is not
        closed, or its day budget is spent; None when it can."""
        setting = self._setting
        try:
            if circuit is not None:
                found = self._store.get_circuit(circuit)
                state = found.state(now)
                if state is not CircuitState.CLOSED:
                    until = f" until {rfc3339(found.until)}" if found.until else ""
                    return f"its provider circuit is {state}{until}"
            if not setting.budgets.agent_limit(agent).unbounded:
                since = setting.budgets.period(now).start
                spent = self._store.agent_spend(agent, since=since)
                hold = budgets.agent_hold(setting.budgets, agent, spent, now=now)
                if hold is not None:
                    return hold.reason()
        except UnreadableError:
            return "what the store holds of it does not read"
        return None

    def _earlier_work(self, start: _Start) -> handoff.EarlierWork | None:
        """What the agent before a handoff left (None: it never ran): how its last run ended,
        the stat of the item's change against its base in this workspace, its latest checks."""
        item_id = self._claimed.id
        ended = [run for run in self._store.list_runs(item_id) if run.ended_at is not None]
        latest = max(ended, key=lambda run: run.started_at, default=None)  # not this one's
        if latest is None:
            return None
        recorded = self._claim.session
        base = start.base_commit or (recorded.base_commit if recorded else None)
        checks = verify.latest_verification(self._store.list_checks(item_id))
        agent = latest.agent or self._setting.default_agent
        return handoff.EarlierWork(
            agent=agent,
            outcome=latest.outcome_class.value if latest.outcome_class else None,
            diagnostic=latest.diagnostic,
            stat=change_stat(start.workspace, base) if base else None,
            checks=tuple(record.evidence for record in checks),
            last_message=self._last_message(agent, latest),
        )

    def _last_message(self, agent: str, run: Run) -> str | None:
        """``agent``'s last message in ``run``, read from the end of its standard output's log
        by that agent's vendor reader (None: its output is not read, or holds none)."""
        reader = self._setting.reader_of(agent)
        if reader is None:
            return None
        log = logs_of(self._setting.state_dir, run.item_id, run.run_id) / "stdout.log"
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

    def _launch_spec(self, run_id: str, start: _Start, claim_token: str, task: str) -> LaunchSpec:
        claimed = self._claimed
        env = {
            **os.environ,
            **self._plan.env,
            **self._setting.agent_env,
            "WRIGHTY_ITEM_ID": str(claimed.id),
            "WRIGHTY_RUN_ID": run_id,
            "WRIGHTY_CLAIM_TOKEN": claim_token,
            RUN_KIND_VARIABLE: start.told.value,
        }
        if start.session_id is not None:
            env["WRIGHTY_SESSION_ID"] = start.session_id
        return LaunchSpec(
            argv=start.argv,
            cwd=start.workspace,
            env=env,
            task=task,
            log_dir=logs_of(self._setting.state_dir, claimed.id, run_id),
            marker=("WRIGHTY_RUN_ID", run_id),
        )

    def _stop_earlier_runs(self, run_id: str) -> bool:
        """Never two live agents on one session (invariant 5): before resuming, stop what is
        still alive of the item's earlier runs on this installation. The stopping takes at
        most two stop graces per run (SIGTERM, grace, SIGKILL, grace: stop_earlier_run); the
        claim is renewed at every heartbeat meanwhile. False if the claim was lost."""
        here, grace = self._setting.installation_id, self._setting.stop_grace_seconds
        earlier = [
            run
            for run in self._store.list_runs(self._claimed.id)
            if run.run_id != run_id and run.installation_id == here
        ]
        if not earlier:
            return True

        def stop_them() -> bool:
            for run in earlier:
                stop_earlier_run(run.run_id, run.pid, run.process_started_at, grace_seconds=grace)
            return True

        return self._renewing(stop_them, name="earlier") is not None

    def _renewing(self, work: Callable[[], _T], *, name: str) -> _T | None:
        """``work``'s answer, the claim renewed at every heartbeat while it runs in a thread of
        its own; None if the claim was lost meanwhile (``work`` then ends on its own)."""
        answer: list[_T] = []
        failed: list[BaseException] = []
        finished = threading.Event()

        def run() -> None:
            try:
                answer.append(work())
            except BaseException as error:  # told in the claim's thread
                failed.append(error)
            finally:
                finished.set()

        threading.Thread(target=run, name=f"{name}-{self._claimed.id}", daemon=True).start()
        while not finished.wait(self._setting.heartbeat_seconds):
            result = self._store.renew(self._claimed, terms=self._setting.terms)
            if result.outcome is RenewOutcome.LOST:
                return None
        if failed:
            raise failed[0]
        return answer[0]

    # -- watching ---------------------------------------------------------------------------

    def _watch_and_settle(self, agent: AgentProcess, run_id: str, output: _Output) -> None:
        claimed = self._claimed
        if not self._store.record_process(
            claimed, run_id, pid=agent.pid, process_started_at=agent.started_at
        ):
            self._lost(agent)
            return
        stopped_by = self._watch(agent, output, run_id)
        if stopped_by is StopReason.FENCED or stopped_by is StopReason.CANCELLED:
            return
        self._outcome_known()
        self._stop(agent)  # descendants it left behind
        if not self._note(output, run_id):
            self._lost(agent)
            return
        self._settle_exit(agent, run_id, output, stopped_by)

    def _watch(self, agent: AgentProcess, output: _Output, run_id: str) -> StopReason | None:
        """Renew the lease until the agent exits; why wrighty stopped it, if it did."""
        claimed, terms, grace = self._claimed, self._setting.terms, self._setting.stop_grace_seconds
        deadline = time.monotonic() + terms.time_limit(claimed.timeout_seconds)
        while True:
            remaining = deadline - time.monotonic()
            self._wake.wait(timeout=max(0.0, min(self._setting.heartbeat_seconds, remaining)))
            self._wake.clear()
            if agent.status is not None:
                return None
            if not self._note(output, run_id) or not self._note_usage(output, run_id):
                return self._lost(agent)
            why = self._why_stop(output, deadline)
            if why is None:
                agent.refresh_descendants()
                result = self._store.renew(claimed, terms=terms)
                if result.outcome is RenewOutcome.LOST:
                    return self._lost(agent)
                if result.outcome is RenewOutcome.BUDGET_EXHAUSTED:
                    why = StopReason.TIMEOUT
            if why is not None:
                agent.stop(grace_seconds=grace)
                return why

    def _why_stop(self, output: _Output, deadline: float) -> StopReason | None:
        """Why wrighty stops the agent now, if it does: a spent budget, a worker asked to
        stop, the run's time limit."""
        if output.meter.over:
            return StopReason.BUDGET
        if self._setting.stop_requested.is_set():
            return StopReason.SHUTDOWN
        if time.monotonic() >= deadline:
            return StopReason.TIMEOUT
        # A run whose final figures are in has ended its spending and is exiting on its own:
        # stopping it now would make its outcome a race between its exit and the stop.
        usage = output.meter.run_usage
        if not (usage is not None and usage.final) and self._agent_spent():
            return StopReason.BUDGET
        return None

    def _note(self, output: _Output, run_id: str) -> bool:
        """Record the session id as soon as the vendor tells it; False if the claim is lost."""
        learned = output.unrecorded_session()
        if learned is None:
            return True
        if not self._store.record_session(self._claimed, learned, at=self._now(), run_id=run_id):
            return False
        output.recorded = learned
        self._emit(
            WorkerEvent.SESSION,
            item_id=self._claimed.id,
            run_id=run_id,
            session_id=learned.session_id,
        )
        return True

    def _note_usage(self, output: _Output, run_id: str) -> bool:
        """Record what the run spent so far, so that a run that dies keeps it (partial);
        False if the claim is lost. The command adapter's come from `wrighty report-usage`,
        into the store: read back for the item's budget."""
        meter = output.meter
        if output.reader is None:
            if meter.limit.unbounded:
                return True  # nothing to check it against (a day budget reads the store)
            recorded = self._store.get_run(run_id)
            meter.seen(recorded.usage if recorded is not None else None)
            return True
        usage = meter.unrecorded()
        if usage is None:
            return True
        if not self._store.record_usage(self._claimed, run_id, usage):
            return False
        meter.recorded(usage)
        return True

    def _agent_spent(self) -> bool:
        """Whether the agent's budget for the day is spent, with this run's usage as just
        recorded (a fleet's other runs count with theirs)."""
        setting = self._setting
        limit = setting.budgets.agent_limit(self._plan.name)
        if limit.unbounded:
            return False
        now = self._now()
        since = setting.budgets.period(now).start
        spent = self._store.agent_spend(self._plan.name, since=since)
        self._hold = budgets.agent_hold(setting.budgets, self._plan.name, spent, now=now)
        return self._hold is not None

    def _lost(self, agent: AgentProcess) -> StopReason:
        """The claim is gone: stop the tree at once and write nothing more about the item."""
        claimed = self._claimed
        reason = self._tell_lost()
        self._stop(agent)
        status = agent.status
        self._emit(
            WorkerEvent.EXITED,
            item_id=claimed.id,
            outcome_class=reason.value,
            exit_code=status.exit_code if status else None,
            signal=status.signal if status else None,
        )
        return reason

    def _tell_lost(self) -> StopReason:
        """Tell that the claim is gone, and why: cancelled, or fenced."""
        claimed = self._claimed
        current = self._store.get_item(claimed.id)
        cancelled = current is not None and current.state is ItemState.CANCELLED
        reason = StopReason.CANCELLED if cancelled else StopReason.FENCED
        self._claim_lost(claimed, reason=reason.value)
        return reason

    def _stop(self, agent: AgentProcess) -> None:
        agent.stop(grace_seconds=self._setting.stop_grace_seconds)
        agent.close()

    def _outcome_known(self) -> None:
        """The run's outcome is known (its agent ended, or never started): from now on the
        run records it for as long as its claim lets it. LeaseGone if the lease guard fired
        first: then the agent was stopped for the lease, and nothing more is written."""
        if not self._guard.outcome_known():
            raise LeaseGone(self._guard.cause())

    # -- settling ---------------------------------------------------------------------------

    def _settle_exit(
        self, agent: AgentProcess, run_id: str, output: _Output, stopped_by: StopReason | None
    ) -> None:
        claimed = self._claimed
        status = agent.status
        assert status is not None
        recorded = self._store.get_run(run_id)
        report = AgentReport.of(recorded.agent_report) if recorded else None
        vendor = output.reader.classify(status.exit_code) if output.reader else None
        result = classify_exit(
            RunFacts(status.exit_code, status.signal, stopped_by, report, vendor=vendor)
        )
        agent_reason = recorded.agent_reason if recorded else None
        if agent_reason:
            result = dataclasses.replace(result, summary=f"{result.summary}: {agent_reason}")
        self._emit(
            WorkerEvent.EXITED,
            item_id=claimed.id,
            run_id=run_id,
            outcome_class=result.outcome_class.value,
            exit_code=status.exit_code,
            signal=status.signal,
        )
        said = f"agent says: {agent_reason}" if agent_reason else ""
        run_end = RunEnd(
            ended_at=self._now(),
            outcome_class=result.outcome_class,
            confidence=result.confidence,
            exit_code=status.exit_code,
            signal=status.signal,
            diagnostic="\n".join(
                part
                for part in (result.summary, said, agent.diagnostic_tail(self._setting.secrets))
                if part
            ),
            usage=output.meter.run_usage if output.reader is not None else None,
        )
        missing = resume_gaps_here(
            output.session,
            self._plan,
            installation_id=self._setting.installation_id,
            environ=os.environ,
        )
        checks: tuple[CheckEvidence, ...] = ()  # the evidence of the run's checks, if it had any
        if stopped_by is StopReason.SHUTDOWN:
            settlement = decisions.after_shutdown(claimed, run_end, resumable=not missing)
        elif result.outcome_class is OutcomeClass.BUDGET_EXCEEDED:
            meter = output.meter
            settlement = budgets.after_budget_stop(
                claimed,
                run_end,
                limit=meter.limit,
                spent=meter.item_total,
                hold=self._hold,
                resumable=not missing,
            )
        else:
            verification = self._verification(result.outcome_class)
            if verification is not None:
                verified = self._verify(run_id, output.session, verification, run_end, missing)
                if verified is None:
                    return  # the claim was lost, and that was told
                settlement, checks = verified
            else:
                settlement = decisions.after_run(
                    claimed,
                    result,
                    run_end,
                    timeout_seconds=self._setting.terms.time_limit(claimed.timeout_seconds),
                    crash_policy=self._setting.crash_policy,
                    usage_policy=self._setting.usage_policy,
                    usage=_usage_facts(output.reader, recorded, self._fallbacks(result)),
                    resume_missing=missing,
                )
        if settlement.to_state is ItemState.DONE:
            finished = self._finish_done(run_id, output.session, settlement)
            if finished is None:
                self._tell_lost()
                return
            settlement = finished
        change = settle(claimed, settlement, at=self._now())
        self._move_circuit(change, result.outcome_class, _reset_hint(output.reader, recorded))
        stat = None
        if change.after.state is ItemState.REVIEW and self._setting.notify is not None:
            stat = self._change_stat(output.session)
        self._write_settlement(change, run_id, checks=checks, diff_stat=stat)

    # -- committing -------------------------------------------------------------------------

    def _finish_done(
        self, run_id: str, session: Session, settlement: Settlement
    ) -> Settlement | None:
        """Where a done run's item goes: set aside when its worktree left the item's branch
        (a check may have switched it; nothing is committed off it), else committed as
        completion.commit says and on to done or review. None if the claim was lost."""
        if settlement.run_end is not None:
            aside = self._off_branch(run_id, session, settlement.run_end)
            if aside is not None:
                return aside
        done = None
        if self._branch is not None:
            done = self._complete(run_id, session)
            if done is None:
                return None
        return done_goes(self._claimed, settlement, done, self._setting.completion)

    def _complete(self, run_id: str, session: Session) -> CommitResult | None:
        """What completion.commit asks after a done run on the item's branch, under the claim
        (renewed at every heartbeat while git and its hooks run), told as an event; None if
        the claim was lost."""
        claimed, branch = self._claimed, self._branch
        done = self._renewing(
            lambda: commit.complete(
                Path(session.workspace),
                self._setting.completion,
                item=claimed,
                run_id=run_id,
                base_commit=session.base_commit or _recorded_base(self._claim.session, session),
            ),
            name="commit",
        )
        if done is not None and done.ending is Ending.COMMITTED:
            self._emit(
                WorkerEvent.COMMITTED,
                item_id=claimed.id, run_id=run_id, branch=branch, commit=done.commit,
            )  # fmt: skip
        elif done is not None and done.ending is Ending.UNCOMMITTED:
            self._emit(WorkerEvent.UNCOMMITTED, item_id=claimed.id, run_id=run_id, branch=branch)
        return done

    def _off_branch(self, run_id: str, session: Session, run_end: RunEnd) -> Settlement | None:
        """The branch guard (workproduct/branch.py), for an item with a branch: None when its
        worktree is on the item's branch (brought back if the agent detached it, and told);
        else the settlement that sets it aside, nothing committed."""
        if self._branch is None:
            return None
        branch = self._branch
        guarded = keep_on_branch(self._setting.project_root, Path(session.workspace), branch)
        if guarded.brought_back is not None:
            self._emit(
                WorkerEvent.BRANCH_RESTORED, item_id=self._claimed.id, run_id=run_id,
                branch=branch, commit=guarded.brought_back,
            )  # fmt: skip
        if guarded.off_branch is None:
            return None
        return decisions.off_branch(self._claimed, run_end, guarded.off_branch)

    # -- verifying --------------------------------------------------------------------------

    def _verification(self, outcome: OutcomeClass) -> Verification | None:
        """The checks that verify a run that ended ``outcome``: only a succeeded run is
        verified, and only when its item has checks to run (docs/verify.md)."""
        if outcome is not OutcomeClass.SUCCEEDED:
            return None
        policy = self._setting.verify
        available = policy.checks if policy is not None else ()
        checks, unknown = verify.select_checks(available, self._claimed.verify_checks)
        if not checks and not unknown:
            return None
        return Verification(checks, unknown)

    def _check_runner(self) -> CheckRunner:
        setting = self._setting
        return CheckRunner(
            self._store, self._guard, terms=setting.terms,
            heartbeat_seconds=setting.heartbeat_seconds,
            stop_grace_seconds=setting.stop_grace_seconds,
            stop_requested=setting.stop_requested, wake=self._wake, now=self._now,
            emit=self._emit, actor=f"worker:{setting.worker_id}", lost=self._tell_lost,
            known=setting.secrets,
        )  # fmt: skip

    def _verify(
        self,
        run_id: str,
        session: Session,
        verification: Verification,
        run_end: RunEnd,
        missing: tuple[str, ...],
    ) -> tuple[Settlement, tuple[CheckEvidence, ...]] | None:
        """Run the checks of a succeeded run, and say where the item goes after them, with
        their evidence; None when the claim was lost meanwhile (told; nothing more is
        written)."""
        claimed = self._claimed
        aside = self._off_branch(run_id, session, run_end)  # the checks see the item's branch
        if aside is not None:
            self._outcome_known()
            return aside, ()
        place = CheckPlace(
            claimed,
            run_id,
            Path(session.workspace),
            logs_of(self._setting.state_dir, claimed.id, run_id),
            self._plan.name,
        )
        outcome = self._check_runner().run(place, verification)
        if outcome is StopReason.SHUTDOWN:
            self._outcome_known()
            return decisions.after_shutdown(claimed, run_end, resumable=not missing), ()
        if isinstance(outcome, StopReason):
            return None
        self._outcome_known()
        settlement = verify.after_checks(
            claimed,
            run_end,
            outcome,
            policy=self._setting.verify or VerifyPolicy(()),
            fix_turns=claimed.fix_turns,
            resume_missing=missing,
        )
        return settlement, tuple(outcome)

    def _move_circuit(
        self, change: Change | None, outcome: OutcomeClass, hint: ResetHint | None = None
    ) -> None:
        if self._setting.circuit is not None:
            self._setting.circuit.settled(
                change, outcome, run_started_at=self.started_at, hint=hint
            )

    def _settle_start_failed(
        self, run_id: str, failure: machine.StartFailure, *, kind: RunKind
    ) -> None:
        """The run could not start: the item goes back where it was when the worker's machine
        failed (no attempt spent, and the worker backs off), else a person looks."""
        claimed, why = self._claimed, failure.message
        self._outcome_known()
        self._emit(
            WorkerEvent.EXITED, item_id=claimed.id, run_id=run_id, outcome_class="start-failed"
        )
        what = machine.machine_cannot(failure)
        if what is not None:
            cause = machine.cause_of(failure, what)
            settlement = machine.after_machine_failure(
                claimed_from=self._claim.claimed_from, kind=kind,
                worker_id=self._setting.worker_id, cause=cause, at=self._now(),
                run_recorded=self.run_id is not None,
            )  # fmt: skip
        else:
            run_end = RunEnd(
                self._now(), OutcomeClass.START_FAILED, Confidence.AUTHORITATIVE, diagnostic=why
            )
            resumable = kind.resumes
            settlement = decisions.start_failed(claimed, run_end, why=why, resumable=resumable)
        change = settle(claimed, settlement, at=self._now())
        self._move_circuit(change, OutcomeClass.START_FAILED)
        self._write_settlement(change, run_id)
        if what is not None and self._setting.machine is not None:
            self._setting.machine.failed(claimed.id, cause)

    def settle_internal_error(self, error: Exception) -> None:
        """wrighty failed on this item: stop its agent, if one runs, and settle the item as
        internal-error under its claim (LeaseGone if the store stayed away)."""
        claimed = self._claimed
        diagnostic = ""
        if self.agent is not None:
            self._stop(self.agent)
            diagnostic = self.agent.diagnostic_tail(self._setting.secrets)
        change = internal_error_change(
            self._store, claimed, error, plan=self._plan,
            installation_id=self._setting.installation_id, now=self._now,
            run_recorded=self.run_id is not None, process_started=self.agent is not None,
            diagnostic=diagnostic,
        )  # fmt: skip
        self._move_circuit(change, OutcomeClass.INTERNAL_ERROR)
        self._write_settlement(change, self.run_id)

    def _write_settlement(
        self,
        change: Change,
        run_id: str | None,
        *,
        checks: Sequence[CheckEvidence] = (),
        diff_stat: str | None = None,
    ) -> None:
        self.pending = change
        write_settlement(
            self._store, change, run_id, self._emit,
            notify=self._setting.notify, wake=self._setting.notify_wake, checks=checks,
            branch=self._branch, diff_stat=diff_stat,
        )  # fmt: skip

    def _change_stat(self, session: Session) -> str | None:
        """The stat of the item's change against its base, for the notice of an item ready
        for review (None without a base, or when git cannot tell)."""
        recorded = self._claim.session
        base = session.base_commit or (recorded.base_commit if recorded else None)
        if base is None:
            return None
        return change_stat(Path(session.workspace), base)

    def _claim_lost(self, claimed: Item, **fields: Any) -> None:
        claim_lost(self._emit, claimed, **fields)


def _recorded_branch(recorded: Session | None, workspace: Path) -> str | None:
    """The branch the item's session recorded for ``workspace``, the run's (a worktree kept
    as it was keeps its branch)."""
    if recorded is None or recorded.workspace != str(workspace):
        return None
    return recorded.branch


def _recorded_base(recorded: Session | None, session: Session) -> str | None:
    """The base commit the item's session recorded for the run's workspace (a worktree kept
    as it was keeps its base)."""
    if recorded is None or recorded.workspace != session.workspace:
        return None
    return recorded.base_commit


def _usage_facts(
    reader: Reader | None, recorded: Run | None, fallbacks: tuple[Fallback, ...]
) -> decisions.UsageFacts | None:
    """What the vendor's output said about a refusal; for the command adapter (whose output
    is not read), what the agent said with `wrighty fail --usage-limit`, or None; and the
    agent's fallbacks as they stand."""
    if reader is not None:
        return decisions.UsageFacts(reader.reset_hint(), reader.provider_answered, fallbacks)
    if recorded is None or AgentReport.of(recorded.agent_report) is not AgentReport.USAGE_LIMIT:
        return None
    return decisions.UsageFacts(_reset_hint(None, recorded), fallbacks=fallbacks)


def _reset_hint(reader: Reader | None, recorded: Run | None) -> ResetHint | None:
    """When the provider's limit lifts: as the vendor's output said, or as the agent reported
    it from inside its run (`wrighty fail --usage-limit --resets-at`)."""
    if reader is not None:
        return reader.reset_hint()
    if recorded is not None and recorded.agent_resets_at is not None:
        return ResetHint(AGENT_REPORTED, resets_at=recorded.agent_resets_at)
    return None


class TransitionWriter(Protocol):
    def write_transition(self, change: Change) -> bool: ...


class SessionReader(Protocol):
    def get_session(self, item_id: int) -> Session | None: ...


def internal_error_change(
    store: SessionReader,
    claimed: Item,
    error: Exception,
    *,
    plan: AgentPlan,
    installation_id: str,
    now: Callable[[], datetime],
    run_recorded: bool,
    process_started: bool,
    diagnostic: str = "",
) -> Change:
    """The settlement of ``claimed``, under its claim, when wrighty failed on it: a run's
    unexpected exception (`ClaimRun.settle_internal_error`) or a claim the loop could not
    compute (it sets the item aside); whether its session resumes here is in its reason."""
    resumable = resumable_here(
        claimed,
        store.get_session(claimed.id),
        plan,
        installation_id=installation_id,
        environ=os.environ,
    )
    settlement = decisions.internal_error(
        claimed,
        error,
        at=now(),
        run_recorded=run_recorded,
        process_started=process_started,
        resumable=resumable,
        diagnostic=diagnostic,
    )
    return settle(claimed, settlement, at=now())


def write_settlement(
    store: TransitionWriter,
    change: Change,
    run_id: str | None,
    emit: Emit,
    *,
    notify: Source | None = None,
    wake: Callable[[], None] | None = None,
    checks: Sequence[CheckEvidence] = (),
    branch: str | None = None,
    diff_stat: str | None = None,
) -> None:
    """Write a claim's settlement and say so; if the claim had moved on, say that instead.
    With ``notify``, the settlement's notice goes to the outbox in the same transaction
    (naming the failing ``checks``, the run's checks' evidence; for an item ready for review,
    every check, its ``branch`` and the ``diff_stat`` of its change, `diff.change_stat`),
    and ``wake`` tells the deliverer once it is committed."""
    claimed, after = change.before, change.after
    told = with_notices(change, notify, checks=checks, branch=branch, diff_stat=diff_stat)
    if not store.write_transition(told):
        claim_lost(emit, claimed, reason="fenced")
        return
    if told.notices and wake is not None:
        wake()
    emit(
        WorkerEvent.SETTLED,
        item_id=claimed.id,
        run_id=run_id,
        state=after.state.value,
        reason_code=after.reason_code,
    )
    if after.state is ItemState.RETRY_SCHEDULED:
        emit(
            WorkerEvent.RETRY_SCHEDULED,
            item_id=claimed.id,
            run_id=run_id,
            crash_retries=after.crash_retries,
            usage_retries=after.usage_retries,
            fix_turns=after.fix_turns,
            not_before=rfc3339(after.not_before),
            reason_code=after.reason_code,
        )
        if after.fix_turns > claimed.fix_turns:
            emit(
                WorkerEvent.FIX_SCHEDULED,
                item_id=claimed.id,
                run_id=run_id,
                fix_turns=after.fix_turns,
                reason=after.reason,
            )


def claim_lost(emit: Emit, claimed: Item, **fields: Any) -> None:
    """Tell that the claim of ``claimed`` is gone (fenced, cancelled, or given up on), under
    the event's name and, for readers written against it, its old one."""
    emit(WorkerEvent.CLAIM_LOST, item_id=claimed.id, generation=claimed.generation, **fields)
    emit(
        WorkerEvent.HEARTBEAT_LOST,  # its old name (docs/worker.md): it fires for a fenced
        item_id=claimed.id,  # claim too, not only when a heartbeat failed
        generation=claimed.generation,
        alias_of=WorkerEvent.CLAIM_LOST.value,
        **fields,
    )
