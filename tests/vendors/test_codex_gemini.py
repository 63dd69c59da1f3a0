"""The real Codex and Gemini CLIs where they can run offline, run by a real worker."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.vendors.conftest import (
    CODEX_KEY,
    VendorProject,
    codex_agent,
    finish,
    next_event,
    vendor_cli,
    wait_for,
)
from tests.vendors.gemini_provider import GeminiProvider, gemini_settings
from tests.vendors.openai_provider import OpenAIProvider
from wrighty.vendors.registry import VENDORS

pytestmark = pytest.mark.slow


def processes_marked(run_id: str) -> list[int]:
    """Live processes whose environment carries this run's WRIGHTY_RUN_ID."""
    needle = f"\0WRIGHTY_RUN_ID={run_id}\0".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environment = b"\0" + Path(f"/proc/{entry}/environ").read_bytes()
            status = Path(f"/proc/{entry}/stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if needle in environment and status != "Z":
            found.append(int(entry))
    return found


def test_codex_whose_provider_never_answers_is_timed_out_and_its_tree_killed(
    vendor_project: VendorProject, openai_provider: OpenAIProvider
) -> None:
    openai_provider.mode = "hang"  # takes the request, then says nothing until it shuts down
    vendor_project.configure(
        codex_agent(openai_provider, vendor_project.home),
        defaultAgent="codex",
        workspaceMode="directory",
    )
    item_id = vendor_project.create("say hi", "--timeout", "10s")
    events, worked = vendor_project.run_once("--json")
    assert worked.returncode == 0, worked.stderr
    shown = vendor_project.show(item_id)
    [run] = shown["runs"]
    assert (run["outcome_class"], run["confidence"]) == ("timeout", "authoritative")
    assert shown["state"] == "needs-attention"
    assert shown["reason_code"] == "timeout"
    # The thread id that codex printed first is the recorded session, before the run ended.
    log = vendor_project.root / ".wrighty" / "runs" / str(item_id) / run["run_id"] / "stdout.log"
    first = json.loads(log.read_text().splitlines()[0])
    assert first["type"] == "thread.started"
    assert shown["session"]["session_id"] == first["thread_id"] == run["session_id"]
    kinds = [event["event"] for event in events]
    assert kinds.index("session") < kinds.index("exited") < kinds.index("settled")
    assert processes_marked(run["run_id"]) == []
    assert len(openai_provider.requests) == 1  # it was the loopback provider that never answered


def test_gemini_without_credentials_is_an_auth_failure(vendor_project: VendorProject) -> None:
    vendor_project.configure(
        {"gemini": {"executable": str(vendor_cli("gemini"))}},
        defaultAgent="gemini",
        workspaceMode="directory",
    )
    item_id = vendor_project.create("say hi")
    _, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
    shown = vendor_project.show(item_id)
    [run] = shown["runs"]
    assert (run["outcome_class"], run["confidence"], run["exit_code"]) == (
        "auth",
        "authoritative",
        41,
    )
    assert shown["state"] == "needs-attention"


# --- Codex and Gemini against loopback fakes of their providers' APIs ---------------------

GEMINI_KEY = "AIzaFakeGeminiKey0123456789"
GEMINI_MODEL = "gemini-2.5-flash"
PROMPT = "Reply with the single word: done."
CRASH_RETRY = {"action": "retry", "initialRetryMinutes": 0.01, "maxAttempts": 2}


def gemini_agent(provider: GeminiProvider, home: Path) -> dict[str, Any]:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(gemini_settings()))
    scratch = home / "tmp"  # the CLI's error reports go to $TMPDIR
    scratch.mkdir(exist_ok=True)
    return {
        "gemini": {
            "executable": str(vendor_cli("gemini")),
            "args": ["-m", GEMINI_MODEL],
            "env": {
                "GEMINI_API_KEY": GEMINI_KEY,
                "GOOGLE_GEMINI_BASE_URL": provider.url,
                "TMPDIR": str(scratch),
            },
        }
    }


def run_item(project: VendorProject, agents: dict[str, Any]) -> dict[str, Any]:
    """One item through `wrighty worker start --once`; the item as `wrighty show` gives it."""
    [agent] = agents
    project.configure(agents, defaultAgent=agent, workspaceMode="directory")
    item_id = project.create(PROMPT)
    events, worked = project.run_once()
    assert worked.returncode == 0, worked.stderr
    assert any(event["event"] == "settled" for event in events), worked.stdout
    return project.show(item_id)


def printed(project: VendorProject, shown: dict[str, Any], run: dict[str, Any]) -> list[Any]:
    """The JSON records the CLI printed on stdout during ``run``."""
    log = project.root / ".wrighty" / "runs" / str(shown["id"]) / run["run_id"] / "stdout.log"
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


def codex_thread_ids(
    project: VendorProject, shown: dict[str, Any], run: dict[str, Any]
) -> list[str]:
    records = printed(project, shown, run)
    return [r["thread_id"] for r in records if r.get("type") == "thread.started"]


def gemini_session_ids(
    project: VendorProject, shown: dict[str, Any], run: dict[str, Any]
) -> list[str]:
    return [r["session_id"] for r in printed(project, shown, run) if r.get("type") == "init"]


def transcript(
    project: VendorProject, vendor: str, shown: dict[str, Any], env: dict[str, str]
) -> Path:
    found = VENDORS[vendor].transcript(
        shown["session"]["session_id"], Path(shown["session"]["workspace"]), env
    )
    assert found is not None, f"wrighty cannot find the transcript {vendor} wrote"
    return found


def codex_user_texts(request: dict[str, Any]) -> list[str]:
    """The user's texts in a Responses API request, in order."""
    return [
        part["text"]
        for item in request["input"]
        if item.get("type") == "message" and item.get("role") == "user"
        for part in item["content"]
        if part.get("type") == "input_text"
    ]


def gemini_user_texts(request: dict[str, Any]) -> list[str]:
    """The user's texts in a generateContent request, in order (one turn may hold several)."""
    return [
        part["text"]
        for content in request["contents"]
        if content.get("role") == "user"
        for part in content["parts"]
        if "text" in part
    ]


def kill_mid_answer(worker: subprocess.Popen[str], streaming: threading.Event) -> None:
    """SIGKILL the agent's first process once the provider streams its answer."""
    spawned = next_event(worker, "spawned")
    wait_for(worker, "the answer began", streaming.is_set)
    os.kill(spawned["pid"], signal.SIGKILL)  # the OOM killer, say: not wrighty


ATTENTION = "needs-attention"


@pytest.mark.parametrize(
    ("mode", "outcome_class", "confidence", "state"),
    [
        ("ok", "succeeded", "authoritative", "done"),
        ("bad-request", "unknown", "inferred", ATTENTION),
        ("context", "context-limit", "inferred", ATTENTION),
        ("auth", "auth", "inferred", ATTENTION),
        ("permission", "permission", "inferred", ATTENTION),
        ("rate", "rate-limited", "inferred", ATTENTION),
        ("quota", "billing", "inferred", ATTENTION),
        ("server", "provider-unavailable", "inferred", ATTENTION),
    ],
)
def test_codex_each_provider_answer_gets_its_class(
    vendor_project: VendorProject,
    openai_provider: OpenAIProvider,
    mode: str,
    outcome_class: str,
    confidence: str,
    state: str,
) -> None:
    openai_provider.mode = mode
    shown = run_item(vendor_project, codex_agent(openai_provider, vendor_project.home))
    [run] = shown["runs"]
    assert [h.get("authorization") for h in openai_provider.headers] == [f"Bearer {CODEX_KEY}"]
    # The thread id codex printed is the recorded session.
    assert codex_thread_ids(vendor_project, shown, run) == [shown["session"]["session_id"]]
    assert run["session_id"] == shown["session"]["session_id"]
    assert CODEX_KEY not in json.dumps(shown)
    assert processes_marked(run["run_id"]) == []
    assert (run["outcome_class"], run["confidence"]) == (outcome_class, confidence)
    assert shown["state"] == state


def crash_mid_answer(
    project: VendorProject, agents: dict[str, Any], vendor: str, streaming: threading.Event
) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """Run one item under the crash-retry policy, SIGKILL the CLI while its provider streams,
    and check the crash was scheduled for a retry: the item id, the item, its crashed run."""
    project.configure(
        agents,
        defaultAgent=vendor,
        workspaceMode="directory",
        pollSeconds=0.1,
        processCrash=CRASH_RETRY,
    )
    item_id = project.create(PROMPT)
    worker = project.start_worker("--once")
    try:
        kill_mid_answer(worker, streaming)
        next_event(worker, "retry-scheduled")
    finally:
        finish(worker)
    crashed = project.show(item_id)
    assert (crashed["state"], crashed["reason_code"]) == ("retry-scheduled", "process-crash")
    [first] = crashed["runs"]
    assert (first["outcome_class"], first["confidence"], first["signal"]) == (
        "process-crash",
        "authoritative",
        signal.SIGKILL,
    )
    return item_id, crashed, first


def test_codex_killed_mid_answer_is_resumed_in_the_same_thread_and_its_rollout_grows(
    vendor_project: VendorProject, openai_provider: OpenAIProvider
) -> None:
    openai_provider.mode = "slow"
    agents = codex_agent(openai_provider, vendor_project.home)
    item_id, crashed, first = crash_mid_answer(
        vendor_project, agents, "codex", openai_provider.streaming
    )
    thread_id = crashed["session"]["session_id"]
    assert codex_thread_ids(vendor_project, crashed, first) == [thread_id]
    # The kill may leave codex's native binary behind its node wrapper; wrighty ended it.
    assert processes_marked(first["run_id"]) == []
    rollout = transcript(vendor_project, "codex", crashed, agents["codex"]["env"])
    before = len(rollout.read_text().splitlines())
    asked_before = len(openai_provider.requests)

    openai_provider.mode = "ok"
    events, worked = vendor_project.run_worker("--max-items", "1", "--idle-timeout", "30s")
    assert worked.returncode == 0, worked.stderr
    assert [e["session_id"] for e in events if e["event"] == "resumed"] == [thread_id]
    after = vendor_project.show(item_id)
    assert after["state"] == "done"
    _, second = after["runs"]
    assert (second["kind"], second["outcome_class"], second["confidence"]) == (
        "resume",
        "succeeded",
        "authoritative",
    )
    assert second["session_id"] == after["session"]["session_id"] == thread_id
    assert codex_thread_ids(vendor_project, after, second) == [thread_id]
    assert transcript(vendor_project, "codex", after, agents["codex"]["env"]) == rollout
    assert len(rollout.read_text().splitlines()) > before
    assert processes_marked(second["run_id"]) == []
    # The resumed thread replayed the first run's own prompt, and added the follow-up.
    [resumed_request] = openai_provider.requests[asked_before:]
    first_texts = codex_user_texts(openai_provider.requests[0])
    assert PROMPT in first_texts
    assert codex_user_texts(resumed_request)[: len(first_texts)] == first_texts
    assert len(codex_user_texts(resumed_request)) > len(first_texts)


@pytest.mark.parametrize(
    ("mode", "outcome_class", "confidence", "state"),
    [
        ("ok", "succeeded", "authoritative", "done"),
        ("bad-request", "agent-failure", "inferred", ATTENTION),
        ("bad-key", "auth", "inferred", ATTENTION),
        ("auth", "auth", "authoritative", ATTENTION),
        ("permission", "permission", "authoritative", ATTENTION),
        # Gemini exits with the HTTP status modulo 256: 173 is a 429, whatever the text says
        # (a per-minute quota message reads like billing).
        ("rate", "rate-limited", "authoritative", ATTENTION),
        ("quota", "rate-limited", "authoritative", ATTENTION),
        ("server", "provider-unavailable", "authoritative", ATTENTION),
        ("unavailable", "provider-unavailable", "authoritative", ATTENTION),
    ],
)
def test_gemini_each_provider_answer_gets_its_class(
    vendor_project: VendorProject,
    gemini_provider: GeminiProvider,
    mode: str,
    outcome_class: str,
    confidence: str,
    state: str,
) -> None:
    gemini_provider.mode = mode
    shown = run_item(vendor_project, gemini_agent(gemini_provider, vendor_project.home))
    [run] = shown["runs"]
    assert len(gemini_provider.streamed) == 1
    assert {h.get("x-goog-api-key") for h in gemini_provider.headers} == {GEMINI_KEY}
    # wrighty chose the session id; the CLI used exactly that one.
    session_id = shown["session"]["session_id"]
    assert re.fullmatch(r"[0-9a-f-]{36}", session_id)
    assert gemini_session_ids(vendor_project, shown, run) == [session_id]
    assert run["session_id"] == session_id
    assert GEMINI_KEY not in json.dumps(shown)
    assert processes_marked(run["run_id"]) == []
    assert (run["outcome_class"], run["confidence"]) == (outcome_class, confidence)
    assert shown["state"] == state


def test_gemini_killed_mid_answer_is_resumed_in_the_same_session_and_its_chat_grows(
    vendor_project: VendorProject, gemini_provider: GeminiProvider
) -> None:
    gemini_provider.mode = "slow"
    agents = gemini_agent(gemini_provider, vendor_project.home)
    item_id, crashed, first = crash_mid_answer(
        vendor_project, agents, "gemini", gemini_provider.streaming
    )
    session_id = crashed["session"]["session_id"]
    assert gemini_session_ids(vendor_project, crashed, first) == [session_id]
    # The kill may leave the relaunched CLI behind gemini's wrapper; wrighty ended it.
    assert processes_marked(first["run_id"]) == []
    home = {"HOME": str(vendor_project.home)}
    chat = transcript(vendor_project, "gemini", crashed, home)
    assert chat.parent.name == "chats"
    before = len(chat.read_text().splitlines())
    asked_before = len(gemini_provider.streamed)

    gemini_provider.mode = "ok"
    events, worked = vendor_project.run_worker("--max-items", "1", "--idle-timeout", "30s")
    assert worked.returncode == 0, worked.stderr
    assert [e["session_id"] for e in events if e["event"] == "resumed"] == [session_id]
    after = vendor_project.show(item_id)
    assert after["state"] == "done"
    _, second = after["runs"]
    assert (second["kind"], second["outcome_class"], second["confidence"]) == (
        "resume",
        "succeeded",
        "authoritative",
    )
    assert second["session_id"] == after["session"]["session_id"] == session_id
    assert gemini_session_ids(vendor_project, after, second) == [session_id]
    assert transcript(vendor_project, "gemini", after, home) == chat
    assert len(chat.read_text().splitlines()) > before
    assert processes_marked(second["run_id"]) == []
    # The resumed session replayed the first run's own prompt, and added the follow-up.
    [resumed_request] = gemini_provider.streamed[asked_before:]
    first_texts = gemini_user_texts(gemini_provider.streamed[0])
    assert PROMPT in first_texts
    assert gemini_user_texts(resumed_request)[: len(first_texts)] == first_texts
    assert len(gemini_user_texts(resumed_request)) > len(first_texts)
