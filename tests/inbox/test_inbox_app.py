"""The inbox driven by its keys, headless (Textual's pilot), on a store with an item in every
state: what it shows, and that each action lands in the store exactly as its command would."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Static

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import write_logs
from tests.cli.test_workspaces_cli import repo, worktree_item
from tests.conftest import FakeClock
from tests.inbox.conftest import make_project
from tests.inbox.seed import Script, drive, make_app, new, open_project_store, seed, settled
from wrighty.domain.board import AttentionOrder, Section
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.states import ItemState
from wrighty.inbox.app import READ_ONLY_REFUSAL, InboxApp
from wrighty.services.inbox import Board
from wrighty.store.port import Store

__all__ = ["repo"]  # the fixture: a project in a real git repository


def drive_and_close(app: InboxApp, store: Store, script: Script, **options: Any) -> None:
    """Drive the app (seed.drive), then close the store it ran on."""
    try:
        drive(app, script, **options)
    finally:
        store.close()


def board_ids(app: InboxApp) -> list[int]:
    return [row.item.id for row in app.rows]


def message(app: InboxApp) -> str:
    return str(app.query_one("#message", Static).content)


def screen_text(app: InboxApp) -> str:
    """What the terminal shows, line by line, as text (from the app's own screenshot)."""
    lines: dict[float, list[str]] = {}
    for y, text in re.findall(
        r'<text[^>]* y="([0-9.]+)"[^>]*>([^<]*)</text>', app.export_screenshot()
    ):
        lines.setdefault(float(y), []).append(html.unescape(text).replace("\xa0", " "))
    return "\n".join("".join(parts) for _, parts in sorted(lines.items()))


async def select(app: InboxApp, pilot: object, item_id: int) -> None:
    """Move the cursor with the keys until ``item_id`` is selected."""
    order = board_ids(app)
    steps = order.index(item_id) - order.index(app.selected_id() or order[0])
    for _ in range(abs(steps)):
        await pilot.press("j" if steps > 0 else "k")  # type: ignore[attr-defined]
    await settled(app, pilot)
    assert app.selected_id() == item_id


def history(project: Path, item_id: int) -> list[tuple[object, ...]]:
    """The item's events and fields that a move writes (not its id's own)."""
    store = open_project_store(project)
    try:
        item = store.get_item(item_id)
        assert item is not None
        events = [
            (e.at, e.actor, e.generation, e.from_state, e.to_state, e.reason_code, e.reason)
            for e in store.list_events(item_id)
        ]
        runs = [(r.attempt, r.ended_at, r.outcome_class) for r in store.list_runs(item_id)]
        fields = (
            item.state,
            item.generation,
            item.claimed_by,
            item.not_before,
            item.reason_code,
            item.reason,
            item.next_action,
            item.crash_retries,
            item.requeues,
            item.priority,
        )
        return [*events, *runs, fields]
    finally:
        store.close()


def test_the_board_lists_every_open_item_by_section_and_leaves_finished_ones_out(
    project: Path, clock: FakeClock
) -> None:
    ids = seed(project, clock)
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        sections = [(row.section, row.item.id) for row in app.rows]
        assert sections == [
            (Section.ATTENTION, ids.attention),  # agent-failure before auth: by reason code
            (Section.ATTENTION, ids.auth),
            (Section.RETRY, ids.retry),
            (Section.RUNNING, ids.gone),  # claimed first
            (Section.RUNNING, ids.running),
            (Section.HELD, ids.blocked),
            (Section.WAITING, ids.queued),  # P1 before P2
            (Section.WAITING, ids.todo),
        ]
        table = app.query_one(DataTable)
        assert table.row_count == 8
        header = str(app.query_one("#header", Static).content)
        assert "2 attn · 1 retry · 2 run · 1 held · 2 wait" in header
        assert ".wrighty/wrighty.db" in header
        by_id = {row.item.id: row.why for row in app.rows}
        assert by_id[ids.blocked].startswith(f"blocked: item {ids.attention}")
        assert by_id[ids.gone].startswith("lease expired: on w-gone-0002")
        assert "15,400 tokens" in by_id[ids.running]
        assert by_id[ids.retry].startswith("processCrash: killed by SIGKILL")

    drive_and_close(app, store, script)


def test_the_detail_is_shows_text_and_follows_the_selection(
    project: Path, clock: FakeClock
) -> None:
    ids = seed(project, clock)
    shown = wrighty("show", str(ids.auth)).stdout
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        assert app.detail is not None
        assert app.detail.item.id == ids.attention
        await select(app, pilot, ids.auth)
        assert app.detail is not None
        assert app.detail.item.id == ids.auth
        screen = screen_text(app)
        assert "the provider refused the key" in screen
        # `wrighty show`'s own next steps, in the pane
        steps = re.findall(r"^[│ ]*  (wrighty [a-z]+ \d+[^│\n]*?) *│?$", shown, re.MULTILINE)
        assert f"wrighty requeue {ids.auth} --fresh" in steps
        for step in steps:
            assert step in screen

    try:
        drive(app, script, size=(120, 60))
    finally:
        store.close()


def test_the_side_panel_shows_workers_and_flags_the_dead_one(
    project: Path, clock: FakeClock
) -> None:
    seed(project, clock)
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        assert app.query_one("#side").has_class("shown")  # wide enough to show it at once
        side = str(app.query_one("#side-body", Static).content)
        assert "Workers  1 live, 1 not" in side
        assert "✗ w-gone-0002 stale" in side
        assert "● w-live-0001" in side

    try:
        drive(app, script, size=(140, 40))
    finally:
        store.close()


# Each action: the seeded item it is taken on, its keys, and its command.
ACTIONS = {
    "resume": ("attention", ("r", "y"), ("requeue", "{id}", "--resume")),
    "fresh": ("auth", ("f", "y"), ("requeue", "{id}", "--fresh")),
    "cancel": ("queued", ("c", "y"), ("cancel", "{id}")),
    "release": ("gone", ("x", "y"), ("release", "{id}", "--force")),
    "reap": ("gone", ("R", "y"), ("reap",)),
    "priority": ("queued", ("plus",), ("edit", "{id}", "--priority", "P0")),
}


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_an_action_lands_in_the_store_as_its_command_would(
    action: str, tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, keys, command = ACTIONS[action]
    start = clock()
    by_command = make_project(tmp_path / "by-command", monkeypatch)
    seeded = seed(by_command, clock)
    item_id = getattr(seeded, name)
    said = wrighty(*(part.format(id=item_id) for part in command))
    assert said.exit_code == 0, said.output

    clock.current = start
    by_inbox = make_project(tmp_path / "by-inbox", monkeypatch)
    assert seed(by_inbox, clock) == seeded
    before = history(by_inbox, item_id)
    app, store = make_app(by_inbox)

    async def script(app: InboxApp, pilot: object) -> None:
        await select(app, pilot, item_id)
        await pilot.press(*keys)  # type: ignore[attr-defined]
        await settled(app, pilot)
        assert message(app) == said.stdout.strip().replace("\n", "; ")

    drive_and_close(app, store, script)
    after = history(by_inbox, item_id)
    assert after != before
    assert after == history(by_command, item_id)


def test_a_refused_action_shows_the_commands_line_and_changes_nothing(
    project: Path, clock: FakeClock
) -> None:
    ids = seed(project, clock)
    refused = wrighty("requeue", str(ids.auth), "--resume")
    assert refused.exit_code == 2
    before = history(project, ids.auth)
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        await select(app, pilot, ids.auth)
        await pilot.press("r", "y")
        await settled(app, pilot)
        assert message(app) == refused.stderr.strip()

    drive_and_close(app, store, script)
    assert history(project, ids.auth) == before


def test_no_at_the_question_does_nothing(project: Path, clock: FakeClock) -> None:
    ids = seed(project, clock)
    before = history(project, ids.queued)
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        await select(app, pilot, ids.queued)
        await pilot.press("c")
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        await pilot.press("n")
        await settled(app, pilot)
        assert message(app) == "nothing done"

    drive_and_close(app, store, script)
    assert history(project, ids.queued) == before


def test_read_only_refuses_every_action_without_asking(project: Path, clock: FakeClock) -> None:
    ids = seed(project, clock)
    watched = [ids.attention, ids.auth, ids.gone, ids.queued]
    before = [history(project, item_id) for item_id in watched]
    app, store = make_app(project, read_only=True)

    async def script(app: InboxApp, pilot: object) -> None:
        for key in ("r", "f", "c", "x", "R", "plus", "minus"):
            app._say("")
            await pilot.press(key)  # type: ignore[attr-defined]
            await settled(app, pilot)
            assert app.screen is app.screen_stack[0], f"{key} asked a question"
            assert message(app) == READ_ONLY_REFUSAL
        assert "read-only" in str(app.query_one("#header", Static).content)

    drive_and_close(app, store, script)
    assert [history(project, item_id) for item_id in watched] == before


def test_priority_stops_at_the_highest_with_a_message(project: Path, clock: FakeClock) -> None:
    ids = seed(project, clock)
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        await select(app, pilot, ids.queued)
        await pilot.press("plus")  # P1 -> P0
        await settled(app, pilot)
        assert message(app).startswith(f"item {ids.queued} (queued): priority P1 -> P0")
        await pilot.press("plus")
        await settled(app, pilot)
        assert message(app) == f"item {ids.queued} is P0 already, the highest"

    drive_and_close(app, store, script)
    item = open_project_store(project).get_item(ids.queued)
    assert item is not None
    assert item.priority == 0


def test_s_reads_the_board_again_with_needs_attention_longest_waiting_first(
    project: Path, clock: FakeClock
) -> None:
    seed(project, clock)
    app, store = make_app(project)
    asked: list[AttentionOrder] = []
    read = app.desk.board

    def board(order: AttentionOrder) -> Board:
        asked.append(order)
        return read(order)

    app.desk.board = board  # type: ignore[method-assign]

    async def script(app: InboxApp, pilot: object) -> None:
        assert asked == [AttentionOrder.REASON]
        await pilot.press("s")  # type: ignore[attr-defined]
        await settled(app, pilot)
        assert message(app) == "needs attention: longest waiting first"
        assert asked[-1] is AttentionOrder.AGE
        await pilot.press("s")  # type: ignore[attr-defined]
        await settled(app, pilot)
        assert asked[-1] is AttentionOrder.REASON

    drive_and_close(app, store, script)


def test_the_log_pane_shows_the_running_runs_tail_redacted_and_follows_it(
    project: Path, clock: FakeClock
) -> None:
    ids = seed(project, clock)
    store = open_project_store(project)
    run = store.list_runs(ids.running)[-1]
    store.close()
    secret = "sk-ant-api03-" + "A" * 40
    log_dir = write_logs(project, run, stdout=f"step one\nkey {secret}\n\x1b[2Jcleared?\n".encode())
    app, opened = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        await select(app, pilot, ids.running)
        await pilot.press("l")  # type: ignore[attr-defined]
        await settled(app, pilot)
        assert app.detail is not None
        assert app.detail.following
        log = app.detail.log or ""
        assert "step one" in log
        assert secret not in log
        assert "[REDACTED]" in log
        assert "\x1b" not in log
        assert "\\x1b[2J" in log
        with (log_dir / "stdout.log").open("ab") as handle:
            handle.write(b"step two\npartial")
        await pilot.press("g")  # type: ignore[attr-defined]
        await settled(app, pilot)
        log = app.detail.log or ""
        assert "step two" in log
        assert "partial" not in log  # a line still being written waits for its newline

    drive_and_close(app, opened, script)


def test_an_item_that_finishes_leaves_the_board_at_the_next_refresh(
    project: Path, clock: FakeClock
) -> None:
    ids = seed(project, clock)
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        await select(app, pilot, ids.queued)
        said = wrighty("cancel", str(ids.queued))
        assert said.exit_code == 0
        await pilot.press("g")  # type: ignore[attr-defined]
        await settled(app, pilot)
        assert ids.queued not in board_ids(app)
        assert app.query_one(DataTable).row_count == len(board_ids(app))
        # The selection stays where it was: on the row that took the cancelled one's place.
        assert app.selected_id() == ids.todo
        assert app.detail is not None
        assert app.detail.item.id == ids.todo

    drive_and_close(app, store, script)
    item = open_project_store(project).get_item(ids.queued)
    assert item is not None
    assert item.state is ItemState.CANCELLED


def test_an_empty_store_says_so(project: Path, clock: FakeClock) -> None:
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        assert app.rows == []
        await pilot.press("c")  # type: ignore[attr-defined]
        assert message(app) == "no item selected"

    drive_and_close(app, store, script)


def test_hostile_text_is_drawn_as_text(project: Path, clock: FakeClock) -> None:
    """Escape sequences, markup, wide characters and very long lines in a title, a reason and
    a diagnostic: shown escaped and whole in their cells, never obeyed."""
    title = "\x1b]0;pwned\x07\x1b[2J[bold red]not markup[/] 漢字の見出し " + "x" * 150
    diagnostic = "Traceback\n\x1b[31mKeyError\x1b[0m: [link=file:///etc]here[/link] " + "y" * 300
    ids = seed(project, clock, title=title, diagnostic=diagnostic)
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        screen = screen_text(app)
        assert "\x1b" not in screen
        assert "\x07" not in screen
        assert "\\x1b]0;pwned\\x07\\x1b[2J[bold red]not markup[/]" in screen
        assert "漢字の見出し" in screen
        # the detail's diagnostic, escaped, its markup as text
        assert "\\x1b[31mKeyError\\x1b[0m: [link=file:///etc]here[/link]" in screen
        row = next(row for row in app.rows if row.item.id == ids.attention)
        assert row.item.title == title
        for line in screen.splitlines():
            assert len(line) <= 160 + 1  # the screen's width (and the pane's border)

    try:
        drive(app, script, size=(160, 100))
    finally:
        store.close()


def _with_status_settings(project: Path, settings: dict[str, int]) -> None:
    path = project / "wrighty.json"
    config = json.loads(path.read_text())
    config["status"] = settings
    path.write_text(json.dumps(config))


@pytest.mark.parametrize(
    ("settings", "verdict"),
    [
        ({}, "no thresholds set"),
        ({"minWorkers": 0}, "healthy"),
        ({"maxNeedsAttention": 0}, "unhealthy"),
    ],
)
def test_the_header_gives_the_verdict_status_gives(
    project: Path, clock: FakeClock, settings: dict[str, int], verdict: str
) -> None:
    """One rule: with no threshold set nothing was checked, so neither says healthy."""
    seed(project, clock)
    _with_status_settings(project, settings)
    status = wrighty("status")
    first = status.output.splitlines()[0]
    assert first.startswith(f"wrighty status: {verdict}  ("), status.output
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        header = str(app.query_one("#header", Static).content)
        words = header.split(" · ")
        assert any(part.startswith(verdict) for part in words), header
        if verdict != "healthy":
            assert not any(part.startswith("healthy") for part in words), header

    drive_and_close(app, store, script, size=(200, 40))


def test_the_side_panel_says_which_agents_items_no_live_worker_runs(
    project: Path, clock: FakeClock
) -> None:
    """The warning `status` gives, through the same report."""
    store = open_project_store(project)
    try:
        for _ in range(2):
            store.create_item(new("for codex", agent="codex"), at=clock(), actor="operator")
        default = json.loads((project / "wrighty.json").read_text())["worker"]["defaultAgent"]
        row = WorkerRow("w-0123456789ab", None, "inst-elsewhere", 1, 0.0, "0", WorkerState.IDLE,
                        (), clock(), clock(), agent=default)  # fmt: skip
        store.upsert_worker(row)
    finally:
        store.close()
    status_line = "2 items wait for agent codex; no live worker runs it"
    assert f"  warning: {status_line}" in wrighty("status").stdout
    app, opened = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        side = str(app.query_one("#side-body", Static).content)
        assert f"~ {status_line}" in " ".join(side.split()), side

    drive_and_close(app, opened, script, size=(200, 40))


def test_the_detail_shows_a_worktree_items_branch_and_offers_its_change(
    repo: Path, clock: FakeClock
) -> None:
    # `wrighty show`'s branch line and its `wrighty diff`, in the pane (real git).
    item_id = worktree_item(repo, clock, ItemState.NEEDS_ATTENTION, dirty=True)
    app, store = make_app(repo)

    async def script(app: InboxApp, pilot: object) -> None:
        assert app.detail is not None
        assert app.detail.item.id == item_id
        screen = screen_text(app)
        assert f"wrighty/{item_id}-task from " in screen
        assert "1 commit ahead, uncommitted changes" in screen
        assert f"wrighty diff {item_id}" in screen

    drive_and_close(app, store, script, size=(140, 60))


def test_a_landing_item_has_its_row_after_review_saying_where_it_is(
    project: Path, clock: FakeClock
) -> None:
    from tests.store.test_landings import accepted, in_review

    opened = open_project_store(project)
    try:
        landing_id = accepted(opened, clock, in_review(opened, clock, "accepted")).id
        review_id = in_review(opened, clock, "in review").id
    finally:
        opened.close()
    app, store = make_app(project)

    async def script(app: InboxApp, pilot: object) -> None:
        assert [(row.section, row.item.id) for row in app.rows] == [
            (Section.REVIEW, review_id),
            (Section.LANDING, landing_id),
        ]
        assert app.rows[1].why == "waiting in line to land on main"
        assert "1 review · 1 land" in str(app.query_one("#header", Static).content)
        assert re.search(r"\bLAND\b", screen_text(app))

    drive_and_close(app, store, script)
