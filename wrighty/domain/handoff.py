"""Handoffs (docs/handoff.md): an item handed to another agent. Its next run is a new session
of that agent in the same workspace (and branch), told the task, that another agent worked on
it, what that agent left (its change's stat, how its last run ended, the latest checks) and the
person's note. Pure: where the item goes, what the move records, what the new agent is told."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from wrighty.domain.check_evidence import CheckEvidence
from wrighty.domain.model import HANDED_OFF, Change, Item
from wrighty.domain.redact import redact_known
from wrighty.domain.states import ItemState
from wrighty.domain.text import clip, given_text_problem, printable, printable_line
from wrighty.domain.transitions import transition
from wrighty.domain.verify import fit_text
from wrighty.errors import IllegalTransitionError, WrightyError

# The states a person hands an item off from: it waits for a person, or for a retry.
HANDOFF_STATES = frozenset({ItemState.NEEDS_ATTENTION, ItemState.RETRY_SCHEDULED, ItemState.REVIEW})
# A person's note: part of the next run's prompt, so bounded as a prompt is.
MAX_NOTE_BYTES = 64 * 1024
# How much of each part of what the earlier agent left the prompt carries.
MAX_STAT_BYTES = 8 * 1024
MAX_DIAGNOSTIC_BYTES = 4 * 1024
MAX_MESSAGE_BYTES = 8 * 1024
MAX_CHECK_TAIL_BYTES = 2 * 1024
MAX_PROMPT_BYTES = 128 * 1024
_QUOTED_CHARS = 200


def hand_off(
    item: Item,
    to_agent: str,
    *,
    from_agent: str,
    note: str | None,
    at: datetime,
    actor: str,
    secrets: Iterable[str] = (),
) -> Change:
    """needs-attention, retry-scheduled or review -> retry-scheduled, due now, under
    ``to_agent``: a new session of it, in the item's workspace. The handoff is counted; the
    automatic retries' and fix turns' counters start again, as for work taken up anew. The
    note is kept, and quoted, with its secrets (those found, and ``secrets``) replaced."""
    if item.state not in HANDOFF_STATES:
        raise IllegalTransitionError(
            f"item {item.id} is {item.state}; handoff takes items that are needs-attention, "
            "retry-scheduled or review"
        )
    if to_agent == from_agent:
        raise WrightyError(
            f"item {item.id}'s agent is {to_agent} already; name another agent, or requeue it "
            f"(`wrighty requeue {item.id} --fresh`)"
        )
    problem = note_problem(note) if note is not None else None
    if problem is not None:
        raise WrightyError(problem)
    if note is not None:
        note = redact_known(note, secrets)
    said = f"handed off from {from_agent} to {to_agent}"
    if note is not None:
        said += f": {clip(printable_line(' '.join(note.split())), _QUOTED_CHARS)}"
    change = transition(
        item, ItemState.RETRY_SCHEDULED, at=at, actor=actor, reason_code=HANDED_OFF,
        reason=said, not_before=at,
    )  # fmt: skip
    after = dataclasses.replace(
        change.after,
        agent=to_agent,
        handoffs=item.handoffs + 1,
        handoff_note=note,
        crash_retries=0,
        usage_retries=0,
        fix_turns=0,
    )
    return dataclasses.replace(change, after=after)


def note_problem(note: str) -> str | None:
    """Why ``note`` cannot be a handoff's, or None."""
    return given_text_problem(
        note,
        what="note",
        limit=MAX_NOTE_BYTES,
        if_empty="leave --note out, or say what the next agent should know",
    )


def owes_handoff(claimed_reason_code: str | None) -> bool:
    """Whether a run claimed from a retry scheduled with ``claimed_reason_code`` is a
    handoff's: a new session, told what the earlier agent left."""
    return claimed_reason_code == HANDED_OFF


@dataclass(frozen=True)
class EarlierWork:
    """What the agent before left, as the worker finds it when the new agent starts."""

    agent: str  # the agent of the item's latest run
    outcome: str | None  # how its latest run ended (its outcome class)
    diagnostic: str | None  # that run's diagnostic (redacted when it was written)
    stat: str | None  # git's stat of the item's change against its base; None: not known
    checks: Sequence[CheckEvidence] = ()  # the latest verification's evidence
    # Its last message, as the vendor's output of its last run holds it (None: none known)
    last_message: str | None = None


def handoff_prompt(
    task: str, earlier: EarlierWork | None, note: str | None, *, secrets: Iterable[str] = ()
) -> str:
    """What a handed-off item's new agent is told: the task, then what the agent before it
    left and the person's note; secrets replaced, control characters escaped (but newline
    and tab), each part bounded and the whole too."""
    known = tuple(secrets)

    def clean(text: str, limit: int) -> str:
        return fit_text(printable(redact_known(text.replace("\r\n", "\n").strip(), known)), limit)

    parts = [task.rstrip(), "", "---", ""]
    if earlier is None:
        parts.append("This task was handed to you from another agent, which never ran it.")
    else:
        parts.append(
            f"Another agent ({clean(earlier.agent, 200)}) worked on this task before you, in "
            "this workspace: its work is here. Carry on from where it stopped; do not start "
            "over."
        )
        if earlier.stat:
            parts += ["", "What it changed so far (git's stat against the task's start):", "",
                      clean(earlier.stat, MAX_STAT_BYTES)]  # fmt: skip
        elif earlier.stat is not None:
            parts += ["", "It changed no file yet."]
        if earlier.outcome:
            ended = f"Its last run ended as {clean(earlier.outcome, 100)}"
            said = _without_stdout(earlier.diagnostic or "")
            if said.strip():
                ended += f":\n\n{clean(said, MAX_DIAGNOSTIC_BYTES)}"
            parts += ["", ended]
        if earlier.last_message and earlier.last_message.strip():
            parts += ["", "Its last message:", "", clean(earlier.last_message, MAX_MESSAGE_BYTES)]
        if earlier.checks:
            parts += ["", "The latest checks of its work:", ""]
            parts += [_check_line(check, clean) for check in earlier.checks]
    if note is not None and note.strip():
        parts += ["", "A person's note for you:", "", clean(note, MAX_NOTE_BYTES)]
    return fit_text("\n".join(parts) + "\n", MAX_PROMPT_BYTES)


# Where a diagnostic's tail of the agent's standard output starts (supervisor/process.py): a
# vendor CLI's is its JSON event stream, which tells a new agent nothing.
_STDOUT_TAIL = "--- stdout ---"


def _without_stdout(diagnostic: str) -> str:
    """A run's diagnostic (its summary, what the agent said, its standard error's tail)
    without its standard output's tail."""
    if diagnostic.startswith(_STDOUT_TAIL):
        return ""
    return diagnostic.split("\n" + _STDOUT_TAIL, 1)[0]


def _check_line(check: CheckEvidence, clean: Callable[[str, int], str]) -> str:
    name = clean(check.name, 200)
    if check.passed:
        return f"- {name}: passed"
    line = f"- {name}: failed ({clean(check.ending(), 200)})"
    if check.output_tail:
        line += "\n" + clean(check.output_tail, MAX_CHECK_TAIL_BYTES)
    return line
