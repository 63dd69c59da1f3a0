"""Verification: the project's own checks, run after a succeeded run, decide whether the item
is done; a failure goes back to the agent's session as a fix turn (pure).

The decisions taken here:

- A policy holds at most ``MAX_CHECKS`` (20) checks: each runs in turn while the claim is
  held, and a person reads the list at a glance. Check names are short words
  (``CHECK_NAME``) so that reasons, events and a command line can name them as they are.
- A check's timeout is 1 second to ``MAX_ITEM_TIMEOUT_SECONDS``, 20 minutes by default.
- ``max_fix_turns`` is 0 to ``MAX_FIX_TURNS`` (10), 2 by default: every fix turn is a whole
  agent run, and an agent that has not made the checks pass in ten turns needs a person.
  Fix turns have a counter of their own, beside the crash and usage retries.
- The feedback is ``MIN_FEEDBACK_BYTES`` to ``MAX_FEEDBACK_BYTES`` (1,000 to 100,000) UTF-8
  bytes, 12,000 by default: below 1,000 the instructions and a few failing checks' names
  leave no room for output; above 100,000 (some 25,000 tokens) the feedback crowds the
  agent's context window for little gain. The budget goes first to the instructions and one
  line per failing check (so every failing check is named whenever that fits), then to a
  section per failing check (its command line and the end of its output), in order, as many
  as fit with a few lines of output each; the output is shared evenly (a short one leaves
  its share to the others), keeping each one's end, where a test runner says what failed.
  Whatever is cut or left out says so.
- The feedback's text is redacted (the known secrets, then ``redact``'s patterns) before it
  is cut, so no cut can leave part of a secret, and its control characters are escaped
  (``printable``) but for newline and tab; a carriage return before a newline is dropped.
- After the checks: all passed → done. A check that could not start is a configuration
  problem, not the agent's: needs-attention ``check-start-failed``, no fix turn spent. A
  failed check with fix turns left and a session that can be resumed → a retry due at once,
  ``verification-failed``; a session that cannot be resumed → needs-attention, never a fresh
  start; no fix turns left → needs-attention, naming the checks that still fail. A fix turn
  is counted by ``Settlement.counts_as_fix_turn`` (``Item.fix_turns``), beside the crash and
  usage retries; an operator's requeue sets it back to 0, as it does theirs.
- A check that fails after an agent's run is run again on the item's base (``base_run_due``:
  the base its session recorded, unless the check says ``onBase: false``); one that fails
  there too is marked so (``on_base``) and is not the agent's failure: it spends no fix turn,
  blocks nothing and is left out of the fix turn's prompt. Its result on a base is known by
  the base commit, the check's name and ``check_key`` (its argv and time limit), and is
  never run twice (a commit does not change).
- Which checks an item runs (``select_checks``): the checks wrighty.json gives its agent
  (``verify.checks``, then the agent's own), in that order; an item that names checks runs
  only those, in the same order; one that names none (``--no-verify``) runs none. A name that
  is no check of its agent is a configuration problem, told as a check that could not start.
- A fix turn's feedback is owed (``owed_feedback``) when the item's latest verification
  failed and no agent run started after it: the next run that resumes the session is then a
  fix turn, whether a due retry or an operator's `requeue --resume`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from wrighty.domain import suggestions
from wrighty.domain.check_evidence import BaseCheck, CheckEvidence, CheckRecord
from wrighty.domain.claims import Settlement
from wrighty.domain.decisions import attention
from wrighty.domain.durations import MAX_ITEM_TIMEOUT_SECONDS, format_duration
from wrighty.domain.model import CHECK_NAME, Item, RunEnd
from wrighty.domain.model import CHECK_START_FAILED as CHECK_START_FAILED  # (model.py says why)
from wrighty.domain.model import VERIFICATION_FAILED as VERIFICATION_FAILED
from wrighty.domain.redact import redact_known
from wrighty.domain.states import ItemState
from wrighty.domain.text import clip, plural, printable, printable_line
from wrighty.domain.verify_limits import (
    DEFAULT_CHECK_TIMEOUT_SECONDS,
    DEFAULT_FEEDBACK_BYTES,
    DEFAULT_FIX_TURNS,
    MAX_CHECKS,
    MAX_FEEDBACK_BYTES,
    MAX_FIX_TURNS,
    MIN_CHECK_TIMEOUT_SECONDS,
    MIN_FEEDBACK_BYTES,
)

# How much of a check's command line a reason or the feedback shows.
_ARGV_CHARS = 200
# How much of why a check could not start a reason shows.
_WHY_CHARS = 300


@dataclass(frozen=True)
class Check:
    """One check: a program and its arguments, run with no shell in the item's workspace."""

    name: str
    argv: tuple[str, ...]
    timeout_seconds: float = DEFAULT_CHECK_TIMEOUT_SECONDS
    on_base: bool = True  # a failure is run again on the item's base (verify.checks[].onBase)

    def __post_init__(self) -> None:
        if CHECK_NAME.fullmatch(self.name) is None:
            raise ValueError(
                f"check name {printable_line(self.name)!r} must be 1 to 64 letters, digits, "
                "'.', '_' or '-', starting with a letter or digit"
            )
        if not self.argv or not self.argv[0]:
            raise ValueError(f"check {self.name}: argv must name a program")
        if any("\x00" in argument for argument in self.argv):
            raise ValueError(f"check {self.name}: argv must not contain NUL")
        timeout = self.timeout_seconds
        if not MIN_CHECK_TIMEOUT_SECONDS <= timeout <= MAX_ITEM_TIMEOUT_SECONDS:
            raise ValueError(
                f"check {self.name}: timeout must be {MIN_CHECK_TIMEOUT_SECONDS:g}s to "
                f"{format_duration(MAX_ITEM_TIMEOUT_SECONDS)}, got {timeout!r}"
            )


@dataclass(frozen=True)
class VerifyPolicy:
    """The checks an item's run must pass, in order, and how the fix loop is bounded."""

    checks: tuple[Check, ...]
    max_fix_turns: int = DEFAULT_FIX_TURNS
    feedback_bytes: int = DEFAULT_FEEDBACK_BYTES

    def __post_init__(self) -> None:
        if len(self.checks) > MAX_CHECKS:
            raise ValueError(f"at most {MAX_CHECKS} checks, got {len(self.checks)}")
        names = [check.name for check in self.checks]
        if len(set(names)) != len(names):
            twice = sorted({name for name in names if names.count(name) > 1})
            raise ValueError(f"check names must be unique: {', '.join(twice)}")
        if not 0 <= self.max_fix_turns <= MAX_FIX_TURNS:
            raise ValueError(f"max fix turns must be 0 to {MAX_FIX_TURNS}")
        if not MIN_FEEDBACK_BYTES <= self.feedback_bytes <= MAX_FEEDBACK_BYTES:
            raise ValueError(f"feedback bytes must be {MIN_FEEDBACK_BYTES} to {MAX_FEEDBACK_BYTES}")

    @property
    def checks_seconds(self) -> float:
        """The checks' time limits added up, twice for a check that may run on the base too:
        the longest a verification may take."""
        return sum(check.timeout_seconds * (2 if check.on_base else 1) for check in self.checks)


def check_key(check: Check) -> str:
    """What identifies a check's command for its results on a base: its argv and time limit
    (a check changed in wrighty.json is run on the base again, never served an old answer)."""
    identity = json.dumps([list(check.argv), check.timeout_seconds])
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32]


def base_run_due(check: Check, evidence: CheckEvidence, base_commit: str | None) -> bool:
    """Whether a check that ended as ``evidence`` after an agent's run is run on the item's
    base (``base_commit``; None: it has none): when it failed, and its configuration does not
    say ``onBase: false``."""
    return base_commit is not None and check.on_base and evidence.failed


def on_base(evidence: CheckEvidence, base: BaseCheck | None) -> CheckEvidence:
    """``evidence``, marked as failing on the base too when ``base`` (the check's result on the
    item's base; None: not run there) failed as well: then it is not the agent's failure."""
    if base is None or not base.failed or not evidence.failed:
        return evidence
    return dataclasses.replace(evidence, fails_on_base=True)


def select_checks(
    available: Sequence[Check], chosen: tuple[str, ...] | None
) -> tuple[tuple[Check, ...], tuple[str, ...]]:
    """The checks an item runs, in ``available``'s order, and the names it chose that are no
    check in ``available`` (``chosen`` None: all of them; empty: none)."""
    if chosen is None:
        return tuple(available), ()
    known = {check.name for check in available}
    unknown = tuple(name for name in chosen if name not in known)
    return tuple(check for check in available if check.name in chosen), unknown


def unknown_check(name: str, agent: str) -> CheckEvidence:
    """The evidence of a check an item names that wrighty.json does not give its agent."""
    return CheckEvidence(
        name,
        (),
        0.0,
        start_failure=f"wrighty.json has no check named {printable_line(name)!r} for the "
        f"agent {printable_line(agent)!r} (verify.checks, agents.<name>.verify.checks)",
    )


def latest_verification(records: Sequence[CheckRecord]) -> tuple[CheckRecord, ...]:
    """The records of the item's latest verification, in order (``records`` oldest first)."""
    if not records:
        return ()
    last = records[-1].verification_id
    return tuple(record for record in records if record.verification_id == last)


def owed_feedback(
    records: Sequence[CheckRecord],
    *,
    latest_run_id: str | None,
    latest_run_started: datetime | None,
) -> tuple[CheckEvidence, ...]:
    """The evidence a fix turn's feedback is made of: that of the item's latest verification,
    when a check of it failed and no agent run started after it; empty otherwise.
    ``records`` oldest first; ``latest_run_*``: the item's latest agent run, if any."""
    latest = latest_verification(records)
    if not latest or not any(record.evidence.agents_failure for record in latest):
        return ()
    first = latest[0]
    if first.run_id is not None:
        after_it = first.run_id == latest_run_id
    else:
        after_it = latest_run_started is None or first.started_at >= latest_run_started
    return tuple(record.evidence for record in latest) if after_it else ()


def after_checks(
    item: Item,
    run_end: RunEnd,
    evidence: Sequence[CheckEvidence],
    *,
    policy: VerifyPolicy,
    fix_turns: int,
    resume_missing: tuple[str, ...] = (),
) -> Settlement:
    """The settlement after a succeeded run's checks. ``fix_turns``: the fix turns the item
    has had; ``resume_missing``: what its session lacks for a resume (empty when it can be
    resumed)."""
    if fix_turns < 0:
        raise ValueError("fix turns are counted from 0")
    not_started = [check for check in evidence if not check.started]
    if not_started:
        first = not_started[0]
        why = _bounded_line(first.start_failure or "", _WHY_CHARS)
        return attention(
            item,
            run_end,
            CHECK_START_FAILED,
            f"the check {_name(first)} could not be started: {why}; it is the "
            "configuration's to fix, not the agent's, so no fix turn was spent",
            resumable=not resume_missing,
        )
    failing = [check for check in evidence if check.agents_failure]
    if not failing:
        return Settlement(
            ItemState.DONE, process_started=True, run_end=run_end, reason=checks_passed(evidence)
        )
    names = _names(failing)
    turn = fix_turns + 1
    if turn > policy.max_fix_turns:
        spent = (
            "verify.maxFixTurns is 0"
            if policy.max_fix_turns == 0
            else f"after {fix_turns} {plural(fix_turns, 'fix turn', 'fix turns')} "
            "(verify.maxFixTurns)"
        )
        return attention(
            item,
            run_end,
            VERIFICATION_FAILED,
            f"{names} still {plural(len(failing), 'fails', 'fail')} {spent}; "
            f"the evidence: {suggestions.show(item.id)}",
            resumable=not resume_missing,
        )
    if resume_missing:
        return attention(
            item,
            run_end,
            VERIFICATION_FAILED,
            f"{names} failed; no fix turn, as its session cannot be resumed: "
            + "; ".join(resume_missing),
            resumable=False,
        )
    return Settlement(
        ItemState.RETRY_SCHEDULED,
        process_started=True,
        run_end=run_end,
        reason_code=VERIFICATION_FAILED,
        reason=f"{names} failed; fix turn {turn} of {policy.max_fix_turns} resumes its "
        "session with their output",
        not_before=run_end.ended_at,
        counts_as_fix_turn=True,
    )


def checks_passed(evidence: Sequence[CheckEvidence]) -> str:
    """A done run's reason when its checks passed: ``every check passed (2 checks)``; or, when
    some failed as they fail on the base, ``every check passed but lint, which fails on the base
    too (2 checks)``."""
    count = len(evidence)
    checks = f"{count} {plural(count, 'check', 'checks')}"
    on_base = [check for check in evidence if check.fails_on_base]
    if not on_base:
        return f"every check passed ({checks})"
    listed = ", ".join(_name(check) for check in on_base)
    which = plural(len(on_base), "which fails", "which fail")
    return f"every check passed but {listed}, {which} on the base too ({checks})"


def _name(check: CheckEvidence) -> str:
    return printable_line(check.name)


def _names(checks: Sequence[CheckEvidence]) -> str:
    listed = ", ".join(_name(check) for check in checks)
    return f"the {plural(len(checks), 'check', 'checks')} {listed}"


def _bounded_line(text: str, limit: int) -> str:
    return _clean_line(" ".join(text.split()), (), limit)


_INSTRUCTIONS = (
    "Fix the code so that these checks pass. Do not change, skip or weaken the checks "
    "themselves, nor the configuration that runs them. When you have finished, end your "
    "turn: wrighty runs the checks again.\n"
)
_CUT_NOTE = "\n…[the feedback was cut here: it may be at most {limit} bytes]\n"
_OUTPUT_CUT_NOTE = "…[the first {cut} bytes of this output are left out]\n"
_OMITTED_NOTE = "\n…[the output of {count} more failing {checks} is left out, for want of room]\n"
# Room kept for each output's cut note (its number has at most 6 digits).
_OUTPUT_NOTE_BYTES = len(_OUTPUT_CUT_NOTE.format(cut=999_999).encode())
# The least room an output gets beside its header: its cut note and a few lines.
_MIN_TAIL_BYTES = _OUTPUT_NOTE_BYTES + 160


def feedback_prompt(
    evidence: Sequence[CheckEvidence], *, feedback_bytes: int, secrets: Iterable[str] = ()
) -> str:
    """What the agent is told on a fix turn: the failing checks, how each ended, the end of
    each one's output, and what to do; at most ``feedback_bytes`` UTF-8 bytes, with
    ``secrets`` (and whatever ``redact`` finds) replaced and control characters escaped but
    for newline and tab."""
    known = tuple(secrets)
    failing = [check for check in evidence if check.agents_failure]
    ran = len([check for check in evidence if check.started])
    lines = [
        f"wrighty ran the project's checks after your turn: {len(failing)} of {ran} failed.\n",
        *(f"- {_clean_line(check.name, known)}: {check.ending()}\n" for check in failing),
        "\n",
        _INSTRUCTIONS,
    ]
    head = "".join(lines)
    headers = [
        f"\n== {_clean_line(check.name, known)} ({check.ending()}): "
        f"{_clean_line(' '.join(check.argv), known, _ARGV_CHARS)} ==\n"
        for check in failing
    ]
    outputs = [_clean_output(check.output_tail, known) for check in failing]
    room = feedback_bytes - _size(head)
    count, omitted = _sections_that_fit(headers, outputs, room)
    headers, outputs = headers[:count], outputs[:count]
    room -= sum(_size(header) for header in headers) + _size(omitted)
    shares = _shares([_size(output) for output in outputs], room)
    sections = [
        header + _tail(output, share)
        for header, output, share in zip(headers, outputs, shares, strict=True)
    ]
    return fit_text(head + "".join(sections) + omitted, feedback_bytes)


def _sections_that_fit(headers: list[str], outputs: list[str], room: int) -> tuple[int, str]:
    """How many of the failing checks' sections fit in ``room`` bytes, each with at least a
    few lines of its output (or all of it, if shorter), and the note that says how many more
    were left out ("" when none was)."""
    for count in range(len(headers), 0, -1):
        left = len(headers) - count
        omitted = _omitted(left) if left else ""
        need = _size(omitted) + sum(
            _size(header) + min(_size(output), _MIN_TAIL_BYTES)
            for header, output in zip(headers[:count], outputs[:count], strict=True)
        )
        if need <= room:
            return count, omitted
    every = _omitted(len(headers))
    return 0, every if headers and _size(every) <= room else ""


def _omitted(count: int) -> str:
    return _OMITTED_NOTE.format(count=count, checks=plural(count, "check", "checks"))


def _clean_line(text: str, secrets: tuple[str, ...], limit: int = 0) -> str:
    clean = printable_line(redact_known(text, secrets))
    return clip(clean, limit) if limit else clean


def _clean_output(text: str, secrets: tuple[str, ...]) -> str:
    clean = printable(redact_known(text.replace("\r\n", "\n"), secrets))
    return clean if not clean or clean.endswith("\n") else clean + "\n"


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _shares(sizes: list[int], room: int) -> list[int]:
    """Each output's share of ``room`` bytes: an even share, or less when it needs less (what
    it leaves goes to the others)."""
    shares = [0] * len(sizes)
    left = max(0, room)
    waiting = sorted(range(len(sizes)), key=lambda index: sizes[index])
    while waiting:
        even = left // len(waiting)
        index = waiting.pop(0)
        shares[index] = min(sizes[index], even)
        left -= shares[index]
    return shares


def _tail(output: str, share: int) -> str:
    """The end of ``output`` in at most ``share`` bytes, saying how much it left out; never a
    part of a character."""
    data = output.encode("utf-8")
    if len(data) <= share:
        return output
    keep = max(0, share - _OUTPUT_NOTE_BYTES)
    kept = data[len(data) - keep :].decode("utf-8", errors="ignore") if keep else ""
    cut = len(data) - _size(kept)
    note = _OUTPUT_CUT_NOTE.format(cut=cut)
    return note + kept if _size(note) <= share else ""


def fit_text(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` bytes; else its start, cut at a character's edge, and
    a line that says it was cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    note = _CUT_NOTE.format(limit=limit)
    keep = max(0, limit - _size(note))
    return data[:keep].decode("utf-8", errors="ignore") + note
