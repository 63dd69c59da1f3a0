"""The real Claude Code CLI against a loopback provider, run by a real worker."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.vendors.conftest import (
    VendorProject,
    claude_agent,
    finish,
    next_event,
    wait_for,
)
from tests.vendors.provider import Provider
from wrighty.vendors.registry import VENDORS

pytestmark = pytest.mark.slow


def run_item(project: VendorProject, provider: Provider, mode: str) -> dict[str, Any]:
    provider.mode = mode
    project.configure(
        claude_agent(provider, project.home), defaultAgent="claude", workspaceMode="directory"
    )
    item_id = project.create("Reply with the single word: done.")
    events, worked = project.run_once()
    assert worked.returncode == 0, worked.stderr
    assert any(event["event"] == "settled" for event in events), worked.stdout
    return project.show(item_id)


def vendor_session_ids(project: VendorProject, shown: dict[str, Any]) -> set[str]:
    """The session ids Claude Code itself printed during the item's last run."""
    run_id = shown["runs"][-1]["run_id"]
    log = project.root / ".wrighty" / "runs" / str(shown["id"]) / run_id / "stdout.log"
    found = set()
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if "session_id" in record:
            found.add(record["session_id"])
    return found


@pytest.mark.parametrize(
    ("mode", "outcome_class", "state"),
    [
        ("ok", "succeeded", "done"),
        ("auth", "auth", "needs-attention"),
        ("permission", "permission", "needs-attention"),
        ("billing", "billing", "needs-attention"),
        ("context", "context-limit", "needs-attention"),
        ("rate", "rate-limited", "needs-attention"),
        ("overloaded", "provider-unavailable", "needs-attention"),
        ("server", "provider-unavailable", "needs-attention"),
    ],
)
def test_each_provider_answer_gets_its_class(
    vendor_project: VendorProject,
    provider: Provider,
    mode: str,
    outcome_class: str,
    state: str,
) -> None:
    shown = run_item(vendor_project, provider, mode)
    [run] = shown["runs"]
    assert (run["outcome_class"], run["confidence"]) == (outcome_class, "authoritative")
    assert shown["state"] == state
    # wrighty chose the session id; Claude Code used exactly that one.
    session_id = shown["session"]["session_id"]
    assert re.fullmatch(r"[0-9a-f-]{36}", session_id)
    assert run["session_id"] == session_id
    assert vendor_session_ids(vendor_project, shown) == {session_id}
    assert provider.requests, "the CLI never reached the provider"
    assert "sk-test" not in json.dumps(shown)


def test_claude_without_any_api_key_is_an_auth_failure(
    vendor_project: VendorProject, provider: Provider
) -> None:
    agents = claude_agent(provider, vendor_project.home)
    del agents["claude"]["env"]["ANTHROPIC_API_KEY"]
    vendor_project.configure(agents, defaultAgent="claude", workspaceMode="directory")
    item_id = vendor_project.create("Reply with the single word: done.")
    _, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
    shown = vendor_project.show(item_id)
    [run] = shown["runs"]
    assert (run["outcome_class"], run["confidence"]) == ("auth", "authoritative")
    assert "Not logged in" in run["diagnostic"]


def test_claude_killed_by_a_signal_wrighty_did_not_send_is_a_process_crash(
    vendor_project: VendorProject, provider: Provider
) -> None:
    provider.mode = "slow"
    vendor_project.configure(
        claude_agent(provider, vendor_project.home),
        defaultAgent="claude",
        workspaceMode="directory",
    )
    item_id = vendor_project.create("Reply with the single word: done.")
    worker = vendor_project.start_worker("--once")
    kill_mid_answer(vendor_project, item_id, worker, provider)
    finish(worker)
    shown = vendor_project.show(item_id)
    [run] = shown["runs"]
    assert (run["outcome_class"], run["confidence"], run["signal"]) == (
        "process-crash",
        "authoritative",
        signal.SIGKILL,
    )
    assert shown["state"] == "needs-attention"


def kill_mid_answer(
    project: VendorProject, item_id: int, worker: subprocess.Popen[str], provider: Provider
) -> None:
    """SIGKILL the claude process once it has written its transcript and the provider is
    streaming its answer."""
    spawned = next_event(worker, "spawned")
    wait_for_transcript(project, item_id, worker)
    wait_for(worker, "the provider's answer began", provider.streaming.is_set)
    os.kill(spawned["pid"], signal.SIGKILL)  # the OOM killer, say


def transcript_path(project: VendorProject, shown: dict[str, Any]) -> Path | None:
    """Where wrighty finds the transcript of the item's session, if there is one yet."""
    return VENDORS["claude"].transcript(
        shown["session"]["session_id"],
        Path(shown["session"]["workspace"]),
        {"CLAUDE_CONFIG_DIR": str(project.home / ".claude")},
    )


def transcript_of(project: VendorProject, shown: dict[str, Any]) -> Path:
    found = transcript_path(project, shown)
    assert found is not None, "wrighty cannot find the transcript Claude Code wrote"
    return found


def wait_for_transcript(
    project: VendorProject, item_id: int, worker: subprocess.Popen[str]
) -> None:
    """Wait until the running Claude Code has written the user's prompt to its transcript
    (it does so before it asks the provider)."""
    shown = project.show(item_id)  # the session is recorded before the agent starts

    def has_prompt() -> bool:
        found = transcript_path(project, shown)
        return found is not None and "user" in record_types(found)

    wait_for(worker, "Claude Code wrote the prompt to its transcript", has_prompt)


def record_types(transcript: Path) -> list[str]:
    """The types of the complete records in a transcript that may still be being written."""
    types = []
    for line in transcript.read_text().splitlines():
        try:
            types.append(json.loads(line).get("type"))
        except ValueError:
            continue  # the last line, half written
    return types


def test_a_stopped_run_is_resumed_in_the_same_session_and_its_transcript_grows(
    vendor_project: VendorProject, provider: Provider
) -> None:
    provider.mode = "hang"  # the first run waits for an answer that never comes
    vendor_project.configure(
        claude_agent(provider, vendor_project.home),
        defaultAgent="claude",
        workspaceMode="directory",
    )
    item_id = vendor_project.create("Reply with the single word: done.")
    worker = vendor_project.start_worker("--once")
    next_event(worker, "spawned")
    wait_for_transcript(vendor_project, item_id, worker)
    wait_for(worker, "Claude Code asked the provider", lambda: bool(provider.requests))
    worker.send_signal(signal.SIGTERM)  # a worker shutdown: the run can be resumed later
    finish(worker)
    stopped = vendor_project.show(item_id)
    assert (stopped["state"], stopped["reason_code"]) == ("retry-scheduled", "worker-stopped")
    session_id = stopped["session"]["session_id"]
    transcript = transcript_of(vendor_project, stopped)
    before = len(transcript.read_text().splitlines())
    asked_before = len(provider.requests)

    provider.mode = "ok"
    events, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
    assert [e["session_id"] for e in events if e["event"] == "resumed"] == [session_id]
    after = vendor_project.show(item_id)
    assert after["state"] == "done"
    assert [run["kind"] for run in after["runs"]] == ["fresh", "resume"]
    assert after["runs"][1]["outcome_class"] == "succeeded"
    assert after["runs"][1]["session_id"] == session_id
    assert vendor_session_ids(vendor_project, after) == {session_id}
    assert len(transcript.read_text().splitlines()) > before
    # The resumed conversation carried the first run's prompt to the provider again.
    resumed_request = provider.requests[asked_before]
    assert "Reply with the single word" in json.dumps(resumed_request["messages"][0])
    assert len(resumed_request["messages"]) > 1


def test_the_transcript_of_an_awkward_workspace_path_is_found(
    vendor_project: VendorProject, provider: Provider
) -> None:
    # Non-ASCII, an emoji (two UTF-16 units) and a name long enough to be cut and hashed.
    workspace = vendor_project.root / ("wörk-😀_" + "x" * 220)
    workspace.mkdir()
    vendor_project.configure(claude_agent(provider, vendor_project.home), defaultAgent="claude")
    item_id = vendor_project.create(
        "Reply with the single word: done.", "--workspace", str(workspace)
    )
    _, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
    shown = vendor_project.show(item_id)
    assert shown["state"] == "done"
    assert transcript_of(vendor_project, shown).is_file()


def test_agents_lists_the_real_cli_and_check_probes_it(
    vendor_project: VendorProject, provider: Provider
) -> None:
    vendor_project.configure(claude_agent(provider, vendor_project.home), defaultAgent="claude")
    refused = vendor_project.wrighty("agents", "--check", "--agent", "claude")
    assert refused.returncode == 2
    assert "add --yes" in refused.stderr
    assert provider.requests == []
    listed = vendor_project.wrighty("agents", "--agent", "claude", "--json")
    assert listed.returncode == 0, listed.stderr
    [claude] = json.loads(listed.stdout)
    assert claude["installed"] is True
    assert claude["version"] == "2.1.197 (Claude Code)"
    assert claude["permission_flags"] == ["--permission-mode", "acceptEdits"]
    checked = vendor_project.wrighty("agents", "--check", "--yes", "--agent", "claude", "--json")
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)[0]["check"]["outcome_class"] == "succeeded"
    provider.mode = "billing"
    failing = vendor_project.wrighty("agents", "--check", "--yes", "--agent", "claude", "--json")
    assert failing.returncode == 1
    assert json.loads(failing.stdout)[0]["check"]["outcome_class"] == "billing"


CRASH_RETRY = {"action": "retry", "initialRetryMinutes": 0.01, "maxAttempts": 2}


@pytest.mark.parametrize("transcript", ["kept", "deleted"])
def test_a_crashed_claude_is_resumed_in_the_same_session_under_the_retry_policy(
    vendor_project: VendorProject, provider: Provider, transcript: str
) -> None:
    provider.mode = "slow"
    vendor_project.configure(
        claude_agent(provider, vendor_project.home),
        defaultAgent="claude",
        workspaceMode="directory",
        pollSeconds=0.1,
        processCrash=CRASH_RETRY,
    )
    item_id = vendor_project.create("Reply with the single word: done.")
    worker = vendor_project.start_worker("--once")
    kill_mid_answer(vendor_project, item_id, worker, provider)
    scheduled = next_event(worker, "retry-scheduled")
    finish(worker)
    crashed = vendor_project.show(item_id)
    assert (crashed["state"], crashed["reason_code"]) == ("retry-scheduled", "process-crash")
    assert crashed["runs"][0]["outcome_class"] == "process-crash"
    assert scheduled["not_before"] == crashed["not_before"]
    session_id = crashed["session"]["session_id"]
    if transcript == "deleted":
        transcript_of(vendor_project, crashed).unlink()

    provider.mode = "ok"
    events, worked = vendor_project.run_worker("--max-items", "1", "--idle-timeout", "30s")
    assert worked.returncode == 0, worked.stderr
    after = vendor_project.show(item_id)
    if transcript == "deleted":
        assert (after["state"], after["reason_code"]) == ("needs-attention", "resume-state-missing")
        assert "transcript" in after["reason"]
        assert len(after["runs"]) == 1  # never a silent fresh session
        return
    assert [e["session_id"] for e in events if e["event"] == "resumed"] == [session_id]
    assert after["state"] == "done"
    first, second = after["runs"]
    assert (second["kind"], second["outcome_class"]) == ("resume", "succeeded")
    assert second["generation"] > first["generation"]
    assert second["session_id"] == session_id
    assert vendor_session_ids(vendor_project, after) == {session_id}
    assert after["session"]["workspace"] == crashed["session"]["workspace"]
