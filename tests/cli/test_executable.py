"""The installed `wrighty` executable, run as a real subprocess, as a user would."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import run_installed


def run(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return run_installed(cwd, *args, stdin=stdin)


@pytest.mark.slow
def test_the_installed_command_runs_the_readme_tour(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    assert run(project, "init").returncode == 0
    created = run(project, "create", "--title", "Say hello", "--queue", "--json",
                  stdin="Print hello from the agent.\n")  # fmt: skip
    assert created.returncode == 0, created.stderr
    item = json.loads(created.stdout)
    assert item["state"] == "queued"
    listed = run(project, "list", "--json")
    assert [i["id"] for i in json.loads(listed.stdout)] == [item["id"]]
    shown = json.loads(run(project, "show", str(item["id"]), "--json").stdout)
    assert shown["body"] == "Print hello from the agent.\n"
    refused = run(project, "cancel", "999")
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "wrighty: no item 999; `wrighty list` shows the items there are"
    )
    assert "Traceback" not in refused.stderr


@pytest.mark.slow
def test_the_readme_runs_one_item_through_the_example_agent(tmp_path: Path) -> None:
    """The README's first command, minus the install: init, example config, create, run; in a
    project that is not inside the clone (the example config works wherever it is copied)."""
    repo = Path(__file__).resolve().parents[2]
    demo = tmp_path / "somewhere" / "else" / "demo"
    demo.mkdir(parents=True)
    assert run(demo, "init").returncode == 0
    shutil.copy(repo / "examples" / "wrighty.json", demo / "wrighty.json")
    created = run(demo, "create", "--title", "Say hello", "--body", "wrighty-example: succeed",
                  "--queue")  # fmt: skip
    assert created.returncode == 0, created.stderr
    worked = run(demo, "worker", "start", "--once")
    assert worked.returncode == 0, worked.stderr
    assert "settled" in worked.stdout
    assert "state=done" in worked.stdout
    shown = json.loads(run(demo, "show", "1", "--json").stdout)
    assert shown["state"] == "done"
    assert shown["runs"][0]["outcome_class"] == "succeeded"
    assert "succeed" in (demo / "WRIGHTY_EXAMPLE_NOTES.md").read_text()


def test_wrighty_alone_prints_its_help_and_exits_0(tmp_path: Path) -> None:
    alone = run(tmp_path)
    assert (alone.returncode, alone.stderr) == (0, "")
    assert "Usage: wrighty [OPTIONS] COMMAND [ARGS]..." in alone.stdout
    assert "init " in alone.stdout
    assert "worker " in alone.stdout
