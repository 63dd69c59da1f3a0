from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tests.conftest import FakeClock
from wrighty.cli.app import app
from wrighty.operator import context


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty git work tree, as the current directory."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def wrighty(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    """Run the CLI in-process; exceptions that are bugs propagate as failures."""
    return CliRunner().invoke(app, list(args), input=input, env=env, catch_exceptions=False)


@pytest.fixture
def initialised(project: Path) -> Path:
    result = wrighty("init")
    assert result.exit_code == 0, result.output
    return project


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The commands' clock, under the test's control (the suite-wide ``clock`` is a bare
    FakeClock that only the test itself reads)."""
    fake = FakeClock()
    monkeypatch.setattr(context, "clock", fake)
    return fake
