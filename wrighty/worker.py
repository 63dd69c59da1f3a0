"""The worker loop: reap, claim, launch, renew while the agent runs, classify, settle.

Every write about a claimed item goes through the store's guarded operations. When one of
them reports the claim lost, the worker stops the agent's whole tree and writes nothing more
about the item (DESIGN.md, invariant 2). Nothing about one item stops the loop: an unexpected
exception while claiming or working on an item settles that item as internal-error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil

from wrighty import __version__, services
from wrighty.agents import AgentPlan, plan_agent
from wrighty.config import STATE_DIRNAME, LoadedConfig, WorkerSettings
from wrighty.domain import decisions
from wrighty.domain.claims import (
    CLAIMABLE_STATES,
    ClaimRequest,
    LeaseTerms,
    RenewOutcome,
    claim,
    claim_to_set_aside,
    not_claimable_reason,
    settle,
)
from wrighty.domain.classify import (
    AgentReport,
    RunFacts,
    StopReason,
    classify_exit,
)
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.model import Change, Item, NewRun, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.resume import ResumeFacts
from wrighty.domain.retry import CrashPolicy
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339, system_now
from wrighty.errors import StoreError, WrightyError
from wrighty.registry import Heartbeat
from wrighty.store.port import Store
from wrighty.supervisor.process import (
    AgentProcess,
    LaunchError,
    LaunchSpec,
    Stream,
    executable_problem,
    launch,
    stop_earlier_run,
)
from wrighty.vendors.base import Reader, VendorError
from wrighty.workspaces import CurrentDirectoryLock, WorkspaceError, choose_workspace

Emit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class WorkerOptions:
    once: bool = False
    concurrency: int = 1
    item_id: int | None = None
    agent: str | None = None
    max_items: int | None = None
    idle_timeout_seconds: float | None = None
    stop_grace_seconds: float = 10.0


class _LeaseGone(Exception):
    """The store stayed unreachable until the claim's lease ran out: the claim is lost. Its
    message is the store's last error."""


class GaveUpError(WrightyError):
    """The worker gave up items because the store failed until their claims' leases ran out:
    they stay running for the reaper, and the worker exits non-zero."""

    exit_code = 1


def _refuse_unrunnable(plan: AgentPlan) -> None:
    """The worker's agent must be a program it can start (on the worker's own PATH)."""
    problem = executable_problem(plan.executable, None)
    if problem is None:
        return
    where = "command" if plan.vendor is None else "executable"
    fix = f"; install it or set agents.{plan.name}.{where} in wrighty.json"
    raise WrightyError(
        f"agent {plan.name!r}: executable {problem}" + (fix if "not found" in problem else "")
    )


# How many items one claim pass may set aside as internal-error before it waits for the next.
MAX_SET_ASIDE_PER_PASS = 10


STORE_RETRY_FIRST_SECONDS = 0.25
STORE_RETRY_MAX_SECONDS = 5.0


class _PatientStore:
    """The worker's store. In a claim's thread, a call that fails because the store is
    unreachable is retried with backoff for as long as the claim's lease lasts; then
    _LeaseGone. A supervised agent is only stopped when its claim is really lost: a renewal
    that says so once the store is back, or a lease that ran out while it was unreachable.
    Elsewhere (the claim loop) a failure is raised at once."""

    def __init__(self, store: Store, now: Callable[[], datetime], emit: Callable[..., None]):
        self._store = store
        self._now = now
        self._emit = emit
        self._claim = threading.local()

    def hold(self, lease_until: datetime | None) -> None:
        """This thread works under a claim whose lease lasts until ``lease_until``."""
        self._claim.lease_until = lease_until

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)
        if not callable(method):
            return method

        def patiently(*args: Any, **kwargs: Any) -> Any:
            delay = STORE_RETRY_FIRST_SECONDS
            while True:
                try:
                    return method(*args, **kwargs)
                except StoreError as error:
                    lease_until = getattr(self._claim, "lease_until", None)
                    if lease_until is None:
                        raise
                    if self._now() >= lease_until:
                        raise _LeaseGone(str(error)) from None
                    self._emit(
                        "store-unreachable",
                        operation=name,
                        error=type(error).__name__,
                        cause=str(error),  # a StoreError's message never holds a secret
                        retry_in_seconds=delay,
                    )
                    time.sleep(delay)
                    delay = min(delay * 2, STORE_RETRY_MAX_SECONDS)

        return patiently


@dataclass(frozen=True)
class _Running:
    """One started agent and what its thread needs to watch and settle it."""

    claimed: Item
    agent: AgentProcess
    run_id: str
    options: WorkerOptions
    wake: threading.Event
    output: _Output
    plan: AgentPlan


@dataclass
class _Attempt:
    """How far one claim's work got, for settling it if wrighty fails on the way."""

    run_id: str | None = None  # set once the run is recorded
    agent: AgentProcess | None = None  # set once the agent is started


@dataclass(frozen=True)
class _Start:
    """How a claimed item's run starts."""

    kind: RunKind
    workspace: Path
    session_id: str | None
    argv: tuple[str, ...]


class _Output:
    """One run's vendor output reader, and the session id it learned (read by the run's
    thread; fed by the output pump's)."""

    def __init__(self, reader: Reader | None, wake: threading.Event, session: Session) -> None:
        self.reader = reader
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

    def unrecorded_session(self) -> Session | None:
        learned = self.reader.session_id if self.reader else None
        if self._started.session_id is not None or learned is None or self.recorded is not None:
            return None
        return dataclasses.replace(self._started, session_id=learned)

    @property
    def session(self) -> Session:
        """The run's session, with its id once known."""
        return self.recorded or self._started


class Worker:
    def __init__(
        self,
        store: Store,
        loaded: LoadedConfig,
        *,
        installation_id: str,
        emit: Emit,
        now: Callable[[], datetime] = system_now,
        agent_env: dict[str, str] | None = None,
    ) -> None:
        self._store: Store = _PatientStore(store, now, self._emit)
        self._config = loaded.config
        self._project_root = loaded.root
        self._state_dir = loaded.root / STATE_DIRNAME
        self._mode = loaded.config.worker.workspace_mode
        # In "current" mode one agent at a time works in the project directory, across workers.
        self._current_lock = (
            CurrentDirectoryLock(self._state_dir) if self._mode == "current" else None
        )
        self._installation_id = installation_id
        self._emit_event = emit
        self._now = now
        # How `wrighty finish` / `wrighty fail` inside the run find this store.
        self._agent_env = agent_env or (
            {"WRIGHTY_CONFIG": str(loaded.path)} if loaded.path is not None else {}
        )
        self.worker_id = "w-" + secrets.token_hex(6)
        self._stop_requested = threading.Event()
        self._wake = threading.Event()  # the claim loop's: a slot freed up, or stop
        self._slot_wakes: set[threading.Event] = set()
        self._running_items: set[int] = set()
        self._gave_up: list[str] = []  # one line per item given up: the store failed too long
        self._last_beat: tuple[WorkerState, tuple[int, ...]] | None = None
        self._slot_lock = threading.Lock()
        settings = self._config.worker
        crash = settings.process_crash
        self._crash_policy = CrashPolicy(
            action=crash.action,
            initial_seconds=crash.initial_retry_minutes * 60,
            multiplier=crash.backoff_multiplier,
            max_seconds=crash.max_retry_minutes * 60,
            max_attempts=crash.max_attempts,
        )
        self._terms = LeaseTerms(
            lease_seconds=settings.lease_seconds,
            default_timeout_seconds=settings.item_timeout_minutes * 60,
        )
        self._heartbeat = self._heartbeat_for(settings)

    @property
    def _patient(self) -> _PatientStore:
        assert isinstance(self._store, _PatientStore)
        return self._store

    def _heartbeat_for(self, settings: WorkerSettings) -> Heartbeat:
        started = self._now()
        identity = WorkerRow(
            worker_id=self.worker_id,
            label=settings.label,
            installation_id=self._installation_id,
            pid=os.getpid(),
            process_started_at=psutil.Process().create_time(),
            version=__version__,
            state=WorkerState.IDLE,
            items=(),
            started_at=started,
            last_heartbeat_at=started,
        )
        return Heartbeat(
            self._store,
            identity,
            interval_seconds=settings.heartbeat_seconds,
            retention_seconds=settings.registry_retention_hours * 3600,
            now=self._now,
        )

    def _beat(self, *, force: bool = False) -> None:
        """The worker's own heartbeat in the registry (throttled, best effort)."""
        with self._slot_lock:
            items = tuple(sorted(self._running_items))
        if self._stop_requested.is_set():
            state = WorkerState.STOPPING
        else:
            state = WorkerState.RUNNING if items else WorkerState.IDLE
        # What the worker runs changed: say so now rather than at the next interval.
        changed = (state, items) != self._last_beat
        self._last_beat = (state, items)
        self._heartbeat.beat(state, items, force=force, changed=changed)

    def request_stop(self) -> None:
        """Stop claiming; stop the running agents and settle them (safe in a signal handler)."""
        self._stop_requested.set()
        self._wake.set()
        for wake in list(self._slot_wakes):
            wake.set()

    # -- the loop ---------------------------------------------------------------------------

    def run(self, options: WorkerOptions) -> int:
        """Process items until told to stop; the number of items this worker claimed."""
        agent_name = options.agent or self._config.worker.default_agent
        plan = plan_agent(self._config, agent_name, project_root=self._project_root)
        _refuse_unrunnable(plan)
        if options.item_id is not None:
            self._refuse_unclaimable(options.item_id, agent_name)
        self._emit("started", agent=agent_name, installation_id=self._installation_id)
        self._beat(force=True)
        claimed_count = 0
        slots: list[threading.Thread] = []
        idle_since = time.monotonic()
        while not self._stop_requested.is_set() and (
            options.max_items is None or claimed_count < options.max_items
        ):
            slots = [slot for slot in slots if slot.is_alive()]
            self._beat()
            claimed = None
            if len(slots) < self._slot_limit(options) and self._workspace_free():
                claimed = self._claim_next(plan, options)
                if claimed is None and self._current_lock is not None:
                    self._current_lock.release()
            if claimed is not None:
                claimed_count += 1
                slots.append(self._start_slot(claimed, plan, options))
                idle_since = time.monotonic()
                if options.once:
                    break
                continue
            if slots:
                idle_since = time.monotonic()
            elif (
                options.once
                or options.item_id is not None
                or self._idle_too_long(options, idle_since)
            ):
                break
            self._wake.wait(self._config.worker.poll_seconds)
            self._wake.clear()  # a stop request is read from its own flag, not from here
        self._wind_down(slots)
        self._emit("stopping", processed=claimed_count)
        if self._gave_up:
            more = len(self._gave_up) - 1
            raise GaveUpError(self._gave_up[0] + (f" (and {more} more)" if more else ""))
        return claimed_count

    def _refuse_unclaimable(self, item_id: int, agent_name: str) -> None:
        """`--item N` names an item this worker could claim (now or when it is due)."""
        item = services.require_item(self._store, item_id)
        why = not_claimable_reason(
            item, agent=agent_name, default_agent=self._config.worker.default_agent, now=self._now()
        )
        if why is not None:
            raise WrightyError(why)

    def _wind_down(self, slots: list[threading.Thread]) -> None:
        """Wait for the running items to settle (heartbeats go on), then let go of the project
        directory and of the registry."""
        self._beat(force=self._stop_requested.is_set())
        for slot in slots:
            while slot.is_alive():
                slot.join(self._config.worker.poll_seconds)
                self._beat()
        self._heartbeat.stop()
        if self._current_lock is not None:
            self._current_lock.release()

    def _claim_next(self, plan: AgentPlan, options: WorkerOptions) -> Item | None:
        """Reap, then claim; None also when the store cannot be reached (the running agents
        go on, and the next pass tries again). An item whose claim wrighty cannot compute is
        set aside as internal-error, and the claim is tried again without it."""
        request = self._request(plan.name, options)
        for _ in range(MAX_SET_ASIDE_PER_PASS):
            try:
                services.reap_expired(
                    self._store, now=self._now(), max_requeues=self._config.worker.max_requeues
                )
                return self._store.acquire(request, now=self._now())
            except StoreError as error:
                self._store_unreachable("acquire", error)
                return None
            except Exception as error:  # a bug, or a value in the store it cannot handle
                self._emit(
                    "claim-failed",
                    error=type(error).__name__,
                    cause=decisions.describe_error(error),
                )
                if not self._set_aside_unclaimable(request, plan):
                    return None
        return None

    def _store_unreachable(self, operation: str, error: StoreError) -> None:
        self._emit(
            "store-unreachable", operation=operation, error=type(error).__name__, cause=str(error)
        )

    def _set_aside_unclaimable(self, request: ClaimRequest, plan: AgentPlan) -> bool:
        """Settle as internal-error every claimable item whose claim cannot be computed, so
        that it does not stop every worker's claims; whether any was."""
        now = self._now()
        found = False
        try:
            for item in self._store.list_items(CLAIMABLE_STATES):
                if request.item_id is not None and item.id != request.item_id:
                    continue
                try:
                    claim(item, request, at=now)
                except Exception as error:  # the claim of this one item cannot be computed
                    found = self._set_aside(item, request, plan, error) or found
        except StoreError as error:
            self._store_unreachable("set-aside", error)
        return found

    def _set_aside(
        self, item: Item, request: ClaimRequest, plan: AgentPlan, error: Exception
    ) -> bool:
        """Take ``item`` under a claim that reads none of its values, and settle it at once
        as internal-error (two guarded writes, as for any claim); False if another worker
        moved it first."""
        try:
            change = claim_to_set_aside(item, request, at=self._now())
            if not self._store.write_transition(change):
                return False
            claimed = change.after
            self._emit("claimed", item_id=claimed.id, generation=claimed.generation)
            settlement = decisions.internal_error(
                claimed,
                error,
                at=self._now(),
                run_recorded=False,
                process_started=False,
                resumable=self._resumable(claimed, plan),
            )
            self._write_settlement(claimed, settle(claimed, settlement, at=self._now()), None)
        except StoreError:
            raise
        except Exception as again:  # reported; the loop goes on
            self._emit(
                "claim-failed",
                item_id=item.id,
                error=type(again).__name__,
                cause=decisions.describe_error(again),
            )
            return False
        return True

    def _slot_limit(self, options: WorkerOptions) -> int:
        return 1 if self._current_lock is not None else options.concurrency

    def _workspace_free(self) -> bool:
        """In "current" mode, take the project directory's lock before claiming. The worker
        keeps it while it goes on claiming, and lets go when it finds nothing or stops."""
        return self._current_lock is None or self._current_lock.try_acquire()

    def _idle_too_long(self, options: WorkerOptions, idle_since: float) -> bool:
        idle_for = time.monotonic() - idle_since
        if options.idle_timeout_seconds is None or idle_for < options.idle_timeout_seconds:
            return False
        self._emit("idle", idle_seconds=round(idle_for, 3))
        return True

    def _start_slot(
        self, claimed: Item, plan: AgentPlan, options: WorkerOptions
    ) -> threading.Thread:
        """Work on ``claimed`` in its own thread. The thread lives as long as the agent: Linux
        sends the parent-death signal when the spawning thread ends."""

        def work() -> None:
            wake = threading.Event()
            attempt = _Attempt()
            with self._slot_lock:
                self._slot_wakes.add(wake)
                self._running_items.add(claimed.id)
            self._patient.hold(claimed.lease_expires_at)
            try:
                self._work_on(claimed, plan, options, wake, attempt)
            except _LeaseGone as gone:
                self._give_up(claimed, gone)
            except Exception as error:  # nothing about one item may stop the worker
                self._settle_internal_error(claimed, plan, options, attempt, error)
            finally:
                with self._slot_lock:
                    self._slot_wakes.discard(wake)
                    self._running_items.discard(claimed.id)
                self._wake.set()

        slot = threading.Thread(target=work, name=f"item-{claimed.id}")
        slot.start()
        return slot

    def _request(self, agent_name: str, options: WorkerOptions) -> ClaimRequest:
        return ClaimRequest(
            worker_id=self.worker_id,
            installation_id=self._installation_id,
            terms=self._terms,
            default_agent=self._config.worker.default_agent,
            item_id=options.item_id,
            agent=agent_name,
        )

    # -- one item ---------------------------------------------------------------------------

    def _give_up(self, claimed: Item, gone: _LeaseGone) -> None:
        """The store failed until the claim's lease ran out: the agent is stopped (by the
        caller) and the item left running, for the reaper."""
        self._emit(
            "heartbeat-lost",
            item_id=claimed.id,
            generation=claimed.generation,
            reason="store-unreachable",
            cause=str(gone),
        )
        with self._slot_lock:
            self._gave_up.append(
                f"gave up item {claimed.id}: the store failed until its claim's lease ran out "
                f"({gone}); the item stays running until its lease is reaped"
            )

    def _settle_internal_error(
        self,
        claimed: Item,
        plan: AgentPlan,
        options: WorkerOptions,
        attempt: _Attempt,
        error: Exception,
    ) -> None:
        """wrighty failed on this item: stop its agent, if one runs, and settle the item as
        internal-error under its claim. If even that fails, the item stays running under the
        claim until the reaper takes it."""
        self._report_internal_error(claimed, attempt, error)
        try:
            diagnostic = ""
            if attempt.agent is not None:
                attempt.agent.stop(grace_seconds=options.stop_grace_seconds)
                attempt.agent.close()
                diagnostic = attempt.agent.diagnostic_tail()
            settlement = decisions.internal_error(
                claimed,
                error,
                at=self._now(),
                run_recorded=attempt.run_id is not None,
                process_started=attempt.agent is not None,
                resumable=self._resumable(claimed, plan),
                diagnostic=diagnostic,
            )
            change = settle(claimed, settlement, at=self._now())
            self._write_settlement(claimed, change, attempt.run_id)
        except _LeaseGone as gone:
            self._give_up(claimed, gone)
        except Exception as again:  # reported; the reaper settles it
            self._report_internal_error(claimed, attempt, again, settled=False)

    def _report_internal_error(
        self, claimed: Item, attempt: _Attempt, error: Exception, **fields: Any
    ) -> None:
        self._emit(
            "internal-error",
            item_id=claimed.id,
            run_id=attempt.run_id,
            error=type(error).__name__,
            cause=decisions.describe_error(error),
            **fields,
        )

    def _resumable(self, claimed: Item, plan: AgentPlan) -> bool:
        """Whether the item's recorded session can be resumed here (for its next command)."""
        return services.resumable_here(
            claimed,
            self._store.get_session(claimed.id),
            plan,
            installation_id=self._installation_id,
            environ=os.environ,
        )

    def _work_on(
        self,
        claimed: Item,
        plan: AgentPlan,
        options: WorkerOptions,
        wake: threading.Event,
        attempt: _Attempt,
    ) -> None:
        run_id = f"run-{uuid.uuid4().hex[:12]}"
        self._emit("claimed", item_id=claimed.id, generation=claimed.generation, run_id=run_id)
        start = self._prepare(claimed, plan, run_id)
        if start is None:
            return
        claim_token = secrets.token_urlsafe(24)
        new_run = NewRun(
            run_id,
            start.kind,
            self.worker_id,
            self._installation_id,
            self._now(),
            start.session_id,
            claim_token,
        )
        session = Session(
            claimed.id, plan.adapter, start.session_id, str(start.workspace), self._installation_id
        )
        if self._store.start_run(claimed, new_run, session=session) is None:
            self._emit("heartbeat-lost", item_id=claimed.id, generation=claimed.generation)
            return
        attempt.run_id = run_id
        if start.kind is RunKind.RESUME:
            self._stop_earlier_runs(claimed, run_id, options)
            self._emit("resumed", item_id=claimed.id, run_id=run_id, session_id=start.session_id)
            claimed = dataclasses.replace(
                claimed, body=decisions.CONTINUATION_PROMPT + claimed.body
            )
        output = _Output(plan.reader(), wake, session)
        try:
            spec = self._launch_spec(claimed, plan, run_id, start, claim_token)
            agent = launch(dataclasses.replace(spec, wake=wake, on_line=output.on_line))
        except LaunchError as error:
            resumable = start.kind is RunKind.RESUME
            self._settle_start_failed(claimed, run_id, str(error), resumable=resumable)
            return
        attempt.agent = agent
        self._supervise(_Running(claimed, agent, run_id, options, wake, output, plan))

    def _prepare(self, claimed: Item, plan: AgentPlan, run_id: str) -> _Start | None:
        """Fresh run or resume, the workspace and the argv; None when the run cannot start
        (the item has been settled then)."""
        recorded = self._store.get_session(claimed.id)
        claimed_from = self._claimed_from(claimed)
        # Only a due retry resumes: the disk is looked at for nothing else.
        retry = claimed_from is ItemState.RETRY_SCHEDULED
        choice = decisions.choose_run(
            claimed_from=claimed_from,
            resume=self._resume_facts(recorded, plan) if retry else None,
        )
        if choice.missing:
            settlement = decisions.resume_state_missing(claimed, choice.missing)
            self._write_settlement(claimed, settle(claimed, settlement, at=self._now()), None)
            return None
        resumed_id = recorded.session_id if choice.kind is RunKind.RESUME and recorded else None
        session_id = resumed_id or (str(uuid.uuid4()) if plan.preassigns_session else None)
        try:
            workspace = choose_workspace(
                self._mode,
                project_root=self._project_root,
                state_dir=self._state_dir,
                item=claimed,
                session=recorded,
                resume=choice.kind is RunKind.RESUME,
            )
            argv = plan.resume_argv(resumed_id) if resumed_id else plan.start_argv(session_id)
        except (WorkspaceError, VendorError) as error:
            resumable = choice.kind is RunKind.RESUME
            self._settle_start_failed(claimed, run_id, str(error), resumable=resumable)
            return None
        return _Start(choice.kind, workspace, session_id, argv)

    def _supervise(self, run: _Running) -> None:
        """Watch a started agent to its end, then settle the item (or write nothing more if
        the claim was lost)."""
        claimed, agent = run.claimed, run.agent
        self._emit("spawned", item_id=claimed.id, run_id=run.run_id, pid=agent.pid)
        try:
            self._watch_and_settle(run)
        except _LeaseGone:
            agent.stop(grace_seconds=run.options.stop_grace_seconds)
            agent.close()
            raise

    def _watch_and_settle(self, run: _Running) -> None:
        claimed, agent, options = run.claimed, run.agent, run.options
        if not self._store.record_process(
            claimed, run.run_id, pid=agent.pid, process_started_at=agent.started_at
        ):
            self._lost(claimed, agent, options)
            return
        stopped_by = self._watch(
            claimed, agent, options, run.wake, lambda: self._note(run.output, claimed, run.run_id)
        )
        if stopped_by is StopReason.FENCED or stopped_by is StopReason.CANCELLED:
            return
        agent.stop(grace_seconds=options.stop_grace_seconds)  # descendants it left behind
        agent.close()
        if not self._note(run.output, claimed, run.run_id):
            self._lost(claimed, agent, options)
            return
        self._settle_exit(run, stopped_by)

    def _resume_facts(self, recorded: Session | None, plan: AgentPlan) -> ResumeFacts | None:
        """What this installation sees of the recorded session; None when none is recorded."""
        if recorded is None:
            return None
        return services.resume_facts(
            recorded, plan, installation_id=self._installation_id, environ=os.environ
        )

    def _note(self, output: _Output, claimed: Item, run_id: str) -> bool:
        """Record the session id as soon as the vendor tells it; False if the claim is lost."""
        learned = output.unrecorded_session()
        if learned is None:
            return True
        if not self._store.record_session(claimed, learned, at=self._now(), run_id=run_id):
            return False
        output.recorded = learned
        self._emit("session", item_id=claimed.id, run_id=run_id, session_id=learned.session_id)
        return True

    def _stop_earlier_runs(self, claimed: Item, run_id: str, options: WorkerOptions) -> None:
        """Never two live agents on one session (invariant 5): before resuming, stop what is
        still alive of the item's earlier runs on this installation."""
        for earlier in self._store.list_runs(claimed.id):
            if earlier.run_id != run_id and earlier.installation_id == self._installation_id:
                stop_earlier_run(
                    earlier.run_id,
                    earlier.pid,
                    earlier.process_started_at,
                    grace_seconds=options.stop_grace_seconds,
                )

    def _launch_spec(
        self,
        claimed: Item,
        plan: AgentPlan,
        run_id: str,
        start: _Start,
        claim_token: str,
    ) -> LaunchSpec:
        env = {
            **os.environ,
            **plan.env,
            **self._agent_env,
            "WRIGHTY_ITEM_ID": str(claimed.id),
            "WRIGHTY_RUN_ID": run_id,
            "WRIGHTY_CLAIM_TOKEN": claim_token,
        }
        if start.session_id is not None:
            env["WRIGHTY_SESSION_ID"] = start.session_id
        return LaunchSpec(
            argv=start.argv,
            cwd=start.workspace,
            env=env,
            task=claimed.body,
            log_dir=self._state_dir / "runs" / str(claimed.id) / run_id,
            marker=("WRIGHTY_RUN_ID", run_id),
        )

    def _watch(
        self,
        claimed: Item,
        agent: AgentProcess,
        options: WorkerOptions,
        wake: threading.Event,
        note_session: Callable[[], bool],
    ) -> StopReason | None:
        """Renew the lease until the agent exits; why wrighty stopped it, if it did."""
        deadline = time.monotonic() + self._terms.time_limit(claimed.timeout_seconds)
        heartbeat = self._config.worker.heartbeat_seconds
        while True:
            remaining = deadline - time.monotonic()
            wake.wait(timeout=max(0.0, min(heartbeat, remaining)))
            wake.clear()
            if agent.status is not None:
                return None
            if not note_session():
                return self._lost(claimed, agent, options)
            if self._stop_requested.is_set():
                agent.stop(grace_seconds=options.stop_grace_seconds)
                return StopReason.SHUTDOWN
            if time.monotonic() >= deadline:
                agent.stop(grace_seconds=options.stop_grace_seconds)
                return StopReason.TIMEOUT
            agent.refresh_descendants()
            result = self._store.renew(claimed, now=self._now(), terms=self._terms)
            if result.lease_expires_at is not None:
                self._patient.hold(result.lease_expires_at)
            if result.outcome is RenewOutcome.LOST:
                return self._lost(claimed, agent, options)
            if result.outcome is RenewOutcome.BUDGET_EXHAUSTED:
                agent.stop(grace_seconds=options.stop_grace_seconds)
                return StopReason.TIMEOUT

    def _lost(self, claimed: Item, agent: AgentProcess, options: WorkerOptions) -> StopReason:
        """The claim is gone: stop the tree at once and write nothing more about the item."""
        current = self._store.get_item(claimed.id)
        cancelled = current is not None and current.state is ItemState.CANCELLED
        reason = StopReason.CANCELLED if cancelled else StopReason.FENCED
        self._emit(
            "heartbeat-lost", item_id=claimed.id, generation=claimed.generation, reason=reason.value
        )
        agent.stop(grace_seconds=options.stop_grace_seconds)
        agent.close()
        status = agent.status
        self._emit(
            "exited",
            item_id=claimed.id,
            outcome_class=reason.value,
            exit_code=status.exit_code if status else None,
            signal=status.signal if status else None,
        )
        return reason

    def _settle_exit(self, run: _Running, stopped_by: StopReason | None) -> None:
        claimed, agent, run_id, output = run.claimed, run.agent, run.run_id, run.output
        status = agent.status
        assert status is not None
        recorded = self._store.get_run(run_id)
        report = AgentReport(recorded.agent_report) if recorded and recorded.agent_report else None
        vendor = output.reader.classify(status.exit_code) if output.reader else None
        result = classify_exit(
            RunFacts(status.exit_code, status.signal, stopped_by, report, vendor=vendor)
        )
        if recorded and recorded.agent_reason:
            result = dataclasses.replace(
                result, summary=f"{result.summary}: {recorded.agent_reason}"
            )
        self._emit(
            "exited",
            item_id=claimed.id,
            run_id=run_id,
            outcome_class=result.outcome_class.value,
            exit_code=status.exit_code,
            signal=status.signal,
        )
        tail = agent.diagnostic_tail()
        run_end = RunEnd(
            ended_at=self._now(),
            outcome_class=result.outcome_class,
            confidence=result.confidence,
            exit_code=status.exit_code,
            signal=status.signal,
            diagnostic="\n".join(
                part
                for part in (
                    result.summary,
                    f"agent says: {recorded.agent_reason}"
                    if recorded and recorded.agent_reason
                    else "",
                    tail,
                )
                if part
            ),
        )
        timeout = self._terms.time_limit(claimed.timeout_seconds)
        missing = services.resume_gaps_here(
            output.session, run.plan, installation_id=self._installation_id, environ=os.environ
        )
        if stopped_by is StopReason.SHUTDOWN:
            settlement = decisions.after_shutdown(claimed, run_end, resumable=not missing)
        else:
            settlement = decisions.after_run(
                claimed,
                result,
                run_end,
                timeout_seconds=timeout,
                crash_policy=self._crash_policy,
                resume_missing=missing,
            )
        self._write_settlement(claimed, settle(claimed, settlement, at=self._now()), run_id)

    def _settle_start_failed(
        self, claimed: Item, run_id: str, why: str, *, resumable: bool
    ) -> None:
        run_end = RunEnd(
            self._now(), OutcomeClass.START_FAILED, Confidence.AUTHORITATIVE, diagnostic=why
        )
        self._emit("exited", item_id=claimed.id, run_id=run_id, outcome_class="start-failed")
        settlement = decisions.start_failed(claimed, run_end, why=why, resumable=resumable)
        self._write_settlement(claimed, settle(claimed, settlement, at=self._now()), run_id)

    def _claimed_from(self, claimed: Item) -> ItemState:
        """The state this claim took the item from (the last event is the claim's own)."""
        events = self._store.list_events(claimed.id)
        if not events or events[-1].from_state is None:
            return ItemState.QUEUED
        return events[-1].from_state

    def _write_settlement(self, claimed: Item, change: Change, run_id: str | None) -> None:
        if self._store.write_transition(change):
            self._emit(
                "settled",
                item_id=claimed.id,
                run_id=run_id,
                state=change.after.state.value,
                reason_code=change.after.reason_code,
            )
            if change.after.state is ItemState.RETRY_SCHEDULED:
                self._emit(
                    "retry-scheduled",
                    item_id=claimed.id,
                    run_id=run_id,
                    crash_retries=change.after.crash_retries,
                    not_before=rfc3339(change.after.not_before),
                    reason_code=change.after.reason_code,
                )
        else:
            self._emit(
                "heartbeat-lost", item_id=claimed.id, generation=claimed.generation, reason="fenced"
            )

    def _emit(self, event: str, **fields: Any) -> None:
        """Tell the worker's output. Events only report what the store already holds, so a
        closed output (a reader that went away, `| head`) must not interrupt supervision."""
        with contextlib.suppress(OSError):
            self._emit_event(
                {"event": event, "at": rfc3339(self._now()), "worker_id": self.worker_id, **fields}
            )
