"""The real Claude Code, Codex and Gemini CLIs in wrighty's sandbox (docs/sandbox.md,
docs/vendors.md#the-vendors-own-sandboxes), run by a real `wrighty worker start --once`.

Each worker has `worker.sandbox` bubblewrap on. The CLI's key, its provider's address and its
state folder are in the worker's own environment, not in the agent's `env`: the sandbox passes
them in by name, as its vendor's variables (without them each run fails, `auth`). As in
test_verify_vendors.py, the first run writes 41 with the CLI's own tool, the check (which runs
in the same sandbox) fails, and a fix turn resumes the same session inside the sandbox, writes
42 and ends done. Both runs' usage is recorded.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.bubblewrap import bubblewrap
from tests.vendors.conftest import (
    CODEX_MODEL,
    VendorProject,
    claude_agent,
    codex_agent,
    write_file,
)
from tests.vendors.gemini_provider import GeminiProvider
from tests.vendors.openai_provider import OpenAIProvider
from tests.vendors.provider import Provider
from tests.vendors.test_codex_gemini import gemini_agent
from tests.vendors.test_verify_vendors import (
    CHECK_SCRIPT,
    PROMPT,
    claude_fixes_its_answer,
    codex_fixes_its_answer,
    configured,
    first_turn_fails_its_check,
    fix_turn_passes,
    workspace_of,
)
from wrighty.store.sqlite import SqliteStore
from wrighty.vendors.registry import VENDORS

pytestmark = pytest.mark.slow

# The check, which runs in the agent's sandbox, also says whether it sees the store beside the
# workspace (.wrighty/workspaces/N): the sandbox hides it.
SANDBOX_CHECK = CHECK_SCRIPT.replace(
    "import pathlib, sys\n",
    "import pathlib, sys\n"
    'store = pathlib.Path.cwd().parents[1] / "wrighty.db"\n'
    "try:\n"
    '    print("store:", "read" if store.read_bytes().startswith(b"SQLite") else "hidden")\n'
    "except OSError:\n"
    '    print("store: hidden")\n',
)


def sandboxed(project: VendorProject, agents: dict[str, Any], moved: tuple[str, ...]) -> None:
    """The agent's variables ``moved`` go to the worker's own environment, the project's check
    says whether it sees the store, and the worker runs its agent and checks in bubblewrap."""
    [agent] = agents
    own = agents[agent].setdefault("env", {})
    project.environ.update({name: own.pop(name) for name in moved})
    configured(project, agents)
    (project.home / "check_answer.py").write_text(SANDBOX_CHECK)
    project.configure(agents, sandbox={"kind": "bubblewrap", "program": bubblewrap()})


def ran_sandboxed_with_usage(project: VendorProject, item_id: int) -> None:
    """Both checks ran in the sandbox (the store hidden), and both runs' usage is recorded."""
    store = SqliteStore.open(project.root / ".wrighty" / "wrighty.db", create=False)
    try:
        checks = store.list_checks(item_id)
    finally:
        store.close()
    said = [check.evidence.output_tail for check in checks]
    assert [("store: hidden" in tail) for tail in said] == [True, True], said
    runs = project.runs(item_id)
    assert len(runs) == 2
    for run in runs:
        assert run.usage is not None, run
        assert run.usage.tokens > 0, run


# A person's Claude Code settings file, from its runs outside the sandbox.
CLAUDE_SETTINGS = '{"numStartups": 3, "hasCompletedOnboarding": true}'


@pytest.mark.parametrize("folder", ["CLAUDE_CONFIG_DIR", "~/.claude"])
def test_claude_starts_and_resumes_its_session_in_the_sandbox(
    vendor_project: VendorProject, provider: Provider, folder: str
) -> None:
    """With CLAUDE_CONFIG_DIR in the worker's environment, or in its default folders: there
    ~/.claude.json, which Claude Code replaces (a new file renamed over it), stays as it was."""
    agents = claude_agent(provider, vendor_project.home)
    moved: tuple[str, ...] = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
    settings = vendor_project.home / ".claude.json"
    if folder == "CLAUDE_CONFIG_DIR":
        moved += ("CLAUDE_CONFIG_DIR",)
    else:
        del agents["claude"]["env"]["CLAUDE_CONFIG_DIR"]
        settings.write_text(CLAUDE_SETTINGS)
    sandboxed(vendor_project, agents, moved)
    item_id, session_id, _ = claude_fixes_its_answer(vendor_project, provider)
    workspace = workspace_of(vendor_project, item_id).resolve()
    ran_sandboxed_with_usage(vendor_project, item_id)
    # the session's transcript is where the worker's environment puts Claude Code's folder
    assert VENDORS["claude"].transcript(session_id, workspace, vendor_project.env) is not None
    if folder == "~/.claude":
        assert settings.read_text() == CLAUDE_SETTINGS


def test_codex_starts_and_resumes_its_thread_in_the_sandbox(
    vendor_project: VendorProject, openai_provider: OpenAIProvider
) -> None:
    agents = codex_agent(openai_provider, vendor_project.home)
    agents["codex"]["args"] += ["-m", CODEX_MODEL]
    del agents["codex"]["env"]["TMPDIR"]  # the sandbox's /tmp is its own
    sandboxed(vendor_project, agents, ("CODEX_API_KEY", "CODEX_HOME"))
    item_id, thread_id, asked = codex_fixes_its_answer(vendor_project, openai_provider)
    assert {h.get("session-id") for h in openai_provider.headers[asked:]} == {thread_id}
    ran_sandboxed_with_usage(vendor_project, item_id)


def test_gemini_starts_and_resumes_its_session_in_the_sandbox(
    vendor_project: VendorProject, gemini_provider: GeminiProvider
) -> None:
    agents = gemini_agent(gemini_provider, vendor_project.home)
    del agents["gemini"]["env"]["TMPDIR"]  # the sandbox's /tmp is its own
    sandboxed(vendor_project, agents, ("GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"))
    item_id = vendor_project.create(PROMPT)
    answer = workspace_of(vendor_project, item_id).resolve() / "answer.txt"
    gemini_provider.mode = "script"
    gemini_provider.script = [write_file(answer, "41\n"), "Written."]
    first = first_turn_fails_its_check(vendor_project, item_id)
    gemini_provider.script = [write_file(answer, "42\n"), "Fixed."]
    fix_turn_passes(vendor_project, item_id, first["session"]["session_id"])
    assert gemini_provider.script == [], "the fix turn did not run its script to the end"
    ran_sandboxed_with_usage(vendor_project, item_id)
