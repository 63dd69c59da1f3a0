"""`wrighty verify ITEM`: an item's checks run by hand, now, in its workspace, without an agent
(docs/verify.md#running-the-checks-by-hand).

The evidence is recorded like a worker's (guarded by the item's state and generation, as read
before the checks ran), by the actor ``operator``. An item that waits for a person because of
its checks goes, once every one passes, where a worker's done run goes: its change committed
on its branch, then done, or to review with completion.review person
(domain/decide.done_goes). Any other item only gains the evidence.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from wrighty.domain import suggestions
from wrighty.domain.check_evidence import CheckEvidence, CheckRecord
from wrighty.domain.claims import Settlement
from wrighty.domain.model import WAITS_FOR_CHECKS, Change, Item, Session
from wrighty.domain.redact import secret_values
from wrighty.domain.states import ItemState
from wrighty.domain.text import plural
from wrighty.domain.transitions import restated, transition
from wrighty.domain.verify import Check, VerifyPolicy, select_checks, unknown_check
from wrighty.domain.work_product import Completion
from wrighty.errors import NotFoundError, WrightyError
from wrighty.services.runlogs import logs_of
from wrighty.store.port import Store

if TYPE_CHECKING:
    from wrighty.supervisor.sandboxing import SandboxMaker

OPERATOR = "operator"
VERIFIED_BY_HAND = "verified-by-hand"


@dataclass(frozen=True)
class ByHand:
    """What `wrighty verify` did: each check's evidence, in order, and the item after it."""

    item: Item
    evidence: tuple[CheckEvidence, ...]
    done: bool  # the item became done
    moved: bool  # the item moved while its checks ran: the rest was not recorded
    settled: bool = (
        False  # the checks passed and the item went on (done, review, or a failed commit)
    )

    @property
    def passed(self) -> bool:
        return bool(self.evidence) and all(check.passed for check in self.evidence)


def workspace_here(item: Item, session: Session | None, *, installation_id: str) -> Path:
    """Where the item's checks run on this machine: its session's workspace, which a worker of
    this installation made; WrightyError when it has none here."""
    if session is None:
        raise WrightyError(
            f"item {item.id} has never run, so it has no workspace to check; "
            + suggestions.before_first_run(item.id, item.state)
        )
    if session.installation_id != installation_id:
        raise WrightyError(
            f"item {item.id}'s workspace is on another installation "
            f"({session.installation_id}); run `wrighty verify {item.id}` there"
        )
    workspace = Path(session.workspace)
    if not workspace.is_dir():
        raise WrightyError(f"item {item.id}'s workspace {workspace} is gone; nothing to check")
    return workspace


def runs_here(
    item: Item, session: Session | None, policy: VerifyPolicy | None, *, installation_id: str
) -> bool:
    """Whether `wrighty verify` would run the item's checks here rather than refuse (by the
    rules it refuses with): it is not running, it has checks, its workspace is here."""
    if item.state is ItemState.RUNNING:
        return False
    try:
        _planned(item, policy, "")
        workspace_here(item, session, installation_id=installation_id)
    except WrightyError:
        return False
    return True


def verify_by_hand(
    store: Store,
    item_id: int,
    *,
    policy: VerifyPolicy | None,
    agent: str,
    installation_id: str,
    state_dir: Path,
    now: Callable[[], datetime],
    environ: Mapping[str, str],
    completion: Completion | None = None,
    told: Callable[[CheckEvidence], None] = lambda _: None,
    known: Sequence[str] = (),
    sandbox: SandboxMaker | None = None,
) -> ByHand:
    """Run item ``item_id``'s checks by hand (``policy``: its agent's, from wrighty.json),
    telling each one's evidence as it ends; WrightyError (nothing run, nothing written) for
    an item that is running or has no checks or no workspace here. ``completion``: what a
    passing item's work then goes through (wrighty.json's completion section). ``sandbox``:
    where the checks run (verify.sandbox; None: as this process)."""
    from wrighty.services.sandboxes import CHECK_VARIABLES
    from wrighty.supervisor.checks import CheckSpec, run_check  # (`show` asks `runs_here`)

    item = store.get_item(item_id)
    if item is None:
        raise NotFoundError(f"item {item_id} does not exist; `wrighty list` shows the items")
    if item.state is ItemState.RUNNING:
        raise WrightyError(
            f"item {item.id} is running: its worker runs its checks once its run ends"
        )
    planned = _planned(item, policy, agent)
    session = store.get_session(item.id)
    workspace = workspace_here(item, session, installation_id=installation_id)
    verification_id = f"ver-{uuid.uuid4().hex[:12]}"
    secrets = tuple(dict.fromkeys((*secret_values(environ), *known)))  # known: config's
    log_dir = logs_of(state_dir, item.id, verification_id) / "checks"
    evidence: list[CheckEvidence] = []
    for position, check in enumerate(planned):
        started = now()
        if isinstance(check, str):
            result = unknown_check(check, agent)
        else:
            env = {**environ, "WRIGHTY_ITEM_ID": str(item.id), "WRIGHTY_CHECK_NAME": check.name}
            place = log_dir / f"{position + 1:02d}-{check.name}"
            boxed = sandbox.at(workspace, passed=CHECK_VARIABLES) if sandbox is not None else None
            ran = run_check(CheckSpec(check, workspace, place, env, secrets=secrets, sandbox=boxed))
            assert ran is not None  # nothing but its time limit stops a check run by hand
            result = ran
        record = CheckRecord(item.id, verification_id, None, position, OPERATOR, started, result)
        if not store.record_check(item, record):
            return ByHand(_current(store, item), tuple(evidence), done=False, moved=True)
        evidence.append(result)
        told(result)
        if not result.started:
            break
    by_hand = ByHand(item, tuple(evidence), done=False, moved=False)
    waiting = item.state is ItemState.NEEDS_ATTENTION and item.reason_code in WAITS_FOR_CHECKS
    if not (by_hand.passed and waiting):
        return by_hand
    change = _completed(
        store,
        item,
        session,
        by_hand,
        completion or Completion(),
        at=now(),
        fallback_run=verification_id,
    )
    if not store.write_transition(change):
        return ByHand(_current(store, item), by_hand.evidence, done=False, moved=True)
    after = change.after
    return ByHand(
        after, by_hand.evidence, done=after.state is ItemState.DONE, moved=False, settled=True
    )


def _planned(item: Item, policy: VerifyPolicy | None, agent: str) -> list[Check | str]:
    """The item's checks, after the names it chose that its agent has no check for."""
    available = policy.checks if policy is not None else ()
    checks, unknown = select_checks(available, item.verify_checks)
    if not checks and not unknown:
        raise WrightyError(
            f"item {item.id} has no checks to run: add some to wrighty.json's verify.checks "
            f"(or agents.{agent}.verify.checks), or name them with `wrighty edit {item.id} "
            "--verify NAME`"
        )
    return [*unknown, *checks]


def _completed(
    store: Store,
    item: Item,
    session: Session | None,
    by_hand: ByHand,
    completion: Completion,
    *,
    at: datetime,
    fallback_run: str,
) -> Change:
    """The move of an item that waited for its checks, now that every one passed by hand: the
    way a worker's done run goes (its branch's commit, then done or review), by the operator."""
    from wrighty.domain.decide import done_goes
    from wrighty.workproduct import commit  # git, only for an item that goes on

    count = f"{len(by_hand.evidence)} {plural(len(by_hand.evidence), 'check', 'checks')}"
    settlement = Settlement(
        ItemState.DONE,
        process_started=False,
        reason_code=VERIFIED_BY_HAND,
        reason=f"every check passed when run by hand ({count})",
    )
    done = None
    if session is not None and session.branch is not None:
        runs = store.list_runs(item.id)
        latest = max(runs, key=lambda run: run.started_at, default=None)
        run_id = latest.run_id if latest is not None else fallback_run
        done = commit.complete(
            Path(session.workspace), completion, item=item, run_id=run_id,
            base_commit=session.base_commit,
        )  # fmt: skip
    settlement = done_goes(item, settlement, done, completion)
    if settlement.to_state is item.state:  # its commit failed: it waits as it did, saying why
        return restated(
            item, at=at, actor=OPERATOR, reason_code=settlement.reason_code or VERIFIED_BY_HAND,
            reason=settlement.reason or "", next_action=settlement.next_action,
        )  # fmt: skip
    return transition(
        item, settlement.to_state, at=at, actor=OPERATOR, reason_code=settlement.reason_code,
        reason=settlement.reason, next_action=settlement.next_action,
    )  # fmt: skip


def _current(store: Store, item: Item) -> Item:
    return store.get_item(item.id) or item
