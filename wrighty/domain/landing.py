"""Landing (docs/landing.md): what becomes of an item a person accepted. Pure: the moves and
the records; git is workproduct/landing.py's, the steps worker/land.py's.

An accept is one guarded move, review -> landing, that records who accepted, when, the commit
they saw and where it lands (a ``Landing``): anyone who raced it (a reject, a cancel, a second
accept) is refused, and before it they win. A landing item is then claimed by a lander (a
worker, or `wrighty accept` waiting) under a new generation and a lease, one per target branch
at a time across the fleet, in the order accepted. The lander brings the branch up to date with
the target's tip, checks it there, records the commit the target will move to (``intent``)
before it moves it, and settles: landed (done), a fix turn in the item's session (a conflict or
a red check), a person's attention (the fix turns spent) or review (what a person must decide).

Exactly once: the intent is recorded before its side effect, so the next claim of a landing
whose lander died reads where it stopped and finishes it (``Step.INTEGRATING``): the target is
at the intent's commit (landed), or still at the commit it was read at (moved again, the same
move), and an integration command that may have run is told so (``attempt``).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from wrighty.domain import suggestions
from wrighty.domain.claims import ClaimRequest, Settlement, worker_actor
from wrighty.domain.model import (
    ACCEPTED,
    BRANCH_NAME,
    COMMIT_ID,
    INTEGRATION_FAILED,
    LANDED,
    LANDING_FIXED,
    LANDING_GAVE_UP,
    LANDING_RELEASED,
    LANDING_STARTED,
    PULL_OPEN,
    READY_FOR_REVIEW,
    Change,
    Item,
)
from wrighty.domain.states import ItemState
from wrighty.domain.text import clip
from wrighty.domain.transitions import transition

if TYPE_CHECKING:
    from collections.abc import Iterable

    from wrighty.domain.model import Dependency
from wrighty.errors import IllegalTransitionError

UpdateMode = Literal["merge", "rebase"]
ReviewAfterFix = Literal["person", "auto"]
# How many times a lander catches up with a target that moved on while it checked.
MAX_CATCH_UPS = 3
# How long a reason is.
_REASON_CHARS = 500
SHORT = 12


class Step(enum.StrEnum):
    """Where a landing is (`show` says it)."""

    WAITING = "waiting"  # accepted, in line for a lander
    UPDATING = "updating"  # its branch is being brought up to date with the target
    CHECKING = "checking"  # its checks run on the updated branch
    INTEGRATING = "integrating"  # the intent is recorded; the target moves (or the command runs)
    FIX_TURN = "fix-turn"  # a conflict or a red check went back to the agent


@dataclass(frozen=True)
class Landing:
    """An accepted item's landing, as stored (one row per item; a new accept replaces it).

    ``target_commit``: the target's tip the branch was brought up to date with (the item's
    base from then on); ``checked_commit``: the branch commit the checks passed on (with
    ``target_commit`` in it); ``intent``: the commit the target moves to, recorded before it
    moves (a merge), or the branch commit an integration pushes or hands a command;
    ``attempt``: how many times the integration was started."""

    item_id: int
    seq: int  # acceptance order, across the store (0 until the store gives it)
    accepted_at: datetime
    accepted_by: str
    accepted_commit: str | None  # the branch's commit when the person accepted
    installation_id: str  # where the target's repository is
    target: str  # the branch it lands on
    step: Step = Step.WAITING
    target_commit: str | None = None
    checked_commit: str | None = None
    intent: str | None = None
    intent_from: str | None = None  # the target's commit the intent moves it from
    attempt: int = 0
    catch_ups: int = 0

    def __post_init__(self) -> None:
        problem = landing_problem(self)
        if problem is not None:
            raise ValueError(problem)


def landing_problem(landing: Landing) -> str | None:
    """Why ``landing`` (as read back from a store, say) is no landing, or None."""
    for name in ("accepted_commit", "target_commit", "checked_commit", "intent", "intent_from"):
        value = getattr(landing, name)
        if value is not None and COMMIT_ID.fullmatch(value) is None:
            return f"landing of item {landing.item_id}: {name} is not a commit id"
    if BRANCH_NAME.fullmatch(landing.target) is None or ".." in landing.target:
        return f"landing of item {landing.item_id}: its target is not a branch name"
    if not 0 <= landing.attempt <= 1_000 or not 0 <= landing.catch_ups <= 1_000:
        return f"landing of item {landing.item_id}: its counters are out of range"
    if not landing.installation_id or not landing.accepted_by:
        return f"landing of item {landing.item_id}: no installation or no actor"
    return None


@dataclass(frozen=True)
class InLine:
    """An item in a target's line, as a lander reads the lines: landing, or in the fix turn
    its landing sent it to (it keeps its place), whether a lander holds it now, and whether an
    item it comes after is not done yet (completion.stack: it waits for it to land first)."""

    item_id: int
    target: str
    landing: bool  # False: in its landing's fix turn
    held: bool
    waits: bool = False


def head_to_claim(line: list[InLine], *, target: str | None = None) -> int | None:
    """The item a lander claims among ``line`` (every target's line, in acceptance order;
    ``target``: that target's only): the head of a line that no lander holds, and that is not
    in its fix turn (the line waits for it). One landing at a time per target, in the order
    accepted; an item that waits for one it comes after to land is passed over, its place kept
    (docs/landing.md#stacked-items): its predecessor may be behind it in the line."""
    heads: dict[str, InLine] = {}
    held: set[str] = set()
    for entry in line:
        if entry.held:
            held.add(entry.target)
        if not entry.waits:
            heads.setdefault(entry.target, entry)
    for name, head in heads.items():
        if (target is None or name == target) and name not in held and head.landing:
            return head.item_id
    return None


def held_up_by(item_id: int, dependencies: Iterable[Dependency]) -> int | None:
    """The item ``item_id`` comes after that keeps it from landing and is not itself on its
    way to land (completion.stack: in review, running, ...), so that no lander can land it
    first; None when every item it comes after is done or landing
    (docs/landing.md#stacked-items)."""
    for dependency in dependencies:
        if dependency.item_id != item_id:
            continue
        if dependency.state not in (ItemState.DONE, ItemState.LANDING):
            return dependency.depends_on
    return None


@dataclass(frozen=True)
class LandingChange:
    """A guarded move of a landing item, with its landing as it will be (None: unchanged)
    and the session's new base (None: unchanged)."""

    change: Change
    landing: Landing | None = None
    base_commit: str | None = None


def accepted_words(landing: Landing) -> str:
    """Who accepted, the commit they saw and where it lands (the time is the renderer's)."""
    seen = f" at {landing.accepted_commit[:SHORT]}" if landing.accepted_commit else ""
    return f"by {landing.accepted_by}{seen}; lands on {landing.target}"


def accept(
    item: Item,
    *,
    at: datetime,
    actor: str,
    accepted_commit: str | None,
    installation_id: str,
    target: str,
) -> LandingChange:
    """review -> landing: the person's acceptance, recorded (who, when, the commit they saw,
    where it lands). Refused for an item that is not in review."""
    _require(item, ItemState.REVIEW, "accept takes items in review")
    landing = Landing(item.id, 0, at, actor, accepted_commit, installation_id, target, Step.WAITING)
    # The reason follows its code, as a person writes it: "accepted: by ana at 1a2b...; ..."
    change = transition(
        item, ItemState.LANDING, at=at, actor=actor, reason_code=ACCEPTED,
        reason=accepted_words(landing),
    )  # fmt: skip
    return LandingChange(change, landing)


def claim(item: Item, landing: Landing, request: ClaimRequest, *, at: datetime) -> LandingChange:
    """landing -> landing under a new generation, owner and lease: the lander's claim."""
    _require(item, ItemState.LANDING, "only a landing item is claimed to land")
    actor = worker_actor(request.worker_id)
    where = "it goes on from where its last lander stopped" if landing.intent else "it starts"
    change = transition(
        item, ItemState.LANDING, at=at, actor=actor, reason_code=LANDING_STARTED,
        reason=f"{actor} lands it on {landing.target}; {where}", new_generation=True,
    )  # fmt: skip
    terms = request.terms
    after = dataclasses.replace(
        change.after,
        claimed_by=request.worker_id,
        claimed_at=at,
        lease_expires_at=terms.lease_from(at),
        renew_deadline=terms.renew_deadline(at, None),
    )
    return LandingChange(dataclasses.replace(change, after=after))


def _leave(
    claimed: Item,
    to_state: ItemState,
    *,
    at: datetime,
    reason_code: str,
    reason: str,
    next_action: str | None = None,
    not_before: datetime | None = None,
) -> Change:
    """The move that ends a landing claim."""
    if claimed.state is not ItemState.LANDING or claimed.claimed_by is None:
        raise IllegalTransitionError(f"item {claimed.id} is not claimed to land")
    change = transition(
        claimed, to_state, at=at, actor=worker_actor(claimed.claimed_by),
        reason_code=reason_code, reason=clip(reason, _REASON_CHARS), next_action=next_action,
        not_before=not_before,
    )  # fmt: skip
    after = dataclasses.replace(
        change.after, claimed_by=None, lease_expires_at=None, claimed_at=None, renew_deadline=None
    )
    return dataclasses.replace(change, after=after)


def landed(claimed: Item, landing: Landing, words: str, *, at: datetime) -> LandingChange:
    """landing -> done: the change is on its target (``words``: what the integration did)."""
    change = _leave(claimed, ItemState.DONE, at=at, reason_code=LANDED, reason=words)
    return LandingChange(change, dataclasses.replace(landing, step=Step.WAITING))


def back_to_review(claimed: Item, landing: Landing, why: str, *, at: datetime) -> LandingChange:
    """landing -> review: something a person must decide (the target has changes of its
    own, the integration was refused or failed). The person accepts again once it is put
    right, or rejects it."""
    change = _leave(
        claimed, ItemState.REVIEW, at=at, reason_code=INTEGRATION_FAILED,
        reason=f"it did not land: {why}", next_action=suggestions.accept(claimed.id),
    )  # fmt: skip
    return LandingChange(change, dataclasses.replace(landing, step=Step.WAITING))


def pull_opened(claimed: Item, landing: Landing, words: str, *, at: datetime) -> LandingChange:
    """landing -> review: its pull request is open (completion.integrate github-pr), and its
    merge, seen by the sync, finishes it (docs/sources.md#a-pull-request-as-the-integration)."""
    change = _leave(claimed, ItemState.REVIEW, at=at, reason_code=PULL_OPEN, reason=words)
    return LandingChange(change, dataclasses.replace(landing, step=Step.WAITING))


def release(claimed: Item, landing: Landing, why: str, *, at: datetime) -> LandingChange:
    """landing -> landing with no owner: back in line, where it was (the lander stops)."""
    change = _leave(claimed, ItemState.LANDING, at=at, reason_code=LANDING_RELEASED, reason=why)
    return LandingChange(change, landing)


def fix_turn(
    claimed: Item,
    landing: Landing,
    *,
    reason_code: str,
    why: str,
    prompt: str,
    max_fix_turns: int,
    at: datetime,
) -> LandingChange:
    """landing -> retry-scheduled, due now: a fix turn in the item's session, its prompt
    (``prompt``) kept as the item's feedback; or, once ``max_fix_turns`` are spent,
    needs-attention."""
    if claimed.fix_turns >= max_fix_turns:
        change = _leave(
            claimed, ItemState.NEEDS_ATTENTION, at=at, reason_code=LANDING_GAVE_UP,
            reason=f"{why}; its {max_fix_turns} fix turns are spent (verify.maxFixTurns)",
            next_action=suggestions.show(claimed.id),
        )  # fmt: skip
        return LandingChange(change, dataclasses.replace(landing, step=Step.WAITING))
    turn = claimed.fix_turns + 1
    change = _leave(
        claimed, ItemState.RETRY_SCHEDULED, at=at, reason_code=reason_code,
        reason=f"{why}; fix turn {turn} of {max_fix_turns}", not_before=at,
    )  # fmt: skip
    after = dataclasses.replace(change.after, fix_turns=turn, feedback=prompt)
    return LandingChange(
        dataclasses.replace(change, after=after), dataclasses.replace(landing, step=Step.FIX_TURN)
    )


def after_fix_turn(
    item: Item, settlement: Settlement, review_after_fix: ReviewAfterFix
) -> Settlement:
    """Where a landing's fix turn goes once its run is done (``settlement``: to review or
    done, as completion.review says): back to a person's review, since what they accepted
    changed (completion.reviewAfterFix person), or straight back to land (auto)."""
    if settlement.to_state not in (ItemState.DONE, ItemState.REVIEW):
        return settlement
    if review_after_fix == "person":
        return dataclasses.replace(
            settlement, to_state=ItemState.REVIEW, reason_code=READY_FOR_REVIEW,
            reason="its landing's fix turn changed what was accepted: review it again",
            next_action=suggestions.accept(item.id),
        )  # fmt: skip
    return dataclasses.replace(
        settlement, to_state=ItemState.LANDING, reason_code=LANDING_FIXED,
        reason="its landing's fix turn passed its checks: it lands", next_action=None,
    )  # fmt: skip


def where(landing: Landing, item: Item) -> str:
    """Where a landing is, in a few words (`show`)."""
    step = landing.step
    on = landing.target
    if item.state is not ItemState.LANDING:
        return f"accepted by {landing.accepted_by}; lands on {on}"
    if item.claimed_by is None:
        return f"waiting in line to land on {on}"
    if step is Step.UPDATING:
        return f"updating with {on}"
    if step is Step.CHECKING and landing.target_commit:
        return f"checking on {on} at {landing.target_commit[:SHORT]}"
    if step is Step.INTEGRATING:
        attempt = f" (attempt {landing.attempt})" if landing.attempt > 1 else ""
        return f"integrating into {on}{attempt}"
    return f"landing on {on}"


def _require(item: Item, state: ItemState, what: str) -> None:
    if item.state is not state:
        raise IllegalTransitionError(f"item {item.id} is {item.state}; {what}")
