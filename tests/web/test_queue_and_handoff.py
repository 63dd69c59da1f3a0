"""The console's Queue action, as `wrighty queue` does it, and Hand off's choice of agents:
only the ones wrighty.json configures whose program is found on this machine
(wrighty/agents.offered_agents), on both stores; New item queues by default."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.conftest import FakeClock
from tests.web.conftest import Console, history, make_console, programs_on_path, seeded
from tests.web.test_console import CSRF, cli, flash, last_event, post
from wrighty.domain.states import ItemState
from wrighty.operator.context import AppContext


def test_queue_moves_a_todo_item_as_the_command_does(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    said = flash(post(console, f"/items/{made.todo}/queue").text)
    assert said == f"ok: item {made.todo} is queued"
    other = cli(console.app_ctx, "create", "--title", "Another", "--body", "b")
    other_id = int(re.match(r"created item (\d+) ", other)[1])  # type: ignore[index]
    assert cli(console.app_ctx, "queue", str(other_id)) == f"item {other_id} is queued"
    assert last_event(console.app_ctx, made.todo) == last_event(console.app_ctx, other_id)
    with console.store() as store:
        item = store.get_item(made.todo)
    assert item is not None
    assert item.state is ItemState.QUEUED
    page = console.client.get(f"/items/{made.todo}").text
    assert f'action="/items/{made.todo}/queue"' not in page  # queued now: not offered again


def test_queue_refused_word_for_word_writes_nothing(console: Console, clock: FakeClock):
    """An item that is not todo (a page gone stale): the command's refusal, nothing moved."""
    made = seeded(console.app_ctx, clock)
    before = history(console.app_ctx, made.queued)
    said = flash(post(console, f"/items/{made.queued}/queue").text)
    store = ("--store", console.app_ctx.store_option) if console.app_ctx.store_option else ()
    refusal = wrighty(*store, "queue", str(made.queued))
    assert refusal.exit_code == 2
    assert said == f"refused: {refusal.output.strip()}"
    assert said == (
        f"refused: wrighty: item {made.queued} is queued; `wrighty queue` moves todo items only"
    )
    assert history(console.app_ctx, made.queued) == before


def with_agents(project: Path, agents: dict[str, object], **top: object) -> None:
    path = project / "wrighty.json"
    document = json.loads(path.read_text())
    document["agents"] = agents
    document.update(top)
    path.write_text(json.dumps(document))


@pytest.fixture
def agents_console(
    project_ctx: AppContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Console]:
    """A console on a project whose wrighty.json names agents of every kind: found here or
    not, by a path (absolute, or the project's) or on PATH; served from another folder, as
    `wrighty serve` may be (a path in wrighty.json is the project's, not the server's)."""
    here = programs_on_path(tmp_path / "elsewhere", "agent")
    monkeypatch.chdir(here)
    programs_on_path(project_ctx.cwd / "bin", "agent.sh")
    with_agents(
        project_ctx.cwd,
        {
            "local": {"adapter": "command", "command": [str(here / "agent"), "--go"]},
            "relative": {"adapter": "command", "command": ["bin/agent.sh"]},
            "on-path": {"adapter": "command", "command": ["gemini"]},
            "gone": {"adapter": "command", "command": ["/nonexistent/agent"]},
            "nameless": {"adapter": "command", "command": ["no-such-program-here"]},
            "pinned": {"adapter": "codex", "executable": "/nonexistent/codex"},
        },
    )
    app_ctx = AppContext(project_ctx.config_option, project_ctx.store_option, project_ctx.cwd)
    made = make_console(app_ctx, app_ctx.cwd)
    with made.client:
        yield made


def hand_to_choices(console: Console, item_id: int) -> list[str]:
    """The agents the item page's Hand off offers, in order; and none chosen for the person
    (the first is the browser's)."""
    page = console.client.get(f"/items/{item_id}").text
    form = re.search(r'<select name="to">(.*?)</select>', page, re.S)
    if form is None:
        return []
    assert " selected" not in form[1]
    return re.findall(r'<option value="([^"]*)">', form[1])


def test_hand_off_offers_the_configured_agents_whose_program_is_found(
    agents_console: Console, clock: FakeClock, vendor_clis: Path
):
    made = seeded(agents_console.app_ctx, clock)
    agents_console.login()
    # claude (the items' agent) is not installed here; command has no program: not configured
    assert hand_to_choices(agents_console, made.attention) == [
        "codex", "gemini", "local", "on-path", "relative"]  # fmt: skip
    said = flash(post(agents_console, f"/items/{made.attention}/handoff", to="relative").text)
    assert said.startswith(f"ok: item {made.attention} is retry-scheduled, handed from claude")
    # the item's own agent is not offered to it
    assert "relative" not in hand_to_choices(agents_console, made.attention)


def test_a_handoff_to_an_agent_that_is_not_configured_is_refused_and_writes_nothing(
    agents_console: Console, clock: FakeClock, vendor_clis: Path
):
    """`command` without an entry has no program: refused as `wrighty handoff` refuses it,
    naming the configured agents; an agent configured but not installed here is taken (a
    worker elsewhere may run it)."""
    made = seeded(agents_console.app_ctx, clock)
    before = history(agents_console.app_ctx, made.attention)
    said = flash(post(agents_console, f"/items/{made.attention}/handoff", to="command").text)
    assert said.startswith("refused: wrighty: --to command: not configured: agent 'command' ")
    assert said.endswith(
        "(configured: claude, codex, gemini, gone, local, nameless, on-path, pinned, relative)"
    )
    assert history(agents_console.app_ctx, made.attention) == before
    said = flash(post(agents_console, f"/items/{made.attention}/handoff", to="gone").text)
    assert said.startswith(f"ok: item {made.attention} is retry-scheduled, handed from claude")


def test_with_no_other_agent_found_hand_off_is_not_offered(
    console: Console, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PATH", str(programs_on_path(tmp_path / "empty")))
    made = seeded(console.app_ctx, clock)
    console.login()
    page = console.client.get(f"/items/{made.attention}").text
    assert f'action="/items/{made.attention}/handoff"' not in page
    assert f'action="/items/{made.attention}/requeue"' in page  # the other actions stay


def test_new_item_queues_it_unless_the_box_is_unticked(console: Console):
    """The form opens with "queue it now" ticked (the import's box is not); a refused form
    comes back with the box as the person left it."""
    page = console.login().get("/new").text
    assert page.count('<input type="checkbox" name="queue" checked>') == 1
    assert page.count('<input type="checkbox" name="queue">') == 1  # the import's
    refused = console.client.post("/new", data={"csrf": CSRF, "title": "", "body": "b"})
    assert refused.status_code == 400
    assert '<input type="checkbox" name="queue" checked>' not in refused.text
