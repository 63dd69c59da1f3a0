"""`wrighty handoff ID --to AGENT [--note TEXT | --note-file PATH]` (docs/handoff.md): the
item goes to the other agent, due now, with its note; every refusal is one line, exit code 2,
and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import create_queued, open_store, settle, start_run
from tests.conftest import FakeClock
from wrighty.domain.states import ItemState


def waiting(project: Path, clock: FakeClock) -> int:
    item_id = create_queued("Fix the login test")
    started = start_run(project, item_id, at=clock(), session_id="s-1")
    settle(project, started, ItemState.NEEDS_ATTENTION, at=clock())
    return item_id


def history(project: Path, item_id: int) -> list[object]:
    store = open_store(project)
    try:
        return list(store.list_events(item_id))
    finally:
        store.close()


def test_handoff_moves_the_item_to_the_agent_due_now(initialised: Path, clock: FakeClock) -> None:
    item_id = waiting(initialised, clock)
    result = wrighty("handoff", str(item_id), "--to", "codex", "--note", "see NOTES.md")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"item {item_id} is retry-scheduled, handed from claude to codex (handoff 1): a new "
        "session of codex takes it up in the same workspace\n"
    )
    shown = json.loads(wrighty("show", str(item_id), "--json").stdout)
    assert (shown["state"], shown["reason_code"], shown["agent"]) == (
        "retry-scheduled", "handed-off", "codex")  # fmt: skip
    assert shown["reason"] == "handed off from claude to codex: see NOTES.md"


def test_the_note_comes_from_a_file_or_standard_input_and_json_says_the_agent(
    initialised: Path, clock: FakeClock, tmp_path: Path
) -> None:
    item_id = waiting(initialised, clock)
    note = tmp_path / "note.md"
    note.write_text("The tests need a database:\nuse docker compose.\n")
    result = wrighty("handoff", str(item_id), "--to", "gemini", "--note-file", str(note), "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert (document["state"], document["agent"], document["handoffs"]) == (
        "retry-scheduled", "gemini", 1)  # fmt: skip
    shown = json.loads(wrighty("show", str(item_id), "--json").stdout)
    assert (
        shown["reason"]
        == "handed off from claude to gemini: The tests need a database: use docker compose."
    )
    # a handed-off item waits in retry-scheduled: it may be handed on, the note from stdin
    on = wrighty("handoff", str(item_id), "--to", "codex", "--note-file", "-",
                 input="and then run it again")  # fmt: skip
    assert on.exit_code == 0, on.output
    assert "handed from gemini to codex (handoff 2)" in on.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--to", "robot"), "--to robot: unknown agent (configured: claude, codex, gemini); "),
        (("--to", "command"), "--to command: not configured: agent 'command' uses the command "),
        (("--to", "claude"), "'s agent is claude already"),
        (("--to", "codex", "--note", " "), "the note is empty"),
        (("--to", "codex", "--note", "a", "--note-file", "-"), "give the note once"),
        (("--to", "codex", "--note-file", "/nonexistent/note.md"), "--note-file"),
    ],
)
def test_a_bad_handoff_is_refused_in_one_line_and_writes_nothing(
    initialised: Path, clock: FakeClock, args: tuple[str, ...], says: str
) -> None:
    item_id = waiting(initialised, clock)
    before = history(initialised, item_id)
    result = wrighty("handoff", str(item_id), *args)
    assert result.exit_code == 2, result.output
    assert says in result.stderr
    assert result.stderr.count("\n") == 1
    assert history(initialised, item_id) == before


def test_an_item_that_does_not_wait_is_not_handed_off(initialised: Path) -> None:
    item_id = create_queued()
    result = wrighty("handoff", str(item_id), "--to", "codex")
    assert result.exit_code == 2
    assert (
        f"item {item_id} is queued; handoff takes items that are needs-attention, "
        "retry-scheduled or review" in result.stderr
    )
