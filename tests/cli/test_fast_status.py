"""`wrighty status --json` and `wrighty --version` answered without the typer app
(wrighty/cli/entry.py) print what the app prints, byte for byte, with the same exit status,
for good input and bad; and the small config reader they use vouches only for what the
pydantic models accept with the same values."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.helpers import run_installed
from wrighty.cli.entry import fast_answer
from wrighty.cli.quick_config import (
    DEFAULT_WORKER_MAX_AGE_SECONDS,
    INIT_DOCUMENT,
    same_json,
    vouched_config,
)
from wrighty.config import WrightyConfig, budgets_of, default_config_document, thresholds_of
from wrighty.domain.budgets import Budgets
from wrighty.domain.health import Thresholds

# The typer app alone, as the executable ran it before entry.py: its name is the program's.
FULL_APP = "import sys\nfrom wrighty.cli.app import main\nmain()\n"

INIT_TEXT = json.dumps(INIT_DOCUMENT, indent=2)


def _changed(path: tuple[str, ...], value: object) -> str:
    document = json.loads(INIT_TEXT)
    *parents, last = path
    section = document
    for key in parents:
        section = section[key]
    section[last] = value
    return json.dumps(document)


# wrighty.json's text, and whether the fast path answers for it.
CONFIGS: dict[str, tuple[str | bytes, bool]] = {
    "as init wrote it": (INIT_TEXT, True),
    "on one line": (json.dumps(INIT_DOCUMENT), True),
    "keys in another order": (json.dumps(dict(reversed(INIT_DOCUMENT.items()))), True),
    # Valid, but not the init document: the full load answers.
    "a float for an int": (INIT_TEXT.replace('"leaseSeconds": 60', '"leaseSeconds": 60.0'), False),
    "a status threshold (unhealthy)": (_changed(("status",), {"minWorkers": 1}), False),
    "another default agent": (_changed(("worker", "defaultAgent"), "codex"), False),
    "no $schema": (json.dumps({k: v for k, v in INIT_DOCUMENT.items() if k != "$schema"}), False),
    # Bad: the full load's errors.
    "a duplicate key": (INIT_TEXT.replace('"agents": {}', '"agents": {}, "agents": {}'), False),
    "NaN": (INIT_TEXT.replace('"leaseSeconds": 60', '"leaseSeconds": NaN'), False),
    "1e999": (INIT_TEXT.replace('"leaseSeconds": 60', '"leaseSeconds": 1e999'), False),
    "a 40-digit number": (
        INIT_TEXT.replace('"leaseSeconds": 60', '"leaseSeconds": ' + "9" * 40),
        False,
    ),
    "a string for a number": (
        INIT_TEXT.replace('"leaseSeconds": 60', '"leaseSeconds": "60"'),
        False,
    ),
    "true for 1": (INIT_TEXT.replace('"concurrency": 1', '"concurrency": true'), False),
    "an unknown key": (_changed(("worker", "leaseSecs"), 60), False),
    "invalid JSON": (INIT_TEXT[:-3], False),
    "not an object": ("[]", False),
    "empty": ("", False),
    "not UTF-8": (INIT_TEXT.encode().replace(b"claude", b"cl\xffude"), False),
    "a store URL elsewhere": (_changed(("store", "url"), "sqlite:///missing/dir/x.db"), False),
}


@pytest.fixture
def full_app(tmp_path: Path) -> Path:
    script = tmp_path / "bin" / "wrighty"
    script.parent.mkdir()
    script.write_text(FULL_APP)
    return script


def _both(cwd: Path, full_app: Path, *args: str) -> tuple[tuple[int, str, str], ...]:
    """(exit status, stdout, stderr) of the installed executable, then of the app alone;
    the time of the check left out."""
    fast = run_installed(cwd, *args)
    full = run_installed(cwd, *args, prefix=[sys.executable], command=str(full_app))
    return tuple(
        (done.returncode, re.sub(r'"checked_at": "[^"]*"', "", done.stdout), done.stderr)
        for done in (fast, full)
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CONFIGS))
def test_status_json_prints_what_the_app_prints(
    initialised: Path, full_app: Path, name: str
) -> None:
    created = wrighty("create", "--title", "Read me", "--body", "a task")  # todo: no wait
    assert created.exit_code == 0, created.output
    text, answered = CONFIGS[name]
    config = initialised / "wrighty.json"
    if isinstance(text, bytes):
        config.write_bytes(text)
    else:
        config.write_text(text)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    assert (fast_answer(["status", "--json"], environ, initialised) is not None) is answered
    fast, full = _both(initialised, full_app, "status", "--json")
    assert fast == full
    assert full[0] in (0, 1, 2)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args", [("status", "--json"), ("status", "--format", "json"), ("--version",)], ids=" ".join
)
def test_where_the_project_cannot_be_read_the_app_answers(
    project: Path, full_app: Path, args: tuple[str, ...]
) -> None:
    """No wrighty.json; then a wrighty.json that is a directory; then a store that is gone."""
    assert _both(project, full_app, *args)[0] == _both(project, full_app, *args)[1]
    (project / "wrighty.json").mkdir()
    fast, full = _both(project, full_app, *args)
    assert fast == full
    (project / "wrighty.json").rmdir()
    assert wrighty("init").exit_code == 0
    (project / ".wrighty" / "wrighty.db").unlink()
    fast, full = _both(project, full_app, *args)
    assert fast == full


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [("status", "--json", "--help"), ("status", "--format", "yaml"), ("status", "--json", "-x")],
    ids=" ".join,
)
def test_any_other_command_line_is_the_apps(
    initialised: Path, full_app: Path, args: tuple[str, ...]
) -> None:
    assert fast_answer(args, {}, initialised) is None
    fast, full = _both(initialised, full_app, *args)
    assert fast == full


def test_an_option_variable_leaves_the_command_to_the_app(initialised: Path) -> None:
    for name in ("WRIGHTY_CONFIG", "WRIGHTY_STORE"):
        assert fast_answer(["status", "--json"], {name: "x"}, initialised) is None
        assert fast_answer(["--version"], {name: "x"}, initialised) is None
    assert fast_answer(["--version"], {}, initialised) is not None


def test_the_reader_vouches_for_what_init_writes(initialised: Path) -> None:
    assert same_json(INIT_DOCUMENT, default_config_document())
    assert vouched_config(initialised / "wrighty.json") is not None


def test_the_defaults_the_fast_status_assumes_are_the_models() -> None:
    """A config without `status` and `budgets` sections, as the app translates it."""
    config = WrightyConfig()
    default = config.status.worker_max_age_seconds
    assert type(default) is type(DEFAULT_WORKER_MAX_AGE_SECONDS)
    assert default == DEFAULT_WORKER_MAX_AGE_SECONDS
    assert thresholds_of(config) == Thresholds()
    assert budgets_of(config) == Budgets()


def test_same_json_tells_types_apart() -> None:
    assert same_json({"a": [1, None, "x"]}, {"a": [1, None, "x"]})
    assert not same_json({"a": 1.0}, {"a": 1})
    assert not same_json({"a": True}, {"a": 1})
    assert not same_json({"a": 1, "b": 2}, {"a": 1})
    assert not same_json([1], [1, 2])


# The typer app with the quick reader turned off: `list`, `show` and `status` then read
# wrighty.json through pydantic's models, as they did before AppContext.settings().
WHOLE_CONFIG_APP = (
    "import wrighty.cli.quick_config as quick\n"
    "quick.quick_read_settings = lambda cwd, explicit: None\n" + FULL_APP
)

# What holds the time of the run (status's header, its oldest wait), left out.
RUN_TIMES = re.compile(
    r"\d{4}-\d\d-\d\dT[\d:.]+Z|oldest wait [^,]*|waited [\d.]+ \w+"
    r"|oldest_queue_wait_seconds [\d.]+"
)

# Command lines the quick settings serve, good and bad: an unknown item, an id that is not
# one, an option that does not parse, a state that is none.
READ_COMMANDS = (
    ("list",),
    ("list", "--json"),
    ("list", "--state", "queued"),
    ("list", "--state", "bogus"),
    ("list", "--attention"),
    ("show", "1"),
    ("show", "1", "--json"),
    ("show", "99"),
    ("show", "one"),
    ("show", "-1"),
    ("status",),
    ("status", "--format", "prometheus"),
    ("status", "--max-queue-wait", "1s"),
    ("status", "--max-queue-wait", "soon"),
    ("status", "--min-workers", "-1"),
)


def _compared(cwd: Path, script: Path, *args: str) -> tuple[tuple[int, str, str], ...]:
    """(exit status, stdout, stderr) of the installed executable and of the app that loads
    the whole config, the run's times left out."""
    fast = run_installed(cwd, *args)
    full = run_installed(cwd, *args, prefix=[sys.executable], command=str(script))
    return tuple(
        (done.returncode, RUN_TIMES.sub("", done.stdout), RUN_TIMES.sub("", done.stderr))
        for done in (fast, full)
    )


@pytest.fixture
def whole_config_app(tmp_path: Path) -> Path:
    script = tmp_path / "whole" / "wrighty"
    script.parent.mkdir()
    script.write_text(WHOLE_CONFIG_APP)
    return script


@pytest.mark.slow
@pytest.mark.parametrize("name", ["as init wrote it", "another default agent", "NaN"])
def test_read_commands_print_what_the_whole_config_gives(
    initialised: Path, whole_config_app: Path, name: str
) -> None:
    """`list`, `show` and `status` with the settings read quickly (the init document) and
    with the whole config's, byte for byte; then with a row that does not read."""
    for queue in ((), ("--queue",)):
        created = wrighty("create", "--title", "Read me", "--body", "a task", *queue)
        assert created.exit_code == 0, created.output
    text, _ = CONFIGS[name]
    assert isinstance(text, str)
    (initialised / "wrighty.json").write_text(text)
    for args in READ_COMMANDS:
        fast, full = _compared(initialised, whole_config_app, *args)
        assert fast == full, args
    connection = sqlite3.connect(initialised / ".wrighty" / "wrighty.db")
    connection.execute("UPDATE items SET queued_at = 'nonsense' WHERE id = 2")
    connection.commit()
    connection.close()
    for args in (("list",), ("show", "2"), ("status",)):
        fast, full = _compared(initialised, whole_config_app, *args)
        assert fast == full, args
        # status counts in SQL: the row is read by the others (where the config reads)
        told = "does not read" in fast[2]
        assert told is (args[0] != "status" and name != "NaN"), args


def test_the_quick_settings_are_the_whole_configs(initialised: Path) -> None:
    """The read settings of the init document, quick and through the models, are the same
    values (the thresholds compared as made)."""
    from dataclasses import asdict

    from wrighty.cli.quick_config import quick_read_settings
    from wrighty.config import load_config
    from wrighty.services.settings import read_settings_of

    quick = quick_read_settings(initialised, None)
    whole = read_settings_of(load_config(initialised / "wrighty.json"))
    assert quick is not None
    assert quick.thresholds() == whole.thresholds()
    assert {**asdict(quick), "thresholds": None, "agent_rules": None} == {
        **asdict(whole),
        "thresholds": None,
        "agent_rules": None,
    }
    assert not quick.agent_rules
