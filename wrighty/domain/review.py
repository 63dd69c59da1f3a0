"""Review (docs/work-product.md#review): an item whose run is done waits for a person, who
accepts it (done) or rejects it with feedback (back to work: the next run resumes its session
with the feedback as its prompt). Pure: where the item goes and what each move records."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from wrighty.domain import suggestions
from wrighty.domain.claims import Settlement
from wrighty.domain.model import (
    ACCEPTED,
    COMMIT_ID,
    INTEGRATION_FAILED,
    READY_FOR_REVIEW,
    REJECTED,
    Change,
    Item,
)
from wrighty.domain.redact import redact_known
from wrighty.domain.states import ItemState
from wrighty.domain.text import clip, given_text_problem, printable, printable_line
from wrighty.domain.transitions import restated, transition
from wrighty.errors import IllegalTransitionError, WrightyError

# A person's feedback: the prompt of the next run, so bounded as a prompt is.
MAX_FEEDBACK_BYTES = 64 * 1024
# How much of the feedback the reject's event (and `show`'s reason) quotes.
_QUOTED_CHARS = 200
_REASON_CHARS = 500

_FEEDBACK_HEAD = "A person reviewed your work on this task and rejected it. Their feedback:\n\n"
_FEEDBACK_TAIL = (
    "\n\nChange the work in this workspace to address the feedback (your earlier work is "
    "here). When you have finished, end your turn: your work is checked and reviewed again.\n"
)


def to_review(item: Item, settlement: Settlement) -> Settlement:
    """``settlement``, a done run's, as one that waits for a person's review instead
    (completion.review "person")."""
    reason = f"{settlement.reason or 'the run succeeded'}; it waits for a person's review"
    return dataclasses.replace(
        settlement,
        to_state=ItemState.REVIEW,
        reason_code=READY_FOR_REVIEW,
        reason=reason,
        next_action=suggestions.accept(item.id),
    )


def _require_review(item: Item, verb: str) -> None:
    if item.state is not ItemState.REVIEW:
        raise IllegalTransitionError(
            f"item {item.id} is {item.state}; {verb} takes items in review"
        )


def check_acceptable(item: Item) -> None:
    """Refuse, before anything is integrated, an item that is not in review."""
    _require_review(item, "accept")


def accept(item: Item, *, at: datetime, actor: str, integrated: str | None = None) -> Change:
    """review -> done; ``integrated``: what the integration did, in words, the reason (the
    reason code says it was accepted: `accepted: merged ...`, never `accepted: accepted; ...`)."""
    _require_review(item, "accept")
    return transition(
        item, ItemState.DONE, at=at, actor=actor, reason_code=ACCEPTED,
        reason=clip(integrated, _REASON_CHARS) if integrated else None,
    )  # fmt: skip


def feedback_problem(feedback: str) -> str | None:
    """Why ``feedback`` cannot be a rejection's, or None."""
    return given_text_problem(
        feedback,
        what="feedback",
        limit=MAX_FEEDBACK_BYTES,
        if_empty="say what the agent is to change",
    )


def reject(
    item: Item,
    feedback: str,
    *,
    at: datetime,
    actor: str,
    max_rejections: int,
    secrets: Iterable[str] = (),
    seen_commit: str | None = None,
) -> Change:
    """review -> retry-scheduled, due now, with ``feedback`` kept for the next run's prompt,
    its secrets (those found, and ``secrets``) replaced. The rejection is counted (at most
    ``max_rejections``); the automatic retries' and fix turns' counters start again, as for
    work the agent takes up anew. ``seen_commit``: the tip of its branch the person saw (its
    page later shows what changed since; anything but a commit id is not kept)."""
    _require_review(item, "reject")
    problem = feedback_problem(feedback)
    if problem is not None:
        raise WrightyError(problem)
    if item.rejections >= max_rejections:
        raise WrightyError(
            f"item {item.id} was rejected {item.rejections} times, completion.maxRejections "
            f"in wrighty.json: accept it (`{suggestions.accept(item.id)}`), cancel it "
            f"(`{suggestions.cancel(item.id)}`) or raise completion.maxRejections"
        )
    count = item.rejections + 1
    feedback = redact_known(feedback, secrets)
    quoted = clip(printable_line(feedback.strip()), _QUOTED_CHARS)
    change = transition(
        item, ItemState.RETRY_SCHEDULED, at=at, actor=actor, reason_code=REJECTED,
        reason=f"rejection {count} of {max_rejections}: {quoted}", not_before=at,
    )  # fmt: skip
    after = dataclasses.replace(
        change.after,
        rejections=count,
        feedback=feedback,
        crash_retries=0,
        usage_retries=0,
        fix_turns=0,
        reviewed_commit=seen_commit if seen_commit and COMMIT_ID.fullmatch(seen_commit) else None,
    )
    return dataclasses.replace(change, after=after)


def integration_failed(item: Item, why: str, *, at: datetime, actor: str) -> Change:
    """An accept whose integration failed: the item stays in review, its reason says why (an
    event with no move, as an edit's)."""
    _require_review(item, "accept")
    reason = clip(f"accept failed to integrate: {why}", _REASON_CHARS)
    return restated(
        item, at=at, actor=actor, reason_code=INTEGRATION_FAILED, reason=reason,
        next_action=suggestions.accept(item.id),
    )  # fmt: skip


def owes_feedback(claimed_reason_code: str | None) -> bool:
    """Whether a run claimed from a retry scheduled with ``claimed_reason_code`` is the one a
    rejection asked for (its prompt is the feedback)."""
    return claimed_reason_code == REJECTED


def feedback_prompt(feedback: str, *, secrets: Iterable[str] = ()) -> str:
    """What a resumed session is told after a rejection: the person's feedback, with secrets
    replaced and control characters escaped but for newline and tab, and what to do; bounded
    (a value read back from the store is bounded again)."""
    from wrighty.domain.verify import fit_text

    text = printable(redact_known(feedback.replace("\r\n", "\n").strip(), tuple(secrets)))
    return _FEEDBACK_HEAD + fit_text(text, MAX_FEEDBACK_BYTES) + _FEEDBACK_TAIL


@dataclass(frozen=True)
class Readiness:
    """Which items in review `wrighty accept --all` takes, in the order it accepts them, and
    why each of the others waits."""

    ready: tuple[Item, ...]
    waiting: tuple[tuple[Item, str], ...]


def ready_to_accept(
    in_review: Iterable[Item],
    verified: Mapping[int, bool],
    after: Mapping[int, Iterable[tuple[int, ItemState | None]]],
) -> Readiness:
    """The items of ``in_review`` ready to accept (docs/landing.md#accepting-every-ready-item):
    their latest verification passed (``verified``; an item with none had no checks to fail,
    and counts as passed), and each item they come after (``after``: its id and state) is done,
    landing, or ready itself. In dependency order (an item after another comes after it), then
    the order they entered review (their last move), then by id."""
    ordered = sorted(in_review, key=lambda item: (item.updated_at, item.id))
    why: dict[int, str] = {}
    for item in ordered:
        if verified.get(item.id, True) is False:
            why[item.id] = "its latest checks did not pass"
    ready_ids = {item.id for item in ordered if item.id not in why}
    changed = True
    while changed:  # an item waits on one that waits: settle it until nothing changes
        changed = False
        for item in ordered:
            if item.id not in ready_ids:
                continue
            blocker = _unready_predecessor(after.get(item.id, ()), ready_ids)
            if blocker is not None:
                ready_ids.discard(item.id)
                why[item.id] = f"it comes after item {blocker}, which is not ready"
                changed = True
    placed: list[Item] = []
    placed_ids: set[int] = set()
    pending = [item for item in ordered if item.id in ready_ids]
    while pending:
        for item in pending:
            firsts = {p for p, _ in after.get(item.id, ()) if p in ready_ids}
            if firsts <= placed_ids:
                placed.append(item)
                placed_ids.add(item.id)
                pending.remove(item)
                break
        else:  # a cycle (the store refuses them): the rest in the order they entered review
            placed.extend(pending)
            break
    waiting = tuple((item, why[item.id]) for item in ordered if item.id in why)
    return Readiness(tuple(placed), waiting)


def _unready_predecessor(
    predecessors: Iterable[tuple[int, ItemState | None]], ready_ids: set[int]
) -> int | None:
    for predecessor, state in predecessors:
        if predecessor in ready_ids or state in (ItemState.DONE, ItemState.LANDING):
            continue
        return predecessor
    return None
