"""The second step of a claim's life: launch its agent and watch it to its end
(docs/architecture.md#one-items-path).

It starts the agent's process, puts it under the lease guard, and renews the claim at every
heartbeat while the agent runs: it records the session id as soon as the vendor tells it and
the run's spend as the output is read (the meter), and stops the agent for a spent budget, a
worker asked to stop, or the run's time limit. Once the agent has ended, it gathers the facts
of the run's ending (`ClaimEnding`) for `domain/decide.py`.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime

from wrighty.domain import budgets, decisions
from wrighty.domain.circuits import CircuitState
from wrighty.domain.claims import RenewOutcome
from wrighty.domain.classify import (
    AgentReport,
    Classification,
    RunFacts,
    StopReason,
    classify_exit,
)
from wrighty.domain.decide import BudgetFacts, ClaimEnding
from wrighty.domain.leases import until_beat
from wrighty.domain.model import Run, RunEnd, Session, Stream
from wrighty.domain.outcomes import USAGE_CLASSES
from wrighty.domain.retry import AGENT_REPORTED, Fallback, ResetHint
from wrighty.domain.times import rfc3339
from wrighty.domain.worker_events import WorkerEvent
from wrighty.errors import UnreadableError
from wrighty.services.resume import resume_gaps_here
from wrighty.supervisor.process import AgentProcess, LaunchError, launch
from wrighty.vendors.base import Reader
from wrighty.worker.life import ClaimLife
from wrighty.worker.meter import RunMeter
from wrighty.worker.patient import LeaseGone
from wrighty.worker.prepare import Prepared


class Output:
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


@dataclass(frozen=True)
class Ended:
    """A run whose agent has ended under the claim: the facts of its ending, and what the
    steps after it need of the run."""

    run_id: str
    ending: ClaimEnding
    session: Session  # the run's session, with its id once known
    reset_hint: ResetHint | None  # when the provider's limit lifts, as the run told it


def watch(life: ClaimLife, prepared: Prepared) -> Ended | None:
    """Launch the prepared run's agent and watch it to its end; None when the run was settled
    instead (it could not start) or the claim was lost (told; nothing more is written)."""
    claimed, run_id, start = life.claimed, prepared.run_id, prepared.start
    output = Output(life.plan.reader(), life.wake, prepared.session, prepared.meter)
    try:
        agent = launch(dataclasses.replace(prepared.spec, wake=life.wake, on_line=output.on_line))
    except LaunchError as error:
        life.settle_start_failed(run_id, error.failure, kind=start.kind)
        return None
    life.agent = agent
    if not life.guard.attach(agent):  # the lease guard fired while it started
        life.stop(agent)
        raise LeaseGone(life.guard.cause())
    if life.setting.machine is not None:
        life.setting.machine.started()
    life.emit(WorkerEvent.SPAWNED, item_id=claimed.id, run_id=run_id, pid=agent.pid)
    try:
        return _watch_to_the_end(life, agent, run_id, output)
    except LeaseGone:
        life.stop(agent)
        raise


def _watch_to_the_end(
    life: ClaimLife, agent: AgentProcess, run_id: str, output: Output
) -> Ended | None:
    claimed = life.claimed
    if not life.store.record_process(
        claimed, run_id, pid=agent.pid, process_started_at=agent.started_at
    ):
        life.lost(agent)
        return None
    stopped_by = _watch(life, agent, output, run_id)
    if stopped_by is StopReason.FENCED or stopped_by is StopReason.CANCELLED:
        return None
    life.outcome_known()
    life.stop(agent)  # descendants it left behind
    if not _note(life, output, run_id):
        life.lost(agent)
        return None
    return _ended(life, agent, run_id, output, stopped_by)


def _ended(
    life: ClaimLife, agent: AgentProcess, run_id: str, output: Output, stopped_by: StopReason | None
) -> Ended:
    """The facts of the run's ending: its outcome class, as classified and told, how it ended,
    what its session lacks for a resume, its budgets and what its vendor said of a refusal."""
    claimed = life.claimed
    status = agent.status
    assert status is not None
    recorded = life.store.get_run(run_id)
    report = AgentReport.of(recorded.agent_report) if recorded else None
    vendor = output.reader.classify(status.exit_code) if output.reader else None
    result = classify_exit(
        RunFacts(status.exit_code, status.signal, stopped_by, report, vendor=vendor)
    )
    agent_reason = recorded.agent_reason if recorded else None
    if agent_reason:
        result = dataclasses.replace(result, summary=f"{result.summary}: {agent_reason}")
    life.emit(
        WorkerEvent.EXITED,
        item_id=claimed.id,
        run_id=run_id,
        outcome_class=result.outcome_class.value,
        exit_code=status.exit_code,
        signal=status.signal,
    )
    said = f"agent says: {agent_reason}" if agent_reason else ""
    run_end = RunEnd(
        ended_at=life.now(),
        outcome_class=result.outcome_class,
        confidence=result.confidence,
        exit_code=status.exit_code,
        signal=status.signal,
        diagnostic="\n".join(
            part
            for part in (result.summary, said, agent.diagnostic_tail(life.setting.secrets))
            if part
        ),
        usage=output.meter.run_usage if output.reader is not None else None,
    )
    missing = resume_gaps_here(
        output.session,
        life.plan,
        installation_id=life.setting.installation_id,
        environ=os.environ,
    )
    meter = output.meter
    ending = ClaimEnding(
        claimed,
        result,
        run_end,
        stopped_by=stopped_by,
        resume_missing=missing,
        budget=BudgetFacts(meter.limit, meter.item_total, life.hold),
        usage=_usage_facts(output.reader, recorded, _fallbacks(life, result)),
    )
    return Ended(run_id, ending, output.session, _reset_hint(output.reader, recorded))


def _watch(life: ClaimLife, agent: AgentProcess, output: Output, run_id: str) -> StopReason | None:
    """Renew the lease until the agent exits; why wrighty stopped it, if it did."""
    claimed, terms, grace = life.claimed, life.setting.terms, life.setting.stop_grace_seconds
    deadline = time.monotonic() + terms.time_limit(claimed.timeout_seconds)
    while True:
        remaining = deadline - time.monotonic()
        beat = until_beat(life.setting.heartbeat_seconds, time.monotonic())
        life.wake.wait(timeout=max(0.0, min(beat, remaining)))
        life.wake.clear()
        if agent.status is not None:
            return None
        if not _note(life, output, run_id) or not _note_usage(life, output, run_id):
            return life.lost(agent)
        why = _why_stop(life, output, deadline)
        if why is None:
            agent.refresh_descendants()
            result = life.store.renew(claimed, terms=terms)
            if result.outcome is RenewOutcome.LOST:
                return life.lost(agent)
            if result.outcome is RenewOutcome.BUDGET_EXHAUSTED:
                why = StopReason.TIMEOUT
        if why is not None:
            agent.stop(grace_seconds=grace)
            return why


def _why_stop(life: ClaimLife, output: Output, deadline: float) -> StopReason | None:
    """Why wrighty stops the agent now, if it does: a spent budget, a worker asked to
    stop, the run's time limit."""
    if output.meter.over:
        return StopReason.BUDGET
    if life.setting.stop_requested.is_set():
        return StopReason.SHUTDOWN
    if time.monotonic() >= deadline:
        return StopReason.TIMEOUT
    # A run whose final figures are in has ended its spending and is exiting on its own:
    # stopping it now would make its outcome a race between its exit and the stop.
    usage = output.meter.run_usage
    if not (usage is not None and usage.final) and _agent_spent(life):
        return StopReason.BUDGET
    return None


def _note(life: ClaimLife, output: Output, run_id: str) -> bool:
    """Record the session id as soon as the vendor tells it; False if the claim is lost."""
    learned = output.unrecorded_session()
    if learned is None:
        return True
    if not life.store.record_session(life.claimed, learned, at=life.now(), run_id=run_id):
        return False
    output.recorded = learned
    life.emit(
        WorkerEvent.SESSION,
        item_id=life.claimed.id,
        run_id=run_id,
        session_id=learned.session_id,
    )
    return True


def _note_usage(life: ClaimLife, output: Output, run_id: str) -> bool:
    """Record what the run spent so far, so that a run that dies keeps it (partial);
    False if the claim is lost. The command adapter's come from `wrighty report-usage`,
    into the store: read back for the item's budget."""
    meter = output.meter
    if output.reader is None:
        if meter.limit.unbounded:
            return True  # nothing to check it against (a day budget reads the store)
        recorded = life.store.get_run(run_id)
        meter.seen(recorded.usage if recorded is not None else None)
        return True
    usage = meter.unrecorded()
    if usage is None:
        return True
    if not life.store.record_usage(life.claimed, run_id, usage):
        return False
    meter.recorded(usage)
    return True


def _agent_spent(life: ClaimLife) -> bool:
    """Whether the agent's budget for the day is spent, with this run's usage as just
    recorded (a fleet's other runs count with theirs)."""
    setting = life.setting
    limit = setting.budgets.agent_limit(life.plan.name)
    if limit.unbounded:
        return False
    now = life.now()
    since = setting.budgets.period(now).start
    spent = life.store.agent_spend(life.plan.name, since=since)
    life.hold = budgets.agent_hold(setting.budgets, life.plan.name, spent, now=now)
    return life.hold is not None


def _fallbacks(life: ClaimLife, result: Classification) -> tuple[Fallback, ...]:
    """The agent's fallbacks and whether each can take the item now, when the run was
    refused and the policy hands off (docs/handoff.md); else none (nothing is read)."""
    setting = life.setting
    if result.outcome_class not in USAGE_CLASSES or not setting.fallbacks:
        return ()
    if setting.usage_policy.handoff_after_seconds is None:
        return ()
    now = life.now()
    return tuple(
        Fallback(agent, _unavailable(life, agent, circuit, now))
        for agent, circuit in setting.fallbacks.items()
    )


def _unavailable(life: ClaimLife, agent: str, circuit: str | None, now: datetime) -> str | None:
    """Why ``agent`` cannot take a handed-off item now: its provider circuit is not
    closed, or its day budget is spent; None when it can."""
    setting = life.setting
    try:
        if circuit is not None:
            found = life.store.get_circuit(circuit)
            state = found.state(now)
            if state is not CircuitState.CLOSED:
                until = f" until {rfc3339(found.until)}" if found.until else ""
                return f"its provider circuit is {state}{until}"
        if not setting.budgets.agent_limit(agent).unbounded:
            since = setting.budgets.period(now).start
            spent = life.store.agent_spend(agent, since=since)
            hold = budgets.agent_hold(setting.budgets, agent, spent, now=now)
            if hold is not None:
                return hold.reason()
    except UnreadableError:
        return "what the store holds of it does not read"
    return None


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
