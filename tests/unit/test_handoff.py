"""A handoff's move and the prompt its new agent gets (wrighty/domain/handoff.py): pure."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests.factories import make_item
from tests.unit.test_transitions import T0
from wrighty.domain import handoff
from wrighty.domain.check_evidence import CheckEvidence
from wrighty.domain.claims import settle
from wrighty.domain.classify import Classification
from wrighty.domain.decisions import UsageFacts, after_run, choose_run
from wrighty.domain.model import HANDED_OFF, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.resume import ResumeFacts
from wrighty.domain.retry import Fallback, ResetHint, UsagePolicy, choose_fallback
from wrighty.domain.states import ItemState
from wrighty.errors import IllegalTransitionError, WrightyError
from wrighty.vendors.base import Reader
from wrighty.vendors.claude import ClaudeReader
from wrighty.vendors.codex import CodexReader
from wrighty.vendors.gemini import GeminiReader

LATER = T0 + timedelta(hours=1)
KEY = "sk-ant-api03-" + "k" * 40


@pytest.mark.parametrize("state", sorted(handoff.HANDOFF_STATES))
def test_a_waiting_item_goes_to_the_new_agent_due_now_with_fresh_counters(
    state: ItemState,
) -> None:
    item = make_item(state, generation=3, crash_retries=2, usage_retries=1, fix_turns=2)
    change = handoff.hand_off(
        item, "codex", from_agent="claude", note="see NOTES.md", at=LATER, actor="operator"
    )
    after = change.after
    assert (after.state, after.reason_code, after.not_before) == (
        ItemState.RETRY_SCHEDULED, HANDED_OFF, LATER)  # fmt: skip
    assert (after.agent, after.handoffs, after.handoff_note) == ("codex", 1, "see NOTES.md")
    assert (after.crash_retries, after.usage_retries, after.fix_turns) == (0, 0, 0)
    assert after.reason == "handed off from claude to codex: see NOTES.md"
    assert (change.event.from_state, change.event.to_state) == (state, ItemState.RETRY_SCHEDULED)


@pytest.mark.parametrize(
    "state",
    [ItemState.TODO, ItemState.QUEUED, ItemState.RUNNING, ItemState.DONE, ItemState.CANCELLED],
)
def test_only_a_waiting_item_is_handed_off(state: ItemState) -> None:
    with pytest.raises(IllegalTransitionError, match="handoff takes items that are"):
        handoff.hand_off(make_item(state), "codex", from_agent="claude", note=None, at=LATER,
                         actor="op")  # fmt: skip


@pytest.mark.parametrize(
    ("to", "note", "says"),
    [
        ("claude", None, "item 1's agent is claude already"),
        ("codex", "   ", "the note is empty"),
        ("codex", "x" * (65 * 1024), "the note is larger than 64 KiB"),
        ("codex", "bad \udcff byte", "not valid UTF-8"),
    ],
)
def test_a_handoff_to_the_same_agent_or_with_a_bad_note_is_refused(
    to: str, note: str | None, says: str
) -> None:
    item = make_item(ItemState.NEEDS_ATTENTION)
    with pytest.raises(WrightyError, match=says):
        handoff.hand_off(item, to, from_agent="claude", note=note, at=LATER, actor="op")


def test_a_handed_off_retry_starts_a_new_session() -> None:
    session = Session(1, "claude", "s-1", "/w", "inst", None, None)
    facts = ResumeFacts(session, "inst", "claude", can_resume=True, workspace_exists=True)
    choice = choose_run(
        claimed_from=ItemState.RETRY_SCHEDULED, resume=facts, retry_reason=HANDED_OFF
    )
    assert choice.kind is RunKind.FRESH
    assert handoff.owes_handoff(HANDED_OFF)
    assert not handoff.owes_handoff("rejected")


def test_the_prompt_tells_the_task_what_was_left_and_the_note_bounded_and_neutralised() -> None:
    failed = CheckEvidence("tests", ("pytest",), 2.0, output_tail="1 failed\n", exit_code=1)
    earlier = handoff.EarlierWork(
        agent="claude",
        outcome="rate-limited",
        diagnostic=f"the provider refused; key {KEY}",
        stat=" app.py | 2 +-\n 1 file changed\n",
        checks=(failed,),
    )
    prompt = handoff.handoff_prompt(
        "Fix the login test.", earlier, "look at \x1b[2J NOTES.md", secrets=()
    )
    assert prompt.startswith("Fix the login test.\n\n---\n\nAnother agent (claude) worked on")
    assert "What it changed so far (git's stat against the task's start):" in prompt
    assert "app.py | 2 +-" in prompt
    assert "Its last run ended as rate-limited:" in prompt
    assert KEY not in prompt
    assert "[REDACTED]" in prompt
    assert "- tests: failed" in prompt
    assert "1 failed" in prompt
    assert "\x1b" not in prompt
    assert "look at \\x1b[2J NOTES.md" in prompt
    huge = handoff.handoff_prompt("t", None, "n" * (200 * 1024))
    assert len(huge.encode()) <= handoff.MAX_PROMPT_BYTES
    assert "which never ran it" in huge


# Wait or hand off (domain/retry.choose_fallback)

HOUR = 3600.0
POLICY = UsagePolicy(action="retry", handoff_after_seconds=0.75 * HOUR, max_handoffs=2)


@pytest.mark.parametrize(
    ("policy", "fallbacks", "handoffs", "wait", "agent", "why"),
    [
        (POLICY, [Fallback("codex")], 0, 5 * HOUR, "codex", ""),
        (POLICY, [Fallback("codex")], 0, 0.5 * HOUR, None, ""),  # the reset is near: wait
        (POLICY, [Fallback("codex")], 0, 0.75 * HOUR, None, ""),  # exactly the bound: wait
        (UsagePolicy(action="retry"), [Fallback("codex")], 0, 5 * HOUR, None, ""),  # no bound
        (POLICY, [], 0, 5 * HOUR, None, ""),  # no fallback: today's behaviour
        (POLICY, [Fallback("codex", "its provider circuit is open"), Fallback("gemini")], 0,
         5 * HOUR, "gemini", ""),
        (POLICY, [Fallback("codex", "its day budget is spent")], 0, 5 * HOUR, None,
         "; no fallback can take it (codex: its day budget is spent)"),
        (POLICY, [Fallback("codex")], 2, 5 * HOUR, None,
         "; not handed off: it was 2 times already (worker.usageFailure.maxHandoffs)"),
    ],
)  # fmt: skip
def test_an_item_is_handed_off_only_past_the_bound_to_a_fallback_that_can_take_it(
    policy: UsagePolicy,
    fallbacks: list[Fallback],
    handoffs: int,
    wait: float,
    agent: str | None,
    why: str,
) -> None:
    choice = choose_fallback(policy, fallbacks, handoffs=handoffs, wait_seconds=wait)
    assert (choice.agent, choice.why) == (agent, why)


def test_a_refusal_hours_from_its_reset_settles_as_a_handoff_due_now() -> None:
    item = make_item(ItemState.RUNNING, generation=2, claimed_by="w", usage_retries=1,
                     crash_retries=1)  # fmt: skip
    end = RunEnd(LATER, OutcomeClass.RATE_LIMITED, Confidence.AUTHORITATIVE, 1)
    result = Classification(OutcomeClass.RATE_LIMITED, Confidence.AUTHORITATIVE, "limit")
    facts = UsageFacts(ResetHint("x", resets_at=LATER + timedelta(hours=5)),
                       fallbacks=(Fallback("codex"),))  # fmt: skip
    settlement = after_run(item, result, end, timeout_seconds=600, usage_policy=POLICY, usage=facts)
    assert (settlement.to_state, settlement.reason_code, settlement.handoff_to) == (
        ItemState.RETRY_SCHEDULED, HANDED_OFF, "codex")  # fmt: skip
    assert settlement.not_before == LATER
    change = settle(item, settlement, at=LATER)
    after = change.after
    assert (after.agent, after.handoffs, after.handoff_note) == ("codex", 1, None)
    assert (after.crash_retries, after.usage_retries, after.claimed_by) == (0, 0, None)


def test_the_prompt_leaves_out_the_earlier_runs_standard_output_tail() -> None:
    diagnostic = (
        "claude: You've hit your session limit\n--- stderr ---\nwarning: slow disk\n"
        '--- stdout ---\n{"type":"assistant","message":{}}'
    )
    earlier = handoff.EarlierWork("claude", "rate-limited", diagnostic, None)
    prompt = handoff.handoff_prompt("t", earlier, None)
    assert "You've hit your session limit" in prompt
    assert "warning: slow disk" in prompt
    assert '"type":"assistant"' not in prompt
    only_stdout = handoff.EarlierWork("claude", "rate-limited", "--- stdout ---\n{}", None)
    assert "Its last run ended as rate-limited\n" in handoff.handoff_prompt("t", only_stdout, None)


# The earlier agent's last message, as each vendor's reader keeps it


def fed(reader: Reader, *records: dict[str, object]) -> str | None:
    for record in records:
        reader.feed("stdout", json.dumps(record).encode())
    return reader.last_text


def test_claudes_last_message_is_its_last_text_not_an_api_error() -> None:
    text = {"type": "text", "text": "Writing the notes."}
    call = {"type": "tool_use", "id": "t", "name": "Write", "input": {}}
    refused = {"type": "text", "text": "API Error: Request rejected (429)"}
    assert (
        fed(
            ClaudeReader(),
            {"type": "assistant", "message": {"id": "m1", "content": [text, call]}},
            {
                "type": "assistant",
                "error": "rate_limit",
                "message": {"id": "m2", "content": [refused]},
            },
            {"type": "result", "subtype": "success", "is_error": True, "result": "API Error"},
        )
        == "Writing the notes."
    )
    done = {"type": "result", "subtype": "success", "is_error": False, "result": "All done."}
    assert fed(ClaudeReader(), done) == "All done."


def test_codex_and_geminis_last_messages() -> None:
    message = {"type": "item.completed", "item": {"type": "agent_message", "text": "Half."}}
    command = {"type": "item.completed", "item": {"type": "command_execution", "command": "ls"}}
    assert fed(CodexReader(), message, command) == "Half."
    pieces = [
        {"type": "message", "role": "assistant", "content": "Wrote ", "delta": True},
        {"type": "message", "role": "assistant", "content": "the notes.", "delta": True},
        {"type": "tool_use", "tool_name": "write_file"},
        {"type": "message", "role": "assistant", "content": "Stopped.", "delta": True},
    ]
    assert fed(GeminiReader(), *pieces[:2]) == "Wrote the notes."
    assert fed(GeminiReader(), *pieces) == "Stopped."


def test_the_prompt_carries_the_last_message_bounded() -> None:
    earlier = handoff.EarlierWork("claude", "rate-limited", None, None,
                                  last_message="I wrote half of notes.txt.")  # fmt: skip
    prompt = handoff.handoff_prompt("t", earlier, None)
    assert "Its last message:\n\nI wrote half of notes.txt." in prompt
    long = handoff.EarlierWork("claude", "rate-limited", None, None, last_message="x" * 20_000)
    assert len(handoff.handoff_prompt("t", long, None)) < 12_000
