"""Usage and budgets (docs/usage.md) with the real Claude Code CLI against the loopback provider's
"script" mode, which answers each call with the token counts the test chose.

The agent runs through a wrapper that writes its argv down before it execs the real CLI, so
that the tests can see the `--max-budget-usd` wrighty passed. The model is a real name
(claude-sonnet-4-5-20250929) so that Claude Code prices the calls from its own table.
"""

from __future__ import annotations

import json
import shlex
import signal
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.vendors.conftest import (
    VendorProject,
    argv_wrapper,
    claude_agent,
    finish,
    next_event,
    started_argvs,
    wait_for,
)
from tests.vendors.provider import USAGE_TURNS, Provider, Turn
from tests.vendors.test_claude import vendor_session_ids
from wrighty.domain.model import Run
from wrighty.domain.usage import Usage

pytestmark = pytest.mark.slow

SONNET = "claude-sonnet-4-5-20250929"
# Claude Code's own price of SONNET in USD per million tokens: input, output, cache read,
# cache write (the tests check the CLI's figures against it).
SONNET_PRICE = {
    "input_tokens": 3.0,
    "output_tokens": 15.0,
    "cache_read_input_tokens": 0.30,
    "cache_creation_input_tokens": 3.75,
}
# The same price as wrighty.json's `pricing` entry, for wrighty's estimate of a partial run.
SONNET_PRICING = {
    SONNET: {
        "inputPerMtok": 3.0,
        "outputPerMtok": 15.0,
        "cacheReadPerMtok": 0.30,
        "cacheWritePerMtok": 3.75,
    }
}
TASK = "Reply with the single word: done."


def cost_of(counts: dict[str, int]) -> float:
    return sum(counts[kind] * price for kind, price in SONNET_PRICE.items()) / 1_000_000


def summed(*turns: dict[str, int]) -> dict[str, int]:
    return {kind: sum(turn[kind] for turn in turns) for kind in SONNET_PRICE}


def tokens_of(usage: Usage) -> dict[str, int]:
    """A recorded usage's counts, named as the Messages API names them."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
    }


def budget_flags(argv: list[str]) -> list[str]:
    return [arg for arg in argv if arg.startswith("--max-budget-usd")]


def configured(
    project: VendorProject,
    provider: Provider,
    *turns: Turn,
    worker: dict[str, Any] | None = None,
    **sections: Any,
) -> Path:
    """Claude through the argv wrapper, the provider answering ``turns`` in order, with the
    ``worker`` settings and top-level ``sections`` of wrighty.json given; the log of the CLI's
    argvs."""
    provider.mode = "script"
    provider.script = list(turns)
    wrapper, log = argv_wrapper(project.home)
    agents = claude_agent(provider, project.home, executable=str(wrapper), args=["--model", SONNET])
    project.configure(
        agents, defaultAgent="claude", workspaceMode="directory", pollSeconds=0.1, **(worker or {})
    )
    if sections:
        project.configure_sections(**sections)
    return log


def records(project: VendorProject, item_id: int, run: Run) -> list[dict[str, Any]]:
    """What the CLI printed on its standard output in ``run``."""
    log = project.run_log(item_id, run.run_id)
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


def result_record(project: VendorProject, item_id: int, run: Run) -> dict[str, Any]:
    [result] = [r for r in records(project, item_id, run) if r.get("type") == "result"]
    return result


def processes_of(run_id: str) -> list[psutil.Process]:
    """The live processes started for a run (wrighty marks each with WRIGHTY_RUN_ID)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("WRIGHTY_RUN_ID") == run_id:
                found.append(process)
        except (psutil.Error, OSError):
            continue
    return found


# -- 1. what a run records is what the provider sent and the CLI printed --------------------


def test_a_runs_recorded_usage_is_what_the_provider_sent_and_the_cli_printed(
    vendor_project: VendorProject, provider: Provider
) -> None:
    first, second = USAGE_TURNS  # a text and a tool call, then the answer to the tool's result
    configured(vendor_project, provider, Turn(first, tool=True), Turn(second))
    item_id = vendor_project.create(TASK)
    _, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
    assert vendor_project.show(item_id)["state"] == "done"
    assert (provider.scripted, provider.script) == (2, []), "the CLI did not make both calls"

    [run] = vendor_project.runs(item_id)
    usage = run.usage
    assert usage is not None
    sent = summed(first, second)
    assert tokens_of(usage) == sent
    assert usage.final
    assert (usage.models, usage.turns, usage.cost_source) == ((SONNET,), 2, "reported")
    assert run.agent == "claude"
    # The CLI's own figures, as it printed them in its result record.
    result = result_record(vendor_project, item_id, run)
    assert result["subtype"] == "success"
    assert {kind: result["usage"][kind] for kind in sent} == sent
    assert usage.cost_usd == result["total_cost_usd"]
    assert usage.cost_usd == pytest.approx(cost_of(sent))  # Claude Code's price of the model
    [(model, by_model)] = result["modelUsage"].items()
    assert model == SONNET
    assert (
        by_model["inputTokens"],
        by_model["outputTokens"],
        by_model["cacheReadInputTokens"],
        by_model["cacheCreationInputTokens"],
        by_model["costUSD"],
    ) == (
        sent["input_tokens"],
        sent["output_tokens"],
        sent["cache_read_input_tokens"],
        sent["cache_creation_input_tokens"],
        result["total_cost_usd"],
    )
    assert usage.api_ms == result["duration_api_ms"]
    # show --json says the same, for the run and for the item.
    shown = vendor_project.show(item_id)
    for shown_usage in (shown["runs"][0]["usage"], shown["usage"]):
        assert (shown_usage["input_tokens"], shown_usage["output_tokens"]) == (
            sent["input_tokens"],
            sent["output_tokens"],
        )
        assert (shown_usage["cache_read_tokens"], shown_usage["cache_write_tokens"]) == (
            sent["cache_read_input_tokens"],
            sent["cache_creation_input_tokens"],
        )
        assert (shown_usage["final"], shown_usage["models"]) == (True, [SONNET])
        assert shown_usage["cost_usd"] == pytest.approx(result["total_cost_usd"])


# -- 2. an agent's day budget holds its next item queued -------------------------------------

# Each run's calls: 1,000 tokens.
PER_RUN = {
    "input_tokens": 600,
    "cache_read_input_tokens": 300,
    "cache_creation_input_tokens": 60,
    "output_tokens": 40,
}


def test_a_day_token_budget_starts_as_many_runs_as_it_allows_and_holds_the_next_item(
    vendor_project: VendorProject, provider: Provider
) -> None:
    day_budget = 2 * sum(PER_RUN.values())  # two runs' worth: the second one reaches it
    configured(
        vendor_project,
        provider,
        *(Turn(PER_RUN) for _ in range(3)),  # a third run would be answered too
        budgets={"perDay": {"claude": {"maxTokens": day_budget}}},
    )
    items = [vendor_project.create(TASK) for _ in range(3)]
    # Idle 2 s after the second run: some twenty claim passes at pollSeconds 0.1.
    events, worked = vendor_project.run_worker("--idle-timeout", "2s")
    assert worked.returncode == 0, worked.stderr

    assert [e["item_id"] for e in events if e["event"] == "claimed"] == items[:2]
    assert provider.scripted == 2
    assert len(provider.requests) == 2, "the held item's run reached the provider"
    for item_id in items[:2]:
        shown = vendor_project.show(item_id)
        assert shown["state"] == "done"
        [run] = vendor_project.runs(item_id)
        assert run.outcome_class is not None
        assert run.outcome_class.value == "succeeded"
        assert run.usage is not None
        assert run.usage.tokens == sum(PER_RUN.values())
    held = vendor_project.show(items[2])
    assert (held["state"], held["runs"]) == ("queued", [])
    assert held["hold"]["agent"] == "claude"
    assert vendor_project.runs(items[2]) == []
    [hold] = [e for e in events if e["event"] == "budget-held"]  # said once
    assert hold["agent"] == "claude"
    assert f"({day_budget:,} tokens) is spent" in hold["reason"]
    assert events.index(hold) > max(i for i, e in enumerate(events) if e["event"] == "settled")
    shown_text = vendor_project.wrighty("show", str(items[2]))
    assert shown_text.returncode == 0, shown_text.stderr
    assert "held" in shown_text.stdout
    assert "claude's budget for the day" in " ".join(shown_text.stdout.split())


# -- 3. an item budget stops a long answer mid-stream; a raised budget resumes it -----------

# A long answer's first call: a large context (its input counts, in `message_start`), a short
# text block, then a second block that streams until the CLI is stopped.
LONG = {
    "input_tokens": 40_000,
    "cache_read_input_tokens": 2_000,
    "cache_creation_input_tokens": 1_000,
    "output_tokens": 5_000,  # in the `message_delta` a stopped answer never reaches
}
# What the CLI's assistant record of the first block reports: the start's counts.
LONG_STARTED = {**LONG, "output_tokens": 1}
# The resumed run's call: 3,320 tokens, $0.002175; the raised budget holds both runs.
RESUMED = {
    "input_tokens": 200,
    "cache_read_input_tokens": 3_000,
    "cache_creation_input_tokens": 100,
    "output_tokens": 20,
}


# Far longer than a stopped run takes (about a second).
HEARTBEAT_SECONDS = 30


@pytest.mark.parametrize(
    ("bound", "budget", "raised"),
    [
        # 43,001 tokens seen, past 20,000; raised to twice that.
        ("--max-tokens", "20000", "86002"),
        # $0.124365 estimated (pricing: Claude's partial records carry no cost), past $0.05;
        # raised to twice that, rounded up to the cent.
        ("--max-cost-usd", "0.05", "0.25"),
    ],
)
def test_an_item_budget_stops_a_long_answer_mid_stream_and_a_raised_one_resumes_it(
    vendor_project: VendorProject, provider: Provider, bound: str, budget: str, raised: str
) -> None:
    log = configured(
        vendor_project,
        provider,
        Turn(LONG, text="Reading.", slow=True),
        Turn(RESUMED),
        worker={"heartbeatSeconds": HEARTBEAT_SECONDS},
        pricing=SONNET_PRICING,
    )
    # A run time limit, so that a budget that fails to stop the answer fails the test.
    item_id = vendor_project.create(TASK, bound, budget, "--timeout", "30s")
    worker = vendor_project.start_worker("--once")
    spawned = next_event(worker, "spawned")
    settled = next_event(worker, "settled")
    finish(worker)
    assert (settled["state"], settled["reason_code"]) == ("needs-attention", "budget-exceeded")

    # The answer was still streaming: the CLI never got to its result, nor to a second call.
    assert provider.streaming.is_set()
    assert provider.scripted == 1
    [run] = vendor_project.runs(item_id)
    assert not any(r.get("type") == "result" for r in records(vendor_project, item_id, run))
    assert processes_of(run.run_id) == []
    assert not psutil.pid_exists(spawned["pid"])
    assert run.outcome_class is not None
    assert (run.outcome_class.value, run.confidence) == ("budget-exceeded", "authoritative")
    assert "wrighty stopped the agent (budget)" in (run.diagnostic or "")
    # Stopped on the output line that passed the budget, not at the next heartbeat.
    assert run.ended_at is not None
    assert (run.ended_at - run.started_at).total_seconds() < HEARTBEAT_SECONDS / 3
    # What the CLI had printed of the answer: partial, the start's counts.
    assert run.usage is not None
    assert tokens_of(run.usage) == LONG_STARTED
    assert not run.usage.final
    if bound == "--max-cost-usd":
        assert run.usage.cost_source == "estimated"
        assert run.usage.cost_usd == pytest.approx(cost_of(LONG_STARTED))
    stopped = vendor_project.show(item_id)
    assert (stopped["state"], stopped["reason_code"]) == ("needs-attention", "budget-exceeded")
    assert stopped["next_action"] == f"wrighty requeue {item_id} --resume {bound} {raised}"
    assert stopped["budget"]["exceeded"] is True
    session_id = stopped["session"]["session_id"]

    requeued = vendor_project.wrighty(*shlex.split(stopped["next_action"])[1:])
    assert requeued.returncode == 0, requeued.stderr
    events, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
    assert [e["session_id"] for e in events if e["event"] == "resumed"] == [session_id]
    after = vendor_project.show(item_id)
    assert after["state"] == "done"
    assert after["budget"]["exceeded"] is False  # the raised budget holds both runs
    first, second = vendor_project.runs(item_id)
    assert (second.kind.value, second.session_id) == ("resume", session_id)
    assert first.session_id == session_id
    assert second.outcome_class is not None
    assert second.outcome_class.value == "succeeded"
    assert second.usage is not None
    assert tokens_of(second.usage) == RESUMED
    assert vendor_session_ids(vendor_project, after) == {session_id}
    assert provider.scripted == 2
    resumed_request = provider.requests[-1]
    assert "Reply with the single word" in json.dumps(resumed_request["messages"][0])
    # Claude got what was left of a cost budget to stop itself at; of a token budget, nothing.
    fresh_argv, resume_argv = started_argvs(log)
    assert f"--resume={session_id}" in resume_argv
    if bound == "--max-cost-usd":
        left = float(raised) - first.usage.cost_usd  # type: ignore[union-attr]
        assert budget_flags(fresh_argv) == ["--max-budget-usd=0.05"]
        [flag] = budget_flags(resume_argv)
        assert float(flag.split("=")[1]) == pytest.approx(left, abs=1e-6)
    else:
        assert budget_flags(fresh_argv) == budget_flags(resume_argv) == []


# -- 4. Claude's own stop at --max-budget-usd -----------------------------------------------


def test_claude_stops_itself_at_the_budget_wrighty_passed_and_it_is_budget_exceeded(
    vendor_project: VendorProject, provider: Provider
) -> None:
    first, second = USAGE_TURNS  # $0.011175, then $0.00288
    log = configured(vendor_project, provider, Turn(first, tool=True), Turn(second), Turn(second))
    item_id = vendor_project.create(TASK, "--max-cost-usd", "0.005")
    _, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr

    [argv] = started_argvs(log)
    assert budget_flags(argv) == ["--max-budget-usd=0.005"]
    # The first call cost more than that: the CLI ran the tool, then stopped before the next.
    assert provider.scripted == 1
    [run] = vendor_project.runs(item_id)
    result = result_record(vendor_project, item_id, run)
    assert (result["subtype"], result["is_error"]) == ("error_max_budget_usd", True)
    assert result["errors"] == ["Reached maximum budget ($0.005)"]
    assert result["total_cost_usd"] == pytest.approx(cost_of(first))
    assert run.outcome_class is not None
    assert (run.outcome_class.value, run.confidence) == ("budget-exceeded", "authoritative")
    assert (run.diagnostic or "").startswith("claude: error_max_budget_usd")  # not wrighty's stop
    assert run.exit_code == 1
    # The run's usage is the call's: the cost the CLI printed, and its tokens (which this
    # result's `usage` reports as zeros; its `modelUsage` has them).
    assert run.usage is not None
    assert run.usage.final
    assert run.usage.cost_usd == result["total_cost_usd"]
    assert tokens_of(run.usage) == first
    stopped = vendor_project.show(item_id)
    assert (stopped["state"], stopped["reason_code"]) == ("needs-attention", "budget-exceeded")
    assert stopped["next_action"] == f"wrighty requeue {item_id} --resume --max-cost-usd 0.03"

    requeued = vendor_project.wrighty(*shlex.split(stopped["next_action"])[1:])
    assert requeued.returncode == 0, requeued.stderr
    _, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
    assert vendor_project.show(item_id)["state"] == "done"
    _, resumed = vendor_project.runs(item_id)
    assert resumed.kind.value == "resume"
    assert resumed.session_id == run.session_id
    [flag] = budget_flags(started_argvs(log)[1])
    assert float(flag.split("=")[1]) == pytest.approx(0.03 - cost_of(first), abs=1e-6)


# -- 5. a run whose last figures pass its item budget has already ended -------------------


def test_a_run_that_ends_past_its_item_budget_keeps_the_outcome_its_cli_gave(
    vendor_project: VendorProject, provider: Provider
) -> None:
    """Claude's assistant record carries the call's output count as 1; the real count (40)
    arrives with the result, which takes the item to its budget. The CLI is exiting by then
    (some 15 ms later): wrighty does not stop it, so its success stands, not a race between
    its exit and a stop."""
    configured(vendor_project, provider, Turn(PER_RUN))
    item_id = vendor_project.create(TASK, "--max-tokens", str(sum(PER_RUN.values())))
    _, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
    [run] = vendor_project.runs(item_id)
    assert run.usage is not None
    assert (run.usage.tokens, run.usage.final) == (sum(PER_RUN.values()), True)
    assert run.outcome_class is not None
    assert (run.outcome_class.value, run.exit_code) == ("succeeded", 0)
    assert (run.diagnostic or "").startswith("claude: done.")
    assert vendor_project.show(item_id)["state"] == "done"


def test_a_run_that_ends_at_its_agents_day_budget_keeps_the_outcome_its_cli_gave(
    vendor_project: VendorProject, provider: Provider
) -> None:
    """The day budget's twin of the test above: the second run's result takes the agent to
    its day budget. A heartbeat every 5 ms falls between the result and the CLI's exit."""
    configured(
        vendor_project,
        provider,
        Turn(PER_RUN),
        Turn(PER_RUN),
        worker={"heartbeatSeconds": 0.005},
        budgets={"perDay": {"claude": {"maxTokens": 2 * sum(PER_RUN.values())}}},
    )
    items = [vendor_project.create(TASK) for _ in range(2)]
    _, worked = vendor_project.run_worker("--idle-timeout", "1s")
    assert worked.returncode == 0, worked.stderr
    outcomes = [vendor_project.runs(item_id)[0].outcome_class for item_id in items]
    assert [outcome.value if outcome else None for outcome in outcomes] == ["succeeded"] * 2


# -- 6. a running run's usage is in the store from its heartbeats ---------------------------


def test_a_running_answers_usage_reaches_the_store_at_its_heartbeat(
    vendor_project: VendorProject, provider: Provider
) -> None:
    """What a fleet's day budget reads of a run in flight: its partial usage, recorded at a
    heartbeat while the answer still streams (no budget here, so nothing stops it)."""
    configured(
        vendor_project,
        provider,
        Turn(LONG, text="Reading.", slow=True),
        worker={"heartbeatSeconds": 0.2},
    )
    item_id = vendor_project.create(TASK)
    worker = vendor_project.start_worker("--once")
    next_event(worker, "spawned")

    def recorded() -> bool:
        runs = vendor_project.runs(item_id)
        return bool(runs) and runs[0].usage is not None

    wait_for(worker, "the run's usage in the store", recorded)
    [run] = vendor_project.runs(item_id)
    assert run.ended_at is None  # still running
    assert run.usage is not None
    assert tokens_of(run.usage) == LONG_STARTED
    assert (run.usage.final, run.usage.cost_usd, run.usage.models) == (False, None, (SONNET,))
    worker.send_signal(signal.SIGTERM)
    finish(worker)
    [stopped] = vendor_project.runs(item_id)
    assert stopped.usage == run.usage  # the shutdown keeps what was seen
