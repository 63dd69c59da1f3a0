"""The worker loop: reap, claim, and give each claim a thread of its own to run in.

The loop keeps the slots (how many claims run at once), the worker's row in the registry, and
in "current" workspace mode the project directory's lock. Each claim's life is a ClaimRun
(run.py). Nothing about one item stops the loop: an unexpected exception while claiming or
running an item settles that item as internal-error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil

from wrighty import __version__
from wrighty.agents import AgentPlan, plan_agent
from wrighty.config import (
    STATE_DIRNAME,
    LoadedConfig,
    WorkerSettings,
    WrightyConfig,
    agent_circuit,
    budgets_of,
    check_program_problems,
    completion_of,
    crash_policy_of,
    known_secrets,
    lease_terms_of,
    limits_of,
    pricing_of,
    usage_policy_of,
    verify_policy,
)
from wrighty.domain import decisions
from wrighty.domain.budgets import AgentHold, agent_hold
from wrighty.domain.claims import (
    CLAIMABLE_STATES,
    Claim,
    ClaimRequest,
    PeriodBudget,
    claim,
    claim_to_set_aside,
    not_claimable_reason,
)
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.model import Change, Item
from wrighty.domain.notices import Source
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339, system_now
from wrighty.domain.work_product import Completion
from wrighty.domain.worker_events import WorkerEvent
from wrighty.errors import StoreError, UnreadableError, WrightyError
from wrighty.notify.delivery import DeliveryThread, delivery_paused
from wrighty.runenv import run_variables, secret_names_variable
from wrighty.services.clock import StoreClock
from wrighty.services.items import require_item
from wrighty.services.reaper import reap_expired
from wrighty.store import StoreTarget
from wrighty.store.deadlines import call_deadline
from wrighty.store.port import Store
from wrighty.supervisor.git import GitError
from wrighty.supervisor.process import executable_problem
from wrighty.vendors.base import Reader
from wrighty.worker.circuit import CircuitGate
from wrighty.worker.handled import HandledItems
from wrighty.worker.lease import LeaseGuard, Reading, lease_end, read_clocks
from wrighty.worker.life import Setting, claim_lost, internal_error_change, write_settlement
from wrighty.worker.machine import MachineWatch
from wrighty.worker.patient import LeaseGone, PatientStore, same_settlement
from wrighty.worker.registry import Presence
from wrighty.worker.run import ClaimRun
from wrighty.worker.wakeup import WakeUps
from wrighty.worker.workspaces import CurrentDirectoryLock, resolve_base

# Where the worker's events go, each as one whole line's record: `event`, `at`, `worker_id`,
# then its keys (`wrighty worker start` prints it as JSON or plain text).
Output = Callable[[dict[str, Any]], None]

# How long a stopping worker waits for an agent to exit before it kills the agent's tree.
STOP_GRACE_SECONDS = 10.0

# How many items one claim pass may set aside as internal-error before it waits for the next.
MAX_SET_ASIDE_PER_PASS = 10

# How long a stopping worker waits for the store to say where an item it gave up stands now.
FINAL_READ_SECONDS = 5.0
FINAL_READ_RETRY_SECONDS = 0.25


@dataclass(frozen=True)
class _Taken:
    """A claim, and the reading of the clocks taken just before the call that made it."""

    claim: Claim
    reading: Reading


@dataclass(frozen=True)
class _GaveUp:
    """An item whose claim this worker gave up, and the settlement it could not record."""

    item: Item
    cause: str
    pending: bool  # its agent's outcome was known: the worker was stopped before it landed
    settlement: Change | None  # the settlement it was writing then, if it got that far


@dataclass(frozen=True)
class WorkerOptions:
    once: bool = False
    concurrency: int = 1
    item_id: int | None = None
    agent: str | None = None
    max_items: int | None = None
    idle_timeout_seconds: float | None = None
    stop_grace_seconds: float = STOP_GRACE_SECONDS


class GaveUpError(WrightyError):
    """The worker gave up items because the store failed until their claims' leases ran out
    (or, with a known outcome, until the worker was stopped); the worker exits non-zero."""

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


def _refuse_no_base(mode: str, project_root: Path, completion: Completion) -> None:
    """In worktree mode, every item's branch starts from completion.base (or HEAD): it must
    name a commit of the project's repository, or no claim could start."""
    if mode != "worktree":
        return
    try:
        resolve_base(project_root, completion)
    except GitError as error:
        raise WrightyError(str(error)) from None


def _refuse_missing_checks(config: WrightyConfig, agent: str) -> None:
    """The checks the worker's items run must be programs it can start, as its agent must."""
    problems = check_program_problems(config, agent=agent)
    if not problems:
        return
    first = problems[0]
    fix = "install it or change" if "not found" in first.message else "change"
    more = len(problems) - 1
    suffix = f" (and {more} more; `wrighty config validate` lists them)" if more else ""
    raise WrightyError(f"{first.message}; {fix} {first.path} in wrighty.json{suffix}")


def _variables_for_runs(loaded: LoadedConfig, target: StoreTarget | None) -> dict[str, str]:
    """What each run is given (runenv.py); without the store's target (a worker built in a
    test), only the config's path and the secrets' names."""
    names = [name for agent in loaded.config.agents.values() for name in agent.env]
    if target is not None:
        return run_variables(
            target, pricing_of(loaded.config), config_path=loaded.path, secret_names=names
        )
    given = {"WRIGHTY_CONFIG": str(loaded.path)} if loaded.path is not None else {}
    return {**given, **secret_names_variable(names)}


class Worker:
    def __init__(
        self,
        store: Store,
        loaded: LoadedConfig,
        *,
        installation_id: str,
        output: Output,
        now: Callable[[], datetime] = system_now,
        agent_env: dict[str, str] | None = None,
        clock: StoreClock | None = None,
        store_target: StoreTarget | None = None,
    ) -> None:
        """``now``: the fleet's time (on PostgreSQL, ``clock.now``: the database's clock, which
        ``clock`` measures again at each heartbeat, docs/fleet.md)."""
        self._store = store
        self._clock = clock
        self._config = loaded.config
        self._budgets = budgets_of(loaded.config)
        self._held: AgentHold | None = None  # the agent's day budget, while it is spent
        self._spend_unreadable = False  # its spend did not read at the last look (told once)
        self._notify: Source | None = None  # who tells through the outbox (None: no sink)
        self._delivery: DeliveryThread | None = None  # delivers the outbox, while it runs
        self._project_root = loaded.root
        self._state_dir = loaded.root / STATE_DIRNAME
        self._mode = loaded.config.worker.workspace_mode
        # In "current" mode one agent at a time works in the project directory, across workers.
        self._current_lock = (
            CurrentDirectoryLock(self._state_dir) if self._mode == "current" else None
        )
        self._installation_id = installation_id
        self._output = output
        self._now = now
        # What `wrighty finish`, `fail` and `report-usage` inside the run work from (runenv.py).
        self._agent_env = agent_env or _variables_for_runs(loaded, store_target)
        self.worker_id = "w-" + secrets.token_hex(6)
        if loaded.config.notify.enabled:
            self._notify = Source(installation_id, self.worker_id)
        self._stop_requested = threading.Event()
        self._wake = threading.Event()  # the claim loop's: a slot freed up, work, or stop
        self._wake_ups: WakeUps | None = None  # worker.wakeUps, from the first idle wait
        self._slot_wakes: set[threading.Event] = set()
        self._running_items: set[int] = set()
        self._gave_up: list[_GaveUp] = []  # items given up: the store failed too long
        self._last_beat: tuple[WorkerState, tuple[int, ...]] | None = None
        self._slot_lock = threading.Lock()
        self._terms = lease_terms_of(self._config)
        self._presence = self._presence_for(self._config.worker)
        # Runs its machine could not start: the back-off and hold (docs/worker.md).
        self._machine = MachineWatch(self._emit, self._say_held)

    def _presence_for(self, settings: WorkerSettings) -> Presence:
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
        return Presence(
            self._store,
            identity,
            interval_seconds=settings.heartbeat_seconds,
            retention_seconds=settings.registry_retention_hours * 3600,
            now=self._now,
            clock=self._clock,
            emit=self._emit,
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
        self._presence.beat(state, items, force=force, changed=changed)

    def _say_held(self, reason: str | None) -> None:
        """Say in the registry why the worker claims nothing (None: it claims again), before
        the event that tells of it."""
        self._presence.held(reason)
        self._beat(force=True)

    def request_stop(self) -> None:
        """Stop claiming; stop the running agents and settle them. It takes the events' locks, so
        never call it from a signal handler: on SIGINT/SIGTERM, `signals.StopOnSignals` calls it
        from a thread of its own."""
        self._stop_requested.set()
        self._wake.set()
        for wake in list(self._slot_wakes):
            wake.set()

    # -- the loop ---------------------------------------------------------------------------

    def run(self, options: WorkerOptions) -> int:
        """Process items until told to stop; the number of items this worker claimed (each
        once, however many runs it took)."""
        agent_name = options.agent or self._config.worker.default_agent
        plan = plan_agent(self._config, agent_name, project_root=self._project_root)
        _refuse_unrunnable(plan)
        _refuse_missing_checks(self._config, agent_name)
        _refuse_no_base(self._mode, self._project_root, completion_of(self._config))
        if options.item_id is not None:
            self._refuse_unclaimable(options.item_id, agent_name)
        gate = self._gate(plan)
        setting = self._setting(plan, options, gate)
        self._emit(WorkerEvent.STARTED, agent=agent_name, installation_id=self._installation_id)
        self._say_concurrency(options)
        self._presence.runs(agent_name)
        self._start_delivery()
        self._beat(force=True)
        handled = HandledItems(options.max_items)
        slots: list[threading.Thread] = []
        idle_since = time.monotonic()
        while not self._stop_requested.is_set():
            slots = [slot for slot in slots if slot.is_alive()]
            self._beat()
            taken = None
            looked_at = None
            # --max-items: once N items were claimed, only those that wait for a retry.
            waiting = handled.waiting(self._state_of) if handled.full else None
            pause = self._backing_off(slots)
            if not pause and len(slots) < self._slot_limit(options) and self._workspace_free():
                looked_at = self._now()
                taken = self._claim_among(plan, options, gate, waiting)
                if taken is None and self._current_lock is not None:
                    self._current_lock.release()
            if taken is not None:
                handled.claimed(taken.claim.item.id)
                slots.append(self._start_slot(taken, setting))
                idle_since = time.monotonic()
                if options.once:
                    break
                continue
            if slots:
                idle_since = time.monotonic()
            elif (
                options.once
                or options.item_id is not None
                or waiting == []  # --max-items: its N items were claimed, none waits
                or self._idle_too_long(options, idle_since)
            ):
                break
            self._idle_wait(looked_at, at_most=pause or None)
        self._wind_down(slots)
        self._emit(WorkerEvent.STOPPING, processed=handled.count)
        lines = [line for gave_up in self._gave_up if (line := self._gave_up_line(gave_up))]
        if lines:
            more = len(lines) - 1
            raise GaveUpError(lines[0] + (f" (and {more} more)" if more else ""))
        return handled.count

    def _state_of(self, item_id: int) -> ItemState | None:
        """``item_id``'s state; None when the store cannot say now."""
        try:
            item = self._store.get_item(item_id)
        except (StoreError, UnreadableError):
            return None
        return None if item is None else item.state

    def _claim_among(
        self,
        plan: AgentPlan,
        options: WorkerOptions,
        gate: CircuitGate | None,
        only: list[int] | None,
    ) -> _Taken | None:
        """The next claim; with ``only``, of one of those items (the first that is due)."""
        if only is None:
            return self._claim_next(plan, options, gate)
        for item_id in only:
            taken = self._claim_next(plan, dataclasses.replace(options, item_id=item_id), gate)
            if taken is not None:
                return taken
        return None

    def _backing_off(self, slots: list[threading.Thread]) -> float:
        """How long the worker waits before it claims, after its machine failed (0: it may
        claim now); meanwhile, in "current" mode, it lets go of the project directory, so that
        another worker of the project may claim."""
        pause = self._machine.pause_seconds()
        if pause and not slots and self._current_lock is not None:
            self._current_lock.release()
        return pause

    def _start_delivery(self) -> None:
        """Deliver the outbox from a thread of its own, unless the test hook pauses it."""
        if self._notify is None:
            return
        if delivery_paused(os.environ):
            self._emit(WorkerEvent.NOTIFY_PAUSED)
            return
        self._delivery = DeliveryThread(
            self._store, self._config.notify, source=self._notify,
            worker_max_age_seconds=self._config.status.worker_max_age_seconds, now=self._now,
            emit=self._emit,
        )  # fmt: skip
        self._delivery.start()

    def _wake_delivery(self) -> None:
        if self._delivery is not None:
            self._delivery.wake()

    def _gate(self, plan: AgentPlan) -> CircuitGate | None:
        """The agent's provider circuit, under a usage policy that retries (without one, a
        refusal waits for a person and nothing is held back)."""
        name = agent_circuit(self._config, plan.name, installation_id=self._installation_id)
        if name is None:
            return None
        return CircuitGate(
            self._store, name, worker_id=self.worker_id, policy=usage_policy_of(self._config),
            now=self._now, emit=self._emit, notify=self._notify,
        )  # fmt: skip

    def _setting(
        self, plan: AgentPlan, options: WorkerOptions, gate: CircuitGate | None
    ) -> Setting:
        policy = verify_policy(self._config, plan.name)
        if policy is not None:  # a claim keeps its lease while its run's checks run
            self._terms = dataclasses.replace(self._terms, checks_seconds=policy.checks_seconds)
        return Setting(
            worker_id=self.worker_id,
            installation_id=self._installation_id,
            plan=plan,
            terms=self._terms,
            crash_policy=crash_policy_of(self._config),
            usage_policy=usage_policy_of(self._config),
            circuit=gate,
            budgets=self._budgets,
            pricing=pricing_of(self._config),
            default_agent=self._config.worker.default_agent,
            notify=self._notify,
            heartbeat_seconds=self._config.worker.heartbeat_seconds,
            stop_grace_seconds=options.stop_grace_seconds,
            workspace_mode=self._mode,
            project_root=self._project_root,
            state_dir=self._state_dir,
            agent_env=self._agent_env,
            stop_requested=self._stop_requested,
            now=self._now,
            emit=self._emit,
            notify_wake=self._wake_delivery,
            machine=self._machine,
            verify=policy,
            completion=completion_of(self._config),
            fallbacks=self._fallbacks_of(plan.name),
            reader_of=self._reader_of,
            secrets=known_secrets(self._config, os.environ),
        )

    def _reader_of(self, agent: str) -> Reader | None:
        """A new reader of ``agent``'s output (None: a `command` agent, or one wrighty.json no
        longer knows)."""
        try:
            return plan_agent(self._config, agent, project_root=self._project_root).reader()
        except WrightyError:
            return None

    def _fallbacks_of(self, agent: str) -> dict[str, str | None]:
        """``agent``'s fallbacks (agents.<name>.fallback), in order, each with its provider
        circuit (docs/handoff.md)."""
        settings = self._config.agents.get(agent)
        return {
            name: agent_circuit(self._config, name, installation_id=self._installation_id)
            for name in (settings.fallback if settings is not None else ())
        }

    def _refuse_unclaimable(self, item_id: int, agent_name: str) -> None:
        """`--item N` names an item this worker could claim (now or when it is due)."""
        item = require_item(self._store, item_id)
        why = not_claimable_reason(
            item, agent=agent_name, default_agent=self._config.worker.default_agent, now=self._now()
        )
        if why is not None:
            raise WrightyError(why)

    def _idle_wait(self, looked_at: datetime | None, *, at_most: float | None = None) -> None:
        """Wait for a slot to free up, a stop request, or the poll. With wake-ups
        (worker.wakeUps, wakeup.py), also for work that became claimable, and after a claim
        that found nothing (at ``looked_at``) at most until the next retry is due.
        ``at_most``: the back-off after a machine failure, which no wake-up shortens."""
        poll = self._config.worker.poll_seconds
        if at_most is not None:
            self._wake.wait(at_most)
            self._wake.clear()
            return
        if self._wake_ups is None and self._config.worker.wake_ups and looked_at is not None:
            self._wake_ups = WakeUps(
                self._store, name=self.worker_id, wake=self._wake.set, emit=self._emit,
                now=self._now,
            )  # fmt: skip
            self._wake_ups.start()
            return  # listening from now on: claim once more, so nothing told before is missed
        if self._wake_ups is not None and looked_at is not None:
            poll = self._wake_ups.idle_seconds(poll, looked_at=looked_at)
        self._wake.wait(poll)
        self._wake.clear()  # a stop request is read from its own flag, not from here

    def _wind_down(self, slots: list[threading.Thread]) -> None:
        """Wait for the running items to settle (heartbeats go on), then let go of the project
        directory and of the registry."""
        if self._wake_ups is not None:  # nothing more is claimed
            self._wake_ups.stop()
        self._beat(force=self._stop_requested.is_set())
        for slot in slots:
            while slot.is_alive():
                slot.join(self._config.worker.poll_seconds)
                self._beat()
        if self._delivery is not None:  # what the last settlements told goes out first
            self._delivery.stop()
        self._presence.stop()
        if self._current_lock is not None:
            self._current_lock.release()

    def _claim_next(
        self, plan: AgentPlan, options: WorkerOptions, gate: CircuitGate | None
    ) -> _Taken | None:
        """Claim, if the agent's day budget and its provider circuit let it; see _claim."""
        if self._budget_held(plan.name):
            return None
        if gate is not None and not gate.admit():
            return None
        taken = self._claim(plan, options)
        if gate is not None:
            gate.claimed(taken.claim if taken is not None else None)
        return taken

    def _budget_held(self, agent: str) -> bool:
        """Whether the agent's budget for the day is spent (said once, when it becomes so, and
        when a new day lifts it), or what it spent does not read (said once, until it reads
        again). The claim checks it again in its own transaction."""
        limit = self._budgets.agent_limit(agent)
        if limit.unbounded:
            return False
        now = self._now()
        try:
            spent = self._store.agent_spend(agent, since=self._budgets.period(now).start)
        except UnreadableError as error:  # held: what the agent spent cannot be read
            if not self._spend_unreadable:
                cause = decisions.describe_error(error)
                self._emit(WorkerEvent.BUDGET_UNREADABLE, agent=agent, cause=cause)
            self._spend_unreadable = True
            return True
        except StoreError as error:
            self._store_unreachable("agent_spend", error)
            return True
        self._spend_unreadable = False
        hold = agent_hold(self._budgets, agent, spent, now=now)
        if hold is not None and self._held is None:
            self._emit(
                WorkerEvent.BUDGET_HELD,
                agent=agent,
                until=rfc3339(hold.until),
                reason=hold.reason(),
            )
        elif hold is None and self._held is not None:
            self._emit(WorkerEvent.BUDGET_RELEASED, agent=agent)
        self._held = hold
        return hold is not None

    def _claim(self, plan: AgentPlan, options: WorkerOptions) -> _Taken | None:
        """Reap, then claim; None also when the store cannot be reached (the running agents
        go on, and the next pass tries again). An item whose claim wrighty cannot compute is
        set aside as internal-error, and the claim is tried again without it."""
        request = self._request(plan.name, options)
        for _ in range(MAX_SET_ASIDE_PER_PASS):
            try:
                if reap_expired(
                    self._store,
                    now=self._now(),
                    max_requeues=self._config.worker.max_requeues,
                    notify=self._notify,
                ):
                    self._wake_delivery()
                reading = read_clocks(self._now)  # before the call: the lease's end by it
                taken = self._store.acquire(request, now=reading.now)
                return None if taken is None else _Taken(taken, reading)
            except UnreadableError as error:  # a row that does not read: that item's problem
                self._emit(
                    WorkerEvent.CLAIM_FAILED, item_id=error.item_id, error=type(error).__name__,
                    cause=decisions.describe_error(error),
                )  # fmt: skip
                if not self._set_aside_unreadable(error, request, plan):
                    return None
            except StoreError as error:
                self._store_unreachable("acquire", error)
                return None
            except Exception as error:  # a bug, or a value in the store it cannot handle
                self._emit(
                    WorkerEvent.CLAIM_FAILED,
                    error=type(error).__name__,
                    cause=decisions.describe_error(error),
                )
                if not self._set_aside_unclaimable(request, plan):
                    return None
        return None

    def _store_unreachable(self, operation: str, error: StoreError) -> None:
        self._emit(
            WorkerEvent.STORE_UNREACHABLE,
            operation=operation,
            error=type(error).__name__,
            cause=str(error),
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

    def _set_aside_unreadable(
        self, error: UnreadableError, request: ClaimRequest, plan: AgentPlan
    ) -> bool:
        """Set aside the item whose row did not read (docs/worker.md): read with a safe value
        in place of each bad one, so that the set-aside's write writes none of them back (nor
        trips a constraint the bad value breaks); whether it was."""
        if error.item_id is None:
            return False  # not an item's row: nothing to set aside
        try:
            salvaged = self._store.salvage_item(error.item_id)
        except StoreError as again:
            self._store_unreachable("set-aside", again)
            return False
        if salvaged is None or salvaged.value.state not in CLAIMABLE_STATES:
            return False
        return self._set_aside(salvaged.value, request, plan, error)

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
            self._emit(WorkerEvent.CLAIMED, item_id=claimed.id, generation=claimed.generation)
            change = internal_error_change(
                self._store, claimed, error, plan=plan, installation_id=self._installation_id,
                now=self._now, run_recorded=False, process_started=False,
            )  # fmt: skip
            write_settlement(
                self._store, change, None, self._emit, notify=self._notify,
                wake=self._wake_delivery,
            )  # fmt: skip
        except StoreError:
            raise
        except Exception as again:  # reported; the loop goes on
            self._emit(
                WorkerEvent.CLAIM_FAILED,
                item_id=item.id,
                error=type(again).__name__,
                cause=decisions.describe_error(again),
            )
            return False
        return True

    def _say_concurrency(self, options: WorkerOptions) -> None:
        """Asked for more than one item at once in "current" mode, where one agent works in the
        project directory at a time: say so once, and how to get parallel runs."""
        runs = self._slot_limit(options)
        if runs >= options.concurrency:
            return
        self._emit(
            WorkerEvent.CONCURRENCY_LIMITED,
            requested=options.concurrency,
            runs=runs,
            workspace_mode=self._mode,
            message=f"workspaceMode {self._mode!r} runs one item at a time in the project "
            f"directory; to run {options.concurrency} at once set worker.workspaceMode to "
            "'worktree' or 'directory' in wrighty.json",
        )

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
        self._emit(WorkerEvent.IDLE, idle_seconds=round(idle_for, 3))
        return True

    def _start_slot(self, taken: _Taken, setting: Setting) -> threading.Thread:
        """Run the claim in its own thread, with its lease guard in another. The thread lives
        as long as the agent: Linux sends the parent-death signal when the spawning thread
        ends."""
        claimed = taken.claim.item

        def work() -> None:
            wake = threading.Event()
            with self._slot_lock:
                self._slot_wakes.add(wake)
                self._running_items.add(claimed.id)
            guard = self._guard(taken)
            patient = PatientStore(
                self._store, guard=guard, now=self._now, emit=self._emit,
                stop_requested=self._stop_requested,
            )  # fmt: skip
            run = ClaimRun(setting, patient, taken.claim, wake, guard)
            guard.start()
            try:
                self._run_to_the_end(run, claimed)
            finally:
                guard.close()
                with self._slot_lock:
                    self._slot_wakes.discard(wake)
                    self._running_items.discard(claimed.id)
                self._wake.set()

        slot = threading.Thread(target=work, name=f"item-{claimed.id}")
        slot.start()
        return slot

    def _guard(self, taken: _Taken) -> LeaseGuard:
        """The claim's lease guard: its lease's end by this worker's monotonic clock."""
        claimed = taken.claim.item
        expires = claimed.lease_expires_at or taken.reading.now  # a claim always has one
        margin = self._terms.stop_margin

        def lost(cause: str) -> None:
            claim_lost(self._emit, claimed, reason="lease-ended", cause=cause,
                       margin_seconds=round(margin, 3))  # fmt: skip

        return LeaseGuard(
            claimed, ends_at=lease_end(taken.reading, expires), margin=margin, on_lost=lost
        )

    def _run_to_the_end(self, run: ClaimRun, claimed: Item) -> None:
        """The claim's run; whatever goes wrong in it settles this item and no other."""
        try:
            run.work()
        except LeaseGone as gone:
            self._give_up(claimed, gone, run.pending)
        except Exception as error:  # nothing about one item may stop the worker
            self._report_internal_error(claimed, run.run_id, error)
            try:
                run.settle_internal_error(error)
            except LeaseGone as gone:
                self._give_up(claimed, gone, run.pending)
            except Exception as again:  # reported; the reaper settles it
                self._report_internal_error(claimed, run.run_id, again, settled=False)

    def _request(self, agent_name: str, options: WorkerOptions) -> ClaimRequest:
        limit = self._budgets.agent_limit(agent_name)
        since = self._budgets.period(self._now()).start
        return ClaimRequest(
            worker_id=self.worker_id,
            installation_id=self._installation_id,
            terms=self._terms,
            default_agent=self._config.worker.default_agent,
            item_id=options.item_id,
            agent=agent_name,
            budget=None if limit.unbounded else PeriodBudget(since, limit),
            limits=limits_of(self._config),
        )

    def _give_up(self, claimed: Item, gone: LeaseGone, pending: Change | None) -> None:
        """The store failed until the claim's lease guard fired (it said `claim-lost` and
        stopped the agent), or, with the run's outcome known, until the worker was stopped:
        the item is left to the reaper."""
        if gone.pending:
            claim_lost(self._emit, claimed, reason="store-unreachable", cause=str(gone))
        with self._slot_lock:
            self._gave_up.append(_GaveUp(claimed, str(gone), gone.pending, pending))

    def _read_at_the_end(self, item_id: int) -> Item | None:
        """The item as the store holds it now, tried again (every 1/4 s) for at most
        FINAL_READ_SECONDS while the store does not answer; StoreError after that."""
        deadline = time.monotonic() + FINAL_READ_SECONDS
        while True:
            try:
                with call_deadline(deadline):
                    return self._store.get_item(item_id)
            except StoreError:
                if time.monotonic() + FINAL_READ_RETRY_SECONDS >= deadline:
                    raise
                time.sleep(FINAL_READ_RETRY_SECONDS)

    def _gave_up_line(self, gave_up: _GaveUp) -> str | None:
        """The exit line's words for an item given up, told from the item as the store holds
        it now (one read, bounded: it may have been settled or reaped meanwhile); None if the
        settlement did land after all."""
        claimed, pending = gave_up.item, gave_up.settlement
        if gave_up.pending:
            outcome = f" ({pending.after.state.value})" if pending is not None else ""
            what = (
                f"its agent's outcome{outcome} was not recorded: the store failed until the "
                f"worker was stopped ({gave_up.cause})"
            )
        else:
            what = f"its claim's lease ran out before the store renewed it ({gave_up.cause})"
        try:
            current = self._read_at_the_end(claimed.id)
        except StoreError as error:
            return f"gave up item {claimed.id}: {what}; where it stands now does not read ({error})"
        if current is not None and pending is not None and same_settlement(current, pending.after):
            self._emit(
                WorkerEvent.SETTLED, item_id=claimed.id, state=current.state.value,
                reason_code=current.reason_code,
            )  # fmt: skip
            return None
        line = f"gave up item {claimed.id}: {what}"
        if current is None:
            return f"{line}; it is gone from the store"
        if (
            current.state is ItemState.RUNNING
            and current.generation == claimed.generation
            and current.claimed_by == claimed.claimed_by
        ):
            return f"{line}; the item stays running until its lease is reaped"
        state = current.state.value
        if current.reason_code:
            state += f" ({current.reason_code})"
        return f"{line}; it has moved on since: now {state}, generation {current.generation}"

    def _report_internal_error(
        self, claimed: Item, run_id: str | None, error: Exception, **fields: Any
    ) -> None:
        self._emit(
            WorkerEvent.INTERNAL_ERROR,
            item_id=claimed.id,
            run_id=run_id,
            error=type(error).__name__,
            cause=decisions.describe_error(error),
            **fields,
        )

    def _emit(self, event: WorkerEvent, /, **fields: Any) -> None:
        """Tell the worker's output. Events only report what the store already holds, so a
        closed output (a reader that went away, `| head`) must not interrupt supervision."""
        with contextlib.suppress(OSError):
            self._output(
                {
                    "event": event.value,
                    "at": rfc3339(self._now()),
                    "worker_id": self.worker_id,
                    **fields,
                }
            )
