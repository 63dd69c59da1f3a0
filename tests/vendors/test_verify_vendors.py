"""Verification's fix turn with the real Claude Code, Codex and Gemini CLIs (docs/verify.md).

A loopback provider makes the agent write answer.txt with the CLI's own tool, under the
workspace permission profile. The project's check wants 42; the first turn writes 41, so the
check fails and the item goes `retry-scheduled` (`verification-failed`). The next claim resumes
the same vendor session with the failing check's name and output as its prompt; the provider
has the agent write 42, the check passes, and the item is done, with both verifications'
evidence in the store.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.vendors.conftest import (
    CODEX_MODEL,
    VendorProject,
    anthropic_user_texts,
    argv_wrapper,
    claude_agent,
    codex_agent,
    read,
    shell,
    started_argvs,
    write,
    write_file,
)
from tests.vendors.gemini_provider import GeminiProvider
from tests.vendors.openai_provider import OpenAIProvider
from tests.vendors.provider import USAGE_TURNS, Provider, Turn
from tests.vendors.test_codex_gemini import codex_user_texts, gemini_agent, gemini_user_texts
from wrighty.domain.check_evidence import CheckRecord
from wrighty.store.sqlite import SqliteStore

pytestmark = pytest.mark.slow

PROMPT = "Write the answer to answer.txt."
CHECK = "answer"
FAILED_OUTPUT = "answer.txt holds 41, expected 42"
# The check: passes only when answer.txt, in the workspace it runs in, holds 42.
CHECK_SCRIPT = """\
import pathlib, sys
answer = pathlib.Path("answer.txt")
held = answer.read_text().strip() if answer.exists() else "nothing"
if held != "42":
    print(f"answer.txt holds {held}, expected 42")
    sys.exit(1)
print("answer.txt holds 42")
"""


def configured(project: VendorProject, agents: dict[str, Any]) -> None:
    """The agent under the workspace permission profile, and the project's one check."""
    [agent] = agents
    agents[agent]["permission"] = "workspace"
    script = project.home / "check_answer.py"
    script.write_text(CHECK_SCRIPT)
    project.configure(
        agents,
        defaultAgent=agent,
        workspaceMode="directory",
        pollSeconds=0.1,
    )
    check = {"name": CHECK, "argv": [sys.executable, str(script)], "timeoutMinutes": 1}
    project.configure_sections(verify={"checks": [check], "maxFixTurns": 2})


def workspace_of(project: VendorProject, item_id: int) -> Path:
    """Where the worker will put the item's workspace (workspaceMode "directory")."""
    return project.root / ".wrighty" / "workspaces" / str(item_id)


def answer_in(project: VendorProject, item_id: int) -> str:
    """What the agent's tool wrote to answer.txt in the item's workspace."""
    answer = workspace_of(project, item_id) / "answer.txt"
    assert answer.exists(), "the CLI's tool did not write answer.txt in the workspace"
    return answer.read_text().strip()


def first_turn_fails_its_check(project: VendorProject, item_id: int) -> dict[str, Any]:
    """Run the item's first claim; it must end retry-scheduled for its failed check."""
    _, worked = project.run_once()
    assert worked.returncode == 0, worked.stderr
    shown = project.show(item_id)
    [run] = shown["runs"]
    assert run["outcome_class"] == "succeeded", run
    assert (shown["state"], shown["reason_code"]) == ("retry-scheduled", "verification-failed")
    assert answer_in(project, item_id) == "41"
    return shown


def fix_turn_passes(project: VendorProject, item_id: int, session_id: str) -> dict[str, Any]:
    """Run the item's second claim: a fix turn resuming ``session_id`` that ends done."""
    events, worked = project.run_once()
    assert worked.returncode == 0, worked.stderr
    assert [e["session_id"] for e in events if e["event"] == "resumed"] == [session_id]
    shown = project.show(item_id)
    assert shown["state"] == "done", shown
    first, second = shown["runs"]
    assert (second["kind"], second["outcome_class"]) == ("fix", "succeeded")
    assert second["session_id"] == first["session_id"] == session_id
    assert answer_in(project, item_id) == "42"
    assert_evidence(project, item_id, [first["run_id"], second["run_id"]])
    return shown


def assert_evidence(project: VendorProject, item_id: int, run_ids: list[str]) -> None:
    """Both verifications left their check's evidence: the first failed, the second passed."""
    store = SqliteStore.open(project.root / ".wrighty" / "wrighty.db", create=False)
    try:
        records: list[CheckRecord] = store.list_checks(item_id)
    finally:
        store.close()
    assert [record.run_id for record in records] == run_ids
    assert len({record.verification_id for record in records}) == 2
    failed, passed = (record.evidence for record in records)
    assert (failed.name, failed.exit_code, passed.name, passed.exit_code) == (CHECK, 1, CHECK, 0)
    assert FAILED_OUTPUT in failed.output_tail
    assert "answer.txt holds 42" in passed.output_tail


def assert_feedback(texts: list[str]) -> None:
    """The fix turn's request, as the provider received it: the first turn's conversation
    (the session was resumed), then a prompt that names the failing check and carries its
    output."""
    asked = [n for n, text in enumerate(texts) if PROMPT in text]
    told = [n for n, text in enumerate(texts) if FAILED_OUTPUT in text]
    assert asked, f"the resumed session lost the first turn's prompt: {texts!r}"
    assert told, f"the provider never received the check's output: {texts!r}"
    assert asked[0] < told[-1]
    feedback = texts[told[-1]]
    assert f"- {CHECK}: exit code 1" in feedback
    assert "Fix the code so that these checks pass." in feedback


# --- Claude Code ----------------------------------------------------------------------------


def claude_fixes_its_answer(project: VendorProject, provider: Provider) -> tuple[int, str, int]:
    """A new item's first Claude Code turn writes 41 and fails its check; its fix turn, in the
    same session, reads it, writes 42 and passes: the item, the session, and how many requests
    came before the fix turn's."""
    item_id = project.create(PROMPT)
    answer = workspace_of(project, item_id).resolve() / "answer.txt"
    provider.mode = "script"
    provider.script = [
        Turn(USAGE_TURNS[0], text="Writing.", call=write(answer, "41\n")),
        Turn(USAGE_TURNS[1], text="Written."),
    ]
    first = first_turn_fails_its_check(project, item_id)
    session_id = first["session"]["session_id"]
    asked = len(provider.requests)
    provider.script = [
        Turn(USAGE_TURNS[0], text="Reading.", call=read(answer)),
        Turn(USAGE_TURNS[0], text="Fixing.", call=write(answer, "42\n")),
        Turn(USAGE_TURNS[1], text="Fixed."),
    ]
    fix_turn_passes(project, item_id, session_id)
    assert provider.script == [], "the fix turn did not run its script to the end"
    return item_id, session_id, asked


def test_claude_fixes_its_work_in_the_same_session_from_the_checks_feedback(
    vendor_project: VendorProject, provider: Provider
) -> None:
    wrapper, log = argv_wrapper(vendor_project.home, "claude")
    configured(vendor_project, claude_agent(provider, vendor_project.home, executable=str(wrapper)))
    _, session_id, asked = claude_fixes_its_answer(vendor_project, provider)

    fresh, resumed = started_argvs(log)
    assert f"--session-id={session_id}" in fresh
    assert f"--resume={session_id}" in resumed
    assert ("--permission-mode", "acceptEdits") in itertools.pairwise(resumed)
    fix_request = provider.requests[asked]
    assert_feedback(anthropic_user_texts(fix_request))


# --- Codex ----------------------------------------------------------------------------------


def codex_fixes_its_answer(
    project: VendorProject, provider: OpenAIProvider
) -> tuple[int, str, int]:
    """A new item's first Codex turn writes 41 and fails its check; its fix turn, in the same
    thread, writes 42 and passes: the item, the thread, and how many requests came before
    the fix turn's."""
    item_id = project.create(PROMPT)
    provider.mode = "script"
    provider.script = [shell("printf '41\\n' > answer.txt"), "Written."]
    first = first_turn_fails_its_check(project, item_id)
    thread_id = first["session"]["session_id"]
    asked = len(provider.requests)
    provider.script = [shell("printf '42\\n' > answer.txt"), "Fixed."]
    fix_turn_passes(project, item_id, thread_id)
    assert provider.script == [], "the fix turn did not run its script to the end"
    return item_id, thread_id, asked


def test_codex_fixes_its_work_in_the_same_thread_from_the_checks_feedback(
    vendor_project: VendorProject, openai_provider: OpenAIProvider
) -> None:
    wrapper, log = argv_wrapper(vendor_project.home, "codex")
    agents = codex_agent(openai_provider, vendor_project.home, executable=str(wrapper))
    agents["codex"]["args"] += ["-m", CODEX_MODEL]
    configured(vendor_project, agents)
    _, thread_id, asked = codex_fixes_its_answer(vendor_project, openai_provider)

    fresh, resumed = started_argvs(log)
    assert "resume" not in fresh
    assert resumed[resumed.index("resume") :] == ["resume", thread_id, "-"]
    assert ("--sandbox", "workspace-write") in itertools.pairwise(resumed)
    assert {h.get("session-id") for h in openai_provider.headers[asked:]} == {thread_id}
    assert_feedback(codex_user_texts(openai_provider.requests[asked]))


# --- Gemini CLI -----------------------------------------------------------------------------


def test_gemini_fixes_its_work_in_the_same_session_from_the_checks_feedback(
    vendor_project: VendorProject, gemini_provider: GeminiProvider
) -> None:
    wrapper, log = argv_wrapper(vendor_project.home, "gemini")
    agents = gemini_agent(gemini_provider, vendor_project.home)
    agents["gemini"]["executable"] = str(wrapper)
    configured(vendor_project, agents)
    item_id = vendor_project.create(PROMPT)
    answer = workspace_of(vendor_project, item_id).resolve() / "answer.txt"
    gemini_provider.mode = "script"
    gemini_provider.script = [write_file(answer, "41\n"), "Written."]
    first = first_turn_fails_its_check(vendor_project, item_id)
    session_id = first["session"]["session_id"]
    asked = len(gemini_provider.streamed)

    gemini_provider.script = [write_file(answer, "42\n"), "Fixed."]
    fix_turn_passes(vendor_project, item_id, session_id)
    assert gemini_provider.script == [], "the fix turn did not run its script to the end"

    fresh, resumed = started_argvs(log)
    assert fresh[fresh.index("--session-id") + 1] == session_id
    assert resumed[resumed.index("--resume") + 1] == session_id
    assert ("--approval-mode", "auto_edit") in itertools.pairwise(resumed)
    assert_feedback(gemini_user_texts(gemini_provider.streamed[asked]))
