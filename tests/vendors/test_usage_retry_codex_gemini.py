"""worker.usageFailure with the real Codex and Gemini CLIs, as test_usage_retry.py does for
Claude Code: a loopback provider refuses (429, 5xx) until it answers, the retry waits for the
reset the CLI reported (or the backoff), and the next run resumes the same vendor session in
the same workspace, or, when the vendor kept nothing to resume, starts a new one."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.vendors.conftest import (
    CIRCUIT_OPEN_MINUTES,
    VendorProject,
    codex_agent,
    held_while_open,
    vendor_cli,
)
from tests.vendors.gemini_provider import TOOL_CALL, GeminiProvider
from tests.vendors.openai_provider import OpenAIProvider
from tests.vendors.test_codex_gemini import (
    GEMINI_MODEL,
    PROMPT,
    codex_thread_ids,
    codex_user_texts,
    gemini_agent,
    gemini_session_ids,
    gemini_user_texts,
    printed,
    transcript,
)
from wrighty.domain.times import rfc3339
from wrighty.vendors.base import VendorError

pytestmark = pytest.mark.slow

# A retry about half a second after a refusal that names no reset; a reported reset is taken
# as it is, without grace, so that the tests can wait for it.
USAGE_RETRY = {
    "action": "retry",
    "initialRetryMinutes": 0.01,
    "maxAttempts": 2,
    "resetGraceMinutes": 0,
}
CODEX_RATE_WAIT = timedelta(seconds=2)  # openai_provider.RATE_MESSAGE: "Please try again in 2s."
GEMINI_QUOTA_WAIT = timedelta(seconds=7)  # gemini_provider "quota": RetryInfo retryDelay "7s"


def configured(project: VendorProject, agents: dict[str, Any], **worker: Any) -> None:
    [agent] = agents
    project.configure(
        agents, defaultAgent=agent, workspaceMode="directory", pollSeconds=0.1, **worker
    )


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def wait_until_due(shown: dict[str, Any]) -> None:
    time.sleep(max(0.0, moment(shown["not_before"]).timestamp() - time.time()) + 0.05)


def refused(project: VendorProject, outcome_class: str, reason_code: str) -> dict[str, Any]:
    """Queue the task and run it, refused by the provider; check that its usage retry 1 was
    scheduled, and return the item as `wrighty show` gives it."""
    item_id = project.create(PROMPT)
    events, worked = project.run_once()
    assert worked.returncode == 0, worked.stderr
    shown = project.show(item_id)
    assert (shown["state"], shown["reason_code"]) == ("retry-scheduled", reason_code)
    [run] = shown["runs"]
    assert (run["kind"], run["outcome_class"]) == ("fresh", outcome_class)  # it stays failed
    assert (shown["usage_retries"], shown["crash_retries"]) == (1, 0)
    assert shown["usage_retry"]["next_due"] == shown["not_before"]
    assert shown["usage_retry"]["last_refusal"]["run_id"] == run["run_id"]
    [scheduled] = [e for e in events if e["event"] == "retry-scheduled"]
    assert (scheduled["usage_retries"], scheduled["reason_code"]) == (1, reason_code)
    assert scheduled["not_before"] == shown["not_before"]
    return shown


def assert_backoff(shown: dict[str, Any], what: str = "resumes its session") -> None:
    assert f"usage retry 1 of 2 {what} at {shown['not_before']}" in shown["reason"]
    assert "(backoff: the provider named no reset)" in shown["reason"]
    ended = moment(shown["runs"][0]["ended_at"])
    # 0.01 minutes, less a jitter of up to 20%.
    assert timedelta(seconds=0.45) <= moment(shown["not_before"]) - ended <= timedelta(seconds=0.6)


def assert_reported_reset(shown: dict[str, Any], wait: timedelta) -> None:
    """The retry is due at the reset the CLI reported: the end of the run plus its wait."""
    reset = rfc3339(moment(shown["runs"][0]["ended_at"]) + wait)
    assert shown["not_before"] == reset  # resetGraceMinutes 0
    assert f"(the provider reported its reset at {reset})" in shown["reason"]


def resumed(project: VendorProject, shown: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """Once the retry is due, run the worker again: the item, finished, and the resumed run."""
    wait_until_due(shown)
    events, worked = project.run_once()
    assert worked.returncode == 0, worked.stderr
    after = project.show(shown["id"])
    assert after["state"] == "done", after["reason"]
    session_id = shown["session"]["session_id"]
    assert [e["session_id"] for e in events if e["event"] == "resumed"] == [session_id]
    first, second = after["runs"]
    assert (second["kind"], second["outcome_class"]) == ("resume", "succeeded")
    assert second["generation"] > first["generation"]
    assert second["session_id"] == after["session"]["session_id"] == session_id
    assert after["session"]["workspace"] == shown["session"]["workspace"]
    return after, second


# --- Codex ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "outcome_class"), [("rate", "rate-limited"), ("server", "provider-unavailable")]
)
def test_a_refused_codex_run_is_retried_at_the_backoff_and_resumes_its_thread(
    vendor_project: VendorProject, openai_provider: OpenAIProvider, mode: str, outcome_class: str
) -> None:
    """A plain 429 ("exceeded retry limit, last status: 429 Too Many Requests") and a 500
    ("We're currently experiencing high demand") name no wait in `codex exec --json`."""
    openai_provider.mode = mode
    agents = codex_agent(openai_provider, vendor_project.home)
    configured(vendor_project, agents, usageFailure=USAGE_RETRY)
    shown = refused(vendor_project, outcome_class, outcome_class)
    assert_backoff(shown)
    thread_id = shown["session"]["session_id"]
    assert codex_thread_ids(vendor_project, shown, shown["runs"][0]) == [thread_id]
    # Codex writes its rollout (the thread's metadata and the task) before it sends the
    # request, and keeps it when the turn fails: the refused thread can be resumed.
    rollout = transcript(vendor_project, "codex", shown, agents["codex"]["env"])
    assert PROMPT in rollout.read_text()
    assert shown["session"]["resumable"] is True

    openai_provider.mode = "ok"
    after, second = resumed(vendor_project, shown)
    assert codex_thread_ids(vendor_project, after, second) == [thread_id]
    assert transcript(vendor_project, "codex", after, agents["codex"]["env"]) == rollout
    # The resumed thread replayed the refused run's own prompt, and added the follow-up.
    refused_request, resumed_request = openai_provider.requests
    first_texts = codex_user_texts(refused_request)
    assert PROMPT in first_texts
    assert codex_user_texts(resumed_request)[: len(first_texts)] == first_texts
    assert len(codex_user_texts(resumed_request)) > len(first_texts)


def test_a_codex_rate_limit_mid_stream_is_retried_at_the_reset_it_reported(
    vendor_project: VendorProject, openai_provider: OpenAIProvider
) -> None:
    """OpenAI fails an accepted stream with "Please try again in 2s."; Codex prints it in its
    `error` and `turn.failed` events, and the retry is due 2 s after the run."""
    openai_provider.mode = "stream-rate"
    configured(
        vendor_project, codex_agent(openai_provider, vendor_project.home), usageFailure=USAGE_RETRY
    )
    shown = refused(vendor_project, "rate-limited", "rate-limited")
    assert "usage retry 1 of 2 resumes its session" in shown["reason"]
    assert "Please try again in 2s" in shown["reason"]
    assert_reported_reset(shown, CODEX_RATE_WAIT)

    openai_provider.mode = "ok"
    after, second = resumed(vendor_project, shown)
    assert moment(second["started_at"]) >= moment(shown["not_before"])
    assert codex_thread_ids(vendor_project, after, second) == [shown["session"]["session_id"]]
    assert len(openai_provider.requests) == 2


def holds_the_queue(
    project: VendorProject, provider: OpenAIProvider | GeminiProvider, refusal: str
) -> tuple[int, int, list[dict[str, Any]]]:
    """Two items, the provider refusing the first run as ``refusal`` says, then answering; a
    worker runs them. Check the circuit held the second item back until the refused one, as
    the probe, got its answer: the two item ids and the worker's events."""
    provider.mode = refusal
    first = project.create(PROMPT)
    second = project.create(PROMPT)
    worker = project.start_worker("--max-items", "2", "--idle-timeout", "60s")
    assert worker.stdout is not None
    events: list[dict[str, Any]] = []
    for line in worker.stdout:  # up to the refusal's retry, keeping every event
        events.append(json.loads(line))
        if events[-1]["event"] == "retry-scheduled":
            break
    scheduled = events[-1]
    assert (scheduled["event"], scheduled["item_id"]) == ("retry-scheduled", first)
    provider.mode = "ok"
    stdout, _ = worker.communicate(timeout=120)
    events += [json.loads(line) for line in stdout.splitlines()]
    names = [event["event"] for event in events]
    claims = [(i, e["item_id"]) for i, e in enumerate(events) if e["event"] == "claimed"]
    assert [item for _, item in claims] == [first, first, second]
    _, (probe_claim, _), (second_claim, _) = claims
    held_while_open(events, scheduled)
    probe = next(e for e in events if e["event"] == "circuit-probe")
    assert probe["item_id"] == first
    # Open, then half-open: the due retry is the probe; it closes the circuit; then the second.
    if "circuit-wait" in names:
        assert names.index("circuit-wait") < names.index("circuit-half-open")
    assert names.index("circuit-half-open") < names.index("circuit-probe") < probe_claim
    assert probe_claim < names.index("circuit-closed") < second_claim
    assert names.count("circuit-closed") == 1
    assert project.show(first)["state"] == "done"
    shown_second = project.show(second)
    assert shown_second["state"] == "done"
    [run] = shown_second["runs"]
    resumed_run = project.show(first)["runs"][1]
    assert resumed_run["kind"] == "resume"
    assert run["started_at"] > resumed_run["ended_at"]  # not launched while the circuit was open
    return first, second, events


def test_a_codex_refusal_holds_the_queue_until_the_probe_answers(
    vendor_project: VendorProject, openai_provider: OpenAIProvider
) -> None:
    configured(
        vendor_project,
        codex_agent(openai_provider, vendor_project.home),
        usageFailure={**USAGE_RETRY, "initialRetryMinutes": CIRCUIT_OPEN_MINUTES},
    )
    holds_the_queue(vendor_project, openai_provider, "rate")
    assert len(openai_provider.requests) == 3  # the refusal, the probe, the second item


# --- Gemini CLI ----------------------------------------------------------------------------


def last_messages(chat: Path) -> list[dict[str, Any]]:
    """The conversation a Gemini chat file holds: its messages as its records leave them (a
    record with an "id" adds or replaces a message; {"$set": {"messages": [...]}} resets
    them all)."""
    messages: dict[str, dict[str, Any]] = {}
    for record in map(json.loads, chat.read_text().splitlines()[1:]):
        if "id" in record:
            messages[record["id"]] = record
        elif "messages" in record.get("$set", {}):
            messages = {m["id"]: m for m in record["$set"]["messages"]}
    return list(messages.values())


def resume_gemini_by_hand(
    project: VendorProject, agents: dict[str, Any], shown: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    """`gemini --resume ID`, as wrighty would run it, in the item's workspace."""
    argv = [str(vendor_cli("gemini")), "--output-format", "stream-json", "--skip-trust"]
    return subprocess.run(
        [*argv, "--resume", shown["session"]["session_id"], "-m", GEMINI_MODEL],
        cwd=shown["session"]["workspace"],
        env={**project.env, **agents["gemini"]["env"]},
        input="continue",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("mode", "outcome_class"),
    [("rate", "rate-limited"), ("quota", "rate-limited"), ("unavailable", "provider-unavailable")],
)
def test_a_gemini_run_refused_before_it_answered_leaves_no_turn_to_resume(
    vendor_project: VendorProject, gemini_provider: GeminiProvider, mode: str, outcome_class: str
) -> None:
    """The retry is scheduled at the reset Gemini reported ("Suggested retry after 7s." from
    the quota's RetryInfo), or at the backoff. But Gemini CLI, when the provider refuses the
    first request, takes the task back out of its chat: the file (which wrighty finds, with
    the session id and the workspace's hash) is left holding only the CLI's own session
    context, and `gemini --resume` says there is no session (exit 42). What wrighty then does
    with the retry is the next test."""
    gemini_provider.mode = mode
    agents = gemini_agent(gemini_provider, vendor_project.home)
    configured(vendor_project, agents, usageFailure=USAGE_RETRY)
    item_id = vendor_project.create(PROMPT)
    _, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
    shown = vendor_project.show(item_id)
    assert shown["state"] == "retry-scheduled"
    [run] = shown["runs"]
    assert (run["outcome_class"], run["confidence"]) == (outcome_class, "authoritative")
    assert shown["usage_retries"] == 1
    if mode == "quota":
        assert "Suggested retry after 7s" in shown["reason"]
        assert_reported_reset(shown, GEMINI_QUOTA_WAIT)
    else:
        assert "(backoff: the provider named no reset)" in shown["reason"]
    session_id = shown["session"]["session_id"]
    assert gemini_session_ids(vendor_project, shown, run) == [session_id]
    assert len(gemini_provider.streamed) == 1
    # Gemini printed no answer: only its init, the user's message and the failed result.
    assert [r["type"] for r in printed(vendor_project, shown, run)] == ["init", "message", "result"]

    # wrighty finds the chat (the session id and the workspace's hash match) and says why it
    # cannot back a resume.
    with pytest.raises(VendorError, match="holds no turn to resume"):
        transcript(vendor_project, "gemini", shown, {"HOME": str(vendor_project.home)})
    [chat] = (vendor_project.home / ".gemini" / "tmp").glob(
        f"*/chats/session-*-{session_id[:8]}.jsonl"
    )
    [context] = last_messages(chat)
    assert context["type"] == "user"
    assert context["content"][0]["text"].startswith("<session_context>")
    assert PROMPT in chat.read_text()  # it was there, and was taken back out
    by_hand = resume_gemini_by_hand(vendor_project, agents, shown)
    assert by_hand.returncode == 42
    assert "No previous sessions found for this project" in by_hand.stderr


@pytest.mark.parametrize(
    ("mode", "outcome_class"), [("rate", "rate-limited"), ("unavailable", "provider-unavailable")]
)
def test_a_gemini_run_refused_before_it_answered_is_retried_in_a_new_session(
    vendor_project: VendorProject, gemini_provider: GeminiProvider, mode: str, outcome_class: str
) -> None:
    """The session cannot be resumed (previous test) and the provider never answered, so the
    retry starts a new session in the same workspace: docs/usage-limits.md, "Resuming, and
    when a retry starts fresh"."""
    gemini_provider.mode = mode
    configured(
        vendor_project,
        gemini_agent(gemini_provider, vendor_project.home),
        usageFailure=USAGE_RETRY,
    )
    shown = refused(vendor_project, outcome_class, "usage-retry-fresh")
    assert_backoff(shown, "starts a new session")
    refused_session = shown["session"]["session_id"]

    gemini_provider.mode = "ok"
    wait_until_due(shown)
    events, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
    after = vendor_project.show(shown["id"])
    assert after["state"] == "done", after["reason"]
    assert [e for e in events if e["event"] == "resumed"] == []
    first, second = after["runs"]
    assert (second["kind"], second["outcome_class"]) == ("fresh", "succeeded")
    assert second["session_id"] == after["session"]["session_id"] != refused_session
    assert gemini_session_ids(vendor_project, after, second) == [second["session_id"]]
    assert after["session"]["workspace"] == shown["session"]["workspace"]
    assert first["session_id"] == refused_session


def test_a_gemini_run_refused_after_it_answered_is_retried_and_resumes_its_session(
    vendor_project: VendorProject, gemini_provider: GeminiProvider
) -> None:
    """The provider answers the task with a tool call, then refuses the turn carrying the
    tool's result (a 429 with no reset). Gemini CLI keeps the answered turn in its chat, so
    the retry resumes it."""
    gemini_provider.mode = "tool-then-rate"
    agents = gemini_agent(gemini_provider, vendor_project.home)
    configured(vendor_project, agents, usageFailure=USAGE_RETRY)
    shown = refused(vendor_project, "rate-limited", "rate-limited")
    assert_backoff(shown)
    session_id = shown["session"]["session_id"]
    run = shown["runs"][0]
    assert [r["type"] for r in printed(vendor_project, shown, run) if r["type"] == "tool_use"] == [
        "tool_use"
    ]
    assert len(gemini_provider.streamed) == 2  # the task, then the tool's result: refused
    chat = transcript(vendor_project, "gemini", shown, {"HOME": str(vendor_project.home)})
    kinds = [m["type"] for m in last_messages(chat)]
    assert "gemini" in kinds  # the model's turn stayed in the chat

    gemini_provider.mode = "ok"
    after, second = resumed(vendor_project, shown)
    assert gemini_session_ids(vendor_project, after, second) == [session_id]
    assert transcript(vendor_project, "gemini", after, {"HOME": str(vendor_project.home)}) == chat
    # The resumed session replayed the task and the model's tool call, then the follow-up.
    resumed_request = gemini_provider.streamed[-1]
    assert len(gemini_provider.streamed) == 3
    assert PROMPT in gemini_user_texts(resumed_request)
    calls = [
        part["functionCall"]
        for content in resumed_request["contents"]
        if content.get("role") == "model"
        for part in content["parts"]
        if "functionCall" in part
    ]
    assert [(c["name"], c["args"]) for c in calls] == [(TOOL_CALL["name"], TOOL_CALL["args"])]
    assert len(gemini_user_texts(resumed_request)) > len(
        gemini_user_texts(gemini_provider.streamed[0])
    )


def test_a_gemini_refusal_holds_the_queue_until_the_probe_answers(
    vendor_project: VendorProject, gemini_provider: GeminiProvider
) -> None:
    """As for Codex; the refusal comes after an answer, so that the probe resumes (see
    test_a_gemini_run_refused_before_it_answered_is_retried_in_a_new_session)."""
    configured(
        vendor_project,
        gemini_agent(gemini_provider, vendor_project.home),
        usageFailure={**USAGE_RETRY, "initialRetryMinutes": CIRCUIT_OPEN_MINUTES},
    )
    holds_the_queue(vendor_project, gemini_provider, "tool-then-rate")
    # The task and the tool's result (refused), the probe, the second item.
    assert len(gemini_provider.streamed) == 4
