"""What a state change tells a person (pure, wrighty/domain/notices.py): which events each kind
of change counts as, the payload (bounded, neutralised, redacted), a sink's filter, the chat
text, a circuit's notice, and one delivery attempt's outcome (backoff, give-up, the sinks
reached so far)."""

from __future__ import annotations

import dataclasses
import string
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.factories import claimed_item
from wrighty.domain import landing, suggestions
from wrighty.domain.budgets import item_budget_spent
from wrighty.domain.check_evidence import CheckEvidence
from wrighty.domain.claims import (
    ReapFacts,
    Settlement,
    reap,
    release,
    settle,
)
from wrighty.domain.classify import Classification
from wrighty.domain.decisions import (
    after_run,
    after_shutdown,
    internal_error,
    resume_state_missing,
    start_failed,
)
from wrighty.domain.landing import Landing
from wrighty.domain.model import LANDING_CHECKS_FAILED, Change, Item, RunEnd
from wrighty.domain.notices import (
    DEFAULT_EVENTS,
    EVENTS,
    LANDED_EVENT,
    MAX_ERROR_CHARS,
    MAX_REASON_CHARS,
    MAX_TITLE_CHARS,
    NOT_LANDED,
    READY_FOR_REVIEW,
    RETRY_FIRST_SECONDS,
    RETRY_MAX_SECONDS,
    Source,
    after_attempt,
    circuit_notice,
    notices_for,
    with_notices,
)
from wrighty.domain.outbox import Notice, StoredNotice
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.redact import REDACTED
from wrighty.domain.retry import CrashPolicy, UsagePolicy
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition
from wrighty.domain.usage import Limit, Usage
from wrighty.domain.verify import Check, VerifyPolicy, after_checks
from wrighty.domain.work_product import MAX_STAT_LINE_CHARS, MAX_STAT_LINES

NOW = datetime(2026, 11, 30, 12, 0, 0, 250_000, tzinfo=UTC)
SOURCE = Source("inst-a", "w-1")
ALPHANUMERIC = string.ascii_letters + string.digits


def fake(length: int, alphabet: str = ALPHANUMERIC) -> str:
    """Deterministic key-like filler, so no key-shaped literal appears in this file."""
    return "".join(alphabet[(index * 7 + 3) % len(alphabet)] for index in range(length))


ANTHROPIC_KEY = "sk-" + "ant-" + fake(48)
BEARER = fake(40)


def item(state: ItemState = ItemState.RUNNING, **changes: object) -> Item:
    an_hour_ago = NOW - timedelta(hours=1)
    fields = {
        "id": 7, "title": "Fix the flaky test", "generation": 3,
        "lease_expires_at": NOW - timedelta(seconds=1), "queued_at": an_hour_ago,
        "created_at": an_hour_ago, "updated_at": an_hour_ago,
    }  # fmt: skip
    return claimed_item(state, **{**fields, **changes})


def run_end(cls: OutcomeClass = OutcomeClass.AGENT_FAILURE) -> RunEnd:
    return RunEnd(NOW, cls, Confidence.INFERRED, exit_code=3)


def settled(settlement: Settlement, claimed: Item | None = None) -> Change:
    return settle(claimed or item(), settlement, at=NOW)


def attention(reason_code: str, *, reason: str = "it failed", **changes: object) -> Change:
    """A worker's settlement to needs-attention with ``reason_code``."""
    return settled(
        Settlement(
            ItemState.NEEDS_ATTENTION,
            process_started=True,
            run_end=run_end(),
            reason_code=reason_code,
            reason=reason,
            next_action=suggestions.requeue(7, resume=True),
        ),
        item(ItemState.RUNNING, **changes),
    )


def events_of(change: Change) -> tuple[str, ...]:
    found = notices_for(change, SOURCE)
    if not found:
        return ()
    [notice] = found
    return notice.events


def the_notice(change: Change, source: Source = SOURCE, **kw: Any) -> Notice:
    [notice] = notices_for(change, source, **kw)
    return notice


def lost(facts: ReapFacts, claimed: Item | None = None, max_requeues: int = 3) -> Change:
    """The reaper's move for an expired claim."""
    return reap(claimed or item(), facts, at=NOW, max_requeues=max_requeues)


# -- which events a change counts as ------------------------------------------------------------

# Every reason code a worker settles needs-attention with (other than the two with an event of
# their own): outcome classes of finished runs, and wrighty's own reasons.
PLAIN_ATTENTION_CODES = [
    *(cls.value for cls in OutcomeClass if cls is not OutcomeClass.BUDGET_EXCEEDED),
    "start-failed",
    "resume-state-missing",
    "worker-stopped",
    "usage-retry-fresh",
]


@pytest.mark.parametrize("reason_code", PLAIN_ATTENTION_CODES)
def test_a_settlement_to_needs_attention_is_a_needs_attention_notice(reason_code: str) -> None:
    notice = the_notice(attention(reason_code))
    assert (notice.event, notice.events) == ("needs-attention", ("needs-attention",))
    assert notice.reason_code == reason_code
    assert notice.payload["reason_code"] == reason_code
    assert notice.payload["state"] == "needs-attention"


@pytest.mark.parametrize("reason_code", ["retries-exhausted", "budget-exceeded"])
def test_a_reason_with_an_event_of_its_own_comes_first(reason_code: str) -> None:
    notice = the_notice(attention(reason_code))
    assert notice.events == (reason_code, "needs-attention")
    assert notice.event == reason_code == notice.payload["event"]
    assert notice.payload["events"] == [reason_code, "needs-attention"]


FAILED = Classification(OutcomeClass.AGENT_FAILURE, Confidence.INFERRED, "exit code 3")
CRASHED = Classification(OutcomeClass.PROCESS_CRASH, Confidence.AUTHORITATIVE, "killed")
LIMITED = Classification(OutcomeClass.RATE_LIMITED, Confidence.AUTHORITATIVE, "429")


def test_the_domains_own_settlements_count_as_their_events() -> None:
    """The settlements decisions.py and budgets.py make, as a worker writes them."""
    claimed = item()
    exhausted = after_run(
        claimed,
        CRASHED,
        run_end(OutcomeClass.PROCESS_CRASH),
        timeout_seconds=60,
        crash_policy=CrashPolicy("retry", max_attempts=0),
    )
    assert exhausted.reason_code == "retries-exhausted"
    assert events_of(settled(exhausted)) == ("retries-exhausted", "needs-attention")
    usage_out = after_run(
        item(usage_retries=5),
        LIMITED,
        run_end(OutcomeClass.RATE_LIMITED),
        timeout_seconds=60,
        usage_policy=UsagePolicy("retry", max_attempts=5),
    )
    assert usage_out.reason_code == "retries-exhausted"
    assert events_of(settled(usage_out, item(usage_retries=5))) == (
        "retries-exhausted",
        "needs-attention",
    )
    over = item_budget_spent(
        claimed,
        Limit(max_tokens=100),
        Usage(input_tokens=150),
        run_end=run_end(OutcomeClass.BUDGET_EXCEEDED),
    )
    assert events_of(settled(over)) == ("budget-exceeded", "needs-attention")
    for plain in (
        after_run(claimed, FAILED, run_end(), timeout_seconds=60),
        start_failed(claimed, run_end(OutcomeClass.START_FAILED), why="no such file"),
        internal_error(
            claimed,
            ValueError("bad"),
            at=NOW,
            run_recorded=True,
            process_started=True,
            resumable=True,
        ),
        resume_state_missing(claimed, ("the transcript is gone",)),
        after_shutdown(claimed, run_end(OutcomeClass.CANCELLED), resumable=False),
    ):
        assert events_of(settled(plain)) == ("needs-attention",), plain.reason_code


def test_a_crash_retry_scheduled_is_a_retry_scheduled_notice() -> None:
    claimed = item()
    retry = after_run(
        claimed,
        CRASHED,
        run_end(OutcomeClass.PROCESS_CRASH),
        timeout_seconds=60,
        crash_policy=CrashPolicy("retry", max_attempts=2),
    )
    assert retry.to_state is ItemState.RETRY_SCHEDULED
    notice = the_notice(settled(retry))
    assert notice.events == ("retry-scheduled",)
    assert notice.reason_code == "process-crash"
    assert retry.not_before is not None
    assert notice.payload["not_before"] == "2026-11-30T12:02:00.250Z"
    assert notice.payload["state"] == "retry-scheduled"
    assert notice.payload["next_action"] is None


def test_a_usage_retry_and_a_stopped_worker_are_retry_scheduled() -> None:
    usage = after_run(
        item(),
        LIMITED,
        run_end(OutcomeClass.RATE_LIMITED),
        timeout_seconds=60,
        usage_policy=UsagePolicy("retry"),
    )
    assert events_of(settled(usage)) == ("retry-scheduled",)
    stopped = after_shutdown(item(), run_end(OutcomeClass.CANCELLED), resumable=True)
    assert events_of(settled(stopped)) == ("retry-scheduled",)


def test_done_is_a_done_notice() -> None:
    change = settled(
        Settlement(ItemState.DONE, process_started=True, run_end=run_end(OutcomeClass.SUCCEEDED))
    )
    notice = the_notice(change)
    assert (notice.event, notice.events, notice.reason_code) == ("done", ("done",), None)
    assert notice.payload["state"] == "done"
    assert (notice.payload["reason"], notice.payload["next_action"]) == (None, None)


def test_a_settlement_after_checks_names_the_failing_ones_and_how_each_ended() -> None:
    evidence = (
        CheckEvidence("lint", ("ruff",), 0.2, exit_code=0),
        CheckEvidence("tests", ("pytest",), 3.0, "1 failed", exit_code=1),
        CheckEvidence("types\x1b[2J", ("mypy",), 0.0, start_failure="not found"),
    )
    claimed = item()
    change = settle(
        claimed,
        after_checks(
            claimed,
            run_end(OutcomeClass.SUCCEEDED),
            evidence[:2],
            policy=VerifyPolicy((Check("lint", ("ruff",)), Check("tests", ("pytest",)))),
            fix_turns=2,
        ),
        at=NOW,
    )
    notice = the_notice(change, checks=evidence)
    assert (notice.event, notice.reason_code) == ("needs-attention", "verification-failed")
    assert notice.payload["failing_checks"] == [
        {"name": "tests", "ending": "exit code 1"},
        {"name": "types\\x1b[2J", "ending": "could not start"},
    ]
    _, body = notice.text()
    assert "failing checks: tests (exit code 1), types\\x1b[2J (could not start)" in body
    # checks that all passed, or none at all, name nothing
    assert "failing_checks" not in the_notice(change, checks=evidence[:1]).payload
    assert "failing_checks" not in the_notice(change).payload


def test_the_reaper_rescuing_into_a_retry_is_worker_lost_first() -> None:
    change = lost(
        ReapFacts(run_recorded=True, has_resume_address=True, claimed_from=ItemState.QUEUED)
    )
    assert change.after.state is ItemState.RETRY_SCHEDULED
    notice = the_notice(change, Source("inst-b"))
    assert notice.events == ("worker-lost", "retry-scheduled")
    assert (notice.event, notice.reason_code) == ("worker-lost", "worker-lost")
    assert (notice.payload["installation_id"], notice.payload["worker_id"]) == ("inst-b", None)
    # A claim that vanished before its agent started goes back to the retry it took.
    again = lost(
        ReapFacts(
            run_recorded=False, has_resume_address=False, claimed_from=ItemState.RETRY_SCHEDULED
        )
    )
    assert again.after.state is ItemState.RETRY_SCHEDULED
    assert events_of(again) == ("worker-lost", "retry-scheduled")


@pytest.mark.parametrize(
    ("facts", "requeues"),
    [
        (ReapFacts(run_recorded=True, has_resume_address=False, claimed_from=ItemState.QUEUED), 0),
        (ReapFacts(run_recorded=True, has_resume_address=True, claimed_from=ItemState.QUEUED), 3),
    ],
    ids=["no-session", "reclaims-spent"],
)
def test_the_reaper_leaving_it_to_a_person_is_worker_lost_then_needs_attention(
    facts: ReapFacts, requeues: int
) -> None:
    change = lost(facts, item(requeues=requeues))
    assert change.after.state is ItemState.NEEDS_ATTENTION
    notice = the_notice(change)
    assert notice.events == ("worker-lost", "needs-attention")
    assert notice.payload["next_action"] == change.after.next_action
    assert notice.payload["next_action"].startswith("wrighty requeue 7 ")


def test_the_reaper_putting_an_unstarted_claim_back_in_the_queue_tells_nobody() -> None:
    change = lost(
        ReapFacts(run_recorded=False, has_resume_address=False, claimed_from=ItemState.QUEUED)
    )
    assert change.after.state is ItemState.QUEUED
    assert notices_for(change, SOURCE) == ()


def test_an_operators_moves_tell_nobody() -> None:
    waiting = item(
        ItemState.NEEDS_ATTENTION,
        claimed_by=None,
        reason_code="agent-failure",
        reason="it failed",
        next_action="wrighty requeue 7 --resume",
    )
    retry = item(ItemState.RETRY_SCHEDULED, claimed_by=None, not_before=NOW + timedelta(1))
    moves = [
        transition(waiting, ItemState.QUEUED, at=NOW, actor="op"),  # requeue --fresh
        transition(waiting, ItemState.RETRY_SCHEDULED, at=NOW, actor="op", not_before=NOW),
        transition(retry, ItemState.RETRY_SCHEDULED, at=NOW, actor="op", not_before=NOW),
        transition(waiting, ItemState.CANCELLED, at=NOW, actor="op"),
        transition(retry, ItemState.CANCELLED, at=NOW, actor="op"),
        transition(
            item(ItemState.QUEUED, claimed_by=None), ItemState.CANCELLED, at=NOW, actor="op"
        ),
        transition(item(ItemState.TODO, claimed_by=None), ItemState.QUEUED, at=NOW, actor="op"),
        transition(item(ItemState.TODO, claimed_by=None), ItemState.CANCELLED, at=NOW, actor="op"),
    ]
    for move in moves:
        assert notices_for(move, SOURCE) == (), (move.before.state, move.after.state)
        assert with_notices(move, SOURCE).notices == ()


def test_a_claim_and_a_cancel_of_a_running_item_tell_nobody() -> None:
    queued = item(ItemState.QUEUED, claimed_by=None)
    assert (
        notices_for(transition(queued, ItemState.RUNNING, at=NOW, actor="worker:w-1"), SOURCE) == ()
    )
    cancel = transition(
        item(), ItemState.CANCELLED, at=NOW, actor="op", run_end=run_end(OutcomeClass.CANCELLED)
    )
    assert notices_for(cancel, SOURCE) == ()


def test_an_operators_release_is_not_the_reaper_but_reads_as_worker_lost() -> None:
    """`wrighty release` ends the run as worker-lost: a notice made from it (none is today: an
    operator's commands give no source) would count as worker-lost too."""
    change = release(item(), at=NOW, actor="op")
    assert events_of(change) == ("worker-lost", "needs-attention")


def test_with_notices_attaches_the_notice_only_with_a_source() -> None:
    change = attention("agent-failure")
    assert with_notices(change, None) is change
    carrying = with_notices(change, SOURCE)
    [notice] = carrying.notices
    assert dataclasses.replace(carrying, notices=()) == change
    assert notice.events == ("needs-attention",)
    done = transition(item(ItemState.TODO, claimed_by=None), ItemState.QUEUED, at=NOW, actor="op")
    assert with_notices(done, SOURCE).notices == ()


def test_the_events_are_known_and_the_defaults_among_them() -> None:
    for kind in (
        attention("agent-failure"),
        attention("retries-exhausted"),
        attention("budget-exceeded"),
        lost(ReapFacts(True, True, ItemState.QUEUED)),
    ):
        assert set(events_of(kind)) <= set(EVENTS)
    assert set(DEFAULT_EVENTS) <= set(EVENTS)
    assert "done" not in DEFAULT_EVENTS
    assert "retry-scheduled" not in DEFAULT_EVENTS


# -- the payload ------------------------------------------------------------------------------


def test_the_payload_names_the_item_its_reason_the_next_command_and_who() -> None:
    change = attention("agent-failure", reason="the agent failed (exit code 3)")
    notice = the_notice(change, new_id="ntc-fixed")
    assert notice.id == "ntc-fixed"
    assert notice.at == change.event.at == NOW
    assert notice.item_id == 7
    assert notice.payload == {
        "id": "ntc-fixed",
        "event": "needs-attention",
        "events": ["needs-attention"],
        "at": "2026-11-30T12:00:00.250Z",
        "item": {"id": 7, "title": "Fix the flaky test"},
        "state": "needs-attention",
        "reason_code": "agent-failure",
        "reason": "the agent failed (exit code 3)",
        "next_action": "wrighty requeue 7 --resume",
        "not_before": None,
        "installation_id": "inst-a",
        "worker_id": "w-1",
    }


def test_the_id_is_one_for_the_notice_and_its_payload_and_new_for_each_notice() -> None:
    change = attention("agent-failure")
    first, second = the_notice(change), the_notice(change)
    assert first.id == first.payload["id"]
    assert first.id.startswith("ntc-")
    assert second.id.startswith("ntc-")
    assert first.id != second.id
    # The time is the change's event's, not the clock's.
    later = dataclasses.replace(
        change, event=dataclasses.replace(change.event, at=NOW + timedelta(minutes=3))
    )
    assert the_notice(later).at == NOW + timedelta(minutes=3)
    assert the_notice(later).payload["at"] == "2026-11-30T12:03:00.250Z"


def test_the_title_is_one_safe_line() -> None:
    title = "deploy\x1b[31m red\nnext line\ttab\x7f\u202eevil\u0007"
    notice = the_notice(attention("agent-failure", title=title))
    shown = notice.payload["item"]["title"]
    assert shown == "deploy\\x1b[31m red\\nnext line\\ttab\\x7f\\u202eevil\\x07"
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c == "\u202e" for c in shown)


def test_a_long_title_is_capped() -> None:
    notice = the_notice(attention("agent-failure", title="é" * 300))
    shown = notice.payload["item"]["title"]
    assert len(shown) == MAX_TITLE_CHARS
    assert shown == "é" * (MAX_TITLE_CHARS - 1) + "…"
    exact = the_notice(attention("agent-failure", title="x" * MAX_TITLE_CHARS))
    assert exact.payload["item"]["title"] == "x" * MAX_TITLE_CHARS
    # Escapes count toward the cap: the line a sink shows is bounded, whatever the title.
    escaped = the_notice(attention("agent-failure", title="\x1b" * 200))
    assert len(escaped.payload["item"]["title"]) == MAX_TITLE_CHARS


def test_secrets_in_the_reason_are_redacted() -> None:
    reason = (
        f"the agent failed: export ANTHROPIC_API_KEY={ANTHROPIC_KEY}; "
        f"curl -H 'Authorization: Bearer {BEARER}' https://api.example.com"
    )
    notice = the_notice(attention("agent-failure", reason=reason))
    shown = notice.payload["reason"]
    assert ANTHROPIC_KEY not in shown
    assert BEARER not in shown
    assert fake(48)[:12] not in shown
    assert BEARER[:12] not in shown
    assert shown.count(REDACTED) == 2
    assert "Authorization: Bearer" in shown
    head, body = notice.text()
    assert ANTHROPIC_KEY not in head + body
    assert BEARER not in head + body


def test_a_secret_in_the_title_is_redacted() -> None:
    notice = the_notice(attention("agent-failure", title=f"rotate {ANTHROPIC_KEY} today"))
    assert notice.payload["item"]["title"] == f"rotate {REDACTED} today"


def test_a_long_reason_is_capped_after_redaction() -> None:
    # The key straddles the cap: redacted first, so no part of it survives the cut.
    reason = "x" * (MAX_REASON_CHARS - 20) + f" {ANTHROPIC_KEY} " + "tail " * 200
    notice = the_notice(attention("agent-failure", reason=reason))
    shown = notice.payload["reason"]
    assert len(shown) == MAX_REASON_CHARS
    assert shown.endswith("…")
    assert "sk-" not in shown
    assert fake(48)[:6] not in shown
    multiline = the_notice(attention("agent-failure", reason="line one\nline two\x1b[0m"))
    assert multiline.payload["reason"] == "line one\\nline two\\x1b[0m"
    short = the_notice(attention("agent-failure", reason="y" * MAX_REASON_CHARS))
    assert short.payload["reason"] == "y" * MAX_REASON_CHARS


def test_a_notice_without_a_reason_says_none() -> None:
    done = settled(
        Settlement(ItemState.DONE, process_started=True, run_end=run_end(OutcomeClass.SUCCEEDED))
    )
    assert the_notice(done).payload["reason"] is None


# -- a sink's filter ----------------------------------------------------------------------------


def test_a_notice_matches_any_of_its_events() -> None:
    notice = the_notice(attention("retries-exhausted"))
    assert notice.matches(("retries-exhausted",), ())
    assert notice.matches(("needs-attention",), ())
    assert notice.matches(("done", "needs-attention"), ())
    assert not notice.matches(("done", "retry-scheduled"), ())
    assert not notice.matches((), ())
    assert notice.matches(DEFAULT_EVENTS, ())
    lost_retry = the_notice(lost(ReapFacts(True, True, ItemState.QUEUED)))
    assert lost_retry.matches(("worker-lost",), ())
    assert lost_retry.matches(("retry-scheduled",), ())
    assert lost_retry.matches(DEFAULT_EVENTS, ())  # worker-lost is a default
    retry = the_notice(
        settled(
            after_run(
                item(),
                CRASHED,
                run_end(OutcomeClass.PROCESS_CRASH),
                timeout_seconds=60,
                crash_policy=CrashPolicy("retry"),
            )
        )
    )
    assert not retry.matches(DEFAULT_EVENTS, ())


def test_a_reason_code_filter_passes_only_those_codes() -> None:
    notice = the_notice(attention("auth"))
    assert notice.matches(("needs-attention",), ("auth",))
    assert notice.matches(("needs-attention",), ("billing", "auth"))
    assert not notice.matches(("needs-attention",), ("billing",))
    assert not notice.matches(("done",), ("auth",))  # the events still decide first
    done = the_notice(
        settled(
            Settlement(
                ItemState.DONE, process_started=True, run_end=run_end(OutcomeClass.SUCCEEDED)
            )
        )
    )
    assert done.matches(("done",), ())
    assert not done.matches(("done",), ("auth",))  # an item without a reason code is filtered


def test_an_event_without_an_item_always_passes_the_reason_code_filter() -> None:
    """config.py: "Only items with one of these reason codes (events without an item, such as
    circuit-open, always pass)"."""
    notice = circuit_notice(
        "agent:claude@inst-a",
        until=NOW + timedelta(minutes=5),
        reason="429",
        failures=1,
        at=NOW,
        source=SOURCE,
    )
    assert notice.matches(("circuit-open",), ())
    assert notice.matches(("circuit-open",), ("auth", "billing"))
    assert not notice.matches(("needs-attention",), ("auth",))


# -- the chat text ------------------------------------------------------------------------------


def test_the_text_of_an_items_notice() -> None:
    notice = the_notice(attention("agent-failure", reason="the agent failed (exit code 3)"))
    head, body = notice.text()
    assert head == "wrighty: needs-attention: item 7 Fix the flaky test"
    assert body.splitlines() == [
        "the agent failed (exit code 3)",
        "next: wrighty requeue 7 --resume",
        "on inst-a by w-1 at 2026-11-30T12:00:00.250Z",
    ]


def test_the_text_leaves_out_what_a_notice_does_not_have() -> None:
    done = settled(
        Settlement(ItemState.DONE, process_started=True, run_end=run_end(OutcomeClass.SUCCEEDED))
    )
    head, body = the_notice(done, Source("inst-a")).text()
    assert head == "wrighty: done: item 7 Fix the flaky test"
    assert body.splitlines() == ["on inst-a at 2026-11-30T12:00:00.250Z"]
    exhausted = the_notice(attention("retries-exhausted", reason="it crashed 3 times"))
    assert exhausted.text()[0] == "wrighty: retries-exhausted: item 7 Fix the flaky test"


def test_the_text_is_one_line_per_part_whatever_the_item_says() -> None:
    notice = the_notice(attention("agent-failure", title="a\nb", reason="c\r\nd"))
    head, body = notice.text()
    assert "\n" not in head
    assert len(body.splitlines()) == 3
    assert head == "wrighty: needs-attention: item 7 a\\nb"
    assert body.splitlines()[0] == "c\\r\\nd"


def test_the_text_of_a_circuit_notice() -> None:
    notice = circuit_notice(
        "agent:claude@inst-a",
        until=NOW + timedelta(minutes=5),
        reason="rate limited (429)",
        failures=2,
        at=NOW,
        source=Source("inst-a", "w-9"),
    )
    head, body = notice.text()
    assert head == "wrighty: circuit-open: agent:claude@inst-a until 2026-11-30T12:05:00.250Z"
    assert body.splitlines() == [
        "rate limited (429)",
        "next: wrighty providers reset agent:claude@inst-a",
        "on inst-a by w-9 at 2026-11-30T12:00:00.250Z",
    ]


# -- a provider circuit opening ----------------------------------------------------------------


def test_a_circuit_notice_has_no_item_and_names_the_circuit() -> None:
    until = NOW + timedelta(minutes=30)
    reason = f"429 from the provider; key {ANTHROPIC_KEY}\n" + "z" * 900
    notice = circuit_notice(
        "account:team", until=until, reason=reason, failures=3, at=NOW, source=Source("inst-a")
    )
    assert notice.id.startswith("ntc-")
    assert notice.payload["id"] == notice.id
    assert (notice.event, notice.events, notice.at) == ("circuit-open", ("circuit-open",), NOW)
    assert (notice.item_id, notice.reason_code) == (None, None)
    payload = notice.payload
    assert payload["item"] is None
    assert (payload["circuit"], payload["failures"]) == ("account:team", 3)
    assert payload["until"] == "2026-11-30T12:30:00.250Z"
    assert payload["at"] == "2026-11-30T12:00:00.250Z"
    assert payload["next_action"] == "wrighty providers reset account:team"
    assert (payload["installation_id"], payload["worker_id"]) == ("inst-a", None)
    shown = payload["reason"]
    assert len(shown) == MAX_REASON_CHARS
    assert "\n" not in shown
    assert ANTHROPIC_KEY not in shown
    assert REDACTED in shown
    other = circuit_notice(
        "account:team", until=until, reason=None, failures=1, at=NOW, source=SOURCE
    )
    assert other.id != notice.id
    assert other.payload["reason"] is None


# -- one delivery attempt -----------------------------------------------------------------------


def stored(*, attempts: int = 0, delivered_to: tuple[str, ...] = ()) -> StoredNotice:
    notice = the_notice(attention("agent-failure"), new_id="ntc-1")
    return StoredNotice(
        notice,
        "pending",
        attempts,
        NOW,
        delivered_to,
        None,
        "w-1",
        NOW + timedelta(minutes=2),
        None,
    )


def test_an_attempt_without_failures_is_delivered() -> None:
    outcome = after_attempt(stored(), {}, ("slack", "command"), now=NOW, max_attempts=5)
    assert outcome.state == "delivered"
    assert (outcome.attempts, outcome.next_attempt_at, outcome.finished_at) == (1, NOW, NOW)
    assert outcome.delivered_to == ("slack", "command")
    assert outcome.last_error is None
    # No sink at all to reach (every one already has it): delivered too.
    again = after_attempt(
        stored(attempts=2, delivered_to=("slack",)), {}, (), now=NOW, max_attempts=5
    )
    assert (again.state, again.attempts, again.delivered_to) == ("delivered", 3, ("slack",))


def test_a_failed_attempt_is_retried_with_doubling_waits_capped() -> None:
    waits = []
    for attempts in range(12):
        outcome = after_attempt(
            stored(attempts=attempts), {"slack": "HTTP 500"}, (), now=NOW, max_attempts=100
        )
        assert outcome.state == "pending"
        assert outcome.attempts == attempts + 1
        assert outcome.finished_at is None
        assert outcome.last_error == "slack: HTTP 500"
        waits.append((outcome.next_attempt_at - NOW).total_seconds())
    assert waits[:8] == [30, 60, 120, 240, 480, 960, 1920, 3600]
    assert waits[0] == RETRY_FIRST_SECONDS
    assert set(waits[7:]) == {RETRY_MAX_SECONDS}
    far = after_attempt(stored(attempts=5000), {"slack": "down"}, (), now=NOW, max_attempts=10**6)
    assert far.next_attempt_at == NOW + timedelta(seconds=RETRY_MAX_SECONDS)


def test_an_attempt_at_max_attempts_gives_up_with_a_bounded_redacted_error() -> None:
    failures = {
        "webhook": f"HTTP 401: Authorization: Bearer {BEARER} refused\n" + "w" * 800,
        "command": f"exit 2: {ANTHROPIC_KEY}",
    }
    outcome = after_attempt(stored(attempts=4), failures, ("slack",), now=NOW, max_attempts=5)
    assert outcome.state == "given-up"
    assert (outcome.attempts, outcome.next_attempt_at, outcome.finished_at) == (5, NOW, NOW)
    assert outcome.delivered_to == ("slack",)
    error = outcome.last_error
    assert error is not None
    assert len(error) == MAX_ERROR_CHARS
    assert error.endswith("…")
    assert error.startswith(f"command: exit 2: {REDACTED}; webhook: HTTP 401: Authorization: ")
    assert BEARER not in error
    assert ANTHROPIC_KEY not in error
    assert "\n" not in error
    one_before = after_attempt(stored(attempts=3), failures, (), now=NOW, max_attempts=5)
    assert one_before.state == "pending"
    assert after_attempt(stored(), {"x": "y"}, (), now=NOW, max_attempts=1).state == "given-up"


def test_the_sinks_reached_accumulate_across_attempts_without_duplicates() -> None:
    first = after_attempt(stored(), {"webhook": "timeout"}, ("slack",), now=NOW, max_attempts=5)
    assert (first.state, first.delivered_to) == ("pending", ("slack",))
    later = NOW + timedelta(seconds=30)
    after_first = dataclasses.replace(
        stored(attempts=first.attempts), delivered_to=first.delivered_to
    )
    second = after_attempt(
        after_first, {"command": "exit 1"}, ("webhook", "slack"), now=later, max_attempts=5
    )
    assert second.delivered_to == ("slack", "webhook")
    assert second.attempts == 2
    assert second.next_attempt_at == later + timedelta(seconds=60)
    after_second = dataclasses.replace(after_first, attempts=2, delivered_to=second.delivered_to)
    third = after_attempt(after_second, {}, ("command", "command"), now=later, max_attempts=5)
    assert (third.state, third.delivered_to) == ("delivered", ("slack", "webhook", "command"))


# -- an item ready for review -------------------------------------------------------------------

STAT = (
    " src/checkout.py    | 12 +++++++-----\n"
    " tests/test_flaky.py |  4 ++--\n"
    " 2 files changed, 9 insertions(+), 7 deletions(-)\n"
)
PASSED = (
    CheckEvidence("lint", ("ruff",), 0.214, exit_code=0),
    CheckEvidence("tests", ("pytest",), 3.0, "12 passed", exit_code=0),
)


def in_review(**changes: object) -> Change:
    """A worker's settlement of a verified success to review (completion.review person)."""
    return settled(
        Settlement(ItemState.REVIEW, process_started=True, run_end=run_end(OutcomeClass.SUCCEEDED)),
        item(ItemState.RUNNING, **changes),
    )


def test_an_item_ready_for_review_carries_its_branch_change_checks_and_next_commands() -> None:
    change = in_review()
    notice = the_notice(
        change, new_id="ntc-r", checks=PASSED, branch="wrighty/7-fix-the-flaky-test",
        diff_stat=STAT,
    )  # fmt: skip
    assert (notice.event, notice.events) == ("ready-for-review", ("ready-for-review",))
    assert notice.payload == {
        "id": "ntc-r",
        "event": "ready-for-review",
        "events": ["ready-for-review"],
        "at": "2026-11-30T12:00:00.250Z",
        "item": {"id": 7, "title": "Fix the flaky test"},
        "state": "review",
        "reason_code": None,
        "reason": None,
        "next_action": None,
        "not_before": None,
        "installation_id": "inst-a",
        "worker_id": "w-1",
        "branch": "wrighty/7-fix-the-flaky-test",
        "diff_stat": STAT.rstrip("\n"),
        "checks": [
            {"name": "lint", "passed": True, "ending": "exit code 0", "duration_seconds": 0.214,
             "fails_on_base": False},
            {"name": "tests", "passed": True, "ending": "exit code 0", "duration_seconds": 3.0,
             "fails_on_base": False},
        ],
        "next_actions": [
            {"command": "wrighty diff 7", "purpose": "see the change"},
            {"command": "wrighty accept 7", "purpose": "accept it"},
            {"command": "wrighty reject 7 --feedback TEXT",
             "purpose": "send it back with your feedback"},
        ],
    }  # fmt: skip
    # The commands are the suggestions module's own words.
    assert [a["command"] for a in notice.payload["next_actions"]] == [
        suggestions.diff(7), suggestions.accept(7), suggestions.reject(7)
    ]  # fmt: skip
    # Through with_notices, as the worker's write_settlement passes them.
    [carried] = with_notices(
        change, SOURCE, checks=PASSED, branch="wrighty/7-b", diff_stat=STAT
    ).notices
    assert (carried.payload["branch"], carried.payload["diff_stat"]) == (
        "wrighty/7-b",
        STAT.rstrip("\n"),
    )
    assert [c["name"] for c in carried.payload["checks"]] == ["lint", "tests"]


def test_a_failed_check_in_a_review_notice_says_how_it_ended() -> None:
    evidence = (*PASSED, CheckEvidence("slow", ("x",), 9.96, exit_code=None, signal=15,
                                       timed_out=True))  # fmt: skip
    notice = the_notice(in_review(), checks=evidence)
    assert notice.payload["checks"][-1] == {
        "name": "slow", "passed": False, "ending": "stopped at its time limit (signal 15)",
        "duration_seconds": 9.96, "fails_on_base": False,
    }  # fmt: skip
    _, body = notice.text()
    assert "checks: lint passed in 0.2 s, tests passed in 3.0 s, slow stopped at its time " \
        "limit (signal 15) in 10.0 s" in body  # fmt: skip


def test_a_check_failing_on_the_base_too_in_a_review_notice_says_so() -> None:
    """docs/verify.md#checks-that-fail-on-the-base: it did not keep the item from review."""
    lint = CheckEvidence("lint", ("x",), 0.5, exit_code=1, fails_on_base=True)
    notice = the_notice(in_review(), checks=(lint,))
    assert notice.payload["checks"] == [{
        "name": "lint", "passed": False, "ending": "exit code 1, fails on the base too",
        "duration_seconds": 0.5, "fails_on_base": True,
    }]  # fmt: skip
    _, body = notice.text()
    assert "lint exit code 1, fails on the base too in 0.5 s" in body


def test_a_review_notice_without_a_branch_stat_or_checks_says_what_it_knows() -> None:
    notice = the_notice(in_review())
    payload = notice.payload
    assert (payload["branch"], payload["diff_stat"], payload["checks"]) == (None, None, [])
    head, body = notice.text()
    assert head == "wrighty: ready-for-review: item 7 Fix the flaky test"
    assert body.splitlines() == [
        "checks: none ran",
        "see the change: wrighty diff 7",
        "accept it: wrighty accept 7",
        "send it back with your feedback: wrighty reject 7 --feedback TEXT",
        "on inst-a by w-1 at 2026-11-30T12:00:00.250Z",
    ]
    # No change against the base is said so, not left out.
    assert the_notice(in_review(), diff_stat="").payload["diff_stat"] == ""
    assert "change: none against its base" in the_notice(in_review(), diff_stat="").text()[1]


def test_the_chat_text_of_an_item_ready_for_review() -> None:
    notice = the_notice(in_review(), checks=PASSED, branch="wrighty/7-fix", diff_stat=STAT)
    head, body = notice.text()
    assert head == "wrighty: ready-for-review: item 7 Fix the flaky test"
    assert body.splitlines() == [
        "branch wrighty/7-fix",
        "change:",
        " src/checkout.py    | 12 +++++++-----",
        " tests/test_flaky.py |  4 ++--",
        " 2 files changed, 9 insertions(+), 7 deletions(-)",
        "checks: lint passed in 0.2 s, tests passed in 3.0 s",
        "see the change: wrighty diff 7",
        "accept it: wrighty accept 7",
        "send it back with your feedback: wrighty reject 7 --feedback TEXT",
        "on inst-a by w-1 at 2026-11-30T12:00:00.250Z",
    ]


def test_other_notices_carry_no_review_facts() -> None:
    """The branch and stat a worker passes are the review's: a done or waiting item's notice
    has none of them."""
    done = settled(
        Settlement(ItemState.DONE, process_started=True, run_end=run_end(OutcomeClass.SUCCEEDED))
    )
    for change in (done, attention("agent-failure")):
        payload = the_notice(change, checks=PASSED, branch="b", diff_stat=STAT).payload
        assert not {"branch", "diff_stat", "checks", "next_actions"} & set(payload)


def test_a_change_that_stays_in_review_tells_nobody() -> None:
    """A same-state event of an item in review (a failed integration, say) is a person's move
    and no new readiness."""
    waiting = item(ItemState.REVIEW, claimed_by=None)
    again = dataclasses.replace(in_review(), before=waiting)
    assert notices_for(again, SOURCE) == ()


def test_secrets_and_control_characters_in_the_stat_are_redacted_and_escaped() -> None:
    stat = (
        f" deploy-{ANTHROPIC_KEY}.env | 2 +-\n"
        " red\x1b[31m\u202etxt.exe\r | 1 +\n"
        " 2 files changed, 2 insertions(+), 1 deletion(-)\n"
    )
    notice = the_notice(in_review(), diff_stat=stat, branch="wrighty/7-\x1b]0;pwned\x07")
    shown = notice.payload["diff_stat"]
    assert ANTHROPIC_KEY not in shown
    assert fake(48)[:12] not in shown
    assert REDACTED in shown
    assert shown.splitlines()[1] == " red\\x1b[31m\\u202etxt.exe\\r | 1 +"
    assert not any((ord(c) < 0x20 and c != "\n") or c == "\u202e" for c in shown)
    assert notice.payload["branch"] == "wrighty/7-\\x1b]0;pwned\\x07"
    head, body = notice.text()
    assert ANTHROPIC_KEY not in head + body
    assert "\x1b" not in head + body
    assert "\r" not in body


def test_a_long_stat_is_bounded_keeping_git_s_summary() -> None:
    files = [f" file{n:03}.py | 1 +" for n in range(200)]
    stat = "\n".join([*files, " 200 files changed, 200 insertions(+)"]) + "\n"
    shown = the_notice(in_review(), diff_stat=stat).payload["diff_stat"].splitlines()
    assert len(shown) == MAX_STAT_LINES
    assert shown[: MAX_STAT_LINES - 2] == files[: MAX_STAT_LINES - 2]
    assert shown[-2] == f" … {200 - (MAX_STAT_LINES - 2)} more lines"
    assert shown[-1] == " 200 files changed, 200 insertions(+)"
    # Exactly at the bound, every line is kept.
    exact = "\n".join([*files[: MAX_STAT_LINES - 1], " summary"])
    assert the_notice(in_review(), diff_stat=exact).payload["diff_stat"] == exact
    # A long line (a deep path) is cut.
    deep = " " + "d/" * 400 + "f.py | 1 +\n 1 file changed, 1 insertion(+)"
    [line, _] = the_notice(in_review(), diff_stat=deep).payload["diff_stat"].splitlines()
    assert len(line) == MAX_STAT_LINE_CHARS
    assert line.endswith("…")


def test_ready_for_review_is_an_event_sinks_filter_on_and_a_default() -> None:
    notice = the_notice(in_review())
    assert READY_FOR_REVIEW == "ready-for-review"
    assert READY_FOR_REVIEW in EVENTS
    assert READY_FOR_REVIEW in DEFAULT_EVENTS  # a person is waited for, as for needs-attention
    assert notice.matches(DEFAULT_EVENTS, ())
    assert notice.matches(("ready-for-review",), ())
    assert notice.matches(("done", "ready-for-review"), ())
    assert not notice.matches(("done", "needs-attention"), ())
    assert not the_notice(attention("agent-failure")).matches(("ready-for-review",), ())


def test_the_review_notice_docs_show_is_the_one_made() -> None:
    """docs/notifications.md's ready-for-review payload and chat text are what notices_for
    makes of such a settlement."""
    import json
    import re
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "notifications.md").read_text()
    section = page.split("### An item ready for review", 1)[1]
    shown = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))  # type: ignore[union-attr]
    chat = page.split("wrighty: ready-for-review: ", 1)[1].split("```", 1)[0]
    at = datetime(2026, 12, 1, 16, 3, 59, 478_000, tzinfo=UTC)
    # as the worker settles it: a done run's settlement, to review (domain/review.py)
    from wrighty.domain.review import to_review

    running = item(ItemState.RUNNING, id=7, title="Fix the flaky checkout test")
    done = Settlement(
        ItemState.DONE, process_started=True, run_end=run_end(OutcomeClass.SUCCEEDED),
        reason="every check passed (2 checks)",
    )  # fmt: skip
    change = settled(to_review(running, done), running)
    change = dataclasses.replace(change, event=dataclasses.replace(change.event, at=at))
    source = Source(shown["installation_id"], shown["worker_id"])
    notice = the_notice(
        change, source, new_id=shown["id"], checks=PASSED, branch=shown["branch"],
        diff_stat=shown["diff_stat"] + "\n",
    )  # fmt: skip
    assert notice.payload == shown
    head, body = notice.text()
    assert f"{head}\n\n{body}\n" == "wrighty: ready-for-review: " + chat


def test_the_workers_write_settlement_passes_the_review_facts_to_the_notice() -> None:
    from wrighty.worker.life import write_settlement

    written: list[Change] = []
    told: list[tuple[object, dict[str, Any]]] = []

    class Store:
        def write_transition(self, change: Change) -> bool:
            written.append(change)
            return True

    woken: list[bool] = []
    write_settlement(
        Store(), in_review(), "run-1", lambda event, **fields: told.append((event, fields)),
        notify=SOURCE, wake=lambda: woken.append(True), checks=PASSED, branch="wrighty/7-x",
        diff_stat=STAT,
    )  # fmt: skip
    [change] = written
    [notice] = change.notices
    assert notice.event == READY_FOR_REVIEW
    assert (notice.payload["branch"], notice.payload["diff_stat"]) == (
        "wrighty/7-x",
        STAT.rstrip("\n"),
    )
    assert [check["name"] for check in notice.payload["checks"]] == ["lint", "tests"]
    assert woken == [True]
    assert told[0][1]["state"] == "review"


# -- landing (docs/landing.md#where-it-shows) --------------------------------------------------


def claimed_to_land() -> tuple[Item, Landing]:
    """Item 7 in landing, held by lander w-1, with its landing."""
    held = item(ItemState.LANDING, claimed_by="w-1", lease_expires_at=NOW + timedelta(minutes=1))
    return held, Landing(7, 1, NOW, "op", None, "inst-a", "main")


def test_a_landing_back_with_a_person_is_not_landed_first() -> None:
    claimed, held = claimed_to_land()
    back = landing.back_to_review(claimed, held, "main has changes of its own", at=NOW).change
    notice = the_notice(back, branch="wrighty/item-7", diff_stat=" a.py | 1 +")
    assert notice.events == (NOT_LANDED, READY_FOR_REVIEW)
    assert notice.payload["reason"] == "it did not land: main has changes of its own"
    assert notice.payload["branch"] == "wrighty/item-7"  # what a review's notice carries
    assert [a["command"] for a in notice.payload["next_actions"]][-2] == "wrighty accept 7"
    spent = landing.fix_turn(
        claimed, held, reason_code=LANDING_CHECKS_FAILED, why="tests fail on main", prompt="p",
        max_fix_turns=0, at=NOW,
    ).change  # fmt: skip
    assert spent.after.state is ItemState.NEEDS_ATTENTION
    assert events_of(spent) == (NOT_LANDED, "needs-attention")
    assert NOT_LANDED in DEFAULT_EVENTS


def test_a_landed_item_is_landed_then_done_and_a_fix_turn_tells_no_person() -> None:
    claimed, held = claimed_to_land()
    assert events_of(landing.landed(claimed, held, "merged", at=NOW).change) == (
        LANDED_EVENT,
        "done",
    )
    assert LANDED_EVENT not in DEFAULT_EVENTS  # opt-in, as done is
    turn = landing.fix_turn(
        claimed, held, reason_code=LANDING_CHECKS_FAILED, why="tests fail on main", prompt="p",
        max_fix_turns=2, at=NOW,
    ).change  # fmt: skip
    assert turn.after.state is ItemState.RETRY_SCHEDULED
    assert events_of(turn) == ()
    # A lander's claim and its release stay in landing: nothing to tell.
    assert events_of(landing.release(claimed, held, "stopping", at=NOW).change) == ()
