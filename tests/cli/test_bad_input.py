"""Bad input: one clear line on stderr, exit code 2, nothing changed on disk."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.helpers import snapshot


def refused(root: Path, *args: str, input: str | None = None) -> str:
    """Run a command that must be refused; return its one stderr line."""
    before = snapshot(root)
    result = wrighty(*args, input=input)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("wrighty: ")
    assert snapshot(root) == before, "a refused command changed files on disk"
    return lines[0]


def write_config(root: Path, text: str) -> None:
    (root / "wrighty.json").write_text(text)


CONFIG_CASES: list[tuple[str, str]] = [
    ('{\n  "worker": {\n    "leaseSeconds": 60,\n  }\n}', "invalid JSON at line 4, column 3"),
    ('{"worker": {"pollSecs": 5}}', "worker.pollSecs: unknown key"),
    ('{"worker": {"concurrency": "two"}}', "worker.concurrency: must be a valid integer"),
    ('{"worker": {"itemTimeoutMinutes": -1}}', "worker.itemTimeoutMinutes: must be > 0"),
    ('{"worker": {"processCrash": {"backoffMultiplier": 0}}}', "must be >= 1"),
]


@pytest.mark.parametrize(("text", "message"), CONFIG_CASES)
def test_a_bad_config_is_refused_by_every_command_that_loads_it(
    initialised: Path, text: str, message: str
) -> None:
    write_config(initialised, text)
    for command in (["list"], ["create", "--title", "x", "--body", "y"], ["show", "1"]):
        line = refused(initialised, *command)
        assert str(initialised / "wrighty.json") in line
        assert message in line


def test_no_config_suggests_init(project: Path) -> None:
    line = refused(project, "list")
    assert "no wrighty.json" in line
    assert "wrighty init" in line


def test_an_unusable_store_location_is_refused(project: Path) -> None:
    (project / "blocker").write_text("a file, not a directory")
    write_config(project, json.dumps({"store": {"url": "sqlite:///blocker/wrighty.db"}}))
    line = refused(project, "init")
    assert "cannot create the store" in line
    assert "--store" in line


def test_a_missing_store_is_not_created_by_a_typo(initialised: Path) -> None:
    line = refused(initialised, "--store", "typo.db", "show", "1")
    assert "no store here; run `wrighty init`" in line


def test_a_file_that_is_not_a_database_is_refused(initialised: Path) -> None:
    (initialised / "notes.db").write_text("shopping list")
    line = refused(initialised, "--store", "notes.db", "list")
    assert "is not a SQLite database" in line


def test_a_store_from_a_newer_wrighty_is_refused(initialised: Path) -> None:
    connection = sqlite3.connect(initialised / ".wrighty" / "wrighty.db")
    connection.execute(
        "INSERT INTO wrighty_migrations (version, name, applied_at) VALUES (42, 'future', 'x')"
    )
    connection.commit()
    connection.close()
    line = refused(initialised, "list")
    assert "newer wrighty" in line
    assert "upgrade wrighty" in line


def test_an_unsupported_store_url_is_refused(initialised: Path) -> None:
    assert "unsupported store URL scheme" in refused(initialised, "--store", "mysql://x/y", "list")


@pytest.mark.parametrize("command", ["show", "queue", "cancel"])
def test_an_unknown_item_id_is_refused(initialised: Path, command: str) -> None:
    assert "no item 99" in refused(initialised, command, "99")


def _created(root: Path, *args: str) -> str:
    result = wrighty("create", "--title", "t", "--body", "b", "--json", *args)
    assert result.exit_code == 0, result.output
    return str(json.loads(result.stdout)["id"])


ILLEGAL: list[tuple[Callable[[Path], str], list[str], str]] = [
    (lambda root: _created(root, "--queue"), ["queue"], "queue` moves todo items only"),
    (
        lambda root: str(json.loads(wrighty("cancel", _created(root), "--json").stdout)["id"]),
        ["cancel"],
        "cancelled, which is final",
    ),
    (
        lambda root: str(json.loads(wrighty("cancel", _created(root), "--json").stdout)["id"]),
        ["queue"],
        "is cancelled",
    ),
]


@pytest.mark.parametrize(("setup", "command", "message"), ILLEGAL)
def test_an_illegal_transition_is_refused(
    initialised: Path, setup: Callable[[Path], str], command: list[str], message: str
) -> None:
    item_id = setup(initialised)
    assert message in refused(initialised, *command, item_id)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--title", "", "--body", "b"], "title is empty"),
        (["--title", "t", "--body", "  "], "the task is empty"),
        (["--title", "t", "--body-file", "missing.md"], "--body-file missing.md: no such file"),
        (["--title", "t", "--body", "b", "--body-file", "x.md"], "--body or --body-file"),
        (["--title", "t", "--body", "b", "--timeout", "30"], "--timeout: cannot read duration"),
        (["--title", "t", "--body", "b", "--agent", "robot"], "--agent robot: unknown agent"),
        (["--title", "t", "--body", "b", "--workspace", "nowhere"], "no such directory"),
    ],
)
def test_bad_create_arguments_are_refused(initialised: Path, args: list[str], message: str) -> None:
    assert message in refused(initialised, "create", *args)


def test_an_unknown_state_filter_is_refused(initialised: Path) -> None:
    assert "unknown state 'finished'" in refused(initialised, "list", "--state", "finished")


def test_init_refuses_to_keep_an_invalid_config(project: Path) -> None:
    write_config(project, '{"worker": {"leaseSeconds": 0}}')
    assert "worker.leaseSeconds: must be > 0" in refused(project, "init")
