"""`wrighty worker start` refusing bad input before it claims anything."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import create_queued, settle, start_run
from tests.conftest import START
from tests.helpers import snapshot
from wrighty.domain.states import ItemState


def _configure(project: Path, agents: dict, default_agent: str) -> None:
    config = project / "wrighty.json"
    document = json.loads(config.read_text())
    document["agents"] = agents
    document["worker"]["defaultAgent"] = default_agent
    config.write_text(json.dumps(document))


@pytest.mark.parametrize(
    ("agents", "default", "args", "message"),
    [
        (
            {"claude": {"executable": "/nonexistent/claude"}},
            "claude",
            [],
            "executable '/nonexistent/claude' not found; install it or set "
            "agents.claude.executable",
        ),
        ({}, "claude", ["--agent", "robot"], "unknown agent 'robot'"),
        (
            {"ghost": {"adapter": "command", "command": ["/nonexistent/agent-binary"]}},
            "ghost",
            [],
            "executable '/nonexistent/agent-binary' not found",
        ),
        ({}, "claude", ["--idle-timeout", "soon"], "--idle-timeout: cannot read duration"),
    ],
    ids=["vendor-missing", "unknown-agent", "missing-executable", "bad-duration"],
)
def test_worker_start_refuses_and_claims_nothing(
    initialised: Path, agents: dict, default: str, args: list[str], message: str
) -> None:
    _configure(initialised, agents, default)
    created = wrighty("create", "--title", "t", "--body", "b", "--queue")
    assert created.exit_code == 0, created.output
    before = snapshot(initialised)
    result = wrighty("worker", "start", "--once", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot(initialised) == before
    listed = json.loads(wrighty("list", "--json").stdout)
    assert [item["state"] for item in listed] == ["queued"]


def test_a_command_agent_without_a_command_is_a_config_error(initialised: Path) -> None:
    _configure(initialised, {"bare": {"adapter": "command"}}, "bare")
    result = wrighty("worker", "start", "--once")
    assert result.exit_code == 2
    assert "agents.bare.command: is required by the command adapter" in result.stderr


def _item_in(state: str) -> int:
    """An item of the default agent in ``state``, made the way a user gets it there."""
    if state == "todo":
        created = wrighty("create", "--title", "t", "--body", "b", "--json")
        assert created.exit_code == 0, created.output
        item_id: int = json.loads(created.stdout)["id"]
        return item_id
    item_id = create_queued()
    if state == "cancelled":
        assert wrighty("cancel", str(item_id)).exit_code == 0
    elif state != "queued":
        started = start_run(Path.cwd(), item_id, at=START)
        if state == "running":
            return item_id
        settle(Path.cwd(), started, ItemState(state), at=START, not_before=START + LATER)
    return item_id


LATER = timedelta(days=365 * 100)  # a retry that is not due yet, whenever the test runs


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ("todo", "item 1 is todo; queue it with `wrighty queue 1`"),
        ("running", "item 1 is running; worker w-test holds it"),
        (
            "needs-attention",
            "item 1 is needs-attention; `wrighty show 1` says why, and `wrighty requeue 1 "
            "--fresh` (or `--resume`) puts it back to work",
        ),
        ("retry-scheduled", "item 1 is retry-scheduled, due at 2126-"),
        ("done", "item 1 is done; it is finished"),
        ("cancelled", "item 1 is cancelled; it was cancelled"),
    ],
)
def test_worker_start_item_says_why_it_has_nothing_to_do(
    initialised: Path, state: str, message: str
) -> None:
    _configure(initialised, {"demo": {"adapter": "command", "command": ["true"]}}, "demo")
    _item_in(state)
    before = snapshot(initialised)
    result = wrighty("worker", "start", "--item", "1")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"wrighty: {message}")
    assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot(initialised) == before


def test_worker_start_item_refuses_an_item_that_does_not_exist(initialised: Path) -> None:
    _configure(initialised, {"demo": {"adapter": "command", "command": ["true"]}}, "demo")
    result = wrighty("worker", "start", "--item", "999")
    assert result.exit_code == 2, result.output
    assert result.stderr == "wrighty: no item 999; `wrighty list` shows the items there are\n"


def test_worker_start_item_refuses_an_item_of_another_agent(initialised: Path) -> None:
    agents = {name: {"adapter": "command", "command": ["true"]} for name in ("demo", "other")}
    _configure(initialised, agents, "demo")
    created = wrighty("create", "--title", "t", "--body", "b", "--agent", "other", "--queue")
    assert created.exit_code == 0, created.output
    result = wrighty("worker", "start", "--item", "1")
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "wrighty: item 1 is for agent other; run `wrighty worker start --item 1 --agent other`\n"
    )


def test_worker_start_item_runs_a_queued_item(initialised: Path) -> None:
    _configure(initialised, {"demo": {"adapter": "command", "command": ["true"]}}, "demo")
    item_id = create_queued()
    result = wrighty("worker", "start", "--item", str(item_id))
    assert result.exit_code == 0, result.output
    assert json.loads(wrighty("show", str(item_id), "--json").stdout)["state"] == "done"


def test_an_agent_file_that_is_not_executable_is_named_as_such(initialised: Path) -> None:
    script = initialised / "agent.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    _configure(initialised, {"demo": {"adapter": "command", "command": ["./agent.sh"]}}, "demo")
    result = wrighty("worker", "start", "--once")
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"wrighty: agent 'demo': executable '{script}' is not executable (chmod +x {script})\n"
    )


def _set_worker(project: Path, **settings: object) -> None:
    config = project / "wrighty.json"
    document = json.loads(config.read_text())
    document["worker"].update(settings)
    config.write_text(json.dumps(document))


@pytest.mark.parametrize("asked_by", ["option", "config"])
def test_more_than_one_at_once_in_current_mode_is_said_once(
    initialised: Path, asked_by: str
) -> None:
    """`current` mode runs one item at a time whatever --concurrency says: the worker says so
    at start, in one line, with the modes that do run items side by side."""
    _configure(initialised, {"demo": {"adapter": "command", "command": ["true"]}}, "demo")
    args = ["--concurrency", "3"] if asked_by == "option" else []
    if asked_by == "config":
        _set_worker(initialised, concurrency=3)
    create_queued()
    plain = wrighty("worker", "start", "--once", *args)
    assert plain.exit_code == 0, plain.output
    [line] = [line for line in plain.stdout.splitlines() if "concurrency-limited" in line]
    assert line.split()[1:5] == [
        "concurrency-limited", "requested=3", "runs=1", "workspace_mode=current"
    ]  # fmt: skip
    assert "'worktree' or 'directory'" in line
    create_queued()
    as_json = wrighty("worker", "start", "--once", "--json", *args)
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    [said] = [event for event in events if event["event"] == "concurrency-limited"]
    assert (said["requested"], said["runs"], said["workspace_mode"]) == (3, 1, "current")
    assert [event["event"] for event in events][:2] == ["started", "concurrency-limited"]
    assert [e["state"] for e in events if e["event"] == "settled"] == ["done"]


@pytest.mark.parametrize(("mode", "concurrency"), [("directory", 3), ("current", 1)])
def test_no_word_about_concurrency_when_it_is_what_was_asked(
    initialised: Path, mode: str, concurrency: int
) -> None:
    _configure(initialised, {"demo": {"adapter": "command", "command": ["true"]}}, "demo")
    _set_worker(initialised, workspaceMode=mode)
    create_queued()
    result = wrighty("worker", "start", "--once", "--concurrency", str(concurrency))
    assert result.exit_code == 0, result.output
    assert "concurrency-limited" not in result.stdout


def test_plain_events_write_lists_and_booleans_as_the_json_form_does() -> None:
    from wrighty.cli.worker import plain_value

    assert plain_value(["json:///tmp/a", "command:notify.sh"]) == "json:///tmp/a,command:notify.sh"
    assert plain_value([]) == "-"
    assert (plain_value(True), plain_value(False)) == ("true", "false")
    assert plain_value(3) == "3"


def test_a_plain_delivery_line_names_its_sinks_without_python_spelling(
    initialised: Path,
) -> None:
    _configure(initialised, {"demo": {"adapter": "command", "command": ["false"]}}, "demo")
    config = initialised / "wrighty.json"
    document = json.loads(config.read_text())
    document["notify"] = {"command": {"argv": ["true"]}}
    config.write_text(json.dumps(document))
    create_queued()
    result = wrighty("worker", "start", "--once")
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.stdout.splitlines() if " notify-delivered " in line]
    assert line.endswith(" sent_to=command true (notify.command) recorded=true"), line
