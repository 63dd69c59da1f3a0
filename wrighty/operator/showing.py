"""What `wrighty show` says about an item, as plain text values every entry point renders its
own way (the command and the inbox with rich, the web console through its template): the
fields (label and value), the next steps and why, the checks, the change's stat, the last
run's diagnostic. Every value is text from outside made one safe line, or is to be shown as
such by its renderer (`outside`, the template's escaping)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict, Unpack

from wrighty.domain.budgets import usage_text
from wrighty.domain.durations import format_duration
from wrighty.domain.ledger import reported
from wrighty.domain.scheduling import priority_name
from wrighty.domain.states import TERMINAL_STATES, ItemState
from wrighty.domain.suggestions import Standing, Suggestion, next_commands
from wrighty.domain.text import clip, plural, printable_line
from wrighty.domain.usage import NO_LIMIT, Limit, Usage
from wrighty.operator.documents import first_line
from wrighty.richtext import local_time

if TYPE_CHECKING:
    from wrighty.domain.budgets import AgentHold
    from wrighty.domain.check_evidence import CheckRecord
    from wrighty.domain.model import Item, Run
    from wrighty.services.circuits import CircuitView
    from wrighty.services.items import ItemDetail
    from wrighty.services.show import RetryStanding, ShowFacts
    from wrighty.workproduct.listing import Progress


class Known(TypedDict, total=False):
    """What `show` knows of an item beside its detail, each left out where it is not known:
    ``default_agent``, the agent of an item that names none (worker.defaultAgent);
    ``max_fix_turns``, its agent's verify.maxFixTurns (None: it has no checks); ``progress``,
    its worktree's commits and uncommitted changes; ``total`` and ``limit``, its spend and
    budget."""

    crash_retry: RetryStanding | None
    usage_retry: RetryStanding | None
    circuit: CircuitView | None
    total: Usage | None
    limit: Limit
    hold: AgentHold | None
    default_agent: str | None
    max_fix_turns: int | None
    progress: Progress | None


def known_of(facts: ShowFacts) -> Known:
    """What `show`'s facts know beside the item's detail, as `item_fields` takes it."""
    return Known(
        crash_retry=facts.crash_retry, usage_retry=facts.usage_retry, circuit=facts.circuit,
        total=facts.spent, limit=facts.budget, hold=facts.hold,
        default_agent=facts.default_agent, max_fix_turns=facts.max_fix_turns,
        progress=facts.progress,
    )  # fmt: skip


def item_fields(
    detail: ItemDetail, standing: Standing, **known: Unpack[Known]
) -> list[tuple[str, str]]:
    """`show`'s fields, label and value."""
    item = detail.item
    circuit = known.get("circuit")
    fields: list[tuple[str, str]] = [
        ("agent", agent_words(item, known.get("default_agent"))),
        (
            "workspace",
            item.workspace
            or (detail.session.workspace if detail.session else "(chosen at the first run)"),
        ),
        *_branch_fields(detail, known.get("progress")),
        ("timeout", format_duration(item.timeout_seconds) if item.timeout_seconds else "(default)"),
        ("queued at", local_time(item.queued_at)),
        *_scheduling_fields(detail),
    ]
    if item.not_before:
        fields.append(("not before", local_time(item.not_before)))
    if item.claimed_by:
        fields.append(
            ("claimed by", f"{item.claimed_by} until {local_time(item.lease_expires_at)}")
        )
    if item.reason_code:
        fields.append(("reason", f"{item.reason_code}: {item.reason or ''}".rstrip(": ")))
    if item.next_action:
        fields.append(("next", item.next_action))
    fields += _retry_fields(known.get("crash_retry"), known.get("usage_retry"))
    fields += _verify_fields(detail, known.get("max_fix_turns"))
    fields += _review_fields(item)
    pull = detail.pull_request
    if pull is not None:
        fields.append(("pull request", f"#{pull.pull_number} {pull.pull_url} ({pull.pull_state})"))
    fields += _landing_fields(detail, known.get("max_fix_turns"))
    fields += _handoff_fields(item)
    total = known.get("total") or Usage(final=True)
    fields += _usage_fields(detail.runs, total, known.get("limit", NO_LIMIT), known.get("hold"))
    if circuit is not None:
        fields.append(("waits for", _circuit_wait(circuit)))
    if detail.session:
        session = detail.session
        fields.append(
            (
                "session",
                f"{session.vendor} {session.session_id or '(id unknown)'}"
                + ("" if standing.resumable or item.state in TERMINAL_STATES else _NOT_HERE),
            )
        )
    return fields


@dataclass(frozen=True)
class NextSteps:
    """Why the item stands where it does (``why``: lines of text from outside; ``note``: that
    this installation cannot resume its session, when it cannot), since when (``title``), and
    the commands that move it on."""

    title: str
    why: list[str]
    note: str | None
    suggestions: list[Suggestion]


NO_RESUME = "no --resume: this installation cannot resume the item's session"


def next_steps(detail: ItemDetail, standing: Standing) -> NextSteps | None:
    """None when no command is due."""
    from wrighty.domain.transitions import is_edit  # `list` and `status` load none of it

    item = detail.item
    suggestions = next_commands(item.id, item.state, standing, reason_code=item.reason_code)
    if not suggestions:
        return None
    why = []
    reason = item.reason or item.reason_code
    if reason:
        why.append(reason)
    if item.state is ItemState.RUNNING and item.claimed_by:
        why.append(_running_by(item, standing))
    no_resume = (
        item.state is ItemState.NEEDS_ATTENTION
        and detail.session is not None
        and not standing.resumable
    )
    moves = [event for event in detail.events if not is_edit(event)]  # an edit is no move
    since = f" since {local_time(moves[-1].at)}" if moves else ""
    return NextSteps(
        f"{item.state}{since}", why, NO_RESUME if no_resume else None, list(suggestions)
    )


@dataclass(frozen=True)
class Verification:
    """One verification: which run it verified (or that it ran by hand), when and by whom
    (``heading``), and its checks' lines (``failed``: a check's line that says it failed)."""

    heading: str
    lines: list[tuple[str, bool]] = field(default_factory=list)


def verifications(detail: ItemDetail) -> list[Verification]:
    """Each verification, oldest first; the failing checks of the latest one with the end of
    their output."""
    from wrighty.operator.sentences import check_lines

    grouped: dict[str, list[CheckRecord]] = {}
    for record in detail.checks:
        grouped.setdefault(record.verification_id, []).append(record)
    attempts = {run.run_id: run.attempt for run in detail.runs}
    latest = list(grouped)[-1] if grouped else None
    shown = []
    for verification_id, records in grouped.items():
        first = records[0]
        which = "by hand" if first.run_id is None else f"run {attempts.get(first.run_id, '?')}"
        verification = Verification(f"{which}, {local_time(first.started_at)}, {first.actor}")
        tail = DIAGNOSTIC_TAIL_LINES if verification_id == latest else 0
        for record in records:
            for line in check_lines(record.evidence, tail_lines=tail):
                failed = record.evidence.agents_failure and not line.startswith(" ")
                verification.lines.append((line, failed))
        shown.append(verification)
    return shown


@dataclass(frozen=True)
class DiagnosticTail:
    """The last lines of the last run's diagnostic (each one safe line)."""

    heading: str
    lines: list[str]


def diagnostic_tail(runs: list[Run]) -> DiagnosticTail | None:
    """None when the last run has no diagnostic."""
    if not runs:
        return None
    last = max(runs, key=lambda run: run.attempt)
    lines = (last.diagnostic or "").rstrip().splitlines()
    if not lines:
        return None
    shown = lines[-DIAGNOSTIC_TAIL_LINES:]
    cut = f", last {len(shown)} of {len(lines)} lines" if len(shown) < len(lines) else ""
    heading = f"Diagnostic of run {last.attempt}{cut}"
    return DiagnosticTail(heading, [printable_line(line) for line in shown])


@dataclass(frozen=True)
class ShownItem:
    """Everything `wrighty show` says of an item beside its runs, history and task."""

    fields: list[tuple[str, str]]
    next: NextSteps | None
    change_stat: list[str]
    checks: list[Verification]
    diagnostic: DiagnosticTail | None


def shown_item(facts: ShowFacts) -> ShownItem:
    detail = facts.detail
    return ShownItem(
        item_fields(detail, facts.standing, **known_of(facts)),
        next_steps(detail, facts.standing),
        (facts.change_stat or "").splitlines(),
        verifications(detail),
        diagnostic_tail(detail.runs),
    )


def _scheduling_fields(detail: ItemDetail) -> list[tuple[str, str]]:
    item = detail.item
    fields = [("priority", priority_name(item.priority))]
    if detail.labels:
        fields.append(("labels", ", ".join(detail.labels)))
    if detail.after:
        fields.append(
            (
                "after",
                ", ".join(
                    f"{edge.depends_on} ({edge.state or 'no such item'})" for edge in detail.after
                ),
            )
        )
    if detail.before:
        fields.append(("before", ", ".join(str(later) for later in detail.before)))
    wait = detail.wait
    if wait is not None:
        label = {"after": "waits", "blocked": "blocked", "held": "held"}[wait.kind]
        reason = wait.reason
        for prefix in ("waits ", "blocked: ", "held: "):
            reason = reason.removeprefix(prefix)
        fields.append((label, reason))
    return fields


_NOT_HERE = " (not resumable here)"


def _circuit_wait(view: CircuitView) -> str:
    from wrighty.domain.circuits import CircuitState  # for an item a circuit holds

    circuit = view.circuit
    if view.state is CircuitState.OPEN:
        when = f"open until {local_time(circuit.until)}"
    elif view.probe_held and circuit.probe_item is not None:
        when = f"half-open: item {circuit.probe_item} probes the provider first"
    else:
        when = "half-open: the next claim probes the provider"
    because = f" ({circuit.reason})" if circuit.reason else ""
    return f"the provider circuit {circuit.name}, {when}{because}; see `wrighty providers`"


def _retry_fields(
    crash_retry: RetryStanding | None, usage_retry: RetryStanding | None
) -> list[tuple[str, str]]:
    """Where the item stands under each retry policy that it met: "2 of 5, next due ...", and
    the run that used the policy last."""
    policies = (
        ("retries", crash_retry, "last crash"),
        ("usage retries", usage_retry, "last refusal"),
    )
    fields = []
    for label, retry, last_label in policies:
        if retry is None:
            continue
        of = f" of {retry.max_attempts}" if retry.max_attempts is not None else ""
        due = f", next due {local_time(retry.next_due)}" if retry.next_due else ""
        fields.append((label, f"{retry.retries}{of}{due}"))
        if retry.last is not None:
            fields.append((last_label, f"{first_line(retry.last)} ({retry.last.run_id})"))
    return fields


def _usage_fields(
    runs: list[Run], total: Usage, limit: Limit, hold: AgentHold | None
) -> list[tuple[str, str]]:
    """The item's total over its runs, its models, its budget and what is left, and the hold
    on its agent."""
    fields = []
    counted = [run for run in runs if reported(run.usage)]
    if counted:
        partial = "" if total.final else " (partial: a run's final figures are not in)"
        over = f"{len(counted)} run{'' if len(counted) == 1 else 's'}"
        fields.append(("usage", f"{usage_text(total)} over {over}{partial}"))
    if total.models:
        fields.append(("models", ", ".join(total.models)))
    if not limit.unbounded:
        if total.over(limit):
            fields.append(("budget", f"{limit.describe()}, spent"))
        else:
            fields.append(
                ("budget", f"{limit.describe()}, left {limit.left_after(total).describe()}")
            )
    if hold is not None:
        fields.append(("held", hold.reason()))
    return fields


SHORT_COMMIT = 12  # the characters of a commit id shown for it


def _branch_fields(detail: ItemDetail, progress: Progress | None) -> list[tuple[str, str]]:
    """The branch the item's session recorded, its base commit, and (when known here) the
    commits made on it since and whether its worktree has uncommitted changes
    (docs/work-product.md)."""
    session = detail.session
    if session is None or (session.branch is None and session.base_commit is None):
        return []
    words = session.branch or "(detached)"
    if session.base_commit is not None:
        words += f" from {session.base_commit[:SHORT_COMMIT]}"
    facts = []
    if progress is not None and progress.ahead is not None:
        ahead = progress.ahead
        facts.append(f"{ahead} {plural(ahead, 'commit', 'commits')} ahead")
    if progress is not None and progress.dirty is not None:
        facts.append("uncommitted changes" if progress.dirty else "nothing uncommitted")
    return [("branch", ", ".join([words, *facts]))]


def agent_words(item: Item, default_agent: str | None) -> str:
    """The agent that runs the item: its own, or the default one, named (``claude (default)``)."""
    if item.agent:
        return item.agent
    return "(default)" if default_agent is None else f"{default_agent} (default)"


def _running_by(item: Item, standing: Standing) -> str:
    if standing.lease_expired:
        expired = local_time(item.lease_expires_at)
        return (
            f"the claim of worker {item.claimed_by} expired at {expired}: "
            "that worker stopped renewing it (it died, or lost the store)"
        )
    return f"worker {item.claimed_by} holds it until {local_time(item.lease_expires_at)}"


DIAGNOSTIC_TAIL_LINES = 10


FEEDBACK_SHOWN_CHARS = 200  # a rejection's feedback, in `show` (all of it: show --json)


def _verify_fields(detail: ItemDetail, max_fix_turns: int | None) -> list[tuple[str, str]]:
    """The checks the item chose (when it chose), whether its latest verification passed,
    and its fix turns (once it has been verified or had one)."""
    item = detail.item
    fields = []
    if item.verify_checks is not None:
        fields.append(("verify", ", ".join(item.verify_checks) or "none (--no-verify)"))
    if detail.verified is not None:
        fields.append(("checks", "passed" if detail.verified else "failed"))
    if item.fix_turns or (detail.checks and max_fix_turns is not None):
        of = f" of {max_fix_turns}" if max_fix_turns is not None else ""
        fields.append(("fix turns", f"{item.fix_turns}{of}"))
    return fields


def _review_fields(item: Item) -> list[tuple[str, str]]:
    """How many times a person rejected the item, and the latest feedback's start."""
    if not item.rejections:
        return []
    feedback = clip(printable_line((item.feedback or "").strip()), FEEDBACK_SHOWN_CHARS)
    return [("rejections", str(item.rejections)), ("feedback", feedback)]


def _landing_fields(detail: ItemDetail, max_fix_turns: int | None) -> list[tuple[str, str]]:
    """Where its landing is, who accepted it, when, the commit they saw and its target; once
    it landed, what landed (docs/landing.md#where-it-shows)."""
    landing = detail.landing
    if landing is None:
        return []
    from wrighty.domain.landing import accepted_words
    from wrighty.domain.landing_view import landing_view

    view = landing_view(landing, detail.item, detail.events, max_fix_turns=max_fix_turns)
    fields = [
        ("landing", printable_line(view.where)),
        (
            "accepted",
            printable_line(f"{local_time(landing.accepted_at)} {accepted_words(landing)}"),
        ),
    ]
    if view.landed is not None:
        fields.append(("landed", printable_line(view.landed)))
    return fields


def _handoff_fields(item: Item) -> list[tuple[str, str]]:
    """How many times the item was handed to another agent, and the latest note's start."""
    if not item.handoffs:
        return []
    fields = [("handoffs", str(item.handoffs))]
    if item.handoff_note:
        note = clip(printable_line(" ".join(item.handoff_note.split())), FEEDBACK_SHOWN_CHARS)
        fields.append(("handoff note", note))
    return fields
