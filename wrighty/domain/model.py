"""The records wrighty keeps: items, their event history, runs and sessions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.usage import Usage

if TYPE_CHECKING:
    from wrighty.domain.outbox import Notice

MAX_TITLE_LENGTH = 200
MAX_BODY_BYTES = 1024 * 1024  # a task longer than 1 MiB belongs in a file in the workspace
MAX_ITEM_ID = 2**63 - 1  # ids are 64-bit: SQLite's INTEGER, PostgreSQL's BIGINT
DEFAULT_PRIORITY = 2  # P2 (docs/scheduling.md)
# A verification check's name (docs/verify.md): a short word that reasons, events and a
# command line can name as it is. Here, not in verify.py, because an item names its checks
# (`Item.verify_checks`) and reading an item loads no more than this module.
# A commit as git names it in full (SHA-1 or SHA-256), and a branch wrighty makes for an item.
COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
BRANCH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")
CHECK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# The reasons an item waits for a person with because of its checks (verify.py decides them;
# `show` and the inbox offer `wrighty verify` for them, so they are here, as CHECK_NAME is).
VERIFICATION_FAILED = "verification-failed"
CHECK_START_FAILED = "check-start-failed"
WAITS_FOR_CHECKS = frozenset({VERIFICATION_FAILED, CHECK_START_FAILED})
# A done run whose commit failed (docs/work-product.md#commits).
COMMIT_FAILED = "commit-failed"
OFF_BRANCH = "off-branch"  # a done run's worktree is not on the item's branch
# Review (docs/work-product.md#review): an item waits for a person, is accepted or rejected; an
# accept whose integration failed leaves it in review, saying why (an event with no move).
READY_FOR_REVIEW = "ready-for-review"
ACCEPTED = "accepted"
REJECTED = "rejected"
INTEGRATION_FAILED = "integration-failed"
# Landing (docs/landing.md): a lander claimed an accepted item, or put it back in line; it
# landed; a conflict or a red check sent it back to its agent for a fix turn; its fix turns
# were spent.
LANDING_STARTED = "landing-started"
LANDING_RELEASED = "landing-released"
LANDED = "landed"
# Landed as a pull request that is open (completion.integrate github-pr): the item waits in
# review for its merge (docs/sources.md#a-pull-request-as-the-integration).
PULL_OPEN = "pull-request-open"
LANDING_CONFLICT = "landing-conflict"
LANDING_CHECKS_FAILED = "landing-checks-failed"
LANDING_GAVE_UP = "landing-gave-up"
LANDING_FIXED = "landing-fixed"  # a landing's fix turn passed: back to land
# The fix turns a landing asks of the agent: their prompt is the item's stored feedback.
LANDING_FIX_TURNS = frozenset({LANDING_CONFLICT, LANDING_CHECKS_FAILED})
# A person handed the item to another agent (docs/handoff.md).
HANDED_OFF = "handed-off"


# The output streams of an agent process.
Stream = Literal["stdout", "stderr"]


@dataclass(frozen=True)
class NewItem:
    """What a user supplies when creating an item."""

    title: str
    body: str
    agent: str | None
    timeout_seconds: float | None
    workspace: str | None
    initial_state: ItemState
    max_cost_usd: float | None = None  # the item's own budget (create --max-cost-usd)
    max_tokens: int | None = None  # (create --max-tokens)
    # Scheduling (wrighty/domain/scheduling.py): 0 (P0) is the highest priority; the items it
    # comes after (each must be done before it is eligible); its labels (for
    # limits.labels.<label>.maxConcurrent).
    priority: int = DEFAULT_PRIORITY
    after: tuple[int, ...] = ()
    labels: tuple[str, ...] = ()
    # `wrighty import`: the section's key (file name and section key) and what it said.
    import_key: str | None = None
    import_fingerprint: str | None = None
    # Verification (docs/verify.md): None runs the checks wrighty.json gives its agent; a
    # tuple runs exactly the checks it names, in their configured order (empty: none,
    # `--no-verify`).
    verify_checks: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Item:
    id: int
    title: str
    body: str
    agent: str | None
    timeout_seconds: float | None
    workspace: str | None
    state: ItemState
    generation: int
    claimed_by: str | None
    lease_expires_at: datetime | None
    queued_at: datetime | None
    not_before: datetime | None
    reason_code: str | None
    reason: str | None
    next_action: str | None
    crash_retries: int
    requeues: int
    created_at: datetime
    updated_at: datetime
    claimed_at: datetime | None = None
    renew_deadline: datetime | None = None
    usage_retries: int = 0  # worker.usageFailure's, beside crash_retries and requeues
    max_cost_usd: float | None = None  # the item's own budget, over budgets.perItem's
    max_tokens: int | None = None
    priority: int = DEFAULT_PRIORITY  # 0 (P0) is claimed first; see domain/scheduling.py
    import_key: str | None = None  # `wrighty import`: its section's key
    import_fingerprint: str | None = None
    verify_checks: tuple[str, ...] | None = None  # as NewItem's: None follows wrighty.json
    fix_turns: int = 0  # verify.maxFixTurns's, beside crash_retries and usage_retries
    # Review (docs/work-product.md#review): how many times a person rejected the item
    # (completion.maxRejections's), and the latest rejection's feedback: the prompt of the run
    # that follows it.
    rejections: int = 0
    feedback: str | None = None
    # Handoffs (docs/handoff.md): how many times the item was handed to another agent, and
    # the person's note of the latest, which the next run's handoff prompt carries.
    handoffs: int = 0
    handoff_note: str | None = None
    # The commit of its branch a person saw when they last rejected it (None: never rejected,
    # or no branch then): its page shows what changed since (docs/work-product.md#review).
    reviewed_commit: str | None = None


@dataclass(frozen=True)
class Event:
    """One row of an item's append-only history."""

    item_id: int
    at: datetime
    actor: str
    generation: int
    from_state: ItemState | None
    to_state: ItemState
    reason_code: str | None
    reason: str | None


@dataclass(frozen=True)
class Session:
    """The vendor conversation an item's runs belong to."""

    item_id: int
    vendor: str
    session_id: str | None
    workspace: str
    installation_id: str
    # worktree mode: the item's branch and the commit it was made from (docs/work-product.md);
    # None for other modes and for worktrees made before branches (detached).
    branch: str | None = None
    base_commit: str | None = None


@dataclass(frozen=True)
class Run:
    """One attempt: an agent process start or resume, and how it ended."""

    run_id: str
    item_id: int
    generation: int
    attempt: int
    kind: RunKind
    worker_id: str
    installation_id: str
    started_at: datetime
    ended_at: datetime | None
    pid: int | None
    process_started_at: float | None
    exit_code: int | None
    signal: int | None
    outcome_class: OutcomeClass | None
    confidence: Confidence | None
    session_id: str | None
    diagnostic: str | None
    agent_report: str | None = None
    agent_reason: str | None = None
    agent: str | None = None  # the agent that ran (None: recorded before the ledger)
    usage: Usage | None = None  # what the vendor reported (None: nothing yet)
    # When the agent said its usage limit lifts (`wrighty fail --usage-limit --resets-at`).
    agent_resets_at: datetime | None = None


@dataclass(frozen=True)
class NewRun:
    """A run about to start under a claim (recorded before the agent is spawned)."""

    run_id: str
    kind: RunKind
    worker_id: str
    installation_id: str
    started_at: datetime
    session_id: str | None
    claim_token: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class RunEnd:
    """How the open run of a claim ended; written with the item's move, in one transaction."""

    ended_at: datetime
    outcome_class: OutcomeClass
    confidence: Confidence
    exit_code: int | None = None
    signal: int | None = None
    diagnostic: str | None = None
    usage: Usage | None = None  # the run's usage as last read (None: leave what is recorded)


@dataclass(frozen=True)
class Change:
    """One guarded move: the item as read, as it will be, the event, and the run it ends.

    A store writes it only if the item still has ``before``'s state, generation and owner.
    """

    before: Item
    after: Item
    event: Event
    run_end: RunEnd | None = None
    notices: tuple[Notice, ...] = ()  # written to the outbox in the same transaction
    # An edit's dependencies (`wrighty edit --after / --not-after`), written with the move:
    # the items the item now comes after, and those it no longer comes after.
    after_added: tuple[int, ...] = ()
    after_removed: tuple[int, ...] = ()


@dataclass(frozen=True)
class Dependency:
    """Item ``item_id`` comes after item ``depends_on``, which is in ``state`` (None: there
    is no such item in the store; such a dependency is never met, docs/scheduling.md)."""

    item_id: int
    depends_on: int
    state: ItemState | None
