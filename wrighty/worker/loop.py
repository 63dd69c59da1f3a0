"""The worker loop: reap, claim, and give each claim a thread of its own to run in.

The loop keeps the slots (how many claims run at once), the worker's row in the registry, and
in "current" workspace mode the project directory's lock. Each claim runs through `run.work`
(its `ClaimLife`, life.py). Nothing about one item stops the loop: an unexpected exception
while claiming or running an item settles that item as internal-error.
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
from typing import Any

from wrighty import __version__
from wrighty.agents import AgentPlan, plan_agent
from wrighty.config import (
    STATE_DIRNAME,
    LoadedConfig,
    WorkerSettings,
    agent_circuit,
    budgets_of,
    completion_of,
    crash_policy_of,
    known_secrets,
    lease_terms_of,
    limits_of,
    pricing_of,
    tracker_tokens,
    usage_policy_of,
    verify_policy,
)
from wrighty.domain import decisions
from wrighty.domain.claims import (
    Claim,
    ClaimRequest,
    PeriodBudget,
)
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.model import Change, Item
from wrighty.domain.notices import Source
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339, system_now
from wrighty.domain.worker_events import WorkerEvent
from wrighty.errors import StoreError, UnreadableError, WrightyError
from wrighty.notify.delivery import DeliveryThread, delivery_paused
from wrighty.runenv import run_variables, secret_names_variable
from wrighty.services.clock import StoreClock
from wrighty.services.reaper import reap_expired
from wrighty.services.sandboxes import Around, CheckSandboxes
from wrighty.store import StoreTarget
from wrighty.store.port import Store
from wrighty.supervisor.sandboxing import SandboxMaker
from wrighty.supervisor.tree import started_at
from wrighty.vendors.base import Reader
from wrighty.worker import preflight
from wrighty.worker.budget_hold import BudgetHold
from wrighty.worker.circuit import CircuitGate
from wrighty.worker.gave_up import GaveUp, give_up_exit
from wrighty.worker.handled import HandledItems
from wrighty.worker.lease import LeaseGuard, Reading, lease_end, read_clocks
from wrighty.worker.life import ClaimLife, Setting, claim_lost
from wrighty.worker.machine import MachineWatch
from wrighty.worker.patient import LeaseGone, PatientStore
from wrighty.worker.registry import Presence
from wrighty.worker.renewals import Renewals
from wrighty.worker.run import work
from wrighty.worker.set_aside import SetAside
from wrighty.worker.sources import Act, source_sync
from wrighty.worker.wakeup import WakeUps
from wrighty.workproduct.worktree import CurrentDirectoryLock

# Where the worker's events go, each as one whole line's record: `event`, `at`, `worker_id`,
# then its keys (`wrighty worker start` prints it as JSON or plain text).
Output = Callable[[dict[str, Any]], None]

# How long a stopping worker waits for an agent to exit before it kills the agent's tree.
STOP_GRACE_SECONDS = 10.0

# How many items one claim pass may set aside as internal-error before it waits for the next.
MAX_SET_ASIDE_PER_PASS = 10


@dataclass(frozen=True)
class _Taken:
    """A claim, and the reading of the clocks taken just before the call that made it."""

    claim: Claim
    reading: Reading


@dataclass(frozen=True)
class WorkerOptions:
    once: bool = False
    concurrency: int = 1
    item_id: int | None = None
    agent: str | None = None
    max_items: int | None = None
    idle_timeout_seconds: float | None = None
    stop_grace_seconds: float = STOP_GRACE_SECONDS


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
        act: Act | None = None,
    ) -> None:
        """``now``: the fleet's time (on PostgreSQL, ``clock.now``: the database's clock, which
        ``clock`` measures again at each heartbeat, docs/fleet.md); ``act``: answers' (sources)."""
        self._store, self._act = store, act
        self._clock = clock
        self._config = loaded.config
        self._budgets = budgets_of(loaded.config)
        self._notify: Source | None = None  # who tells through the outbox (None: no sink)
        self._delivery: DeliveryThread | None = None  # delivers the outbox, while it runs
        self._landing: threading.Thread | None = None  # lands accepted items (_land)
        self._check_sandboxes: Callable[[str], SandboxMaker | None] = lambda _: None  # run()
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
        self._config_path = loaded.path
        self._store_target = store_target
        self.worker_id = "w-" + secrets.token_hex(6)
        if loaded.config.notify.enabled:
            public_url = loaded.config.serve.public_url
            self._notify = Source(installation_id, self.worker_id, public_url)
        self._stop_requested = threading.Event()
        self._wake = threading.Event()  # the claim loop's: a slot freed up, work, or stop
        self._wake_ups: WakeUps | None = None  # worker.wakeUps, from the first idle wait
        self._slot_wakes: set[threading.Event] = set()
        self._running_items: set[int] = set()
        self._gave_up: list[GaveUp] = []  # items given up: the store failed too long
        self._last_beat: tuple[WorkerState, tuple[int, ...]] | None = None
        self._slot_lock = threading.Lock()
        self._terms = lease_terms_of(self._config)
        self._renewals = Renewals(store, heartbeat_seconds=self._config.worker.heartbeat_seconds)
        self._presence = self._presence_for(self._config.worker)
        # Runs its machine could not start: the back-off and hold (docs/worker.md).
        self._machine = MachineWatch(self._emit, self._say_held)
        self._budget_hold = BudgetHold(
            store, self._budgets, now=now, emit=self._emit, unreachable=self._store_unreachable
        )
        self._set_aside = SetAside(
            store, installation_id, now=now, emit=self._emit,
            unreachable=self._store_unreachable, notify=self._notify,
            notify_wake=self._wake_delivery,
        )  # fmt: skip

    def _presence_for(self, settings: WorkerSettings) -> Presence:
        started = self._now()
        identity = WorkerRow(
            worker_id=self.worker_id,
            label=settings.label,
            installation_id=self._installation_id,
            pid=os.getpid(),
            process_started_at=started_at(),
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
        preflight.refuse_unrunnable(plan)
        sqlite = self._store_target.sqlite_path if self._store_target is not None else None
        around = Around(self._project_root, self._config_path, sqlite)
        sandbox = preflight.sandbox_or_refuse(self._config, plan, around)
        self._check_sandboxes = CheckSandboxes(self._config, around).of
        # wrighty's sandbox encloses the vendor's own, turned off inside it (docs/vendors.md)
        plan = dataclasses.replace(plan, enclosed=sandbox is not None)
        preflight.refuse_broken_vendor_sandbox(plan, os.environ)
        preflight.refuse_missing_checks(self._config, agent_name)
        preflight.refuse_no_base(self._mode, self._project_root, completion_of(self._config))
        if options.item_id is not None:
            preflight.refuse_unclaimable(
                self._store, options.item_id, agent=agent_name,
                default_agent=self._config.worker.default_agent, now=self._now,
            )  # fmt: skip
        gate = self._gate(plan)
        setting = dataclasses.replace(
            self._setting(plan, options, gate),
            sandbox=sandbox,
            check_sandbox=self._check_sandboxes(agent_name),
        )
        self._emit(WorkerEvent.STARTED, agent=agent_name, installation_id=self._installation_id)
        self._say_concurrency(options)
        self._presence.runs(agent_name)
        self._start_delivery()
        self._sources = source_sync(self._config, self._store, self._now, self._emit,
            woke=self._wake.set, wanted=not options.item_id, act=self._act,
            root=self._project_root, installation_id=self._installation_id)  # fmt: skip
        self._beat(force=True)
        handled = HandledItems(options.max_items)
        slots: list[threading.Thread] = []
        idle_since = time.monotonic()
        while not self._stop_requested.is_set():
            slots = [slot for slot in slots if slot.is_alive()]
            self._beat()
            if options.item_id is None:
                self._land()
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
        self._wind_down([*slots, *([self._landing] if self._landing is not None else [])])
        self._emit(WorkerEvent.STOPPING, processed=handled.count)
        give_up_exit(self._store, self._gave_up, self._emit)
        return handled.count

    def _land(self) -> None:
        """Land the heads of this installation's lines in a thread of its own, one at a time,
        while there are any (docs/landing.md): a worker lands between its claims."""
        if self._landing is not None and self._landing.is_alive():
            return
        completion = completion_of(self._config)
        if completion.integration.kind == "none" or self._mode != "worktree":
            return
        from wrighty.services.landing import land_next, lander_from

        lander = lander_from(
            self._config, self._project_root, self._store, worker_id=self.worker_id,
            now=self._now, secrets=tuple(known_secrets(self._config, os.environ)),
            say=lambda words: self._emit(WorkerEvent.LANDING, words=words), worker=True,
            told=self._wake_delivery, checks_in=self._check_sandboxes,
        )  # fmt: skip

        def lands() -> None:
            while not self._stop_requested.is_set():
                try:
                    landed = land_next(lander)
                except (StoreError, UnreadableError, OSError) as error:
                    self._emit(WorkerEvent.LANDING_FAILED, error=str(error))
                    return
                if landed is None:
                    return
                self._emit(
                    WorkerEvent.LANDING_ENDED, item_id=landed.id, state=landed.state.value,
                    reason=landed.reason,
                )  # fmt: skip
                self._wake.set()

        self._landing = threading.Thread(target=lands, name="landing")
        self._landing.start()

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
        config = self._config
        return Setting(
            worker_id=self.worker_id, installation_id=self._installation_id, plan=plan,
            terms=self._terms, crash_policy=crash_policy_of(config),
            usage_policy=usage_policy_of(config), circuit=gate, budgets=self._budgets,
            pricing=pricing_of(config), default_agent=config.worker.default_agent,
            notify=self._notify, heartbeat_seconds=config.worker.heartbeat_seconds,
            stop_grace_seconds=options.stop_grace_seconds, workspace_mode=self._mode,
            project_root=self._project_root, state_dir=self._state_dir,
            agent_env=self._agent_env, stop_requested=self._stop_requested, now=self._now,
            emit=self._emit, notify_wake=self._wake_delivery, machine=self._machine,
            verify=policy, completion=completion_of(config), withheld=tracker_tokens(config),
            fallbacks=self._fallbacks_of(plan.name), reader_of=self._reader_of,
            secrets=known_secrets(config, os.environ),
        )  # fmt: skip

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
                now=self._now, waiting=lambda said: self._presence.waiting("wake-ups", said),
            )  # fmt: skip
            self._wake_ups.start()
            return  # listening from now on: claim once more, so nothing told before is missed
        if self._wake_ups is not None and looked_at is not None:
            poll = self._wake_ups.idle_seconds(poll, looked_at=looked_at)
        if looked_at is not None:  # its claim found nothing: idle until told or polled
            self._emit(WorkerEvent.WAITING, seconds=round(poll, 3))
        self._wake.wait(poll)
        self._wake.clear()  # a stop request is read from its own flag, not from here

    def _wind_down(self, slots: list[threading.Thread]) -> None:
        """Wait for the running items to settle (heartbeats go on), then let go of the project
        directory and of the registry."""
        if self._wake_ups is not None:  # nothing more is claimed
            self._wake_ups.stop()
        if self._sources is not None:  # nor synced
            self._sources.stop(timeout=self._config.worker.poll_seconds)
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
        if self._budget_hold.held(plan.name):
            return None
        if gate is not None and not gate.admit():
            return None
        taken = self._claim(plan, options)
        if gate is not None:
            gate.claimed(taken.claim if taken is not None else None)
        return taken

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
                self._presence.waiting("store", None)
                return None if taken is None else _Taken(taken, reading)
            except UnreadableError as error:  # a row that does not read: that item's problem
                self._emit(
                    WorkerEvent.CLAIM_FAILED, item_id=error.item_id, error=type(error).__name__,
                    cause=decisions.describe_error(error),
                )  # fmt: skip
                if not self._set_aside.unreadable(error, request, plan):
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
                if not self._set_aside.unclaimable(request, plan):
                    return None
        return None

    def _store_unreachable(self, operation: str, error: StoreError) -> None:
        self._presence.waiting("store", f"the store ({error}): it claims again once it answers")
        self._emit(
            WorkerEvent.STORE_UNREACHABLE,
            operation=operation,
            error=type(error).__name__,
            cause=str(error),
        )

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
                stop_requested=self._stop_requested, renewals=self._renewals,
            )  # fmt: skip
            run = ClaimLife(setting, patient, taken.claim, wake, guard)
            guard.start()
            try:
                with self._renewals.member():
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

    def _run_to_the_end(self, run: ClaimLife, claimed: Item) -> None:
        """The claim's run; whatever goes wrong in it settles this item and no other."""
        try:
            work(run)
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
            stack=self._mode == "worktree" and completion_of(self._config).stack,
        )

    def _give_up(self, claimed: Item, gone: LeaseGone, pending: Change | None) -> None:
        """The store failed until the claim's lease guard fired (it said `claim-lost` and
        stopped the agent), or, with the run's outcome known, until the worker was stopped:
        the item is left to the reaper."""
        if gone.pending:
            claim_lost(self._emit, claimed, reason="store-unreachable", cause=str(gone))
        with self._slot_lock:
            self._gave_up.append(GaveUp(claimed, str(gone), gone.pending, pending))

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
