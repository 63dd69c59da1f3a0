"""When a provider's limit lifts, as each vendor reader reads it from the CLI's output
(``Reader.reset_hint``), and whether the provider answered at all (``provider_answered``).

The samples in tests/vendors/samples are real output of the pinned CLIs (their README says how
each was made); the tests marked slow run the real CLIs against loopback providers that refuse
with a reset, and read what they print.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_vendor_readers import read
from tests.vendors.conftest import vendor_cli, with_bwrap_dir
from tests.vendors.gemini_provider import GeminiProvider, gemini_settings
from tests.vendors.openai_provider import OpenAIProvider, codex_provider_args
from tests.vendors.provider import Provider
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.retry import ResetHint
from wrighty.vendors.base import MAX_WAIT_SECONDS, Reader, hint_in_text
from wrighty.vendors.registry import VENDORS

SAMPLES = Path(__file__).parent / "samples"
CLAUDE = "claude-code-2.1.197"
CODEX = "codex-0.169.0"
GEMINI = "gemini-cli-0.61.0"
# The older samples, captured without reset signals (tests/fixtures/vendor-samples/README.md).
FIXTURES = Path(__file__).parent.parent / "fixtures" / "vendor-samples"
VENDOR_OF = {CLAUDE: "claude", CODEX: "codex", GEMINI: "gemini"}


def lines(*records: dict[str, Any] | str) -> bytes:
    return b"".join((r if isinstance(r, str) else json.dumps(r)).encode() + b"\n" for r in records)


def at(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def exit_code_of(sample: Path) -> int:
    return int(sample.with_name(sample.name.split(".")[0] + ".exit").read_text().split()[1])


def wait(source: str, seconds: float) -> ResetHint:
    return ResetHint(source, after_seconds=seconds)


# --- Real output of each CLI ---------------------------------------------------------------

RATE = OutcomeClass.RATE_LIMITED
UNAVAILABLE = OutcomeClass.PROVIDER_UNAVAILABLE
SUCCEEDED = OutcomeClass.SUCCEEDED

SAMPLE_HINTS = [
    # Claude Code: only subscription (OAuth) mode prints a rate_limit_event.
    (CLAUDE, "oauth-429-five-hour", RATE, ResetHint("rate_limit_event", at(1796140014)), False),
    (CLAUDE, "oauth-429-seven-day", RATE, ResetHint("rate_limit_event", at(1796390494)), False),
    (CLAUDE, "oauth-ok-warning", SUCCEEDED, None, True),  # allowed_warning is no refusal
    (CLAUDE, "usage-two-turns", SUCCEEDED, None, True),
    (CLAUDE, "budget-stop", OutcomeClass.BUDGET_EXCEEDED, None, True),  # its own budget stop
    (CLAUDE, "apikey-429-unified-headers", RATE, None, False),
    (CLAUDE, "apikey-429-retry-after", RATE, None, False),  # api_retry: the CLI's own wait
    (CLAUDE, "apikey-529-retry-after", UNAVAILABLE, None, False),
    (
        CLAUDE,
        "apikey-400-spend-limit",
        RATE,
        ResetHint("result text", datetime(2027, 1, 10, tzinfo=UTC)),
        False,
    ),
    # Codex: the usage limit's "try again at 2:47 PM" has no date or zone.
    (CODEX, "usage-limit-today", RATE, None, False),
    (CODEX, "usage-limit-no-plan", RATE, None, False),
    (CODEX, "usage-limit-later-day", RATE, None, False),
    (CODEX, "api-429-retry-after", RATE, None, False),
    (CODEX, "api-503-retry-after", UNAVAILABLE, None, False),
    (CODEX, "stream-rate-limit", RATE, wait("turn.failed", 11.054), False),
    (CODEX, "ok-rate-limit-headers", SUCCEEDED, None, True),
    (CODEX, "usage", SUCCEEDED, None, True),
    # Gemini CLI: Google's text and the CLI's "Suggested retry after"; the longest wait wins.
    (GEMINI, "api-429-retry-delay", RATE, wait("result error", 23.535587677), False),
    (GEMINI, "api-429-retryinfo-only", RATE, wait("result error", 90.0), False),
    (GEMINI, "api-429-long-delay", RATE, wait("result error", 3600.0), False),
    (GEMINI, "api-429-text-only", RATE, wait("result error", 1.5), False),
    (GEMINI, "api-429-capacity", RATE, wait("result error", 8 * 3600 + 44 * 60 + 7.0), False),
    (GEMINI, "api-429-daily", RATE, None, False),
    (GEMINI, "api-503-retry-delay", UNAVAILABLE, wait("result error", 30.0), False),
    (GEMINI, "ok", SUCCEEDED, None, True),
    (GEMINI, "usage-tool-call", SUCCEEDED, None, True),
]


def sample_path(folder: str, name: str) -> Path:
    [path] = (SAMPLES / folder).glob(f"{name}.*jsonl")
    return path


@pytest.mark.parametrize(
    ("folder", "name", "outcome_class", "hint", "answered"),
    SAMPLE_HINTS,
    ids=[f"{VENDOR_OF[case[0]]}-{case[1]}" for case in SAMPLE_HINTS],
)
def test_each_sample_gives_its_reset_hint(
    folder: str, name: str, outcome_class: OutcomeClass, hint: ResetHint | None, answered: bool
) -> None:
    path = sample_path(folder, name)
    reader = read(VENDOR_OF[folder], path.read_bytes())
    assert reader.reset_hint() == hint
    assert reader.provider_answered is answered
    assert reader.classify(exit_code_of(path)).outcome_class is outcome_class


def test_every_sample_is_covered_and_described() -> None:
    covered = {(folder, name) for folder, name, *_ in SAMPLE_HINTS}
    found = {(p.parent.name, p.name.split(".")[0]) for p in SAMPLES.glob("*/*jsonl")}
    assert found == covered
    described = (SAMPLES / "README.md").read_text()
    assert all(f"| {name} |" in described for _, name in found)


def test_the_claude_samples_rate_limit_events_are_as_the_cli_shipped_them() -> None:
    """The field names the reader relies on, as Claude Code 2.1.197 printed them."""
    path = sample_path(CLAUDE, "oauth-429-seven-day")
    [event] = [r for r in map(json.loads, path.read_text().splitlines()) if "rate_limit_info" in r]
    assert event["type"] == "rate_limit_event"
    assert event["rate_limit_info"] == {
        "status": "rejected",
        "resetsAt": 1796390494,
        "rateLimitType": "seven_day",
        "overageStatus": "rejected",
        "overageResetsAt": 1797857494,
        "overageDisabledReason": "out_of_credits",
        "isUsingOverage": False,
    }


@pytest.mark.parametrize(
    "path", sorted(FIXTURES.glob("*/*jsonl")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_the_older_samples_name_no_reset_and_only_answers_count(path: Path) -> None:
    vendor = VENDOR_OF[path.parent.name]
    reader = read(vendor, path.read_bytes())
    assert reader.reset_hint() is None
    answered = path.name.startswith(("ok", "usage"))
    assert reader.provider_answered is answered


# --- Text: what counts as a reset --------------------------------------------------------

TEXT_HINTS = [
    # Claude Code 1.0.x (anthropics/claude-code#4375, #6119, #9046, #11429).
    ("Claude AI usage limit reached|1753441200", at(1753441200)),
    ("You will regain access on 2027-01-10 at 00:00 UTC.", datetime(2027, 1, 10, tzinfo=UTC)),
    ("Limit resets at 2026-12-01T15:00:00+01:00.", datetime(2026, 12, 1, 14, tzinfo=UTC)),
    ("available again 2026-12-01 9:30:15.5 +0200", datetime(2026, 12, 1, 7, 30, 15, 500000, UTC)),
    ("resets at 2026-12-01T15:00Z", datetime(2026, 12, 1, 15, tzinfo=UTC)),
    # A moment beats a wait in the same text.
    ("try again in 5s; access returns 2026-12-02T00:00:00Z", datetime(2026, 12, 2, tzinfo=UTC)),
    ("Please try again in 11.054s. Visit https://platform.openai.com", 11.054),
    ("Your quota will reset after 8h44m7s.", 31447.0),
    ("Rate limit reached. Please try again in 2m0s.", 120.0),
    ("You've hit your usage limit. Try again in 2 hours.", 7200.0),
    ("try again in 2 days 3 hours 5 minutes", 2 * 86400 + 3 * 3600 + 300.0),
    ("try again in 1 hour and 30 minutes", 5400.0),
    ("try again in about 5 mins", 300.0),
    ("Try again in ~3 hrs", 10800.0),
    ("Please retry in 150ms", 0.15),
    ("Please retry in 23.5s.\nSuggested retry after 30s.", 30.0),  # the longest
    ("resets in 45 seconds", 45.0),
    ("429 Too Many Requests; retry-after: 120", 120.0),
    ('{"Retry-After": "90"}', 90.0),
    ('"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"23s"}]', 23.0),
    ('retryDelay: "500ms"', 0.5),
]


@pytest.mark.parametrize(("text", "expected"), TEXT_HINTS)
def test_a_reset_in_text_is_read(text: str, expected: datetime | float) -> None:
    hint = hint_in_text(text, "result text")
    if isinstance(expected, datetime):
        assert hint == ResetHint("result text", resets_at=expected)
    else:
        assert hint == ResetHint("result text", after_seconds=expected)


NO_RESET = [
    "",
    "Please try again later.",
    "API Error: 529 Overloaded. … try again in a moment.",
    "You\u2019ve hit your usage limit. Try again at 2:47 PM.",  # Codex: local time, no date
    "or try again at Dec 4th, 2026 2:48 PM.",  # a date, but no zone
    "You've hit your session limit · resets 3:46pm (UTC)",  # Claude Code: a zone, no date
    "You've hit your weekly limit · resets Dec 4, 1:21pm (UTC)",  # no year
    "resets at 2026-12-01T15:00:00",  # no zone
    "access returns 2026-13-45T99:99Z",  # no such moment
    "regain access on 1970-01-01 at 00:00 UTC",  # too early
    "regain access on 2150-01-01 at 00:00 UTC",  # too late
    "usage limit reached|99999999999",  # year 5138
    "usage limit reached|1796140014000",  # milliseconds
    "try again in 0s",
    "try again in 0.0 seconds",
    "try again in -5s",
    "try again in 31 days",
    f"try again in {MAX_WAIT_SECONDS + 1:.0f}s",
    "try again in 2 months",
    "try again in 999999999999999999999s",
    "retry-after: 99999999999",
    "retry-after: -1",
    "retry-after: 1e400",
    'retryDelay: "-3s"',
    'retryDelay: "3 minutes"',
    "Retrying after 6173ms...",  # the CLI's own delay, not the provider's
    "The job ran in 5s; retry in order.",
    "try again in " + "9" * 5000 + "s",
    "\x00\ufffd" * 1000,
]


@pytest.mark.parametrize("text", NO_RESET)
def test_text_without_a_readable_reset_gives_none(text: str) -> None:
    assert hint_in_text(text, "result text") is None
    assert hint_in_text(None, "result text") is None


def test_of_two_moments_the_later_is_read() -> None:
    text = "resets at 2026-12-01T15:00Z; weekly limit resets at 2026-12-04T15:00Z"
    assert hint_in_text(text, "x") == ResetHint("x", datetime(2026, 12, 4, 15, tzinfo=UTC))


def test_a_wait_at_the_limit_is_accepted() -> None:
    hint = hint_in_text("try again in 30 days", "x")
    assert hint == ResetHint("x", after_seconds=MAX_WAIT_SECONDS)


def test_a_reader_by_default_names_no_reset_and_no_answer() -> None:
    class Plain(Reader):
        def feed(self, stream: Any, line: bytes) -> None: ...

        def classify(self, exit_code: int | None) -> Any: ...

    plain = Plain()
    assert plain.reset_hint() is None
    assert plain.provider_answered is False


# --- Claude's rate_limit_event, field by field --------------------------------------------

SESSION = "0ac61503-6c96-4de6-87f3-fe4a287a2aba"
RESET = 1796140014


def limit_event(**info: Any) -> dict[str, Any]:
    return {"type": "rate_limit_event", "rate_limit_info": info, "session_id": SESSION}


def claude_hint(*records: dict[str, Any] | str) -> ResetHint | None:
    return read("claude", lines(*records)).reset_hint()


def test_claude_reads_the_reset_of_a_rejected_limit() -> None:
    hint = claude_hint(limit_event(status="rejected", resetsAt=RESET, rateLimitType="five_hour"))
    assert hint == ResetHint("rate_limit_event", resets_at=at(RESET))
    assert hint is not None
    assert hint.resets_at is not None
    assert hint.resets_at.tzinfo is UTC


def test_claude_falls_back_to_the_overage_reset_only_when_overage_was_refused_too() -> None:
    both = limit_event(status="rejected", overageStatus="rejected", overageResetsAt=RESET)
    assert claude_hint(both) == ResetHint("rate_limit_event", resets_at=at(RESET))
    allowed = limit_event(status="rejected", overageStatus="allowed", overageResetsAt=RESET)
    assert claude_hint(allowed) is None
    primary = limit_event(
        status="rejected", resetsAt=RESET, overageStatus="rejected", overageResetsAt=RESET + 60
    )
    assert claude_hint(primary) == ResetHint("rate_limit_event", resets_at=at(RESET))


@pytest.mark.parametrize("status", ["allowed", "allowed_warning"])
def test_claude_a_limit_that_allows_again_ends_the_last_reset(status: str) -> None:
    rejected = limit_event(status="rejected", resetsAt=RESET)
    assert claude_hint(rejected, limit_event(status=status, resetsAt=RESET + 60)) is None
    assert claude_hint(limit_event(status=status, resetsAt=RESET)) is None


def test_claude_a_rejected_limit_covered_by_overage_is_no_refusal() -> None:
    event = limit_event(status="rejected", resetsAt=RESET, isUsingOverage=True)
    assert claude_hint(event) is None


def test_claude_the_last_reset_wins() -> None:
    first = limit_event(status="rejected", resetsAt=RESET)
    second = limit_event(status="rejected", resetsAt=RESET + 3600)
    assert claude_hint(first, second) == ResetHint("rate_limit_event", resets_at=at(RESET + 3600))


def test_claude_a_failed_results_text_is_read_but_not_a_successful_one() -> None:
    failed = {"type": "result", "is_error": True, "result": "usage limit reached|1796140014"}
    assert claude_hint(failed) == ResetHint("result text", resets_at=at(RESET))
    done = {"type": "result", "subtype": "success", "is_error": False,
            "result": "Done. The API said: try again in 5 minutes."}  # fmt: skip
    assert claude_hint(done) is None


def test_claude_a_result_text_without_a_reset_keeps_the_events() -> None:
    event = limit_event(status="rejected", resetsAt=RESET)
    result = {"type": "result", "is_error": True, "result": "You've hit your limit · resets 3pm"}
    assert claude_hint(event, result) == ResetHint("rate_limit_event", resets_at=at(RESET))


@pytest.mark.parametrize(
    "info",
    [
        "rejected",
        None,
        [],
        {},
        {"status": "rejected"},
        {"resetsAt": RESET},  # no status
        {"status": "REJECTED", "resetsAt": RESET},
        {"status": "rejected", "resetsAt": str(RESET)},
        {"status": "rejected", "resetsAt": True},
        {"status": "rejected", "resetsAt": None},
        {"status": "rejected", "resetsAt": -RESET},
        {"status": "rejected", "resetsAt": 0},
        {"status": "rejected", "resetsAt": RESET * 1000},  # milliseconds
        {"status": "rejected", "resetsAt": 10**30},
        {"status": "rejected", "resetsAt": 10**400},
        {"status": "rejected", "resetsAt": [RESET]},
        {"status": "rejected", "resetsAt": {"at": RESET}},
    ],
)
def test_claude_an_odd_rate_limit_event_gives_no_reset(info: Any) -> None:
    event = {"type": "rate_limit_event", "rate_limit_info": info}
    assert claude_hint(event) is None


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "1e-999"])
def test_claude_a_non_finite_reset_gives_no_reset(literal: str) -> None:
    # Python's JSON parser accepts these literals, so a CLI line could carry them.
    line = '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":%s}}'
    assert claude_hint(line % literal) is None


def test_claude_answered_means_an_assistant_message_that_is_model_output() -> None:
    def answered(*records: dict[str, Any]) -> bool:
        return read("claude", lines(*records)).provider_answered

    model = {"model": "claude-sonnet-5", "content": [{"type": "text", "text": "hi"}]}
    synthetic = {"model": "<synthetic>", "content": [{"type": "text", "text": "No response"}]}
    assert answered({"type": "assistant", "message": model})
    assert not answered({"type": "assistant", "message": model, "error": "rate_limit"})
    assert not answered({"type": "assistant", "message": synthetic})
    assert not answered({"type": "assistant", "message": "hi"})
    assert not answered({"type": "assistant"})
    assert not answered({"type": "user", "message": model})
    # Once answered, a later refusal does not take it back.
    assert answered(
        {"type": "assistant", "message": model},
        {"type": "assistant", "message": synthetic, "error": "rate_limit"},
    )


# --- Codex and Gemini: the error texts they carry -----------------------------------------


def test_codex_reads_error_events_and_the_failed_turn_the_last_wins() -> None:
    error = {"type": "error", "message": "Reconnecting... retry-after: 30"}
    failed = {"type": "turn.failed", "error": {"message": "rate limit: try again in 2m0s"}}
    reader = read("codex", lines(error))
    assert reader.reset_hint() == ResetHint("error event", after_seconds=30.0)
    reader = read("codex", lines(error, failed))
    assert reader.reset_hint() == ResetHint("turn.failed", after_seconds=120.0)
    # A failed turn that names no reset leaves the last one named.
    quiet = {"type": "turn.failed", "error": {"message": "exceeded retry limit, last status: 429"}}
    assert read("codex", lines(error, quiet)).reset_hint() == ResetHint("error event", None, 30.0)


@pytest.mark.parametrize(
    ("item", "answered"),
    [
        ({"id": "item_0", "type": "agent_message", "text": "hi"}, True),
        ({"id": "item_0", "type": "reasoning", "text": "thinking"}, True),
        ({"id": "item_1", "type": "command_execution", "command": "ls"}, True),
        ({"id": "item_2", "type": "error", "message": "a warning"}, False),
        ({"id": "item_3"}, False),
        ("agent_message", False),
    ],
)
def test_codex_answered_means_an_item_of_model_output(item: Any, answered: bool) -> None:
    for kind in ("item.started", "item.updated", "item.completed"):
        reader = read("codex", lines({"type": kind, "item": item}))
        assert reader.provider_answered is answered
    assert read("codex", lines({"type": "turn.completed", "item": item})).provider_answered is False


def test_gemini_reads_the_results_error_and_error_events() -> None:
    message = "[API Error: x\nSuggested retry after 7s.]"
    result = {"type": "result", "status": "error", "error": {"type": "unknown", "message": message}}
    event = {"type": "error", "severity": "error", "message": "Please retry in 2.5s"}
    assert read("gemini", lines(result)).reset_hint() == ResetHint("result error", None, 7.0)
    assert read("gemini", lines(event)).reset_hint() == ResetHint("error event", None, 2.5)
    assert read("gemini", lines(event, result)).reset_hint() == ResetHint("result error", None, 7.0)
    # Text on standard error (the CLI's stack traces) is not read for a reset.
    assert read("gemini", b"", b"Suggested retry after 7s.\n").reset_hint() is None


@pytest.mark.parametrize(
    ("record", "answered"),
    [
        ({"type": "message", "role": "assistant", "content": "hi", "delta": True}, True),
        ({"type": "tool_use", "tool_name": "read_file", "tool_id": "t1", "parameters": {}}, True),
        ({"type": "message", "role": "assistant", "content": ""}, False),
        ({"type": "message", "role": "assistant", "content": ["hi"]}, False),
        ({"type": "message", "role": "user", "content": "say hi"}, False),
        ({"type": "error", "severity": "error", "message": "empty response"}, False),
        ({"type": "result", "status": "error"}, False),
    ],
)
def test_gemini_answered_means_response_text_or_a_tool_call(
    record: dict[str, Any], answered: bool
) -> None:
    assert read("gemini", lines(record)).provider_answered is answered


# --- No input makes a reader raise, and what it keeps stays small --------------------------

GARBAGE = [
    b"",
    b"\xff\xfe\x00garbage",
    b"{",
    b"[1, 2]",
    b"null",
    b'{"type": null, "error": null, "message": 5, "item": 5, "rate_limit_info": 5}',
    b'{"type": "result", "is_error": true, "result": 12, "error": {"message": ["x"]}}',
    b'{"type": "error", "message": {"text": "try again in 5s"}}',
    b'{"type": "turn.failed", "error": "try again in 5s"}',
    b'{"a":' + b"[" * 100_000,
    b'{"type": "rate_limit_event", "rate_limit_info": ' + b"[" * 100_000,
    b'{"type": "result", "is_error": true, "result": "' + b"try again in 9s " * 500 + b'"}',
]


def mutations(line: bytes, rng: random.Random) -> Iterator[bytes]:
    """``line`` cut short, and with its numbers and strings swapped for odd values."""
    for cut in (1, len(line) // 3, len(line) // 2, len(line) - 1):
        yield line[:cut]
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return
    odd: list[Any] = [None, True, -1, 0, 10**30, -(10**30), 1e308, "", "x" * 5000, [], {}]
    for _ in range(20):
        yield json.dumps(_swap(record, rng, odd)).encode()
    yield line.replace(b"1796", b"NaN").replace(b'"23s"', b"Infinity")


def _swap(value: Any, rng: random.Random, odd: list[Any]) -> Any:
    if isinstance(value, dict):
        return {key: _swap(item, rng, odd) for key, item in value.items()}
    if isinstance(value, list):
        return [_swap(item, rng, odd) for item in value]
    if not isinstance(value, bool) and isinstance(value, int | float | str) and rng.random() < 0.3:
        return rng.choice(odd)
    return value


def all_sample_lines(folder: str) -> list[bytes]:
    found = []
    for path in sorted((SAMPLES / folder).glob("*jsonl")):
        found.extend(path.read_bytes().splitlines())
    return found


def check_hint(hint: ResetHint | None) -> None:
    """A hint, if any, is one of the two forms and within bounds."""
    if hint is None:
        return
    assert (hint.resets_at is None) != (hint.after_seconds is None)
    if hint.resets_at is not None:
        assert hint.resets_at.tzinfo is UTC
        assert datetime(2000, 1, 1, tzinfo=UTC) <= hint.resets_at < datetime(2100, 1, 1, tzinfo=UTC)
    if hint.after_seconds is not None:
        assert math.isfinite(hint.after_seconds)
        assert 0 < hint.after_seconds <= MAX_WAIT_SECONDS


@pytest.mark.parametrize("folder", [CLAUDE, CODEX, GEMINI])
def test_odd_and_mutated_lines_never_raise_and_give_bounded_hints(folder: str) -> None:
    vendor = VENDOR_OF[folder]
    rng = random.Random(15)
    reader = VENDORS[vendor].reader()
    for line in [*GARBAGE, *all_sample_lines(folder)]:
        for variant in [line, *mutations(line, rng)]:
            for stream in ("stdout", "stderr"):
                reader.feed(stream, variant)
                check_hint(reader.reset_hint())
                single = VENDORS[vendor].reader()
                single.feed(stream, variant)
                check_hint(single.reset_hint())
                assert isinstance(single.provider_answered, bool)
        reader.classify(1)


@pytest.mark.parametrize("vendor", ["claude", "codex", "gemini"])
def test_a_reader_keeps_the_hint_not_the_lines(vendor: str) -> None:
    reader = VENDORS[vendor].reader()
    event = limit_event(status="rejected", resetsAt=RESET)
    failed = {"type": "turn.failed", "error": {"message": "try again in 5s"}}
    result = {"type": "result", "status": "error", "is_error": True,
              "result": "try again in 5s", "error": {"message": "try again in 5s"}}  # fmt: skip
    for _ in range(2000):
        for record in (event, failed, result):
            reader.feed("stdout", json.dumps(record).encode())
    for value in vars(reader).values():
        # The Claude reader's usage: a tuple of counts or names, a few recent message ids.
        assert not isinstance(value, dict | tuple) or len(value) <= 32
        assert value is None or isinstance(value, str | bool | int | ResetHint | dict | tuple)
        assert not isinstance(value, str) or len(value) <= 2000
    assert reader.reset_hint() is not None


# --- The real CLIs against providers that refuse with a reset -------------------------------


def private_env(home: Path, **extra: str) -> dict[str, str]:
    kept = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("WRIGHTY_", "ANTHROPIC", "CLAUDE", "CODEX", "OPENAI", "GEMINI"))
        and not key.startswith("GOOGLE")
    }
    return with_bwrap_dir(
        {**kept, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), **extra}
    )


def run_cli(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        argv, cwd=cwd, env=env, input=b"say hi", capture_output=True, timeout=120, check=False
    )


def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    return home, work


@pytest.mark.slow
@pytest.mark.parametrize("login", ["subscription", "api-key"])
def test_claude_prints_its_usage_limits_reset_only_when_logged_in_to_a_subscription(
    tmp_path: Path, provider: Provider, login: str
) -> None:
    provider.mode = "usage-limit"
    provider.reset_at = int((datetime.now(UTC) + timedelta(hours=3)).timestamp())
    home, work = dirs(tmp_path)
    key = (
        {"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-fake"}
        if login == "subscription"
        else {"ANTHROPIC_API_KEY": "sk-test"}
    )
    env = private_env(
        home,
        ANTHROPIC_BASE_URL=provider.url,
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CLAUDE_CODE_MAX_RETRIES="0",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        **key,
    )
    argv = [str(vendor_cli("claude")), "-p", "--output-format", "stream-json", "--verbose"]
    ran = run_cli(argv, work, env)
    reader = read("claude", ran.stdout, ran.stderr)
    assert reader.classify(ran.returncode).outcome_class is OutcomeClass.RATE_LIMITED
    assert provider.requests, "the CLI never reached the provider"
    assert reader.provider_answered is False
    if login == "subscription":
        assert reader.reset_hint() == ResetHint("rate_limit_event", at(provider.reset_at))
    else:
        assert reader.reset_hint() is None
        assert b"rate_limit_event" not in ran.stdout


def run_codex(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[bytes]:
    """`codex exec --json` against a fake OpenAI provider answering as ``mode`` says."""
    home, work = dirs(tmp_path)
    (home / ".codex").mkdir()
    with OpenAIProvider(mode) as openai:
        env = private_env(home, CODEX_API_KEY="sk-fake", CODEX_HOME=str(home / ".codex"))
        argv = [str(vendor_cli("codex")), "exec", "--json", "--skip-git-repo-check"]
        ran = run_cli([*argv, *codex_provider_args(openai.url), "-"], work, env)
        assert openai.requests, "the CLI never reached the provider"
    return ran


@pytest.mark.slow
def test_codex_reads_openais_try_again_in_from_a_rate_limited_stream(tmp_path: Path) -> None:
    ran = run_codex(tmp_path, "stream-rate")
    reader = read("codex", ran.stdout)
    assert reader.classify(ran.returncode).outcome_class is OutcomeClass.RATE_LIMITED
    # RATE_MESSAGE ends "Please try again in 2s."
    assert reader.reset_hint() == ResetHint("turn.failed", after_seconds=2.0)
    assert reader.provider_answered is False


@pytest.mark.slow
def test_gemini_reads_the_retry_delay_of_a_quota_refusal(tmp_path: Path) -> None:
    home, work = dirs(tmp_path)
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps(gemini_settings()))
    (home / "tmp").mkdir()
    with GeminiProvider("quota") as gemini:  # RetryInfo retryDelay "7s"
        env = private_env(
            home,
            GEMINI_API_KEY="AIzaFakeGeminiKey0123456789",
            GOOGLE_GEMINI_BASE_URL=gemini.url,
            TMPDIR=str(home / "tmp"),
        )
        argv = [str(vendor_cli("gemini")), "--output-format", "stream-json", "--skip-trust"]
        ran = run_cli([*argv, "-m", "gemini-2.5-flash"], work, env)
        assert gemini.streamed, "the CLI never reached the provider"
    reader = read("gemini", ran.stdout, ran.stderr)
    assert reader.classify(ran.returncode).outcome_class is OutcomeClass.RATE_LIMITED
    assert reader.reset_hint() == ResetHint("result error", after_seconds=7.0)
    assert reader.provider_answered is False
