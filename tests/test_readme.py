"""The README's two commands stay true: CI runs the test command exactly as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```sh\n(.+?)\n```", text)[:2]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _install_and_run, test_command = _readme_commands()
    assert "pytest" in test_command
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


def test_the_install_command_installs_and_runs_the_main_job() -> None:
    install_and_run, _ = _readme_commands()
    assert "pip install ." in install_and_run
    for step in ("wrighty init", "wrighty create", "wrighty worker start", "wrighty show"):
        assert step in install_and_run
