from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.helpers import git, git_env, git_repo, installed_wrighty, snapshot
from wrighty.config import config_json_schema


def test_init_creates_config_store_and_ignores_state_in_git(project: Path) -> None:
    result = wrighty("init")
    assert result.exit_code == 0, result.output
    document = json.loads((project / "wrighty.json").read_text())
    assert document["$schema"] == "./.wrighty/wrighty.schema.json"
    assert document["schemaVersion"] == 1
    assert document["store"] == {"url": "sqlite:///.wrighty/wrighty.db"}
    state_dir = project / ".wrighty"
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((state_dir / "wrighty.db").stat().st_mode) == 0o600
    assert json.loads((state_dir / "wrighty.schema.json").read_text()) == config_json_schema()
    exclude = project / ".git" / "info" / "exclude"
    assert exclude.read_text() == ".wrighty/\n"
    assert not (project / ".gitignore").exists()  # nothing the project tracks changes
    assert f"added .wrighty/ to {exclude} (git ignores it; nothing tracked changed)\n" in (
        result.stdout
    )
    assert "installation inst-" in result.stdout


def test_init_twice_changes_nothing_and_keeps_a_edited_config(project: Path) -> None:
    (project / ".gitignore").write_text("node_modules")
    assert wrighty("init").exit_code == 0
    config = project / "wrighty.json"
    edited = json.loads(config.read_text())
    edited["worker"]["concurrency"] = 3
    config.write_text(json.dumps(edited))
    assert wrighty("create", "--title", "keep me", "--body", "b").exit_code == 0
    before = snapshot(project)
    result = wrighty("init")
    assert result.exit_code == 0
    assert "kept existing" in result.stdout
    assert json.loads(config.read_text())["worker"]["concurrency"] == 3
    assert (project / ".gitignore").read_text() == "node_modules"
    assert (project / ".git" / "info" / "exclude").read_text() == ".wrighty/\n"
    after = snapshot(project)
    changed = {k for k in after if after[k] != before.get(k)}
    # Only SQLite's own WAL bookkeeping may differ after re-opening.
    assert changed <= {".wrighty/wrighty.db", ".wrighty/wrighty.db-wal", ".wrighty/wrighty.db-shm"}
    listed = json.loads(wrighty("list", "--json").stdout)
    assert [i["title"] for i in listed] == ["keep me"]


def test_init_force_replaces_the_config_with_defaults(project: Path) -> None:
    (project / "wrighty.json").write_text('{"worker": {"concurrency": 4}}')
    result = wrighty("init", "--force")
    assert result.exit_code == 0, result.output
    assert json.loads((project / "wrighty.json").read_text())["worker"]["concurrency"] == 1


def test_init_example_makes_the_example_agent_the_default_and_keeps_a_file_it_finds(
    project: Path,
) -> None:
    result = wrighty("init", "--example")
    assert result.exit_code == 0, result.output
    document = json.loads((project / "wrighty.json").read_text())
    assert document["worker"]["defaultAgent"] == "example"
    assert document["agents"] == {
        "example": {
            "adapter": "command",
            "command": ["wrighty-example-agent"],
            "resumeCommand": ["wrighty-example-agent"],
        }
    }
    assert wrighty("config", "validate").stdout == "ok\n"
    (project / "wrighty.json").write_text('{"worker": {"concurrency": 2}}')
    kept = wrighty("init", "--example")
    assert "kept existing" in kept.stdout
    assert json.loads((project / "wrighty.json").read_text()) == {"worker": {"concurrency": 2}}


def test_an_item_of_a_project_made_with_init_example_runs_to_done(tmp_path: Path) -> None:
    """The installed programs, as the README runs them: no coding agent needed."""
    command = installed_wrighty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    env["PATH"] = f"{Path(command).parent}:{env.get('PATH', '')}"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [command, *args], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
        )

    assert run("init", "--example").returncode == 0
    assert run("create", "--title", "Say hello", "--body", "hello", "--queue").returncode == 0
    worked = run("worker", "start", "--once")
    assert worked.returncode == 0, worked.stderr
    assert json.loads(run("show", "1", "--json").stdout)["state"] == "done"


def test_init_outside_git_touches_no_gitignore(tmp_path: Path, monkeypatch) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    assert wrighty("init").exit_code == 0
    assert not (plain / ".gitignore").exists()


def test_init_leaves_a_gitignore_that_lists_the_state_folder_as_it_is(project: Path) -> None:
    (project / ".gitignore").write_text("/.wrighty\n")
    result = wrighty("init")
    assert result.exit_code == 0, result.output
    assert "added .wrighty/" not in result.stdout
    assert not (project / ".git" / "info" / "exclude").exists()


def test_init_in_a_repository_with_a_tracked_gitignore_lets_accept_merge(tmp_path: Path) -> None:
    """The installed programs, as a new user runs them: `wrighty init` in a repository whose
    .gitignore is tracked changes nothing tracked, so `integrate: merge` merges the accepted
    item (before, init appended to the tracked .gitignore and every merge was refused)."""
    root = git_repo(tmp_path / "shop")
    (root / ".gitignore").write_text("*.log\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-qm", "the project")
    command = installed_wrighty()
    env = {**git_env(), **{k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}}
    env["PATH"] = f"{Path(command).parent}:{env.get('PATH', '')}"

    def run(*args: str) -> str:
        done = subprocess.run(
            [command, *args], cwd=root, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    said = run("init", "--example")
    assert f"added .wrighty/ to {root / '.git' / 'info' / 'exclude'}" in said
    assert git(root, "status", "--porcelain") == "?? wrighty.json"
    document = json.loads((root / "wrighty.json").read_text())
    document["worker"]["workspaceMode"] = "worktree"
    document["completion"] = {"review": "person", "integrate": "merge"}
    (root / "wrighty.json").write_text(json.dumps(document))
    run("create", "--title", "Leave a note", "--body", "take notes", "--queue")
    run("worker", "start", "--once")
    assert json.loads(run("show", "1", "--json"))["state"] == "review"
    assert run("accept", "1").startswith("item 1 is done")
    assert "WRIGHTY_EXAMPLE_NOTES.md" in git(root, "ls-tree", "--name-only", "HEAD")


def test_init_records_a_store_given_on_the_command_line(project: Path) -> None:
    result = wrighty("--store", "state/queue.db", "init")
    assert result.exit_code == 0, result.output
    url = json.loads((project / "wrighty.json").read_text())["store"]["url"]
    assert url == f"sqlite:///{project / 'state' / 'queue.db'}"
    assert (project / "state" / "queue.db").exists()


def test_the_installation_id_is_random_and_stable(
    project: Path, tmp_path: Path, monkeypatch
) -> None:
    first = wrighty("init").stdout
    again = wrighty("init").stdout
    ident = [line for line in first.splitlines() if line.startswith("installation")]
    assert ident == [line for line in again.splitlines() if line.startswith("installation")]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "another-user"))
    other = [line for line in wrighty("init").stdout.splitlines() if line.startswith("inst")]
    assert other != ident
    import getpass
    import socket

    assert socket.gethostname() not in ident[0]
    assert getpass.getuser() not in ident[0].removeprefix("installation inst-")


def refused_without_change(root: Path, *args: str) -> str:
    before = snapshot(root)
    result = wrighty(*args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert snapshot(root) == before
    return lines[0]


@pytest.mark.parametrize(
    "command",
    [["list"], ["show", "1"], ["create", "--title", "t", "--body", "b"], ["status"], ["init"]],
)
def test_an_empty_store_file_is_refused_and_never_becomes_a_new_store(
    initialised: Path, command: list[str]
) -> None:
    store = initialised / ".wrighty" / "wrighty.db"
    store.write_bytes(b"")  # a store cut short (a copy that failed, a full disk)
    line = refused_without_change(initialised, *command)
    assert line.startswith(f"wrighty: {store}: is empty (0 bytes), so it is not a wrighty store")
    assert "restore it from a backup, or move it away and run `wrighty init`" in line


def test_an_init_whose_store_cannot_be_made_leaves_nothing_behind(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(connection: sqlite3.Connection, script: str) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr("wrighty.store.sqlite._run_script", disk_full)
    line = refused_without_change(project, "init")
    assert "no space left on device" in line
    assert not (project / ".wrighty").exists()
    assert not (project / "wrighty.json").exists()


# Loaded by each racing process (as sitecustomize): its first write into the project waits until
# every racer has come to its own first write, so all of them have looked before any one leaps.
RACE_GATE = """
import os, sys, time

_project, _gate = os.environ["RACE_PROJECT"], os.environ["RACE_GATE"]
_racers = int(os.environ["RACE_RACERS"])
_waiting = False


def _hold_first_write(event, args):
    global _waiting
    if _waiting or event not in ("open", "os.mkdir", "os.link", "os.rename", "os.replace"):
        return
    if not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    path = os.path.abspath(os.fsdecode(args[0]))
    flags = args[2] if event == "open" and isinstance(args[2], int) else 0
    mode = args[1] if event == "open" and isinstance(args[1], str) else ""
    writes = event != "open" or any(c in mode for c in "wax+") or flags & (os.O_WRONLY | os.O_RDWR)
    if not writes or not path.startswith(_project + os.sep):
        return
    _waiting = True
    with open(os.path.join(_gate, str(os.getpid())), "w"):
        pass
    deadline = time.monotonic() + 30
    while len(os.listdir(_gate)) < _racers and time.monotonic() < deadline:
        time.sleep(0.01)


sys.addaudithook(_hold_first_write)
"""


def test_racing_inits_create_the_config_and_the_store_once(project: Path, tmp_path: Path) -> None:
    hook, gate = tmp_path / "hook", tmp_path / "gate"
    hook.mkdir()
    gate.mkdir()
    (hook / "sitecustomize.py").write_text(RACE_GATE)
    env = os.environ | {
        "PYTHONPATH": str(hook),
        "RACE_PROJECT": str(project),
        "RACE_GATE": str(gate),
        "RACE_RACERS": "6",
    }
    racers = [
        subprocess.Popen(
            [installed_wrighty(), "init"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(6)
    ]
    outputs = [racer.communicate(timeout=60) for racer in racers]
    assert [racer.returncode for racer in racers] == [0] * 6, outputs
    assert len(list(gate.iterdir())) == 6  # every racer looked before any one wrote
    lines = [line for out, _ in outputs for line in out.decode().splitlines()]
    config, store = project / "wrighty.json", project / ".wrighty" / "wrighty.db"
    assert lines.count(f"created {config}") == 1
    assert lines.count(f"kept existing {config} (use --force to replace it)") == 5
    assert lines.count(f"created store {store}") == 1
    assert lines.count(f"opened store {store}") == 5
    assert (project / ".git" / "info" / "exclude").read_text() == ".wrighty/\n"
    assert sorted(p.name for p in store.parent.iterdir()) == ["wrighty.db", "wrighty.schema.json"]
    listed = wrighty("list", "--json")
    assert (listed.exit_code, json.loads(listed.stdout)) == (0, [])
