"""`wrighty agents`: what is installed, and the refusal to probe without --yes."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from tests.cli.conftest import wrighty
from tests.helpers import snapshot


def _configure(project: Path, agents: dict) -> None:
    config = project / "wrighty.json"
    document = json.loads(config.read_text())
    document["agents"] = agents
    config.write_text(json.dumps(document))


def test_agents_shows_installed_and_missing_clis_with_their_flags(
    initialised: Path, tmp_path: Path
) -> None:
    fake = tmp_path / "bin" / "codex"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'codex-cli 9.9.9'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    _configure(
        initialised,
        {
            "claude": {"executable": "/nonexistent/claude", "permission": "full"},
            "codex": {"executable": str(fake)},
        },
    )
    result = wrighty("agents", "--json")
    assert result.exit_code == 0, result.output
    by_name = {row["name"]: row for row in json.loads(result.output)}
    assert set(by_name) == {"claude", "codex", "gemini"}
    assert (by_name["claude"]["installed"], by_name["claude"]["path"]) == (False, None)
    assert by_name["claude"]["permission_flags"] == ["--dangerously-skip-permissions"]
    assert by_name["codex"]["installed"] is True
    assert by_name["codex"]["version"] == "codex-cli 9.9.9"
    assert by_name["codex"]["permission_flags"] == ["--sandbox", "workspace-write"]
    assert all(row["check"] is None for row in by_name.values())


def test_check_without_yes_is_refused_and_runs_nothing(initialised: Path, tmp_path: Path) -> None:
    witness = tmp_path / "ran"
    fake = tmp_path / "claude"
    fake.write_text(f"#!/bin/sh\ntouch {witness}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    _configure(initialised, {"claude": {"executable": str(fake)}})
    before = snapshot(initialised)
    result = wrighty("agents", "--check")
    assert result.exit_code == 2
    assert "may spend usage" in result.output
    assert "add --yes" in result.output
    assert not witness.exists()
    assert snapshot(initialised) == before


def test_a_broken_config_is_reported_not_ignored(initialised: Path) -> None:
    (initialised / "wrighty.json").write_text('{"agents": {"claude": {"permision": "full"}}}')
    result = wrighty("agents", "--json")
    assert result.exit_code == 2
    assert "agents.claude.permision: unknown key" in result.output
