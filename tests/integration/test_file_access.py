"""What wrighty keeps under .wrighty/ is its user's alone, and a .wrighty/ that belongs to someone
else is refused in one line that says whose it is, through the installed command."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import run_installed, snapshot

ROOT = Path(__file__).resolve().parents[2]
OTHER_UID = 65534


def wrighty(
    cwd: Path, *args: str, stdin: str = "", unprivileged: bool = False
) -> subprocess.CompletedProcess[str]:
    """The installed command; ``unprivileged``: as root without any capability, to which file
    permissions apply as to any other user (the interpreter in /root stays reachable)."""
    prefix = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"] if unprivileged else []
    return run_installed(cwd, *args, stdin=stdin, prefix=prefix, timeout=120)


def initialised(root: Path) -> Path:
    root.mkdir()
    assert wrighty(root, "init").returncode == 0
    return root


def chown_tree(path: Path, uid: int) -> None:
    for entry in (path, *path.rglob("*")):
        os.chown(entry, uid, uid)


@pytest.fixture
def unprivileged_runs() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root, to give .wrighty/ to another user and then drop root's powers")
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to drop root's capabilities")


@pytest.mark.parametrize("owned", ["folder", "store"])
def test_a_state_folder_of_another_user_is_named_with_its_owner(
    tmp_path: Path, unprivileged_runs: None, owned: str
) -> None:
    project = initialised(tmp_path / "project")
    state = project / ".wrighty"
    blocked = state if owned == "folder" else state / "wrighty.db"
    chown_tree(blocked, OTHER_UID)  # .wrighty/ is 0700 and the store 0600, as init made them
    owner = pwd.getpwuid(OTHER_UID).pw_name
    before = snapshot(project)
    for command in (["list"], ["create", "--title", "t", "--body", "b"], ["show", "1"], ["init"]):
        result = wrighty(project, *command, unprivileged=True)
        assert result.returncode == 2, result.stdout + result.stderr
        [line] = result.stderr.splitlines()
        assert line.startswith(f"wrighty: {blocked}: permission denied: it belongs to user {owner}")
        assert f"run wrighty as user {owner}, or change its owner or mode (chown/chmod)" in line
    assert snapshot(project) == before


def run_one_example_item(project: Path, *, workspace_mode: str) -> None:
    """One item run to its end by the example agent, through a worker started once."""
    config = json.loads((project / "wrighty.json").read_text())
    agent = [sys.executable, str(ROOT / "examples" / "agent.py")]
    config["agents"] = {"example": {"adapter": "command", "command": agent}}
    config["worker"] |= {"defaultAgent": "example", "workspaceMode": workspace_mode}
    (project / "wrighty.json").write_text(json.dumps(config))
    created = wrighty(
        project, "create", "--title", "t", "--queue", stdin="wrighty-example: succeed"
    )
    assert created.returncode == 0, created.stderr
    worked = wrighty(project, "worker", "start", "--once")
    assert worked.returncode == 0, worked.stderr


def test_run_logs_and_workspaces_are_private_all_the_way_down(tmp_path: Path) -> None:
    project = initialised(tmp_path / "project")
    run_one_example_item(project, workspace_mode="directory")
    state = project / ".wrighty"
    [run_dir] = (state / "runs" / "1").iterdir()
    for folder in (state / "runs", state / "runs" / "1", run_dir, state / "workspaces" / "1"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE((state / "workspaces").stat().st_mode) == 0o700


@contextmanager
def open_store_listening(path: Path) -> Iterator[None]:
    """The store open (its -wal and -shm there) with an idle worker's wake-up socket, made under
    a umask of 022 in this process."""
    from wrighty.store.sqlite import SqliteStore

    before = os.umask(0o022)
    try:
        store = SqliteStore.open(path, create=False)
        try:
            listener = store.listen_for_work("modes")
            try:
                store.schema_version()
                yield
            finally:
                listener.close()
        finally:
            store.close()
    finally:
        os.umask(before)


def test_every_file_wrighty_makes_under_its_state_directory_is_private(tmp_path: Path) -> None:
    """Under a umask of 022 (run_installed's), after init, a worker's run in `current` mode
    (the project lock) and a wake-up listener, and the read commands: every file under .wrighty
    is 0600 and every directory 0700. (What an agent makes in its workspace is its own.)"""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    assert wrighty(project, "init").returncode == 0
    run_one_example_item(project, workspace_mode="current")
    with open_store_listening(project / ".wrighty" / "wrighty.db"):
        for command in (["list"], ["status"], ["show", "1"], ["logs", "1"], ["init"]):
            done = wrighty(project, *command)
            assert done.returncode == 0, done.stderr
        state = project / ".wrighty"
        seen = {
            str(path.relative_to(state)): stat.S_IMODE(path.lstat().st_mode)
            for path in (state, *state.rglob("*"))
            if "workspaces" not in path.relative_to(state).parts[:1]
        }
    assert "current-workspace.lock" in seen
    assert "wrighty.schema.json" in seen
    assert "wrighty.db-wal" in seen
    assert any(name.endswith(".sock") for name in seen), seen  # the listener's socket
    assert any(name.endswith("stdout.log") for name in seen)
    wrong = {
        name: f"{mode:04o}"
        for name, mode in seen.items()
        if mode != (0o700 if (state / name).is_dir() else 0o600)
    }
    assert wrong == {}
