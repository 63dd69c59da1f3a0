"""The vendors' own sandboxes and state, with the real CLIs (docs/vendors.md, "The vendors' own
sandboxes").

- Codex's own sandbox (`--sandbox workspace-write`, bubblewrap on Linux: the system's `bwrap` on
  PATH, else the one it bundles) keeps `.git` read-only; the flags wrighty gives it inside its
  own sandbox (`--sandbox danger-full-access`) turn it off, even where it cannot start (a
  system bubblewrap and a CODEX_HOME in the temporary folder).
- What each CLI writes for a run and a resume of its session lies inside the adapter's
  `state_paths`, which a sandbox leaves writable.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.vendors.conftest import (
    CODEX_MODEL,
    VendorProject,
    codex_agent,
    shell,
    vendor_cli,
    with_bwrap_dir,
)
from tests.vendors.gemini_provider import GeminiProvider, gemini_settings
from tests.vendors.openai_provider import OpenAIProvider, codex_provider_args
from tests.vendors.provider import Provider
from wrighty.vendors.base import StatePath
from wrighty.vendors.registry import VENDORS

pytestmark = pytest.mark.slow

# Writes the answer, then a file in .git, which Codex's own sandbox keeps read-only.
PROBE = "printf '41\\n' > answer.txt; printf x > .git/probe"


def private_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a CLI whose every folder is in ``home`` (XDG included)."""
    kept = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("WRIGHTY_", "ANTHROPIC", "CLAUDE", "CODEX", "OPENAI", "GEMINI"))
        and not key.startswith(("GOOGLE", "XDG_", "TMPDIR"))
    }
    xdg = {
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
    }
    return with_bwrap_dir({**kept, "HOME": str(home), **xdg, **extra})


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    ran = subprocess.run(
        argv, cwd=cwd, env=env, input="go", capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, (ran.stdout[-2000:], ran.stderr[-2000:])
    return ran


def folders(tmp_path: Path) -> tuple[Path, Path]:
    """A private HOME, and a workspace with a `.git` folder as a checkout has."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    (work / ".git").mkdir(parents=True)
    return home, work


def codex_shell(tmp_path: Path, *, enclosed: bool) -> tuple[Path, str]:
    """Codex runs PROBE with its shell tool, under the workspace profile's flags as wrighty
    gives them outside its sandbox or (``enclosed``) inside it. Its CODEX_HOME is in the
    temporary folder, with no TMPDIR of its own: with a system bubblewrap on PATH, Codex's
    sandbox cannot start there. The workspace, and what the tool said."""
    home, work = folders(tmp_path)
    (home / ".codex").mkdir()
    flags = VENDORS["codex"].flags("workspace", enclosed=enclosed)
    with OpenAIProvider("script") as openai:
        openai.script = [shell(PROBE), "Done."]
        env = private_env(home, CODEX_API_KEY="sk-fake", CODEX_HOME=str(home / ".codex"))
        args = [*flags, *codex_provider_args(openai.url), "-m", CODEX_MODEL]
        run(VENDORS["codex"].start_argv(str(vendor_cli("codex")), None, args), work, env)
        assert openai.script == [], "Codex did not run the script to its end"
        [said] = [
            item["output"]
            for item in openai.requests[1]["input"]
            if item.get("type") == "function_call_output"
        ]
    return work, said


def test_codex_inside_wrightys_sandbox_runs_its_shell_without_its_own(tmp_path: Path) -> None:
    work, said = codex_shell(tmp_path, enclosed=True)
    assert (work / "answer.txt").read_text() == "41\n", said
    assert (work / ".git" / "probe").read_text() == "x", said


def test_codex_outside_wrightys_sandbox_keeps_its_own_and_git_read_only(
    tmp_path: Path,
) -> None:
    home, work = folders(tmp_path)
    (home / ".codex").mkdir()
    (home / "tmp").mkdir()
    with OpenAIProvider("script") as openai:
        openai.script = [shell(PROBE), "Done."]
        env = private_env(
            home,
            CODEX_API_KEY="sk-fake",
            CODEX_HOME=str(home / ".codex"),
            TMPDIR=str(home / "tmp"),  # as on a person's machine: CODEX_HOME is not in it
        )
        flags = VENDORS["codex"].flags("workspace")
        args = [*flags, *codex_provider_args(openai.url), "-m", CODEX_MODEL]
        run(VENDORS["codex"].start_argv(str(vendor_cli("codex")), None, args), work, env)
        [said] = [
            item["output"]
            for item in openai.requests[1]["input"]
            if item.get("type") == "function_call_output"
        ]
    assert (work / "answer.txt").read_text() == "41\n", said
    assert not (work / ".git" / "probe").exists()
    assert "Read-only file system" in said or "Permission denied" in said, said


# --- What each CLI writes for its sessions --------------------------------------------------


def written(home: Path) -> set[Path]:
    return {path for path in home.rglob("*") if not path.is_dir()}


def outside(paths: set[Path], kept: tuple[StatePath, ...], scratch: Path) -> list[Path]:
    """The files of ``paths`` neither in a state path nor in the scratch (TMPDIR) folder."""

    def inside(path: Path) -> bool:
        for state in kept:
            if path == state.path or (state.folder and path.is_relative_to(state.path)):
                return True
        return path.is_relative_to(scratch)

    return sorted(path for path in paths if not inside(path))


def test_claude_writes_a_run_and_its_resume_only_in_its_state_paths(tmp_path: Path) -> None:
    home, work = folders(tmp_path)
    vendor, session = VENDORS["claude"], str(uuid.uuid4())
    with Provider() as anthropic:
        env = private_env(
            home,
            ANTHROPIC_BASE_URL=anthropic.url,
            ANTHROPIC_API_KEY="sk-test",
            CLAUDE_CODE_MAX_RETRIES="0",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            TMPDIR=str(home / "tmp"),
        )
        (home / "tmp").mkdir()
        extra = vendor.flags("workspace")
        run(vendor.start_argv(str(vendor_cli("claude")), session, extra), work, env)
        run(vendor.resume_argv(str(vendor_cli("claude")), session, extra), work, env)
    kept = vendor.state_paths(env)
    assert kept == (StatePath(home / ".claude"), StatePath(home / ".claude.json", folder=False))
    assert outside(written(home), kept, home / "tmp") == []
    assert vendor.transcript(session, work, env) is not None
    assert (home / ".claude.json").is_file()


def test_codex_writes_a_run_and_its_resume_only_in_its_state_paths(tmp_path: Path) -> None:
    home, work = folders(tmp_path)
    vendor = VENDORS["codex"]
    (home / "tmp").mkdir()
    with OpenAIProvider("ok") as openai:
        env = private_env(home, CODEX_API_KEY="sk-fake", TMPDIR=str(home / "tmp"))
        extra = [*vendor.flags("workspace"), *codex_provider_args(openai.url)]
        started = run(vendor.start_argv(str(vendor_cli("codex")), None, extra), work, env)
        first = json.loads(started.stdout.splitlines()[0])
        thread = first["thread_id"]
        run(vendor.resume_argv(str(vendor_cli("codex")), thread, extra), work, env)
        assert {h.get("session-id") for h in openai.headers} == {thread}
    kept = vendor.state_paths(env)
    assert kept == (StatePath(home / ".codex"),)
    assert outside(written(home), kept, home / "tmp") == []
    assert vendor.transcript(thread, work, env) is not None


def test_gemini_writes_a_run_and_its_resume_only_in_its_state_paths(tmp_path: Path) -> None:
    home, work = folders(tmp_path)
    vendor, session = VENDORS["gemini"], str(uuid.uuid4())
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps(gemini_settings()))
    (home / "tmp").mkdir()
    with GeminiProvider("ok") as gemini:
        env = private_env(
            home,
            GEMINI_API_KEY="AIzaFakeGeminiKey0123456789",
            GOOGLE_GEMINI_BASE_URL=gemini.url,
            TMPDIR=str(home / "tmp"),
        )
        extra = [*vendor.flags("workspace"), "-m", "gemini-2.5-flash"]
        run(vendor.start_argv(str(vendor_cli("gemini")), session, extra), work, env)
        run(vendor.resume_argv(str(vendor_cli("gemini")), session, extra), work, env)
    kept = vendor.state_paths(env)
    assert kept == (StatePath(home / ".gemini"),)
    assert outside(written(home), kept, home / "tmp") == []
    assert vendor.transcript(session, work, env) is not None


# --- A worker refuses a Codex agent whose own sandbox cannot run ----------------------------


def test_a_worker_refuses_codex_whose_sandbox_cannot_run_its_commands(
    vendor_project: VendorProject, openai_provider: OpenAIProvider
) -> None:
    """CODEX_HOME in the temporary folder, with no TMPDIR of its own, and a system bubblewrap:
    Codex would fail every shell command, so the worker refuses to start (exit 2) and names
    the way out; with the agent's own TMPDIR, the same agent runs."""
    env = with_bwrap_dir(dict(os.environ))
    system = [
        path
        for folder in env.get("PATH", "").split(os.pathsep)
        if (path := Path(folder or ".") / "bwrap").is_file()
        and not path.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve())
    ]
    if not system:
        pytest.skip("no system bubblewrap on PATH (install it, or set WRIGHTY_BWRAP_DIR)")
    agents = codex_agent(openai_provider, vendor_project.home)
    del agents["codex"]["env"]["TMPDIR"]
    vendor_project.configure(agents, defaultAgent="codex", workspaceMode="directory")
    vendor_project.create("say hi")
    _, refused = vendor_project.run_once()
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith("wrighty: agent 'codex': Codex's own sandbox cannot run"), (
        refused.stderr
    )
    assert "set TMPDIR in the agent's env" in refused.stderr
    vendor_project.configure(codex_agent(openai_provider, vendor_project.home))
    _, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
