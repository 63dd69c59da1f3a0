"""`wrighty worker start` refusing bad input before it claims anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.helpers import snapshot


def _configure(project: Path, agents: dict, default_agent: str) -> None:
    config = project / "wrighty.json"
    document = json.loads(config.read_text())
    document["agents"] = agents
    document["worker"]["defaultAgent"] = default_agent
    config.write_text(json.dumps(document))


@pytest.mark.parametrize(
    ("agents", "default", "args", "message"),
    [
        (
            {"claude": {"executable": "/nonexistent/claude"}},
            "claude",
            [],
            "executable '/nonexistent/claude' not found; install it or set "
            "agents.claude.executable",
        ),
        ({}, "claude", ["--agent", "robot"], "unknown agent 'robot'"),
        (
            {"ghost": {"adapter": "command", "command": ["/nonexistent/agent-binary"]}},
            "ghost",
            [],
            "executable '/nonexistent/agent-binary' not found",
        ),
        ({}, "claude", ["--idle-timeout", "soon"], "--idle-timeout: cannot read duration"),
    ],
    ids=["vendor-missing", "unknown-agent", "missing-executable", "bad-duration"],
)
def test_worker_start_refuses_and_claims_nothing(
    initialised: Path, agents: dict, default: str, args: list[str], message: str
) -> None:
    _configure(initialised, agents, default)
    created = wrighty("create", "--title", "t", "--body", "b", "--queue")
    assert created.exit_code == 0, created.output
    before = snapshot(initialised)
    result = wrighty("worker", "start", "--once", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot(initialised) == before
    listed = json.loads(wrighty("list", "--json").stdout)
    assert [item["state"] for item in listed] == ["queued"]


def test_a_command_agent_without_a_command_is_a_config_error(initialised: Path) -> None:
    _configure(initialised, {"bare": {"adapter": "command"}}, "bare")
    result = wrighty("worker", "start", "--once")
    assert result.exit_code == 2
    assert "agents.bare.command: is required by the command adapter" in result.stderr
