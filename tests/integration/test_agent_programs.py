"""A relative agent program (`./agent.sh`) is the one in the project folder, whatever folder the
agent works in; real `wrighty worker start` processes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.worker_process import make_project
from wrighty.agents import plan_agent
from wrighty.config import check_config_text
from wrighty.domain.states import ItemState
from wrighty.supervisor.process import executable_problem

SCRIPT = '#!/bin/sh\ncat > /dev/null\npwd > ran-here.txt\necho "$0" >> ran-here.txt\n'


def _script(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SCRIPT)
    path.chmod(0o755)


@pytest.mark.parametrize("mode", ["current", "directory", "worktree"])
def test_a_relative_command_runs_from_the_project_in_every_workspace_mode(
    tmp_path: Path, mode: str
) -> None:
    agents = {"script": {"adapter": "command", "command": ["./agent.sh"]}}
    project = make_project(
        tmp_path / "project",
        worker={"workspaceMode": mode, "defaultAgent": "script"},
        agents=agents,
    )
    _script(project.root / "agent.sh")
    if mode == "worktree":
        git = ["git", "-C", str(project.root), "-c", "user.email=t@t", "-c", "user.name=t"]
        subprocess.run([*git, "init", "-q"], check=True)
        for key, value in (("user.email", "t@t"), ("user.name", "t")):  # wrighty's commits'
            subprocess.run([*git, "config", key, value], check=True)
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    item_id = project.plant("the task")
    finished = project.worker("--once")
    assert finished.returncode == 0, finished.stderr
    assert project.get(item_id).state is ItemState.DONE
    workspace = {
        "current": project.root,
        "directory": project.root / ".wrighty" / "workspaces" / str(item_id),
        "worktree": project.root / ".wrighty" / "worktrees" / str(item_id),
    }[mode]
    assert (workspace / "ran-here.txt").read_text() == f"{workspace}\n{project.root}/agent.sh\n"


def test_a_relative_vendor_executable_runs_from_the_project(tmp_path: Path) -> None:
    agents = {"claude": {"executable": "./bin/claude"}}
    project = make_project(
        tmp_path / "project",
        worker={"workspaceMode": "directory", "defaultAgent": "claude"},
        agents=agents,
    )
    _script(project.root / "bin" / "claude")  # not a real Claude Code: it only says where
    item_id = project.plant("the task")
    finished = project.worker("--once")
    assert finished.returncode == 0, finished.stderr
    workspace = project.root / ".wrighty" / "workspaces" / str(item_id)
    assert (workspace / "ran-here.txt").read_text() == f"{workspace}\n{project.root}/bin/claude\n"


def test_every_agent_program_of_the_config_is_planned_from_the_project(tmp_path: Path) -> None:
    document = """{"agents": {
        "tool": {"adapter": "command", "command": ["bin/tool", "./data"],
                 "resumeCommand": ["./bin/tool", "--resume"]},
        "bare": {"adapter": "command", "command": ["python3", "x.py"]},
        "codex": {"executable": "../tools/codex"}}}"""
    config, problems = check_config_text(document)
    assert config is not None, problems
    tool = plan_agent(config, "tool", project_root=tmp_path)
    assert tool.start_argv(None) == (f"{tmp_path}/bin/tool", "./data")  # arguments as written
    assert tool.resume_argv("s-1") == (f"{tmp_path}/bin/tool", "--resume")
    assert plan_agent(config, "bare", project_root=tmp_path).start_argv(None) == ("python3", "x.py")
    assert plan_agent(config, "codex", project_root=tmp_path).executable == (
        f"{tmp_path}/../tools/codex"
    )


def test_why_a_program_cannot_be_started(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("#!/bin/sh\n")
    assert executable_problem(str(plain), None) == (
        f"'{plain}' is not executable (chmod +x {plain})"
    )
    assert executable_problem(str(tmp_path), None) == f"'{tmp_path}' is a directory, not a program"
    assert executable_problem(str(tmp_path / "nothing"), None) == (
        f"'{tmp_path / 'nothing'}' not found"
    )
    assert executable_problem("plain", str(tmp_path)) == (
        f"'plain' is not executable (chmod +x {plain})"
    )
    assert executable_problem("nothing-by-this-name", str(tmp_path)) == (
        "'nothing-by-this-name' not found on PATH"
    )
    plain.chmod(0o755)
    assert executable_problem(str(plain), None) is None
    assert executable_problem("plain", str(tmp_path)) is None
