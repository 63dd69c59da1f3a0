"""Which agents an item may be handed to from here (wrighty/agents.offered_agents): configured
in wrighty.json, and their program found on this machine, by the PATH its run would get."""

from __future__ import annotations

from pathlib import Path

import pytest

from wrighty.agents import configured_agents, offered_agents
from wrighty.config import WrightyConfig


def program(folder: Path, name: str, *, mode: int = 0o755) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(mode)
    return path


def test_an_agent_is_found_on_the_path_its_run_gets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vendor CLI on the PATH of the agent's own env is found there (the run gets that
    PATH), not on wrighty's; a file that is not executable is not a program."""
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    own = program(tmp_path / "own-bin", "gemini").parent
    program(tmp_path / "plain", "script", mode=0o644)
    config = WrightyConfig.model_validate(
        {
            "agents": {
                "gemini": {"env": {"PATH": str(own)}},
                "plain": {"adapter": "command", "command": [str(tmp_path / "plain" / "script")]},
            }
        }
    )
    assert configured_agents(config) == ["claude", "codex", "gemini", "plain"]
    assert offered_agents(config) == ["gemini"]
    monkeypatch.setenv("PATH", str(program(tmp_path / "bin", "codex").parent))
    assert offered_agents(config) == ["codex", "gemini"]
