from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# The commands' clock (and so the inbox's), under the test's control: the CLI tests' fixture.
from tests.cli.conftest import clock, wrighty

__all__ = ["clock"]


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local times (the header's clock, `show`'s times) in UTC, whatever the machine's zone."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def make_project(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An initialised project at ``root``, as the current directory."""
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    result = wrighty("init")
    assert result.exit_code == 0, result.output
    os.chmod(root, 0o755)
    return root


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_project(tmp_path / "project", monkeypatch)
