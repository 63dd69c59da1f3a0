"""A claim's life, as its steps share it: the worker's `Setting` of collaborators, and the
per-claim `ClaimLife` (the claim, its store, its lease guard, how far the run got) with the
moves every step makes the same way: knowing the outcome, stopping the agent, telling a lost
claim, renewing the claim while slow work runs, and writing the settlement.

Every write about the item goes through the store's guarded operations; when one reports the
claim lost, the life stops the agent's whole tree and writes nothing more about the item
(invariant 2 of docs/claims.md).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from wrighty.agents import AgentPlan
from wrighty.domain import budgets, decisions, machine
from wrighty.domain.check_evidence import CheckEvidence
from wrighty.domain.claims import Claim, LeaseTerms, RenewOutcome, settle
from wrighty.domain.classify import StopReason
from wrighty.domain.decide import Policies
from wrighty.domain.leases import until_beat
from wrighty.domain.model import LANDING_FIX_TURNS, Change, Item, RunEnd, Session
from wrighty.domain.notices import Source, with_notices
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.retry import CrashPolicy, ResetHint, UsagePolicy
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339
from wrighty.domain.usage import Price
from wrighty.domain.verify import VerifyPolicy
from wrighty.domain.work_product import Completion
from wrighty.domain.worker_events import Emit, WorkerEvent
from wrighty.services.resume import resumable_here
from wrighty.supervisor.process import AgentProcess
from wrighty.supervisor.sandboxing import SandboxMaker
from wrighty.vendors.base import Reader
from wrighty.worker.circuit import CircuitGate
from wrighty.worker.lease import LeaseGuard
from wrighty.worker.machine import MachineWatch
from wrighty.worker.patient import LeaseGone, PatientStore
from wrighty.workproduct.branch import keep_on_branch

_T = TypeVar("_T")


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
    # The variables no agent or check is given (the trackers' tokens: docs/sources.md).
    withheld: frozenset[str] = frozenset()
    # A new reader of an agent's output, by the agent's name (None: the agent's output is
    # not read, or it is unknown now): what a handoff reads the earlier agent's last message with.
    reader_of: Callable[[str], Reader | None] = lambda _: None
    # The values no prompt shows (config.known_secrets): the worker's environment's credential
    # variables and every agents.<name>.env value.
    secrets: tuple[str, ...] = ()
    # Where the agent runs when wrighty.json gives it a sandbox (docs/sandbox.md), and where
    # its checks run (verify.sandbox: the agent's by default); None: as the worker.
    sandbox: SandboxMaker | None = None
    check_sandbox: SandboxMaker | None = None


class ClaimLife:
    """One claim's shared state, from the claim to the item's settlement (or to the claim's
    loss), and the moves every step of it makes.

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
        self.setting = setting
        self.store = store
        self.guard = guard
        self.claim = claim
        self.claimed = claim.item
        self.wake = wake
        self.plan = setting.plan
        self.now = setting.now
        self.emit = setting.emit
        # How far the run got, for settling the item if wrighty fails on the way.
        self.started_at = setting.now()  # when its run began (or was about to)
        self.run_id: str | None = None  # set once the run is recorded
        self.agent: AgentProcess | None = None  # set once the agent is started
        self.hold: budgets.AgentHold | None = None  # the agent's day budget, if it stopped the run
        self.pending: Change | None = None  # the settlement being written, until it is
        self.branch: str | None = None  # the item's branch, in worktree mode

    def off_branch(self, run_id: str, session: Session) -> str | None:
        """The branch guard (workproduct/branch.py), for an item with a branch: None when its
        worktree is on the item's branch (brought back if the agent detached it, and told);
        else why it is not, and nothing is to be committed."""
        if self.branch is None:
            return None
        branch = self.branch
        guarded = keep_on_branch(self.setting.project_root, Path(session.workspace), branch)
        if guarded.brought_back is not None:
            self.emit(
                WorkerEvent.BRANCH_RESTORED, item_id=self.claimed.id, run_id=run_id,
                branch=branch, commit=guarded.brought_back,
            )  # fmt: skip
        return guarded.off_branch

    def policies(self) -> Policies:
        """What the worker's configuration says about this claim's ending."""
        setting = self.setting
        return Policies(
            timeout_seconds=setting.terms.time_limit(self.claimed.timeout_seconds),
            crash_policy=setting.crash_policy,
            usage_policy=setting.usage_policy,
            verify=setting.verify,
            review_by_person=setting.completion.review == "person",
            landing_fix=(
                setting.completion.review_after_fix
                if self.claim.claimed_reason_code in LANDING_FIX_TURNS
                else None
            ),
        )

    def outcome_known(self) -> None:
        """The run's outcome is known (its agent ended, or never started): from now on the
        run records it for as long as its claim lets it. LeaseGone if the lease guard fired
        first: then the agent was stopped for the lease, and nothing more is written."""
        if not self.guard.outcome_known():
            raise LeaseGone(self.guard.cause())

    def stop(self, agent: AgentProcess) -> None:
        agent.stop(grace_seconds=self.setting.stop_grace_seconds)
        agent.close()

    def lost(self, agent: AgentProcess) -> StopReason:
        """The claim is gone: stop the tree at once and write nothing more about the item."""
        claimed = self.claimed
        reason = self.tell_lost()
        self.stop(agent)
        status = agent.status
        self.emit(
            WorkerEvent.EXITED,
            item_id=claimed.id,
            outcome_class=reason.value,
            exit_code=status.exit_code if status else None,
            signal=status.signal if status else None,
        )
        return reason

    def tell_lost(self) -> StopReason:
        """Tell that the claim is gone, and why: cancelled, or fenced."""
        claimed = self.claimed
        current = self.store.get_item(claimed.id)
        cancelled = current is not None and current.state is ItemState.CANCELLED
        reason = StopReason.CANCELLED if cancelled else StopReason.FENCED
        self.claim_lost(reason=reason.value)
        return reason

    def claim_lost(self, **fields: Any) -> None:
        claim_lost(self.emit, self.claimed, **fields)

    def renewing(self, work: Callable[[], _T], *, name: str) -> _T | None:
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

        threading.Thread(target=run, name=f"{name}-{self.claimed.id}", daemon=True).start()
        while not finished.wait(until_beat(self.setting.heartbeat_seconds, time.monotonic())):
            result = self.store.renew(self.claimed, terms=self.setting.terms)
            if result.outcome is RenewOutcome.LOST:
                return None
        if failed:
            raise failed[0]
        return answer[0]

    def move_circuit(
        self, change: Change | None, outcome: OutcomeClass, hint: ResetHint | None = None
    ) -> None:
        if self.setting.circuit is not None:
            self.setting.circuit.settled(change, outcome, run_started_at=self.started_at, hint=hint)

    def settle_start_failed(
        self, run_id: str, failure: machine.StartFailure, *, kind: RunKind
    ) -> None:
        """The run could not start: the item goes back where it was when the worker's machine
        failed (no attempt spent, and the worker backs off), else a person looks."""
        claimed, why = self.claimed, failure.message
        self.outcome_known()
        self.emit(
            WorkerEvent.EXITED, item_id=claimed.id, run_id=run_id, outcome_class="start-failed"
        )
        what = machine.machine_cannot(failure)
        if what is not None:
            cause = machine.cause_of(failure, what)
            settlement = machine.after_machine_failure(
                claimed_from=self.claim.claimed_from, kind=kind,
                worker_id=self.setting.worker_id, cause=cause, at=self.now(),
                run_recorded=self.run_id is not None,
            )  # fmt: skip
        else:
            run_end = RunEnd(
                self.now(), OutcomeClass.START_FAILED, Confidence.AUTHORITATIVE, diagnostic=why
            )
            resumable = kind.resumes
            settlement = decisions.start_failed(claimed, run_end, why=why, resumable=resumable)
        change = settle(claimed, settlement, at=self.now())
        self.move_circuit(change, OutcomeClass.START_FAILED)
        self.write_settlement(change, run_id)
        if what is not None and self.setting.machine is not None:
            self.setting.machine.failed(claimed.id, cause)

    def settle_internal_error(self, error: Exception) -> None:
        """wrighty failed on this item: stop its agent, if one runs, and settle the item as
        internal-error under its claim (LeaseGone if the store stayed away)."""
        claimed = self.claimed
        diagnostic = ""
        if self.agent is not None:
            self.stop(self.agent)
            diagnostic = self.agent.diagnostic_tail(self.setting.secrets)
        change = internal_error_change(
            self.store, claimed, error, plan=self.plan,
            installation_id=self.setting.installation_id, now=self.now,
            run_recorded=self.run_id is not None, process_started=self.agent is not None,
            diagnostic=diagnostic,
        )  # fmt: skip
        self.move_circuit(change, OutcomeClass.INTERNAL_ERROR)
        self.write_settlement(change, self.run_id)

    def write_settlement(
        self,
        change: Change,
        run_id: str | None,
        *,
        checks: Sequence[CheckEvidence] = (),
        diff_stat: str | None = None,
    ) -> None:
        self.pending = change
        write_settlement(
            self.store, change, run_id, self.emit,
            notify=self.setting.notify, wake=self.setting.notify_wake, checks=checks,
            branch=self.branch, diff_stat=diff_stat,
        )  # fmt: skip


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
    unexpected exception (`ClaimLife.settle_internal_error`) or a claim the loop could not
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
    every check, its ``branch`` and the ``diff_stat`` of its change, `services/diff.change_stat`),
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
