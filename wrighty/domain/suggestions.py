"""The commands wrighty suggests a person run next, worded in one place. Pure.

A settlement's next action (a requeue, a requeue with a raised budget), the commands `show`
and the inbox offer for an item, a notification's next action, a worker event's fix, and the
commands named inside a reason are all built here, each as the whole line a person types.
`COMMANDS` lists every builder: tests/cli/test_suggested_commands.py parses what each one
makes with the real command-line parser, so that no suggested command is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wrighty.domain.model import (
    CHECK_START_FAILED,
    COMMIT_FAILED,
    OFF_BRANCH,
    VERIFICATION_FAILED,
    WAITS_FOR_CHECKS,
)
from wrighty.domain.states import ItemState


def requeue(item_id: int, *, resume: bool, raised: Sequence[str] = ()) -> str:
    """Put a needs-attention or retry-scheduled item back to work: its session resumed, or a
    fresh start; ``raised``: the options that lift a spent budget."""
    how = "--resume" if resume else "--fresh"
    return " ".join([f"wrighty requeue {item_id} {how}", *raised])


def cancel(item_id: int) -> str:
    return f"wrighty cancel {item_id}"


def logs(item_id: int, *, follow: bool = False) -> str:
    return f"wrighty logs {item_id}" + (" --follow" if follow else "")


def reap() -> str:
    return "wrighty reap"


def force_release(item_id: int) -> str:
    """Take a running item from a worker that is gone for good."""
    return f"wrighty release {item_id} --force"


def queue(item_id: int) -> str:
    return f"wrighty queue {item_id}"


def before_first_run(item_id: int, state: ItemState) -> str:
    """What becomes of an item that has no workspace yet, by its state: the command that starts
    it when there is one, else what it waits for (`verify` and `diff` refuse with it)."""
    hints = {
        ItemState.TODO: f"queue it with `{queue(item_id)}`",
        ItemState.QUEUED: "it is queued: a worker of its agent makes its workspace",
        ItemState.RETRY_SCHEDULED: "a worker of its agent makes its workspace when it is due",
        ItemState.RUNNING: "its run is starting: its workspace is being made",
        ItemState.NEEDS_ATTENTION: f"`{requeue(item_id, resume=False)}` puts it to work",
        ItemState.REVIEW: "it waits for a person's review",
        ItemState.DONE: "it is done",
        ItemState.CANCELLED: "it was cancelled before it ran: nothing will run it",
    }
    return hints[state]


def show(item_id: int) -> str:
    return f"wrighty show {item_id}"


def verify(item_id: int) -> str:
    """Run the item's checks now, by hand (docs/verify.md#running-the-checks-by-hand)."""
    return f"wrighty verify {item_id}"


def diff(item_id: int, *, stat: bool = False) -> str:
    """The item's change against its base (docs/work-product.md#seeing-the-change-wrighty-diff)."""
    return f"wrighty diff {item_id}" + (" --stat" if stat else "")


def accept(item_id: int) -> str:
    """Accept an item in review: done, integrated first (docs/work-product.md#review)."""
    return f"wrighty accept {item_id}"


def accept_all() -> str:
    """Accept every item in review whose checks passed (docs/landing.md)."""
    return "wrighty accept --all"


# What `reject` is suggested with: a person writes their own feedback in its place.
FEEDBACK_PLACEHOLDER = "TEXT"


def reject(item_id: int) -> str:
    """Send an item in review back to work with feedback (docs/work-product.md#review)."""
    return f"wrighty reject {item_id} --feedback {FEEDBACK_PLACEHOLDER}"


def start_worker(item_id: int, agent: str) -> str:
    """A worker of ``agent`` for this item alone."""
    return f"wrighty worker start --item {item_id} --agent {agent}"


def drop_dependency(item_id: int, depends_on: int) -> str:
    """Let ``item_id`` start without waiting for ``depends_on``."""
    return f"wrighty edit {item_id} --not-after {depends_on}"


def reset_circuit(name: str) -> str:
    """Write the provider circuit ``name`` anew, closed."""
    return f"wrighty providers reset {name}"


def list_workers() -> str:
    return "wrighty workers"


def list_since(since: str) -> str:
    """What moved since ``since`` (a look back such as 24h)."""
    return f"wrighty list --since {since}"


# Every builder above: the property test parses what each makes.
COMMANDS = (
    requeue,
    cancel,
    logs,
    reap,
    force_release,
    queue,
    show,
    verify,
    diff,
    accept,
    reject,
    start_worker,
    drop_dependency,
    reset_circuit,
    list_workers,
    list_since,
)


@dataclass(frozen=True)
class Standing:
    """What `show` found out about an item beyond its record; it decides what is offered, so
    that no offered command refuses when it is run."""

    resumable: bool  # this installation can resume the item's session
    has_logs: bool  # `wrighty logs N` prints the last run's output here
    lease_expired: bool  # running, but its worker stopped renewing the claim
    # The requeue options that lift the item's spent budget (without them it is settled
    # budget-exceeded again before it launches); empty while its budget is not spent; None
    # when no budget requeue takes lifts it (then no requeue is offered).
    raise_budget: tuple[str, ...] | None = ()
    # `wrighty verify N` would run the item's checks here (it has checks, it is not running,
    # and its workspace is on this installation).
    can_verify: bool = False
    # The item has a change of its own (a base recorded with its worktree) that `wrighty diff N`
    # would show here (on this installation, there, a git work tree: the rule it refuses by).
    has_change: bool = False
    # A retry-scheduled item whose retry is due already (`wrighty requeue N --resume` just made
    # it so, say): a requeue would change nothing, so none is offered.
    retry_due: bool = False


@dataclass(frozen=True)
class Suggestion:
    command: str  # exactly what to type: a whole line, nothing after it
    purpose: str


def review_commands(item_id: int, *, change: bool = True) -> list[Suggestion]:
    """What a person does with an item that waits for review: look at its change (``change``:
    when it is offered), then accept or reject it (`show`'s and a notification's)."""
    return [
        *([Suggestion(diff(item_id), "see the change")] if change else []),
        Suggestion(accept(item_id), "accept it"),
        Suggestion(reject(item_id), "send it back with your feedback"),
    ]


# Why resuming helps, by the reason the item waits for a person (a reason not named here: it
# goes on where it stopped).
_RESUME_PURPOSES = {
    VERIFICATION_FAILED: "another turn: resume the session with the failing checks' output",
    COMMIT_FAILED: "resume the session: its agent can mend what the commit's hook refused",
    OFF_BRANCH: "resume the session once the work is on the item's branch (it is committed then)",
}


def next_commands(
    item_id: int, state: ItemState, standing: Standing, *, reason_code: str | None = None
) -> list[Suggestion]:
    """The commands that move ``item_id`` on from ``state`` (``reason_code``: why it is
    there), the likeliest first; none for a state that needs nobody (todo and queued wait for
    a person or a worker as they should, cancelled is final), but the change of an item that
    is done or waits for a person, when `wrighty diff` would show it here."""
    last_logs = [Suggestion(logs(item_id), "read the last run's output")]
    if not standing.has_logs:
        last_logs = []
    give_up = Suggestion(cancel(item_id), "give up on the item (final)")
    # The change of an item that is done or waits for a person, where `wrighty diff` shows it.
    change = [Suggestion(diff(item_id), "see the item's change against its base")]
    shows_change = standing.has_change and state in (
        ItemState.DONE, ItemState.NEEDS_ATTENTION, ItemState.REVIEW
    )  # fmt: skip
    change = change if shows_change else []
    raised = standing.raise_budget or ()
    budget = ", with a higher budget" if raised else ""
    # An item that waits for a person because of its checks: they may be run again by hand.
    checks_again = []
    waits_for_checks = state is ItemState.NEEDS_ATTENTION and reason_code in WAITS_FOR_CHECKS
    if waits_for_checks and standing.can_verify:
        checks_again = [
            Suggestion(verify(item_id), "run the checks again now, no agent (done if all pass)")
        ]
    if state in (ItemState.NEEDS_ATTENTION, ItemState.RETRY_SCHEDULED) and (
        standing.raise_budget is None
    ):
        # The most a budget may be is spent: no requeue would run it (checks spend nothing).
        return [*checks_again, *change, *last_logs, give_up]
    if state in (ItemState.DONE, ItemState.REVIEW):
        return _reviews(item_id, state, change, give_up)
    if state is ItemState.NEEDS_ATTENTION:
        resumed, fresh = _requeues(item_id, standing, reason_code)
        if reason_code == CHECK_START_FAILED:  # wrighty.json's to mend, not the agent's
            return [*checks_again, *resumed, fresh, *change, *last_logs, give_up]
        return [*resumed, *checks_again, *change, fresh, *last_logs, give_up]
    if state is ItemState.RETRY_SCHEDULED:
        now = Suggestion(
            requeue(item_id, resume=True, raised=raised), f"run the retry now, not when due{budget}"
        )
        return [*([] if standing.retry_due and not raised else [now]), give_up, *last_logs]
    if state is ItemState.RUNNING and standing.lease_expired:
        return [
            Suggestion(reap(), "settle it now: its worker stopped renewing the claim"),
            *last_logs,
        ]
    if state is ItemState.RUNNING:
        follow = Suggestion(logs(item_id, follow=True), "watch the agent's output live")
        return [
            *([follow] if standing.has_logs else []),
            Suggestion(cancel(item_id), "stop the agent and give up on the item"),
        ]
    return []


def _reviews(
    item_id: int, state: ItemState, change: list[Suggestion], give_up: Suggestion
) -> list[Suggestion]:
    """A done item's change; an item in review's, and what a person does with it."""
    if state is not ItemState.REVIEW:
        return change
    return [*change, *review_commands(item_id, change=False), give_up]


def _requeues(
    item_id: int, standing: Standing, reason_code: str | None
) -> tuple[list[Suggestion], Suggestion]:
    """A waiting item's resume (when this installation can resume it) and fresh start, each
    with the options that lift its spent budget."""
    raised = standing.raise_budget or ()
    budget = ", with a higher budget" if raised else ""
    again = _RESUME_PURPOSES.get(reason_code or "", "resume the session where it stopped")
    resume = Suggestion(requeue(item_id, resume=True, raised=raised), f"{again}{budget}")
    fresh = Suggestion(
        requeue(item_id, resume=False, raised=raised),
        f"start over in a new session, same workspace{budget}",
    )
    return ([resume] if standing.resumable else []), fresh
