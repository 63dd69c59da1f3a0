"""What each vendor adapter says a sandbox must know: the files and folders its CLI writes for
its sessions, the variables its CLI reads for its authentication and its provider, and its
permission flags inside wrighty's own sandbox (docs/vendors.md, "The vendors' own sandboxes")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from wrighty.agents import AgentPlan
from wrighty.domain.sandbox import Profile
from wrighty.errors import WrightyError
from wrighty.supervisor.sandboxing import SandboxMaker
from wrighty.vendors import codex as codex_module
from wrighty.vendors.base import StatePath
from wrighty.vendors.registry import COMMAND, VENDORS
from wrighty.worker import preflight
from wrighty.worker.prepare import agent_sandbox

HOME = Path("/home/ada")


@pytest.mark.parametrize(
    ("vendor", "env", "paths"),
    [
        (
            "claude",
            {"HOME": str(HOME)},
            (StatePath(HOME / ".claude"), StatePath(HOME / ".claude.json", folder=False)),
        ),
        (
            "claude",
            {"HOME": str(HOME), "CLAUDE_CONFIG_DIR": "/srv/claude"},
            (StatePath(Path("/srv/claude")),),
        ),
        ("codex", {"HOME": str(HOME)}, (StatePath(HOME / ".codex"),)),
        (
            "codex",
            {"HOME": str(HOME), "CODEX_HOME": "/srv/codex"},
            (StatePath(Path("/srv/codex")),),
        ),
        ("gemini", {"HOME": str(HOME)}, (StatePath(HOME / ".gemini"),)),
        (
            "gemini",
            {"HOME": str(HOME), "GEMINI_CLI_HOME": "/srv/gem"},
            (StatePath(Path("/srv/gem/.gemini")),),
        ),
    ],
)
def test_each_vendor_names_the_state_its_sessions_write(
    vendor: str, env: dict[str, str], paths: tuple[StatePath, ...]
) -> None:
    assert VENDORS[vendor].state_paths(env) == paths


def test_an_empty_variable_means_the_default_folder() -> None:
    env = {"HOME": str(HOME), "CODEX_HOME": "", "CLAUDE_CONFIG_DIR": "", "GEMINI_CLI_HOME": ""}
    assert VENDORS["codex"].state_paths(env) == (StatePath(HOME / ".codex"),)
    assert VENDORS["claude"].state_paths(env)[0] == StatePath(HOME / ".claude")
    assert VENDORS["gemini"].state_paths(env) == (StatePath(HOME / ".gemini"),)


def test_each_transcript_lies_in_its_vendors_state(tmp_path: Path) -> None:
    """The transcript a resume needs is inside a state path, so a sandbox keeps it writable."""
    env = {"HOME": str(tmp_path)}
    workspace = tmp_path / "work"
    session = "01a22b69-0ffc-7d50-a8cb-98d75ba18de4"
    rollout = (
        tmp_path / ".codex/sessions/2026/11/30" / f"rollout-2026-11-30T07-43-55-{session}.jsonl"
    )
    rollout.parent.mkdir(parents=True)
    rollout.write_text(json.dumps({"payload": {"id": session}}) + "\n")
    found = VENDORS["codex"].transcript(session, workspace, env)
    assert found is not None
    [state] = VENDORS["codex"].state_paths(env)
    assert found.is_relative_to(state.path)


def test_codex_turns_its_own_sandbox_off_only_inside_wrightys() -> None:
    codex = VENDORS["codex"]
    assert codex.flags("workspace") == ("--sandbox", "workspace-write")
    assert codex.flags("workspace", enclosed=True) == ("--sandbox", "danger-full-access")
    full = ("--dangerously-bypass-approvals-and-sandbox",)
    assert codex.flags("full") == codex.flags("full", enclosed=True) == full


@pytest.mark.parametrize("vendor", ["claude", "gemini"])
def test_claude_and_gemini_keep_their_flags_inside_wrightys_sandbox(vendor: str) -> None:
    adapter = VENDORS[vendor]
    for permission in ("workspace", "full"):
        assert adapter.flags(permission, enclosed=True) == adapter.flags(permission)


def test_the_command_adapter_has_no_state_and_no_flags() -> None:
    assert COMMAND.flags("workspace", enclosed=True) == ()


def test_an_enclosed_codex_plan_starts_and_resumes_without_its_own_sandbox() -> None:
    plan = AgentPlan("codex", "codex", "codex", {}, VENDORS["codex"], enclosed=True)
    started = plan.start_argv(None)
    assert started[started.index("--sandbox") :] == ("--sandbox", "danger-full-access", "-")
    resumed = plan.resume_argv("abc")
    assert resumed[resumed.index("--sandbox") + 1] == "danger-full-access"
    outside = AgentPlan("codex", "codex", "codex", {}, VENDORS["codex"])
    assert outside.permission_flags() == ("--sandbox", "workspace-write")


# --- A Codex sandbox that cannot run commands -----------------------------------------------


def installed_bwrap(folder: Path) -> Path:
    folder.mkdir(parents=True)
    program = folder / "bwrap"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    return folder


@pytest.fixture
def slash_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for /tmp (the test's own folders are all in the real one)."""
    folder = tmp_path / "slash-tmp"
    folder.mkdir()
    monkeypatch.setattr(codex_module, "SLASH_TMP", folder)
    return folder


def test_codex_says_its_sandbox_cannot_run_with_a_system_bwrap_and_its_home_in_tmp(
    tmp_path: Path, slash_tmp: Path
) -> None:
    system = installed_bwrap(tmp_path / "usr" / "bin")
    env = {"HOME": str(slash_tmp / "home"), "PATH": str(system)}
    problem = VENDORS["codex"].sandbox_problem("workspace", env)
    assert problem is not None
    assert f"{slash_tmp / 'home' / '.codex'} is inside the temporary folder {slash_tmp}" in problem
    assert str(system / "bwrap") in problem
    assert problem.endswith("or set TMPDIR in the agent's env to a folder that does not hold it")
    # Each way out: its own temporary folder, its folder elsewhere, no system bwrap (or one in
    # a folder Codex takes none from), Codex's sandbox off.
    elsewhere = str(tmp_path / "codex")
    for fixed in (
        {"TMPDIR": str(tmp_path / "own-tmp")},
        {"CODEX_HOME": elsewhere},
        {"PATH": str(tmp_path / "empty")},
        {"PATH": str(installed_bwrap(slash_tmp / "bin"))},
    ):
        assert VENDORS["codex"].sandbox_problem("workspace", {**env, **fixed}) is None, fixed
    assert VENDORS["codex"].sandbox_problem("full", env) is None
    assert VENDORS["codex"].sandbox_problem("workspace", env, enclosed=True) is None


def test_a_worker_refuses_a_codex_agent_whose_sandbox_cannot_run(
    tmp_path: Path, slash_tmp: Path
) -> None:
    system = installed_bwrap(tmp_path / "usr" / "bin")
    agent_env = {"CODEX_HOME": str(slash_tmp / "codex")}
    plan = AgentPlan("coder", "codex", "codex", agent_env, VENDORS["codex"])
    with pytest.raises(WrightyError, match=r"^agent 'coder': Codex's own sandbox cannot run"):
        preflight.refuse_broken_vendor_sandbox(plan, {"PATH": str(system)})
    inside = AgentPlan("coder", "codex", "codex", agent_env, VENDORS["codex"], enclosed=True)
    preflight.refuse_broken_vendor_sandbox(inside, {"PATH": str(system)})
    claude = AgentPlan("c", "claude", "claude", {}, VENDORS["claude"])
    preflight.refuse_broken_vendor_sandbox(claude, {"PATH": str(system), "HOME": str(slash_tmp)})


# --- What an agent's sandbox passes in of the worker's environment --------------------------

# Every vendor's own variables, set in the worker's environment, beside others of the worker's.
VENDOR_VALUES = {
    name: f"value-of-{name}" for vendor in VENDORS.values() for name in vendor.sandbox_variables
}
WORKER_ENV = {
    **VENDOR_VALUES,
    "PATH": "/usr/bin",
    "HOME": str(HOME),
    "LC_ALL": "C.UTF-8",
    "GITHUB_TOKEN": "ghp-worker-token",
    "AWS_SECRET_ACCESS_KEY": "aws-worker-secret",
    "GOOGLE_APPLICATION_CREDENTIALS": "/home/ada/key.json",
    "PGPASSWORD": "pg-worker-secret",
}
GIVEN = {"WRIGHTY_RUN_ID": "run-1", "WRIGHTY_ITEM_ID": "7"}  # the run's own


def maker(tmp_path: Path) -> SandboxMaker:
    return SandboxMaker(
        Profile(env=("PGPASSWORD",)),
        "worker.sandbox",
        project_root=tmp_path,
        state_dir=tmp_path / ".wrighty",
        home=tmp_path / "home",
    )


def agent_environment(tmp_path: Path, adapter: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """What the agent's program gets in its sandbox, and bubblewrap's own argv."""
    vendor = VENDORS.get(adapter, COMMAND)
    plan = AgentPlan("coder", adapter, adapter, {"TMPDIR": "/scratch"}, vendor)
    given = {**plan.env, **GIVEN}
    sandbox = agent_sandbox(maker(tmp_path), plan, tmp_path, given)
    assert sandbox is not None
    return sandbox.environment({**WORKER_ENV, **given}), sandbox.prefix


BASE = {"PATH", "HOME", "LC_ALL", "PGPASSWORD", "TMPDIR", *GIVEN}  # PGPASSWORD: the profile's


@pytest.mark.parametrize(
    ("vendor", "own"),
    [
        (
            "claude",
            {
                "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
                "ANTHROPIC_BASE_URL", "CLAUDE_CODE_USE_BEDROCK", "AWS_BEARER_TOKEN_BEDROCK",
                "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_PROJECT_ID", "CLAUDE_CONFIG_DIR",
            },
        ),
        (
            "codex",
            {"OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN", "OPENAI_BASE_URL",
             "CODEX_HOME"},
        ),
        (
            "gemini",
            {
                "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL",
                "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
                "GEMINI_CLI_HOME",
            },
        ),
    ],
)  # fmt: skip
def test_an_agents_sandbox_passes_its_vendors_own_variables_and_no_others(
    tmp_path: Path, vendor: str, own: set[str]
) -> None:
    environment, argv = agent_environment(tmp_path, vendor)
    assert own <= set(environment)
    assert set(environment) == BASE | set(VENDORS[vendor].sandbox_variables)
    for name in set(environment) - BASE:
        assert environment[name] == f"value-of-{name}"
    others = set(VENDOR_VALUES) - set(VENDORS[vendor].sandbox_variables)
    assert others & {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"}
    assert not others & set(environment)
    # no value goes on bubblewrap's command line, which every user of the machine can read
    assert not [word for word in argv if "value-of-" in word or "secret" in word]


def test_a_command_agents_sandbox_passes_no_vendors_variables(tmp_path: Path) -> None:
    environment, _ = agent_environment(tmp_path, "command")
    assert set(environment) == BASE


def test_a_vendor_variable_the_worker_lacks_is_not_made_up(tmp_path: Path) -> None:
    plan = AgentPlan("coder", "claude", "claude", {}, VENDORS["claude"])
    sandbox = agent_sandbox(maker(tmp_path), plan, tmp_path, GIVEN)
    assert sandbox is not None
    assert sandbox.environment({"HOME": str(HOME), "ANTHROPIC_API_KEY": "k", **GIVEN}) == {
        "HOME": str(HOME), "ANTHROPIC_API_KEY": "k", **GIVEN,
    }  # fmt: skip


def test_a_checks_sandbox_gets_none_of_the_vendors_variables(tmp_path: Path) -> None:
    check = maker(tmp_path).at(tmp_path, passed=("WRIGHTY_ITEM_ID", "WRIGHTY_CHECK_NAME"))
    environment = check.environment({**WORKER_ENV, "WRIGHTY_ITEM_ID": "7"})
    assert set(environment) == {"PATH", "HOME", "LC_ALL", "PGPASSWORD", "WRIGHTY_ITEM_ID"}


def test_no_sandbox_configured_means_none(tmp_path: Path) -> None:
    plan = AgentPlan("coder", "claude", "claude", {}, VENDORS["claude"])
    assert agent_sandbox(None, plan, tmp_path, GIVEN) is None


# --- What a sandbox leaves writable of a vendor's state -------------------------------------


def test_claudes_sandbox_writes_its_folder_and_leaves_its_settings_file_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code replaces ~/.claude.json (a new file renamed over it), which no mount of the
    file alone allows: only its folder is writable, made when missing."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text("{}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    plan = AgentPlan("coder", "claude", "claude", {}, VENDORS["claude"])
    assert preflight.vendor_state(plan) == (home / ".claude",)
    assert (home / ".claude").is_dir()
    given = AgentPlan("coder", "claude", "claude", {"CLAUDE_CONFIG_DIR": str(tmp_path / "c")},
                      VENDORS["claude"])  # fmt: skip
    assert preflight.vendor_state(given) == (tmp_path / "c",)
    command = AgentPlan("coder", "command", "run", {}, COMMAND)
    assert preflight.vendor_state(command) == ()


@pytest.mark.parametrize("page", ["docs/sandbox.md", "docs/vendors.md"])
@pytest.mark.parametrize("vendor", ["claude", "codex", "gemini"])
def test_the_docs_list_each_vendors_variables_as_its_adapter_names_them(
    page: str, vendor: str
) -> None:
    first = VENDORS[vendor].sandbox_variables[0]
    text = (Path(__file__).resolve().parents[2] / page).read_text()
    [row] = [
        line for line in text.splitlines() if line.startswith(f"| `{vendor}` |") and first in line
    ]
    listed = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", row))
    assert listed == set(VENDORS[vendor].sandbox_variables)
