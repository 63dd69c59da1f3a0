"""The inbox's keys for queue (e), the change (D), the checks (v), hand off (h) and search
(/), headless (Textual's pilot), each landing in the store as its command would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_workspaces_cli import repo, worktree_item
from tests.conftest import FakeClock
from tests.inbox.seed import drive, make_app, seed, settled
from tests.inbox.test_inbox_app import board_ids, message, screen_text, select
from tests.inbox.test_inbox_review import read_items
from wrighty.domain.states import ItemState
from wrighty.inbox.app import InboxApp

__all__ = ["repo"]


def test_e_queues_a_todo_item_once_asked(project: Path, clock: FakeClock) -> None:
    ids = seed(project, clock)
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: Any) -> None:
        await select(app, pilot, ids.todo)
        await pilot.press("e")
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        assert f"Queue item {ids.todo}, so that a worker" in screen_text(app)
        await pilot.press("n")
        await settled(app, pilot)
        assert message(app) == "nothing done"
        await pilot.press("e", "y")
        await settled(app, pilot)
        assert message(app) == f"item {ids.todo} is queued"
        await select(app, pilot, ids.queued)
        await pilot.press("e", "y")
        await settled(app, pilot)
        assert message(app) == (
            f"wrighty: item {ids.queued} is queued; `wrighty queue` moves todo items only"
        )

    try:
        drive(app, script, size=(140, 30))
    finally:
        store.close()
    [todo] = read_items(project, ids.todo)
    assert todo.state is ItemState.QUEUED


def test_slash_searches_id_title_and_reason_and_escape_clears(
    project: Path, clock: FakeClock
) -> None:
    ids = seed(project, clock)
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: Any) -> None:
        everything = board_ids(app)
        await pilot.press("slash", *"LOGIN")  # a title (two of them), case folded
        await settled(app, pilot)
        assert app.selected_id() == ids.attention
        assert "Fix the flaky login test" in screen_text(app)
        assert "Tidy the README" not in screen_text(app)
        assert message(app) == "/LOGIN: 2 of 8 items (escape clears it)"
        await pilot.press("enter", "j")  # the board again, the search kept
        await settled(app, pilot)
        assert app.selected_id() == ids.blocked
        await pilot.press("slash", *["backspace"] * 5, *"provider refused")  # a reason
        await settled(app, pilot)
        assert app.selected_id() == ids.auth
        assert "Fix the flaky login test" not in screen_text(app)
        await pilot.press("escape")
        await settled(app, pilot)
        assert "Tidy the README" in screen_text(app)
        assert message(app) == ""
        assert board_ids(app) == everything

    try:
        drive(app, script, size=(140, 30))
    finally:
        store.close()


def test_capital_d_shows_the_change_in_a_pager_redacted_and_q_closes_it(
    repo: Path, clock: FakeClock
) -> None:
    key = "sk-ant-api03-" + "q" * 40
    item_id = worktree_item(repo, clock, ItemState.NEEDS_ATTENTION, dirty=True)
    (repo / ".wrighty" / "worktrees" / str(item_id) / "deploy.sh").write_text(
        f"export KEY={key}\necho '\x1b]0;pwned\x07'\n"
    )
    app, store = make_app(repo)

    async def script(app: InboxApp, pilot: Any) -> None:
        await select(app, pilot, item_id)
        await pilot.press("D")
        await settled(app, pilot)
        assert app.screen.__class__.__name__ == "ChangeScreen"
        shown = screen_text(app)
        assert f"Item {item_id}'s change against " in shown
        assert "+export KEY=[REDACTED]" in shown
        assert key not in shown
        assert "\\x1b]0;pwned\\x07" in shown  # the escape shown, not obeyed
        assert "+edited, not committed" in shown
        await pilot.press("q")
        await settled(app, pilot)
        assert app.screen is app.screen_stack[0]

    try:
        drive(app, script, size=(120, 40))
    finally:
        store.close()


def test_capital_d_on_an_item_with_no_workspace_says_the_commands_refusal(
    project: Path, clock: FakeClock
) -> None:
    ids = seed(project, clock)
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: Any) -> None:
        await select(app, pilot, ids.todo)
        await pilot.press("D")
        await settled(app, pilot)
        assert app.screen is app.screen_stack[0]
        assert message(app).startswith(f"wrighty: item {ids.todo} ")
        assert f"wrighty queue {ids.todo}" in message(app)

    try:
        drive(app, script, size=(140, 30))
    finally:
        store.close()


def with_agents(project: Path, agents: dict[str, object], **top: object) -> None:
    path = project / "wrighty.json"
    document = json.loads(path.read_text())
    document["agents"] = agents
    document.update(top)
    path.write_text(json.dumps(document))


def test_h_hands_off_to_an_offered_agent_with_a_note(
    project: Path, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The choices: configured and found here (`gone` is not found, claude is the item's,
    command has no program); enter on one, a note, enter: handed off."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "agent"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    with_agents(
        project,
        {
            "helper": {"adapter": "command", "command": ["agent"]},
            "gone": {"adapter": "command", "command": ["/nonexistent/agent"]},
        },
    )
    ids = seed(project, clock)
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: Any) -> None:
        await select(app, pilot, ids.attention)
        await pilot.press("h")
        assert app.screen.__class__.__name__ == "HandoffScreen"
        asked = screen_text(app)
        assert "helper" in asked
        for absent in ("gone", "codex", "gemini", "command"):
            assert f" {absent} " not in asked, absent
        await pilot.press("escape")
        await settled(app, pilot)
        assert message(app) == "nothing done"
        await pilot.press("h", "enter", *"see NOTES", "enter")
        await settled(app, pilot)
        assert message(app).startswith(
            f"item {ids.attention} is retry-scheduled, handed from claude to helper (handoff 1)"
        )

    try:
        drive(app, script, size=(140, 30))
    finally:
        store.close()
    [handed] = read_items(project, ids.attention)
    assert (handed.agent, handed.handoff_note) == ("helper", "see NOTES")


def test_h_with_no_other_agent_found_says_so(
    project: Path, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    ids = seed(project, clock)
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: Any) -> None:
        await select(app, pilot, ids.attention)
        await pilot.press("h")
        await settled(app, pilot)
        assert app.screen is app.screen_stack[0]
        assert message(app).startswith(f"no other agent to hand item {ids.attention} to")

    try:
        drive(app, script, size=(140, 30))
    finally:
        store.close()


CHECK = {
    "name": "answer",
    "argv": ["sh", "-c", "echo the answer is $(cat answer); grep -qx 42 answer"],
}


def test_v_runs_the_checks_once_asked_and_says_how_they_ended(repo: Path, clock: FakeClock) -> None:
    path = repo / "wrighty.json"
    document = json.loads(path.read_text())
    document["verify"] = {"checks": [CHECK]}
    path.write_text(json.dumps(document))
    item_id = worktree_item(repo, clock, ItemState.NEEDS_ATTENTION)
    workspace = repo / ".wrighty" / "worktrees" / str(item_id)
    (workspace / "answer").write_text("41\n")
    app, store = make_app(repo)

    async def script(app: InboxApp, pilot: Any) -> None:
        await select(app, pilot, item_id)
        await pilot.press("v")
        assert f"wrighty verify {item_id}" in screen_text(app)
        await pilot.press("y")
        await settled(app, pilot)
        assert message(app) == (
            f"wrighty: item {item_id} stays needs-attention: `wrighty show {item_id}` has the "
            "evidence"
        )
        (workspace / "answer").write_text("42\n")
        await pilot.press("v", "y")
        await settled(app, pilot)
        assert not message(app).startswith("wrighty: "), message(app)
        assert "passed" in message(app), message(app)

    try:
        drive(app, script, size=(140, 30))
    finally:
        store.close()
