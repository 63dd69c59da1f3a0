from __future__ import annotations

import json
import stat
from pathlib import Path

from tests.cli.conftest import wrighty
from tests.helpers import snapshot
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
    assert (project / ".gitignore").read_text() == ".wrighty/\n"
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
    assert (project / ".gitignore").read_text() == "node_modules\n.wrighty/\n"
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


def test_init_outside_git_touches_no_gitignore(tmp_path: Path, monkeypatch) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    assert wrighty("init").exit_code == 0
    assert not (plain / ".gitignore").exists()


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
