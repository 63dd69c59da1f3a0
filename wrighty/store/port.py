"""The store contract every backend implements (SQLite and PostgreSQL).

Every write about an item is compare-and-set: it names the state, generation and claim owner
the caller read, and changes nothing if the item moved meanwhile. Writes made under a claim
(runs, sessions, renewals, settling) land only while that exact claim is held. A provider
circuit is written the same way, on the version the caller read.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from wrighty.errors import UnreadableError

if TYPE_CHECKING:  # the contract names every aggregate; a read imports only what it reads
    from wrighty.domain.board import OpenItem
    from wrighty.domain.check_evidence import BaseCheck, CheckRecord
    from wrighty.domain.circuits import Circuit
    from wrighty.domain.claims import Claim, ClaimRequest, LeaseTerms, Renewal, RenewResult
    from wrighty.domain.conversation import AnswerRecord, TrackerItem
    from wrighty.domain.health import QueueFigures, WorkerRow
    from wrighty.domain.landing import Landing, LandingChange
    from wrighty.domain.model import Change, Dependency, Event, Item, NewItem, NewRun, Run, Session
    from wrighty.domain.notices import Source
    from wrighty.domain.outbox import Delivered, Notice, OutboxFigures, StoredNotice
    from wrighty.domain.sources import SourceState
    from wrighty.domain.states import ItemState
    from wrighty.domain.usage import LedgerEntry, Usage

_T = TypeVar("_T")


class Rows(list[_T]):
    """What a list read found: the rows that read, in order; ``unreadable`` holds one
    UnreadableError per row that did not (docs/storage.md), for a read command to show."""

    def __init__(
        self, found: Iterable[_T] = (), unreadable: Iterable[UnreadableError] = ()
    ) -> None:
        super().__init__(found)
        self.unreadable: list[UnreadableError] = list(unreadable)


@dataclass(frozen=True)
class Salvaged(Generic[_T]):
    """A row read for the one write that puts it right (the worker's set-aside, a circuit's
    reset): each value that did not read replaced by a safe one, and listed in ``problems``."""

    value: _T
    problems: tuple[UnreadableError, ...]


class Store(Protocol):
    def close(self) -> None: ...

    def schema_version(self) -> int:
        """The newest migration applied to this store."""
        ...

    def store_time(self) -> datetime | None:
        """The store's own clock now, the fleet's time (PostgreSQL: the database's
        ``clock_timestamp()``); None when the store has no clock of its own (SQLite: its
        workers share one machine, whose clock is the fleet's). One round trip
        (docs/fleet.md#one-time-for-the-fleet)."""
        ...

    # -- items ------------------------------------------------------------------------------

    def create_item(self, new: NewItem, *, at: datetime, actor: str) -> Item:
        """Insert the item, its dependencies and labels and its creation event in one
        transaction (NotFoundError, having written nothing, when an item it is to come after
        does not exist; AlreadyImported, having written nothing, when an item already has its
        import key)."""
        ...

    def get_item(self, item_id: int) -> Item | None:
        """The item; UnreadableError when a value of its row does not read (as for every
        read of a row, docs/storage.md)."""
        ...

    def unreadable_rows(self) -> list[UnreadableError]:
        """The rows that this store's list reads left out since it was opened because a value
        did not read (one per row and field, at most 100): a read command tells each."""
        ...

    def salvage_item(self, item_id: int) -> Salvaged[Item] | None:
        """The item with a safe value in place of each one that does not read, for the
        worker's set-aside: its write then writes no bad value back."""
        ...

    def find_imported(self, keys: Collection[str]) -> dict[str, Item]:
        """The items `wrighty import` made for these import keys, by key."""
        ...

    def list_imported(self, prefix: str) -> Rows[Item]:
        """The items whose import key begins with ``prefix`` (a tracker source's items: its
        `github:owner/name#`), oldest first."""
        ...

    def list_dependencies(self, item_id: int | None = None) -> list[Dependency]:
        """Every dependency stored (or those with ``item_id`` at either end), by item and
        then the item it comes after, each with the state of the item depended on."""
        ...

    def list_labels(self, item_id: int | None = None) -> dict[int, tuple[str, ...]]:
        """Each item's labels (or one item's), by name; an item without labels is left out."""
        ...

    def list_items(self, states: Collection[ItemState] = ()) -> Rows[Item]:
        """Items in any of ``states`` (every item when empty), oldest id first."""
        ...

    def list_items_moved_since(self, moment: datetime) -> Rows[Item]:
        """The items whose latest event (``updated_at``) is at or after ``moment``, oldest id
        first: the morning view's read (domain/morning.py), through an index of the items by
        that time rather than every item."""
        ...

    def list_events(self, item_id: int) -> list[Event]:
        """The item's history, oldest first."""
        ...

    def list_runs(self, item_id: int) -> Rows[Run]: ...

    def list_open_items(self, *, limit: int) -> Rows[OpenItem]:
        """The items that are not finished (todo, queued, running, retry-scheduled,
        needs-attention, review, landing), read in one snapshot, at most ``limit`` of them:
        needs-attention first, then review, landing, retry-scheduled, running, queued, todo;
        within a state by priority, then id. Each with when it entered its state, how many runs
        it has had, its latest run, its labels, the items it comes after (with their states)
        and, in landing, its landing. ValueError for a negative ``limit``."""
        ...

    def get_session(self, item_id: int) -> Session | None: ...

    def list_sessions(self, installation_id: str) -> Rows[Session]:
        """The sessions recorded on installation ``installation_id``, by item id (`wrighty
        workspaces`: the workspaces on this machine)."""
        ...

    def write_transition(self, change: Change) -> bool:
        """Write ``change`` (item, event, the end of the claim's open run, its notices in
        the outbox, and an edit's dependencies) atomically.

        The guard is ``change.before``'s state, generation and claim owner; a move to running
        also needs every item it comes after done, and a dependency added must name an item
        that exists (NotFoundError otherwise) and close no cycle. Returns False, having
        changed nothing, when the item moved meanwhile or a guard refused.
        """
        ...

    # -- claims -----------------------------------------------------------------------------

    def acquire(self, request: ClaimRequest, *, now: datetime) -> Claim | None:
        """Claim the best eligible item (docs/scheduling.md): by priority; within one, due
        retries first (resume affinity applies), then the oldest queue entry; only an item
        whose dependencies are all done (``request.stack``: all but one, waiting in review or
        landing with a branch of this installation) and under whose concurrency limits
        (``request.limits``) the running items leave room, counted in the same transaction.

        Exactly one of any number of racing callers gets a given item. The claim comes back
        with the item in state running under its new generation, owner and lease, the state
        it was claimed from, its session and the item it stacks on, as the claim's own
        transaction read them.
        """
        ...

    def renew(self, claimed: Item, *, now: datetime, terms: LeaseTerms) -> RenewResult:
        """Extend the lease of a claim still held, never past its renewal deadline."""
        ...

    def renew_many(self, renewals: Sequence[Renewal]) -> list[RenewResult]:
        """Renew several claims in one transaction, each exactly as ``renew`` would (fenced
        by its own generation and owner); the results in the same order."""
        ...

    def start_run(
        self, claimed: Item, run: NewRun, *, session: Session | None = None
    ) -> Run | None:
        """Record a run (and the session it works in) under the claim, in one transaction,
        before its agent starts; None, having written nothing, if the claim is lost."""
        ...

    def record_process(
        self, claimed: Item, run_id: str, *, pid: int, process_started_at: float
    ) -> bool: ...

    def record_session(
        self, claimed: Item, session: Session, *, at: datetime, run_id: str | None = None
    ) -> bool:
        """Record the item's session under the claim (and, with ``run_id``, the session id on
        that open run: a vendor that tells its id only once started); False if the claim is
        lost."""
        ...

    def record_agent_report(
        self,
        run_id: str,
        *,
        claim_token: str,
        report: str,
        reason: str | None,
        resets_at: datetime | None = None,
    ) -> bool:
        """`wrighty finish` / `wrighty fail` from inside a run (``resets_at``: when a usage
        limit it reports lifts); False unless the run's claim is still held and the token is
        that run's."""
        ...

    def get_run(self, run_id: str) -> Run | None: ...

    # -- landing (docs/landing.md) ---------------------------------------------------------

    def write_landing(self, move: LandingChange) -> bool:
        """Write a landing item's guarded move (``move.change``, guarded as write_transition's)
        with its landing and its session's new base, in one transaction; False, having
        written nothing, when a guard refused. A landing with seq 0 is a new acceptance: it
        takes the next place in the acceptance order."""
        ...

    def record_landing(
        self, claimed: Item, landing: Landing, *, at: datetime, base_commit: str | None = None
    ) -> bool:
        """Write a step of ``claimed``'s landing (and its session's new base) while the landing
        claim is held; False, having written nothing, when it is not."""
        ...

    def get_landing(self, item_id: int) -> Landing | None: ...

    def acquire_landing(
        self, request: ClaimRequest, *, now: datetime, item_id: int | None = None
    ) -> tuple[Item, Landing] | None:
        """Claim the head of a line (the first landing item of a target of installation
        ``request.installation_id``, in acceptance order, passing over one that waits for an
        item it comes after to be done) that no lander holds; with
        ``item_id``, only the head of that item's line. Exactly one of racing landers gets it.
        None when every line is held or empty."""
        ...

    # -- verification (docs/verify.md) -------------------------------------------------------

    def record_check(self, item: Item, record: CheckRecord) -> bool:
        """Store one check's evidence, guarded like every write about the item: only while it
        still has ``item``'s state, generation and owner (a running item: while that claim is
        held, and ``record.run_id`` must be its open run). Evidence is never rewritten: a
        second record at the same verification and position changes nothing. False, having
        written nothing, when a guard refused."""
        ...

    def list_checks(self, item_id: int) -> Rows[CheckRecord]:
        """The item's check evidence, oldest verification first, each in its order."""
        ...

    def base_check(self, base_commit: str, name: str, key: str) -> BaseCheck | None:
        """The check ``name`` (command ``key``: domain/verify.check_key)'s result on
        ``base_commit``, if it was run there (docs/verify.md#checks-that-fail-on-the-base);
        UnreadableError for a kept result that does not read."""
        ...

    def record_base_check(self, base: BaseCheck) -> None:
        """Keep a check's result on a base commit for good. The first result of a key wins: a
        second one (a worker that ran it at the same time) changes nothing and is no error."""
        ...

    def verified_items(self, item_ids: Collection[int]) -> dict[int, bool]:
        """For each of ``item_ids`` with a verification that ended (one by hand, or one of a
        run that ended: not one whose checks are running), whether every check of its latest
        passed; an item with none is left out. One read, however many items."""
        ...

    # -- the usage ledger -------------------------------------------------------------------

    def record_usage(self, claimed: Item, run_id: str, usage: Usage) -> bool:
        """Record the open run's usage as last read (replacing what it had) under the claim;
        False, having changed nothing, if the claim is lost or the run ended."""
        ...

    def report_usage(self, run_id: str, *, claim_token: str, usage: Usage) -> bool:
        """`wrighty report-usage` from inside a run: the run's usage so far (replacing what it
        had); False unless the run's claim is still held and the token is that run's."""
        ...

    def list_ledger(
        self,
        *,
        default_agent: str,
        since: datetime | None = None,
        item_id: int | None = None,
        item_ids: Collection[int] | None = None,
    ) -> Rows[LedgerEntry]:
        """Every run's usage, oldest first: runs started at or after ``since``, of one item
        (``item_id``), of these items (``item_ids``: one read, however many), or all; a run
        recorded before the ledger counts for its item's agent (or the default). ValueError
        when both ``item_id`` and ``item_ids`` are given."""
        ...

    def agent_spend(self, agent: str, *, since: datetime) -> Usage:
        """What ``agent``'s runs started at or after ``since`` spent (tokens by kind and
        cost), as ``acquire`` reads it for a period budget."""
        ...

    # -- health -----------------------------------------------------------------------------

    def queue_figures(self, *, now: datetime) -> QueueFigures:
        """Counts by state and the queue's figures, read as one snapshot."""
        ...

    def upsert_worker(self, row: WorkerRow) -> None:
        """Register a worker, or refresh its state, items and heartbeat."""
        ...

    def remove_worker(self, worker_id: str) -> None: ...

    def prune_workers(self, *, older_than: datetime) -> int:
        """Forget workers whose last heartbeat is older than ``older_than``; how many."""
        ...

    def list_workers(self) -> Rows[WorkerRow]: ...

    def expired_claims(self, *, now: datetime, limit: int) -> Rows[Item]:
        """Running items whose lease ended strictly before ``now``, oldest expiry first."""
        ...

    def reap(
        self, item_id: int, *, now: datetime, max_requeues: int, notify: Source | None = None
    ) -> Change | None:
        """Settle one expired claim as worker-lost, re-checking the expiry in the same write
        (with ``notify``, its notice goes to the outbox in that write).

        None when the item was renewed, settled or never expired: a live worker always wins.
        """
        ...

    # -- provider circuits --------------------------------------------------------------------

    def get_circuit(self, name: str) -> Circuit:
        """The circuit as stored, or ``Circuit(name)`` (version 0, closed) when it has no row.

        ``probe_running`` is read in the same query: whether the probe's item is running under
        its holder's claim.
        """
        ...

    def salvage_circuit(self, name: str) -> Salvaged[Circuit] | None:
        """The stored circuit with a safe value in place of each one that does not read (for
        `wrighty providers reset`); None when there is no row."""
        ...

    def list_circuits(self) -> Rows[Circuit]:
        """Every stored circuit, by name (as ``get_circuit`` reads each)."""
        ...

    def write_circuit(
        self, before: Circuit, after: Circuit, *, at: datetime, notice: Notice | None = None
    ) -> bool:
        """Store ``after`` if the circuit is still at ``before.version`` (version 0: if it has
        no row yet); the stored version becomes ``before.version + 1``, whatever
        ``after.version`` says, and ``notice`` goes to the outbox in the same write. False,
        having changed nothing, when another write landed first. ``after`` must name the same
        circuit (ValueError otherwise)."""
        ...

    # -- the notification outbox --------------------------------------------------------------

    def claim_notice(
        self, deliverer: str, *, now: datetime, lease_seconds: float
    ) -> StoredNotice | None:
        """Take the oldest due pending notice that no live delivery claim holds, for
        ``deliverer`` until ``now + lease_seconds``; exactly one of racing deliverers gets it
        (PostgreSQL: SKIP LOCKED)."""
        ...

    def make_notices_due(self, *, now: datetime) -> int:
        """Make every pending notice that waits for a retry due at ``now`` (`notify flush`,
        like `postqueue -f`); how many were waiting. Given-up notices stay given up."""
        ...

    def finish_notice(self, claimed: StoredNotice, outcome: Delivered) -> bool:
        """Write an attempt's outcome under the claim ``claimed`` came with; False, having
        changed nothing, when that claim expired and was taken again."""
        ...

    def renew_notice(
        self, claimed: StoredNotice, *, until: datetime, delivered_to: tuple[str, ...]
    ) -> StoredNotice | None:
        """Hold the claim ``claimed`` came with until ``until``, recording the sinks that have
        the notice so far; the notice as now claimed, or None, having changed nothing, when
        that claim expired and was taken again."""
        ...

    def list_notices(self, states: Collection[str], *, limit: int = 1000) -> Rows[StoredNotice]:
        """Notices in any of ``states``, oldest first."""
        ...

    def prune_notices(self, *, before: datetime) -> int:
        """Forget delivered notices finished before ``before``; how many."""
        ...

    def add_notice_once(self, notice: Notice) -> bool:
        """Add a notice that no item's change makes (a worker gone quiet) unless one with its
        id is stored already, delivered or not; whether it was added. Its id says what it
        tells, so racing deliverers that see the same thing add it once."""
        ...

    def outbox_figures(self) -> OutboxFigures: ...

    # -- wake-ups (worker.wakeUps) -------------------------------------------------------------

    def get_source(self, name: str) -> SourceState | None:
        """What the last sync of source ``name`` left (docs/sources.md), or None."""
        ...

    def list_sources(self) -> Rows[SourceState]:
        """Every source's state, by name."""
        ...

    def write_source(self, state: SourceState) -> None:
        """Record a source's state whole (the latest sync's), replacing the one before, but
        for where the reading of its comments stands (`write_answers_cursor`)."""
        ...

    # -- talking on a tracker (docs/sources.md#talking-on-the-issue) --------------------------

    def get_tracker_item(self, item_id: int) -> TrackerItem | None:
        """What wrighty wrote about the item on its tracker (its status comment, its pull
        request), or None."""
        ...

    def list_open_pulls(self) -> Rows[TrackerItem]:
        """The items whose pull request is open, by item id."""
        ...

    def write_tracker_item(self, record: TrackerItem) -> None:
        """Record what wrighty wrote about the item, replacing what was recorded."""
        ...

    def take_answer(self, record: AnswerRecord) -> bool:
        """Record an answer read on a tracker, unless its comment is recorded already;
        whether it was (only then does the reader act on it)."""
        ...

    def update_answer(self, record: AnswerRecord) -> None:
        """Record an answer's next step and result."""
        ...

    def unfinished_answers(self, source: str) -> Rows[AnswerRecord]:
        """The source's answers not yet answered on the tracker, by comment id."""
        ...

    def write_answers_cursor(self, name: str, since: datetime | None, etag: str | None) -> None:
        """Where the reading of source ``name``'s comments stands (its row must exist)."""
        ...

    def next_retry_due(self, *, after: datetime) -> datetime | None:
        """The earliest due time of a retry-scheduled item that is strictly later than
        ``after``: when an idle worker should look again, whatever its poll says."""
        ...

    def listen_for_work(self, name: str) -> WorkListener:
        """Start hearing that work became claimable on this store, under ``name`` (the worker's
        id); StoreError when it cannot. Every write that makes an item claimable (it enters
        queued or retry-scheduled) tells each listener once it has committed: PostgreSQL with
        NOTIFY, SQLite with a datagram to each listener's socket. A listener may miss a word
        (a connection that dropped, a full or removed socket): polling stays the safety net."""
        ...


class WorkListener(Protocol):
    """An idle worker's open line from ``Store.listen_for_work``, owned by one thread."""

    @property
    def via(self) -> str:
        """``listen`` (PostgreSQL LISTEN/NOTIFY) or ``socket`` (SQLite datagrams)."""
        ...

    def fileno(self) -> int:
        """What to wait on: readable when something arrived (or the line broke)."""
        ...

    def drain(self) -> bool:
        """Read everything that arrived, without blocking; whether any word of work did.
        StoreError when the line is lost (the listener must be opened again)."""
        ...

    def intact(self) -> bool:
        """Whether the line can still hear (SQLite: its socket file is still there), checked
        when nothing arrived for a while."""
        ...

    def close(self) -> None: ...
