"""Applying a state change to an item: the one place that decides what is allowed."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from datetime import datetime

from wrighty.domain.durations import MAX_ITEM_TIMEOUT_SECONDS, format_duration
from wrighty.domain.model import (
    DEFAULT_PRIORITY,
    INTEGRATION_FAILED,
    MAX_BODY_BYTES,
    MAX_TITLE_LENGTH,
    Change,
    Event,
    Item,
    NewItem,
    RunEnd,
)
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.scheduling import (
    EDITED,
    MAX_DEPENDENCIES,
    check_labels,
    check_priority,
    priority_name,
)
from wrighty.domain.states import INITIAL_STATES, TERMINAL_STATES, ItemState, can_move
from wrighty.domain.text import first_unprintable_in_line
from wrighty.errors import IllegalTransitionError, WrightyError


def validate_new_item(new: NewItem) -> None:
    """Refuse an item that could never be worked on."""
    _validate_text(new)
    if not new.title.strip():
        raise WrightyError("title is empty: pass a short description with --title")
    if len(new.title) > MAX_TITLE_LENGTH:
        raise WrightyError(
            f"title is {len(new.title)} characters long; the limit is {MAX_TITLE_LENGTH}: "
            "put the details in the body"
        )
    if not new.body.strip():
        raise WrightyError(
            "the task is empty: pass --body TEXT, --body-file PATH, or pipe it on stdin"
        )
    unsafe = first_unprintable_in_line(new.title)
    if unsafe in ("\n", "\r"):
        raise WrightyError("title must be one line: put the details in the body")
    if unsafe is not None:
        # A title is shown in lists and on one line; bodies may hold any text.
        raise WrightyError(
            f"title holds an invisible or control character (U+{ord(unsafe):04X}): "
            "a title is one line of plain text"
        )
    if new.initial_state not in INITIAL_STATES:
        raise WrightyError(f"an item cannot be created in state {new.initial_state}")
    if new.timeout_seconds is not None and not 0 < new.timeout_seconds <= MAX_ITEM_TIMEOUT_SECONDS:
        limit = format_duration(MAX_ITEM_TIMEOUT_SECONDS)
        raise WrightyError(f"timeout must be greater than zero and at most {limit}")
    check_priority(new.priority)
    check_labels(new.labels)
    if len(set(new.after)) > MAX_DEPENDENCIES:
        raise WrightyError(f"an item comes after at most {MAX_DEPENDENCIES} items")


def _validate_text(new: NewItem) -> None:
    for name, text in (("title", new.title), ("task", new.body)):
        if not _is_unicode_text(text):
            raise WrightyError(
                f"the {name} is not valid UTF-8 text (undecodable bytes); give it as UTF-8"
            )
    if len(new.body.encode("utf-8")) > MAX_BODY_BYTES:
        raise WrightyError(
            f"the task is larger than {MAX_BODY_BYTES // 1024} KiB: put the details in a file "
            "in the workspace and tell the agent to read it"
        )


def _is_unicode_text(text: str) -> bool:
    """False for text holding lone surrogates: bytes that were not UTF-8 (Python keeps
    undecodable command-line bytes as surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def creation_event(new: NewItem, item_id: int, *, at: datetime, actor: str) -> Event:
    """The first event; its reason records what scheduling the item was created with (a
    priority other than the default, the items it comes after, its labels), None without."""
    return Event(
        item_id=item_id,
        at=at,
        actor=actor,
        generation=0,
        from_state=None,
        to_state=new.initial_state,
        reason_code=None,
        reason=_scheduling_words(new),
    )


def _scheduling_words(new: NewItem) -> str | None:
    words = []
    if new.priority != DEFAULT_PRIORITY:
        words.append(f"priority {priority_name(new.priority)}")
    if new.after:
        words.append(f"after {_ids(new.after)}")
    if new.labels:
        words.append(f"labels {', '.join(new.labels)}")
    return "; ".join(words) or None


def _ids(ids: Iterable[int]) -> str:
    listed = list(ids)
    return f"item{'s' if len(listed) > 1 else ''} {', '.join(str(i) for i in listed)}"


# The reason code of `wrighty requeue --fresh`: a person asked to start over.
OPERATOR_REQUEUE = "operator-requeue"

EDITABLE_STATES = frozenset(
    {ItemState.TODO, ItemState.QUEUED, ItemState.RETRY_SCHEDULED, ItemState.NEEDS_ATTENTION}
)


class Keep(enum.Enum):
    """An edit's value that leaves the item's own as it is (where None is a value)."""

    KEEP = "keep"


KEEP = Keep.KEEP


def edit(
    item: Item,
    *,
    at: datetime,
    actor: str,
    priority: int | None = None,
    after_added: Iterable[int] = (),
    after_removed: Iterable[int] = (),
    after_now: Iterable[int] = (),
    verify_checks: tuple[str, ...] | Keep | None = KEEP,
) -> Change:
    """The guarded change of an item's scheduling (`wrighty edit`): a new priority, items it
    now comes after and items it no longer comes after (``after_now``: those it comes after
    as read, so that adding one twice or removing one it lacks changes nothing), the checks
    it chooses (``verify_checks``: as ``Item.verify_checks``; KEEP leaves them). The state
    stays; the event (reason code ``edited``) says what changed. Refused for a running item
    (its worker holds it as claimed), one in review (it is reviewed as it was verified), one
    landing (it lands as it was accepted) and a final one."""
    if item.state not in EDITABLE_STATES:
        why = {
            ItemState.RUNNING: "its worker holds it; edit it once it has settled",
            # What a person reviews was verified as it stands: its checks, its dependencies.
            ItemState.REVIEW: "it waits for review as it was verified; accept or reject it first",
            # What was accepted lands as it was accepted (docs/landing.md).
            ItemState.LANDING: "it was accepted and lands as it was accepted",
        }.get(item.state, "it is final")
        raise IllegalTransitionError(f"item {item.id} is {item.state}: {why}")
    if priority is not None:
        check_priority(priority)
    added, removed = _dependency_edit(item, after_added, after_removed, after_now)
    words = []
    if priority is not None and priority != item.priority:
        words.append(f"priority {priority_name(item.priority)} -> {priority_name(priority)}")
    if added:
        words.append(f"now after {_ids(added)}")
    if removed:
        words.append(f"no longer after {_ids(removed)}")
    checks = item.verify_checks if verify_checks is KEEP else verify_checks
    if checks != item.verify_checks:
        words.append(f"checks {checks_words(item.verify_checks)} -> {checks_words(checks)}")
    if not words:
        raise WrightyError(f"item {item.id} already is as asked; nothing to change")
    after = dataclasses.replace(
        item,
        priority=item.priority if priority is None else priority,
        verify_checks=checks,
        updated_at=at,
    )
    event = history_event(
        item, after, at=at, actor=actor, reason_code=EDITED, reason="; ".join(words)
    )
    return Change(before=item, after=after, event=event, after_added=added, after_removed=removed)


def _dependency_edit(
    item: Item, after_added: Iterable[int], after_removed: Iterable[int], after_now: Iterable[int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The items an edit adds to those ``item`` comes after, and those it removes."""
    current = set(after_now)
    for depends_on in after_removed:
        if depends_on not in current:
            raise WrightyError(
                f"--not-after {depends_on}: item {item.id} does not come after item {depends_on}"
            )
    added = tuple(d for d in dict.fromkeys(after_added) if d not in current)
    removed = tuple(d for d in dict.fromkeys(after_removed) if d not in added)
    if len(current) + len(added) - len(removed) > MAX_DEPENDENCIES:
        raise WrightyError(f"an item comes after at most {MAX_DEPENDENCIES} items")
    return added, removed


def checks_words(chosen: tuple[str, ...] | None) -> str:
    """The checks an item chose, in a few words (docs/verify.md#which-checks-an-item-runs)."""
    if chosen is None:
        return "wrighty.json's"
    return ", ".join(chosen) if chosen else "none"


def is_review_note(reason_code: str | None, state: ItemState) -> bool:
    """Whether an event with no move is review's note of a failed integration
    (docs/work-product.md#review)."""
    return reason_code == INTEGRATION_FAILED and state is ItemState.REVIEW


def is_edit(event: Event) -> bool:
    """Whether ``event`` records an edit (no move) rather than a move between states."""
    return event.reason_code == EDITED and event.from_state == event.to_state


def transition(
    item: Item,
    to_state: ItemState,
    *,
    at: datetime,
    actor: str,
    reason_code: str | None = None,
    reason: str | None = None,
    next_action: str | None = None,
    not_before: datetime | None = None,
    run_end: RunEnd | None = None,
    new_generation: bool = False,
) -> Change:
    """The guarded change that moves ``item`` to ``to_state``, with the event recording it.

    Raises IllegalTransitionError when the move is not allowed. ``new_generation`` fences off
    the current claim holder (acquisition, operator release). The caller writes the change in
    one guarded transaction.
    """
    if item.state in TERMINAL_STATES:
        raise IllegalTransitionError(
            f"item {item.id} is {item.state}, which is final; it cannot become {to_state}"
        )
    if not can_move(item.state, to_state):
        raise IllegalTransitionError(f"item {item.id} cannot move from {item.state} to {to_state}")
    if to_state is ItemState.RETRY_SCHEDULED and not_before is None:
        raise ValueError("a retry-scheduled item needs not_before")
    leaving_claim = item.state is ItemState.RUNNING
    if leaving_claim and run_end is None:
        # A claim never ends with its run left open: say so rather than leave it dangling.
        run_end = RunEnd(
            at, OutcomeClass.UNKNOWN, Confidence.INFERRED, diagnostic="no outcome was recorded"
        )
    after = dataclasses.replace(
        item,
        state=to_state,
        generation=item.generation + 1 if new_generation else item.generation,
        claimed_by=None if leaving_claim else item.claimed_by,
        lease_expires_at=None if leaving_claim else item.lease_expires_at,
        claimed_at=None if leaving_claim else item.claimed_at,
        renew_deadline=None if leaving_claim else item.renew_deadline,
        queued_at=at if _enters_queue(item.state, to_state) else item.queued_at,
        not_before=not_before if to_state is ItemState.RETRY_SCHEDULED else None,
        reason_code=reason_code,
        reason=reason,
        next_action=next_action,
        updated_at=at,
    )
    event = history_event(item, after, at=at, actor=actor, reason_code=reason_code, reason=reason)
    return Change(before=item, after=after, event=event, run_end=run_end)


def restated(
    item: Item,
    *,
    at: datetime,
    actor: str,
    reason_code: str,
    reason: str,
    next_action: str | None,
) -> Change:
    """The change that leaves ``item`` where it is with a new reason (an event with no move):
    an accept whose integration failed, a passing `wrighty verify` whose commit failed."""
    after = dataclasses.replace(
        item, reason_code=reason_code, reason=reason, next_action=next_action, updated_at=at
    )
    event = history_event(item, after, at=at, actor=actor, reason_code=reason_code, reason=reason)
    return Change(before=item, after=after, event=event)


def history_event(
    before: Item,
    after: Item,
    *,
    at: datetime,
    actor: str,
    reason_code: str | None,
    reason: str | None,
) -> Event:
    """The history row of a change from ``before`` to ``after``, under ``after``'s generation."""
    return Event(
        item_id=before.id,
        at=at,
        actor=actor,
        generation=after.generation,
        from_state=before.state,
        to_state=after.state,
        reason_code=reason_code,
        reason=reason,
    )


def _enters_queue(from_state: ItemState, to_state: ItemState) -> bool:
    """Whether a move stamps a new queue-entry time.

    Enqueue, operator requeue and retry scheduling start a new wait. A run that goes back to
    ``queued`` because no agent process was started keeps its original entry time: the item
    has been waiting all along.
    """
    if to_state is ItemState.RETRY_SCHEDULED:
        return True
    return to_state is ItemState.QUEUED and from_state is not ItemState.RUNNING


class ReplayError(ValueError):
    """An event history that does not describe a legal sequence of moves."""


def replay(events: Iterable[Event]) -> ItemState:
    """The state an item's event history leads to; ReplayError if the history is not legal."""
    state: ItemState | None = None
    for number, event in enumerate(events, start=1):
        if event.from_state != state:
            raise ReplayError(
                f"event {number} starts from {event.from_state} but the item was {state}"
            )
        if state is None:
            if event.to_state not in INITIAL_STATES:
                raise ReplayError(f"event {number} creates the item in {event.to_state}")
        elif is_edit(event):
            if state not in EDITABLE_STATES:
                raise ReplayError(f"event {number} edits a {state} item, which is not editable")
        elif event.from_state == event.to_state and is_review_note(event.reason_code, state):
            pass  # an accept whose integration failed: the item stayed in review
        elif not can_move(state, event.to_state):
            raise ReplayError(f"event {number} moves {state} to {event.to_state}, not allowed")
        state = event.to_state
    if state is None:
        raise ReplayError("no events")
    return state
