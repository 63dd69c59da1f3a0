"""The sentences people see: what each action says it did, in the same words from every entry
point (a command prints them, the inbox and the web console show them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wrighty.domain.budgets import usage_text
from wrighty.domain.model import DEFAULT_PRIORITY
from wrighty.domain.states import ItemState
from wrighty.domain.text import printable_line
from wrighty.errors import WrightyError

if TYPE_CHECKING:
    from wrighty.domain.check_evidence import CheckEvidence
    from wrighty.domain.ledger import Spend
    from wrighty.domain.model import Change, Item, NewItem
    from wrighty.domain.review import Readiness
    from wrighty.services.circuits import CircuitView, Reset
    from wrighty.services.importing import Imported
    from wrighty.services.review import Accepted
    from wrighty.services.verify import ByHand


def created_line(item: Item, new: NewItem) -> str:
    """What `wrighty create` says it made."""
    how = ", ".join([item.state.value, *_scheduling_words(new)])
    return f"created item {item.id} ({how}): {printable_line(item.title)}"


def _scheduling_words(new: NewItem) -> list[str]:
    """What `create` says about an item's scheduling, when it is not the default."""
    from wrighty.domain.scheduling import priority_name
    from wrighty.domain.transitions import checks_words  # the read commands load none of it

    words = []
    if new.priority != DEFAULT_PRIORITY:
        words.append(priority_name(new.priority))
    if new.after:
        words.append(f"after {', '.join(str(d) for d in new.after)}")
    if new.labels:
        words.append(f"labels {', '.join(new.labels)}")
    if new.verify_checks is not None:
        words.append(f"checks {checks_words(new.verify_checks)}")
    return words


def edited_line(change: Change) -> str:
    """What `wrighty edit` says it did."""
    item = change.after
    return f"item {item.id} ({item.state}): {printable_line(change.event.reason or '')}"


def reaped_lines(changes: list[Change]) -> list[str]:
    """What `wrighty reap` says it did."""
    if not changes:
        return ["nothing to reap"]
    return [
        f"item {c.after.id}: running -> {c.after.state}: {printable_line(c.after.reason or '')}"
        for c in changes
    ]


def moved_line(item: Item) -> str:
    """What an operator's move (queue, cancel, requeue, release) says it did."""
    return f"item {item.id} is {item.state}"


def accepted_lines(accepted: Accepted) -> list[str]:
    """What an accept says it did: where the item is, then what was integrated."""
    item = accepted.item
    if accepted.landing and item.state is not ItemState.DONE:
        return [landing_line(item)]
    lines = [f"item {item.id} is {item.state}"]
    integrated = accepted.integrated
    if integrated is not None and integrated.words:
        lines.append(printable_line(integrated.words))
    return lines


def landing_line(item: Item) -> str:
    """Where an accepted item's landing left it, and why (docs/landing.md)."""
    if item.state is ItemState.LANDING:
        return (
            f"item {item.id} is landing: it waits in line, and a worker lands it "
            f"(`wrighty land {item.id}` lands it here)"
        )
    why = f": {printable_line(item.reason)}" if item.reason else ""
    return f"item {item.id} is {item.state}{why}"


def accepted_line(accepted: Accepted) -> str:
    """One accepted item among several (`accept ID...`, `accept --all`): its title, then
    where it is as an accept of one says it."""
    item = accepted.item
    where = accepted_lines(accepted)
    said = where[-1] if item.state is ItemState.DONE and len(where) > 1 else where[0]
    return f"accepted item {item.id} ({printable_line(item.title)}): {said}"


def would_accept_line(item: Item) -> str:
    """What `accept --all --dry-run` lists: an item it would accept."""
    return f"would accept item {item.id}: {printable_line(item.title)}"


# How many ready items a confirmation names, and how much of each title.
READY_NAMED = 8
READY_TITLE_CHARS = 40


def ready_words(ready: Readiness) -> str:
    """The ready items, as a confirmation of accept all ready names them: the count, then
    the first few by id and the start of their titles."""
    from wrighty.domain.text import clip, plural

    items = ready.ready
    named = ", ".join(
        f"{item.id} ({printable_line(clip(item.title, READY_TITLE_CHARS))})"
        for item in items[:READY_NAMED]
    )
    more = f" and {len(items) - READY_NAMED} more" if len(items) > READY_NAMED else ""
    count = f"the {len(items)} {plural(len(items), 'item', 'items')}"
    return f"{count} ready: {named}{more}"


def nothing_ready(waiting: int) -> str:
    """`accept --all` with no item ready (exit 2)."""
    if not waiting:
        return "nothing to accept: no item is in review"
    return (
        f"nothing to accept: none of the {waiting} "
        f"{'item' if waiting == 1 else 'items'} in review is ready (its latest checks passed, "
        "and each item it comes after is done, landing or ready); `wrighty list --state "
        "review` shows them"
    )


def no_longer_ready(item: Item | None, item_id: int) -> str:
    """Accept all ready, confirmed for an item that has moved since (exit 2)."""
    if item is None:
        where = "it no longer exists"
    elif item.state is ItemState.REVIEW:
        where = "its latest checks did not pass, or it waits for an item it comes after"
    else:
        where = f"it is {item.state} now"
    return (
        f"item {item_id} is no longer ready to accept ({where}): nothing was accepted; look "
        "at the ready items again"
    )


def stays_in_review(item_id: int, error: Exception) -> str:
    """An accept whose integration was refused or failed (exit 1)."""
    return f"item {item_id} stays in review: {printable_line(str(error))}"


def rejected_line(item: Item, bound: int) -> str:
    return (
        f"item {item.id} is {item.state} (rejection {item.rejections} of {bound}): its agent "
        "takes it up again with your feedback"
    )


def check_lines(evidence: CheckEvidence, *, tail_lines: int) -> list[str]:
    """One check as plain text: a line saying how it ended and how long it took; for one
    that did not pass, why it could not start or the last ``tail_lines`` lines of its output
    (its evidence's: redacted already; shown as text from outside all the same)."""
    name = printable_line(evidence.name)
    took = f"{evidence.duration_seconds:.1f}s"
    if evidence.passed:
        return [f"passed  {name} ({took})"]
    # one that fails on the item's base too is not the agent's: said, not shouted
    failed = "failed" if evidence.fails_on_base else "FAILED"
    lines = [f"{failed}  {name}: {printable_line(evidence.ending())} ({took})"]
    if evidence.start_failure is not None:
        return [*lines, f"        {printable_line(evidence.start_failure)}"]
    # Lines end at a newline alone: a carriage return (or any other break) is shown escaped.
    lines_of_output = evidence.output_tail.rstrip("\n").split("\n")
    tail = lines_of_output[-tail_lines:] if tail_lines and evidence.output_tail else []
    return [*lines, *(f"        {printable_line(line)}" for line in tail)]


def verified_line(result: ByHand) -> str:
    """What `wrighty verify` says it did (WrightyError when the item moved while its checks
    ran: the rest of them was not recorded)."""
    item_id, state = result.item.id, result.item.state.value
    if result.moved:
        raise WrightyError(
            f"item {item_id} moved while its checks ran (now {state}); the checks that ran "
            f"are recorded: `wrighty show {item_id}`"
        )
    if result.done:
        return f"item {item_id} is done: every check passed"
    if result.settled:
        reason = printable_line(result.item.reason or "")
        return f"every check passed; item {item_id} is {state}: {reason}"
    if result.passed:
        return f"every check passed; item {item_id} stays {state}"
    return f"item {item_id} stays {state}: `wrighty show {item_id}` has the evidence"


def handed_line(item: Item, before: str) -> str:
    return (
        f"item {item.id} is {item.state}, handed from {before} to {item.agent} (handoff "
        f"{item.handoffs}): a new session of {item.agent} takes it up in the same workspace"
    )


def imported_lines(results: list[Imported], *, dry_run: bool) -> list[str]:
    """What `wrighty import` says: a line per section, then the counts."""
    from wrighty.services.importing import summary

    verb = "would create" if dry_run else "created"
    lines = []
    for result in results:
        where = f"item {result.item_id}" if result.item_id is not None else "new item"
        said = {
            "created": f"{verb} {where}",
            "unchanged": f"unchanged ({where})",
            "changed": f"changed in the file, not updated ({where}; edit or cancel it by hand)",
        }[result.outcome]
        lines.append(printable_line(f"line {result.section.line}: {result.section.title}: {said}"))
    counts = summary(results)
    lines.append(
        f"{counts['created']} {verb}, {counts['unchanged']} unchanged, {counts['changed']} changed"
    )
    return lines


def reset_line(name: str, done: Reset) -> str:
    """What `wrighty providers reset NAME` says it did (the web console's Reset too)."""
    from wrighty.domain.circuits import CircuitState
    from wrighty.richtext import local_time

    shown = printable_line(name)
    if not done.changed:
        return f"provider circuit {shown} was closed already"
    before = done.before
    when = "until" if before.state is CircuitState.OPEN else "since"
    return (
        f"provider circuit {shown} closed (it was {before.state.value} {when} "
        f"{local_time(before.circuit.until)}); workers launch its agents again"
    )


def spend_text(group: Spend) -> str:
    """``2 runs, $0.0123, 1,500 tokens`` (and how many runs have no cost, when some do)."""
    runs = f"{group.runs} run{'' if group.runs == 1 else 's'}"
    without = (
        f" ({group.runs_without_cost} without a cost)"
        if group.usage.cost_usd is not None and not group.cost_complete
        else ""
    )
    return f"{runs}, {usage_text(group.usage)}{without}"


def probe_text(view: CircuitView) -> str:
    """Who holds the half-open circuit's probe, and with which item; "-" when no live probe
    holds it."""
    circuit = view.circuit
    if not view.probe_held or circuit.probe_by is None:
        return "-"
    worker = printable_line(circuit.probe_by)
    if circuit.probe_item is None:
        return f"{worker} (claiming)"
    return f"item {circuit.probe_item} by {worker}"
