"""What each vendor reports about a run's usage, as its reader reads it (``Reader.usage``).

The samples are real output of the pinned CLIs (tests/vendors/samples/README.md, and the older
tests/fixtures/vendor-samples); the tests marked slow run the real CLIs against the fake
providers' "usage" mode and compare the reader's usage with the counts the provider sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_vendor_readers import read
from tests.vendors import gemini_provider, openai_provider
from tests.vendors import provider as anthropic
from tests.vendors.conftest import vendor_cli
from tests.vendors.gemini_provider import GeminiProvider, gemini_settings
from tests.vendors.provider import Provider
from tests.vendors.test_reset_hints import dirs, private_env, run_cli, run_codex
from wrighty.domain.usage import Usage
from wrighty.vendors.base import MAX_COUNT, Reader
from wrighty.vendors.registry import VENDORS

SAMPLES = Path(__file__).parent / "samples"
FIXTURES = Path(__file__).parent.parent / "fixtures" / "vendor-samples"
SHARED = Path("/work/shared/vendor-samples")
CLAUDE_TWO_TURNS = SAMPLES / "claude-code-2.1.197" / "usage-two-turns.stream.jsonl"
CODEX_USAGE = SAMPLES / "codex-0.169.0" / "usage.jsonl"
GEMINI_TOOL_CALL = SAMPLES / "gemini-cli-0.61.0" / "usage-tool-call.stream.jsonl"
SONNET = "claude-sonnet-4-5-20250929"


def lines(*records: dict[str, Any] | str) -> bytes:
    return b"".join((r if isinstance(r, str) else json.dumps(r)).encode() + b"\n" for r in records)


def without_result(data: bytes) -> bytes:
    """Claude's output cut before its result record (a run killed mid-stream)."""
    kept = [line for line in data.splitlines() if b'"type":"result"' not in line]
    assert len(kept) < len(data.splitlines())
    return b"".join(line + b"\n" for line in kept)


# --- Claude Code ----------------------------------------------------------------------------


def test_claude_reads_the_results_totals_over_two_turns() -> None:
    usage = read("claude", CLAUDE_TWO_TURNS.read_bytes()).usage()
    assert usage == Usage(
        input_tokens=1350,
        output_tokens=340,
        cache_read_tokens=8600,
        cache_write_tokens=620,
        cost_usd=pytest.approx(0.014055),  # type: ignore[arg-type]
        models=(SONNET,),
        turns=2,
        api_ms=79,
        final=True,
    )


def test_claude_its_own_budget_stop_counts_the_tokens_of_model_usage() -> None:
    # The result of `--max-budget-usd` reports zeros in `usage`; `modelUsage` has the counts.
    path = SAMPLES / "claude-code-2.1.197" / "budget-stop.stream.jsonl"
    reader = read("claude", path.read_bytes())
    usage = reader.usage()
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens) == (1200, 300)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (4000, 500)
    assert usage.cost_usd == pytest.approx(0.011175)
    assert usage.final
    assert reader.classify(1).outcome_class.value == "budget-exceeded"


@pytest.mark.parametrize(
    "path",
    [
        SHARED / "claude-code-2.1.197" / "usage.stream.jsonl",
        FIXTURES / "claude-code-2.1.197" / "ok.stream.jsonl",
    ],
    ids=["shared-usage", "fixture-ok"],
)
def test_claude_reads_the_single_turn_samples(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} is not here")
    usage = read("claude", path.read_bytes()).usage()
    assert usage is not None
    assert usage.final
    if path.parent.parent == SHARED:
        assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (1200, 300, 0.0081)
        assert (usage.models, usage.turns, usage.api_ms) == ((SONNET,), 1, 28)
    else:
        assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (5, 2, 0.000075)
        assert usage.models == ("claude-opus-4-8[1m]",)


def test_claude_cut_before_the_result_keeps_each_messages_usage_once() -> None:
    """msg_usage_1 arrives in two assistant records (a text block, a tool call) repeating the
    same usage: counted once. Output is the message start's count (1 per message)."""
    usage = read("claude", without_result(CLAUDE_TWO_TURNS.read_bytes())).usage()
    assert usage == Usage(
        input_tokens=1200 + 150,
        output_tokens=1 + 1,
        cache_read_tokens=4000 + 4600,
        cache_write_tokens=500 + 120,
        models=(SONNET,),
        final=False,
    )


def assistant(message_id: Any, model: Any = SONNET, **usage: Any) -> dict[str, Any]:
    message = {"id": message_id, "model": model, "content": [], "usage": usage}
    return {"type": "assistant", "message": message, "session_id": "s"}


def claude_usage(*records: dict[str, Any] | str) -> Usage | None:
    return read("claude", lines(*records)).usage()


def test_claude_repeated_records_of_a_message_take_the_largest_count() -> None:
    usage = claude_usage(
        assistant("m1", input_tokens=10, output_tokens=1),
        assistant("m1", input_tokens=10, output_tokens=7),
        assistant("m2", "other-model", input_tokens=3, cache_read_input_tokens=2),
        assistant("m1", input_tokens=10, output_tokens=1),
    )
    assert usage == Usage(
        input_tokens=13, output_tokens=7, cache_read_tokens=2, models=(SONNET, "other-model")
    )


def test_claude_many_messages_are_all_counted_in_bounded_memory() -> None:
    reader = read(
        "claude", lines(*(assistant(f"m{i}", input_tokens=1, output_tokens=2) for i in range(500)))
    )
    assert reader.usage() == Usage(input_tokens=500, output_tokens=1000, models=(SONNET,))
    assert len(reader.open_messages) <= 32  # type: ignore[attr-defined]


def test_claude_the_result_replaces_the_partial_usage() -> None:
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "usage": {"input_tokens": 40, "output_tokens": 9},
        "total_cost_usd": 0.5,
        "modelUsage": {"a": {}, "b": {}},
        "num_turns": 3,
        "duration_api_ms": 1234,
    }
    usage = claude_usage(assistant("m1", input_tokens=10, output_tokens=1), result)
    assert usage == Usage(40, 9, 0, 0, 0.5, ("a", "b"), 3, 1234, final=True)


def test_claude_synthetic_and_id_less_messages_add_nothing() -> None:
    assert claude_usage(assistant("m1", "<synthetic>")) == Usage()
    assert claude_usage(assistant(None, input_tokens=5)) == Usage(models=(SONNET,))
    assert claude_usage({"type": "system", "subtype": "init"}) is None


ODD_NUMBERS: list[Any] = [
    -1,
    1.5,
    True,
    "12",
    None,
    [3],
    {"n": 1},
    MAX_COUNT + 1,
    10**30,
]


@pytest.mark.parametrize("odd", ODD_NUMBERS, ids=repr)
def test_claude_odd_counts_are_ignored(odd: Any) -> None:
    result = {
        "type": "result",
        "subtype": "success",
        "usage": {"input_tokens": odd, "output_tokens": 4},
        "total_cost_usd": odd,
        "num_turns": odd,
        "duration_api_ms": odd,
    }
    usage = claude_usage(assistant("m1", input_tokens=odd, output_tokens=2), result)
    cost = 1.5 if odd == 1.5 else None  # a cost need not be whole
    assert usage == Usage(output_tokens=4, cost_usd=cost, models=(SONNET,), final=True)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_claude_non_finite_numbers_are_ignored(literal: str) -> None:
    line = (
        f'{{"type":"result","subtype":"success","usage":{{"input_tokens":{literal},"output_tokens":3}},'
        f'"total_cost_usd":{literal}}}'
    )
    assert claude_usage(line) == Usage(output_tokens=3, final=True)


def test_a_whole_float_count_is_read_and_a_cost_may_be_an_integer() -> None:
    result = {"type": "result", "usage": {"input_tokens": 12.0}, "total_cost_usd": 2}
    assert claude_usage(result) == Usage(input_tokens=12, cost_usd=2.0, final=True)


# --- Codex ----------------------------------------------------------------------------------


def test_codex_reads_the_completed_turns_usage() -> None:
    usage = read("codex", CODEX_USAGE.read_bytes()).usage()
    assert usage == Usage(
        input_tokens=2400 - 1800, output_tokens=350, cache_read_tokens=1800, final=True
    )


def test_codex_the_older_ok_sample() -> None:
    usage = read("codex", (FIXTURES / "codex-0.169.0" / "ok.jsonl").read_bytes()).usage()
    assert usage == Usage(input_tokens=11, output_tokens=3, final=True)


def turn(**usage: Any) -> dict[str, Any]:
    return {"type": "turn.completed", "usage": usage}


def codex_usage(*records: dict[str, Any] | str) -> Usage | None:
    return read("codex", lines(*records)).usage()


def test_codex_sums_turns_and_final_means_the_last_turn_completed() -> None:
    started = {"type": "turn.started"}
    first = turn(input_tokens=100, cached_input_tokens=40, output_tokens=5)
    second = turn(input_tokens=50, cache_write_input_tokens=7, output_tokens=2)
    summed = Usage(input_tokens=110, output_tokens=7, cache_read_tokens=40, cache_write_tokens=7)
    assert codex_usage(started, first, started, second) == Usage(
        **{**summed.__dict__, "final": True}
    )
    assert codex_usage(started, first, started) == Usage(60, 5, 40, final=False)
    failed = {"type": "turn.failed", "error": {"message": "boom"}}
    assert codex_usage(started, first, started, failed) == Usage(60, 5, 40, final=False)
    assert codex_usage(started, failed) is None
    assert codex_usage({"type": "turn.completed"}) is None


@pytest.mark.parametrize("odd", ODD_NUMBERS, ids=repr)
def test_codex_odd_counts_are_ignored(odd: Any) -> None:
    usage = codex_usage(turn(input_tokens=odd, cached_input_tokens=odd, output_tokens=9))
    assert usage == Usage(output_tokens=9, final=True)


def test_codex_cached_above_input_gives_no_negative_input() -> None:
    assert codex_usage(turn(input_tokens=5, cached_input_tokens=8)) == Usage(
        cache_read_tokens=8, final=True
    )


# --- Gemini CLI -----------------------------------------------------------------------------


def test_gemini_reads_the_results_stats_over_two_calls() -> None:
    usage = read("gemini", GEMINI_TOOL_CALL.read_bytes()).usage()
    # 2000 + 2300 prompt, 500 + 1500 cached, 60 + 40 candidates; thoughts are not read.
    assert usage == Usage(
        input_tokens=4300 - 2000,
        output_tokens=100,
        cache_read_tokens=2000,
        models=("gemini-2.5-flash",),
        final=True,
    )


def test_gemini_the_ok_samples() -> None:
    ok = read("gemini", (SAMPLES / "gemini-cli-0.61.0" / "ok.stream.jsonl").read_bytes())
    assert ok.usage() == Usage(7, 3, models=("gemini-2.5-flash",), final=True)
    older = (FIXTURES / "gemini-cli-0.61.0" / "ok.stream.jsonl").read_bytes()
    both = ("gemini-3.5-flash-lite", "mock-model")
    assert read("gemini", older).usage() == Usage(14, 6, models=both, final=True)


def gemini_usage(*records: dict[str, Any] | str) -> Usage | None:
    return read("gemini", lines(*records)).usage()


def test_gemini_before_the_result_nothing_is_reported() -> None:
    data = GEMINI_TOOL_CALL.read_bytes()
    assert read("gemini", without_result(data)).usage() is None


def test_gemini_without_input_reads_input_tokens_less_cached() -> None:
    stats = {"input_tokens": 30, "cached": 10, "output_tokens": 4, "models": {"m": {}}}
    assert gemini_usage({"type": "result", "status": "success", "stats": stats}) == Usage(
        20, 4, 10, models=("m",), final=True
    )


@pytest.mark.parametrize("odd", ODD_NUMBERS, ids=repr)
def test_gemini_odd_counts_are_ignored(odd: Any) -> None:
    stats = {"input_tokens": odd, "cached": odd, "input": odd, "output_tokens": 6, "models": odd}
    usage = gemini_usage({"type": "result", "status": "success", "stats": stats})
    models = ("n",) if isinstance(odd, dict) else ()  # the names are the keys
    assert usage == Usage(output_tokens=6, models=models, final=True)


@pytest.mark.parametrize("stats", [None, "x", [], {}, {"models": {"m": {}}}])
def test_gemini_stats_without_counts_give_none(stats: Any) -> None:
    assert gemini_usage({"type": "result", "status": "success", "stats": stats}) is None


# --- Every reader ---------------------------------------------------------------------------


GARBAGE = [
    b"",
    b"not json",
    b"{",
    b"[1, 2]",
    b'{"type": "result", "usage": "x", "stats": 3, "modelUsage": [1]}',
    b'{"type": "assistant", "message": {"id": 5, "usage": [], "model": 7}}',
    b'{"type": "turn.completed", "usage": {"input_tokens": {"a": 1}}}',
    b'{"type": "result", "usage": {"input_tokens": 1e999}, "modelUsage": {"%s": 1}}'
    % (b"m" * 5000),
    b"\xff\xfe{}",
]


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_odd_lines_never_raise_and_give_bounded_usage(vendor: str) -> None:
    reader: Reader = read(vendor, b"\n".join(GARBAGE))
    usage = reader.usage()
    if usage is not None:
        assert all(0 <= n <= MAX_COUNT for n in (usage.input_tokens, usage.output_tokens))
        assert all(len(model) <= 200 for model in usage.models)


def test_a_reader_by_default_reports_no_usage() -> None:
    class Quiet(Reader):
        def feed(self, stream: Any, line: bytes) -> None: ...

        def classify(self, exit_code: int | None) -> Any: ...

    assert Quiet().usage() is None


# --- The real CLIs against providers that report known counts --------------------------------


@pytest.mark.slow
def test_claude_reports_the_counts_the_provider_sent(tmp_path: Path, provider: Provider) -> None:
    provider.mode = "usage"
    home, work = dirs(tmp_path)
    env = private_env(
        home,
        ANTHROPIC_BASE_URL=provider.url,
        ANTHROPIC_API_KEY="sk-test",
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CLAUDE_CODE_MAX_RETRIES="0",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    argv = [str(vendor_cli("claude")), "-p", "--output-format", "stream-json", "--verbose"]
    ran = run_cli([*argv, "--model", SONNET], work, env)
    assert len(provider.requests) == 2, "the CLI did not make both calls"
    sent = anthropic.USAGE_TURNS
    usage = read("claude", ran.stdout).usage()
    assert usage is not None
    assert usage.final
    assert ran.returncode == 0
    assert (usage.input_tokens, usage.output_tokens) == (
        sum(t["input_tokens"] for t in sent),
        sum(t["output_tokens"] for t in sent),
    )
    assert usage.cache_read_tokens == sum(t["cache_read_input_tokens"] for t in sent)
    assert usage.cache_write_tokens == sum(t["cache_creation_input_tokens"] for t in sent)
    assert usage.models == (SONNET,)
    assert usage.turns == 2
    assert usage.cost_usd is not None
    assert usage.cost_usd > 0
    partial = read("claude", without_result(ran.stdout)).usage()
    assert partial is not None
    assert not partial.final
    assert partial.input_tokens == usage.input_tokens


@pytest.mark.slow
def test_codex_reports_the_counts_the_provider_sent(tmp_path: Path) -> None:
    ran = run_codex(tmp_path, "usage")
    sent = openai_provider.USAGE
    cached = sent["input_tokens_details"]["cached_tokens"]
    assert read("codex", ran.stdout).usage() == Usage(
        input_tokens=sent["input_tokens"] - cached,
        output_tokens=sent["output_tokens"],
        cache_read_tokens=cached,
        final=True,
    )


@pytest.mark.slow
def test_gemini_reports_the_counts_the_provider_sent(tmp_path: Path) -> None:
    home, work = dirs(tmp_path)
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps(gemini_settings()))
    (home / "tmp").mkdir()
    with GeminiProvider("usage") as gemini:
        env = private_env(
            home,
            GEMINI_API_KEY="AIzaFakeGeminiKey0123456789",
            GOOGLE_GEMINI_BASE_URL=gemini.url,
            TMPDIR=str(home / "tmp"),
        )
        argv = [str(vendor_cli("gemini")), "--output-format", "stream-json", "--skip-trust"]
        ran = run_cli([*argv, "-m", "gemini-2.5-flash"], work, env)
        assert len(gemini.streamed) == 2, "the CLI did not make both calls"
    sent = gemini_provider.USAGE_TURNS
    prompt = sum(t["promptTokenCount"] for t in sent)
    cached = sum(t["cachedContentTokenCount"] for t in sent)
    assert read("gemini", ran.stdout, ran.stderr).usage() == Usage(
        input_tokens=prompt - cached,
        output_tokens=sum(t["candidatesTokenCount"] for t in sent),
        cache_read_tokens=cached,
        models=("gemini-2.5-flash",),
        final=True,
    )
