"""The README's two commands stay true: CI runs the test command exactly as written."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.docs.test_pages import scratch_env
from tests.helpers import installed_wrighty

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```sh\n(.+?)\n```", text)[:2]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _install_and_run, test_command = _readme_commands()
    assert "pytest" in test_command
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


# What the README's install command installs: the clone, with the web console's extra, so that
# `wrighty serve` works after it as every other command does.
INSTALL = "pip install '.[web]' && "


def test_the_install_command_installs_and_runs_the_main_job() -> None:
    install_and_run, _ = _readme_commands()
    assert INSTALL in install_and_run
    for step in ("wrighty init", "wrighty create", "wrighty worker start", "wrighty show"):
        assert step in install_and_run


def test_the_install_command_runs_the_main_job_after_its_install(tmp_path: Path) -> None:
    """Everything after `pip install '.[web]'`, as written, in a new folder: with the installed
    wrighty on PATH (the venv activated), it runs one item through the example agent to done."""
    install_and_run, _ = _readme_commands()
    _install, after_install = install_and_run.split(INSTALL, 1)
    home = tmp_path / "home"
    home.mkdir()
    env = scratch_env(home, str(Path(installed_wrighty()).parent))
    completed = subprocess.run(
        ["bash", "-c", after_install],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert re.search(r"^Item 1\s+done\s", completed.stdout, re.M), completed.stdout


def test_the_install_command_brings_what_wrighty_serve_needs() -> None:
    """The extra the README installs holds every library `wrighty serve` imports."""
    import tomllib

    from wrighty.cli.serve import WEB_LIBRARIES

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installed = extras["optional-dependencies"]["web"]
    names = {re.split(r"[<>=\[ ]", requirement, maxsplit=1)[0].lower() for requirement in installed}
    assert set(WEB_LIBRARIES) <= names
