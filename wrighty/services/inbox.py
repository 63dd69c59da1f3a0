"""What `wrighty inbox` reads: the board (every open item in its section, with why it waits;
the workers, provider circuits and spent budgets beside it) and the tail of a run's log.

A refresh is one board read: the status report's queries (counts, workers, circuits, the
outbox, the budget period's ledger) and one snapshot of the open items; a day budget adds a
read of each budgeted agent's spend (a concurrency limit counts the running items among the
open ones, unless the snapshot was cut at its limit). The
inbox's actions are the services the commands call (services/items.py, services/reaper.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from wrighty.domain.board import (
    BOARD_LIMIT,
    AttentionOrder,
    OpenItem,
    Row,
    board_rows,
)
from wrighty.domain.budgets import AgentHold, Budgets
from wrighty.domain.circuits import CircuitState
from wrighty.domain.health import Thresholds
from wrighty.domain.model import Run
from wrighty.domain.scheduling import NO_LIMITS, ConcurrencyLimits
from wrighty.domain.states import TERMINAL_STATES, ItemState
from wrighty.domain.times import rfc3339
from wrighty.services.circuits import CircuitView
from wrighty.services.items import scheduling_waits
from wrighty.services.status import LedgerScope, StatusReport, status_report
from wrighty.services.usage import WAITING_STATES, held_items, item_agent
from wrighty.store.port import Store

# How much of a run's log the detail shows: its last characters, about a screenful or two.
LOG_TAIL_CHARS = 8000


@dataclass(frozen=True)
class BoardSettings:
    """What the board reads under, from wrighty.json (and the command line)."""

    installation_id: str
    default_agent: str = "claude-code"
    thresholds: Thresholds = field(default_factory=Thresholds)
    worker_max_age_seconds: float = 60.0
    budgets: Budgets = field(default_factory=Budgets)
    limits: ConcurrencyLimits = NO_LIMITS
    # Each agent's provider circuit (its name), when the usage retry policy keeps circuits.
    circuits: Mapping[str, str] = field(default_factory=dict)
    limit: int = BOARD_LIMIT


@dataclass(frozen=True)
class Board:
    """One refresh of the inbox."""

    checked_at: datetime
    rows: list[Row]
    report: StatusReport
    holds: dict[str, AgentHold]  # each agent whose day budget is spent
    listed: int  # the open items read (at most the settings' limit)
    # The open items left out because a value of theirs does not read (docs/storage.md).
    unreadable: tuple[str, ...] = ()

    @property
    def open_total(self) -> int:
        """Every open item in the store, listed or not."""
        counts = self.report.figures.counts
        return sum(n for state, n in counts.items() if state not in TERMINAL_STATES)


def read_board(
    store: Store,
    settings: BoardSettings,
    *,
    now: datetime,
    order: AttentionOrder = AttentionOrder.REASON,
) -> Board:
    report = board_status(store, settings, now=now)
    entries = store.list_open_items(limit=settings.limit)
    held, holds = _held(store, settings, entries, report, now)
    unreadable = tuple(str(error) for error in entries.unreadable)
    rows = board_rows(entries, held, now=now, order=order)
    return Board(now, rows, report, holds, len(entries), unreadable)


def board_status(store: Store, settings: BoardSettings, *, now: datetime) -> StatusReport:
    """`wrighty status`'s report under the settings' thresholds, with each agent's spend (as
    `wrighty status` reads it without options)."""
    return status_report(
        store,
        now=now,
        thresholds=settings.thresholds,
        worker_max_age_seconds=settings.worker_max_age_seconds,
        installation_id=settings.installation_id,
        default_agent=settings.default_agent,
        ledger=LedgerScope(settings.budgets, settings.default_agent),
    )


def _held(
    store: Store,
    settings: BoardSettings,
    entries: list[OpenItem],
    report: StatusReport,
    now: datetime,
) -> tuple[dict[int, str], dict[str, AgentHold]]:
    """Why each waiting item is held (what the claim would find), by id; and the agents whose
    budget is spent. A dependency first, then a concurrency limit, a spent budget, a circuit."""
    items = [entry.item for entry in entries]
    # Every running item, and its labels, are among the entries unless the read was cut short;
    # then the limits count what the store says.
    complete = len(entries) < settings.limit
    waits = scheduling_waits(
        store,
        items,
        limits=settings.limits,
        default_agent=settings.default_agent,
        edges=[edge for entry in entries for edge in entry.after],
        labels={entry.item.id: entry.labels for entry in entries} if complete else None,
        running=[item for item in items if item.state is ItemState.RUNNING] if complete else None,
    )
    held = {item_id: wait.reason for item_id, wait in waits.items()}
    by_item = held_items(
        store, items, budgets=settings.budgets, default_agent=settings.default_agent, now=now
    )
    holds = {hold.agent: hold for hold in by_item.values()}
    for item_id, hold in by_item.items():
        held.setdefault(item_id, f"held: {hold.reason()}")
    shut = {view.name: view for view in report.circuits if view.shut}
    for item in items:
        if item.state not in WAITING_STATES:
            continue
        circuit = shut.get(settings.circuits.get(item_agent(item, settings.default_agent), ""))
        if circuit is not None:
            held.setdefault(item.id, f"held: {circuit_words(circuit)}")
    return held, holds


def circuit_words(view: CircuitView) -> str:
    """``provider circuit agent:claude-code@… is open until …``"""
    until = view.circuit.until
    when = f" until {rfc3339(until)}" if view.state is CircuitState.OPEN else ""
    return f"provider circuit {view.name} is {view.state}{when}"


def log_tail(
    state_dir: Path, run: Run, *, installation_id: str, secrets: Sequence[str] = ()
) -> tuple[str | None, str | None]:
    """The tail of ``run``'s output (redacted, the known ``secrets`` too; printable), or why
    this machine has none."""
    # Loaded here: a board refresh reads no logs.
    from wrighty.services.runlogs import logs_problem, run_log_dir, tail_output

    log_dir = run_log_dir(state_dir, run)
    problem = logs_problem(run, log_dir, installation_id=installation_id)
    if problem is not None:
        return None, problem
    final = run.ended_at is not None
    return tail_output(log_dir, chars=LOG_TAIL_CHARS, final=final, secrets=secrets), None
