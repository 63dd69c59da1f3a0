"""Wait or hand off with the real CLIs (docs/usage-limits.md#wait-or-hand-off): Claude Code,
refused with a five-hour limit whose reset is hours away after its first turn wrote a file
with its Write tool, hands the item to Codex (its fallback), which starts a new session in the
same workspace told the task and what Claude Code left, and finishes; the ledger has both runs
by their agents. With the reset near, the item waits for Claude Code as before."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.vendors.conftest import VendorProject, claude_agent, codex_agent, write
from tests.vendors.openai_provider import OpenAIProvider
from tests.vendors.provider import USAGE_TURNS, Provider, Turn
from tests.vendors.test_codex_gemini import codex_user_texts

pytestmark = pytest.mark.slow

TASK = "Write the release notes for 2.4 into notes.txt."
HANDING_OFF = {"action": "retry", "handoffAfterMinutes": 45}


def configured(project: VendorProject, provider: Provider, openai: OpenAIProvider) -> None:
    claude = claude_agent(provider, project.home, fallback=["codex"])
    # Logged in to a subscription: only then does Claude Code print its limit's reset.
    env = claude["claude"]["env"]
    del env["ANTHROPIC_API_KEY"]
    env["CLAUDE_CODE_OAUTH_TOKEN"] = "sk-ant-oat01-fake"
    agents = {**claude, **codex_agent(openai, project.home)}
    project.configure(
        agents, defaultAgent="claude", workspaceMode="directory", pollSeconds=0.1,
        usageFailure=HANDING_OFF,
    )  # fmt: skip


def refused_after_writing(project: VendorProject, provider: Provider, *, reset_in: float) -> int:
    """Queue the task; Claude Code's first turn writes notes.txt, the next request is refused
    with a five-hour limit that resets in ``reset_in`` seconds."""
    item_id = project.create(TASK)
    notes = project.root / ".wrighty" / "workspaces" / str(item_id) / "notes.txt"
    provider.mode = "script"
    provider.script = [Turn(USAGE_TURNS[0], text="Writing.", call=write(notes, "half done\n"))]
    provider.after_script = "usage-limit"
    provider.reset_at = int(time.time() + reset_in)
    _events, worked = project.run_once()
    assert worked.returncode == 0, worked.stderr
    assert notes.read_text() == "half done\n"
    return item_id


def test_claude_refused_for_hours_is_handed_to_codex_in_the_same_workspace(
    vendor_project: VendorProject, provider: Provider, openai_provider: OpenAIProvider
) -> None:
    configured(vendor_project, provider, openai_provider)
    item_id = refused_after_writing(vendor_project, provider, reset_in=5 * 3600)
    shown = vendor_project.show(item_id)
    assert (shown["state"], shown["reason_code"], shown["agent"], shown["handoffs"]) == (
        "retry-scheduled", "handed-off", "codex", 1)  # fmt: skip
    assert "handed off to codex" in shown["reason"]
    [refused] = shown["runs"]
    assert (refused["agent"], refused["outcome_class"]) == ("claude", "rate-limited")
    workspace = shown["session"]["workspace"]

    asked = len(openai_provider.requests)
    _events, worked = vendor_project.run_once("--agent", "codex")
    assert worked.returncode == 0, worked.stderr
    after = vendor_project.show(item_id)
    assert (after["state"], after["agent"]) == ("done", "codex")
    _first, second = after["runs"]
    assert (second["agent"], second["kind"], second["outcome_class"]) == (
        "codex", "fresh", "succeeded")  # fmt: skip
    assert after["session"]["workspace"] == workspace
    assert after["session"]["session_id"] != shown["session"]["session_id"]
    told = codex_user_texts(openai_provider.requests[asked])[-1]  # after its own context
    assert told.startswith(TASK)
    assert "Another agent (claude) worked on this task before you, in this workspace" in told
    assert "Its last run ended as rate-limited" in told
    assert "Its last message:\n\nWriting." in told  # Claude's, from its run's stream
    assert (Path(workspace) / "notes.txt").read_text() == "half done\n"  # what Codex found

    by_agent = json.loads(vendor_project.wrighty("usage", "--by", "agent", "--json").stdout)
    runs = {group["agent"]: group["runs"] for group in by_agent["groups"]}
    assert runs == {"claude": 1, "codex": 1}  # each run on the books of the agent that ran it


def test_with_the_reset_near_the_item_waits_for_claude(
    vendor_project: VendorProject, provider: Provider, openai_provider: OpenAIProvider
) -> None:
    configured(vendor_project, provider, openai_provider)
    item_id = refused_after_writing(vendor_project, provider, reset_in=10 * 60)
    shown = vendor_project.show(item_id)
    assert (shown["state"], shown["reason_code"], shown["agent"]) == (
        "retry-scheduled", "rate-limited", None)  # fmt: skip
    assert "resumes its session" in shown["reason"]
    assert openai_provider.requests == []
