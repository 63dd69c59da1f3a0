"""Items that need a person: `wrighty list --attention` and what `wrighty show` offers next."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import typer

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import TERMS, create_queued, settle, start_run, write_logs
from tests.conftest import FakeClock
from wrighty.cli.app import app
from wrighty.domain.outcomes import OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.suggestions import Standing, next_commands


@pytest.fixture(autouse=True)
def _resumable_agent(initialised: Path) -> None:
    """The items' agent is a command agent that can resume, as the sessions that
    run_helpers.start_run records say (vendor "command"): `show`'s resume rule is the
    worker's, so agent and session must match."""
    (initialised / "wrighty.json").write_text(
        json.dumps(
            {
                "worker": {"defaultAgent": "fake"},
                "agents": {
                    "fake": {"adapter": "command", "command": ["true"], "resumeCommand": ["true"]}
                },
            }
        )
    )


def needing_attention(project: Path, clock: FakeClock, *, runs: int, title: str = "t") -> int:
    """An item sent to needs-attention after ``runs`` runs (the earlier ones queued it again)."""
    item_id = create_queued(title)
    for attempt in range(1, runs + 1):
        started = start_run(project, item_id, at=clock.advance(1))
        last = attempt == runs
        settle(
            project,
            started,
            ItemState.NEEDS_ATTENTION if last else ItemState.QUEUED,
            at=clock.advance(1),
            outcome=OutcomeClass.AGENT_FAILURE if last else OutcomeClass.UNKNOWN,
        )
    return item_id


def test_list_attention_shows_the_longest_waiting_first(
    initialised: Path, clock: FakeClock
) -> None:
    later = create_queued("waits since later")  # the lower id, to tell id order apart
    first = needing_attention(initialised, clock, runs=2, title="waits longest")
    started = start_run(initialised, later, at=clock.advance(60))
    settle(initialised, started, ItemState.NEEDS_ATTENTION, at=clock.advance(1))
    create_queued("still queued")

    listed = json.loads(wrighty("list", "--attention", "--json").stdout)
    assert [(i["id"], i["since"], i["attempts"]) for i in listed] == [
        (first, "2026-11-30T09:00:04.000Z", 2),
        (later, "2026-11-30T09:01:05.000Z", 1),
    ]
    assert all(i["reason_code"] == "agent-failure" for i in listed)
    by_state = json.loads(wrighty("list", "--state", "needs-attention", "--json").stdout)
    assert by_state == listed

    lines = wrighty("list", "--attention").stdout.splitlines()
    assert lines[0].split() == ["ID", "TITLE", "REASON", "SINCE", "ATTEMPTS"]
    rows = [line.split() for line in lines[1:]]
    assert [(row[0], row[-1]) for row in rows] == [(str(first), "2"), (str(later), "1")]
    assert rows[0][1:4] == ["waits", "longest", "agent-failure"]


def test_other_listings_keep_id_order_and_their_fields(initialised: Path, clock: FakeClock) -> None:
    needing_attention(initialised, clock, runs=1)
    create_queued()
    listed = json.loads(wrighty("list", "--json").stdout)
    assert [i["id"] for i in listed] == [1, 2]
    assert not {"since", "attempts"} & set(listed[0])
    mixed = wrighty("list", "--state", "needs-attention", "--state", "queued").stdout
    assert mixed.splitlines()[0].split() == [
        "ID", "STATE", "PRI", "AGENT", "TITLE", "UPDATED", "REASON",
    ]  # fmt: skip


def test_list_attention_with_nothing_waiting(initialised: Path) -> None:
    create_queued()
    result = wrighty("list", "--attention")
    assert (result.exit_code, result.stdout) == (0, "no items in state needs-attention\n")
    assert json.loads(wrighty("list", "--attention", "--json").stdout) == []


def test_list_attention_refuses_another_state(initialised: Path) -> None:
    result = wrighty("list", "--attention", "--state", "queued")
    assert result.exit_code == 2
    assert result.stderr == (
        "wrighty: --attention lists needs-attention items only; leave out --state\n"
    )
    same = wrighty("list", "--attention", "--state", "needs-attention")
    assert same.exit_code == 0, same.output


def panel_commands(output: str) -> list[str]:
    """The commands of the show panel, as a person would copy them out of the terminal: each
    a whole line of its own, to paste as it is."""
    commands = []
    for line in output.splitlines():
        text = line.strip().strip("│").strip()
        if text.startswith("wrighty "):
            assert "#" not in text, f"not a whole line to paste: {text!r}"
            commands.append(text)
    return commands


def show(item_id: int) -> str:
    result = wrighty("show", str(item_id))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_show_offers_resume_when_this_installation_can_resume(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock(), session_id="sess-1")
    write_logs(initialised, started.run)
    settle(
        initialised,
        started,
        ItemState.NEEDS_ATTENTION,
        at=clock.advance(90),
        exit_code=3,
        reason="the agent exited with 3; the workspace is kept",
    )
    output = show(item_id)
    assert panel_commands(output) == [
        f"wrighty requeue {item_id} --resume",
        f"wrighty requeue {item_id} --fresh",
        f"wrighty logs {item_id}",
        f"wrighty cancel {item_id}",
    ]
    assert "the agent exited with 3; the workspace is kept" in output
    assert f"next       wrighty show {item_id}" in output  # the item's own next action stays


def test_show_leaves_resume_out_when_the_session_is_elsewhere(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = create_queued()
    started = start_run(
        initialised, item_id, at=clock(), session_id="sess-1", installation="inst-elsewhere"
    )
    settle(initialised, started, ItemState.NEEDS_ATTENTION, at=clock.advance(1))
    output = show(item_id)
    # Its logs are on the other installation too: `wrighty logs` would refuse here.
    assert panel_commands(output) == [
        f"wrighty requeue {item_id} --fresh",
        f"wrighty cancel {item_id}",
    ]
    assert "this installation cannot resume the item's session" in output


def test_show_offers_running_a_scheduled_retry_now(initialised: Path, clock: FakeClock) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock(), session_id="sess-1")
    write_logs(initialised, started.run)
    settle(
        initialised,
        started,
        ItemState.RETRY_SCHEDULED,
        at=clock.advance(1),
        outcome=OutcomeClass.PROCESS_CRASH,
        signal=9,
        not_before=clock.current.replace(hour=10),
    )
    output = show(item_id)
    assert panel_commands(output) == [
        f"wrighty requeue {item_id} --resume",
        f"wrighty cancel {item_id}",
        f"wrighty logs {item_id}",
    ]
    assert "the agent failed" in output


def test_show_offers_following_a_running_item(initialised: Path, clock: FakeClock) -> None:
    item_id = create_queued()
    start_run(initialised, item_id, at=clock())
    output = show(item_id)
    assert panel_commands(output) == [
        f"wrighty logs {item_id} --follow",
        f"wrighty cancel {item_id}",
    ]
    assert "worker w-test holds it until" in output


def test_show_of_an_item_whose_lease_expired_says_so_and_offers_the_reaper(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock())
    write_logs(initialised, started.run)
    clock.advance(TERMS.lease_seconds + 1)  # its worker died: nobody renewed the claim
    output = show(item_id)
    assert panel_commands(output) == ["wrighty reap", f"wrighty logs {item_id}"]
    assert "the claim of worker w-test expired at" in output
    assert "holds it" not in output
    reaped = wrighty("reap")
    assert reaped.exit_code == 0, reaped.output
    assert f"item {item_id}: running -> needs-attention" in reaped.stdout


def test_show_offers_no_logs_of_a_run_that_left_none(initialised: Path, clock: FakeClock) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock(), session_id="sess-1")
    settle(initialised, started, ItemState.NEEDS_ATTENTION, at=clock.advance(1))
    commands = panel_commands(show(item_id))
    assert commands == [
        f"wrighty requeue {item_id} --resume",
        f"wrighty requeue {item_id} --fresh",
        f"wrighty cancel {item_id}",
    ]
    for command in commands[:1]:
        assert wrighty(*shlex.split(command)[1:]).exit_code == 0, command


def test_show_has_no_panel_for_an_item_that_needs_nobody(initialised: Path) -> None:
    item_id = create_queued()
    assert panel_commands(show(item_id)) == []
    assert "╭" not in show(item_id)


def test_show_runs_table_and_the_tail_of_the_last_diagnostic(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = create_queued()
    first = start_run(initialised, item_id, at=clock(), session_id="sess-1")
    settle(
        initialised,
        first,
        ItemState.RETRY_SCHEDULED,
        at=clock.advance(75),
        outcome=OutcomeClass.PROCESS_CRASH,
        signal=9,
        not_before=clock(),
        diagnostic="killed by SIGKILL",
    )
    second = start_run(initialised, item_id, at=clock.advance(1), kind=RunKind.RESUME)
    diagnostic = "\n".join(f"diagnostic line {n:02}" for n in range(1, 16))
    settle(
        initialised,
        second,
        ItemState.NEEDS_ATTENTION,
        at=clock.advance(2.5),
        exit_code=3,
        diagnostic=diagnostic,
    )
    lines = show(item_id).splitlines()
    header = lines.index(next(line for line in lines if "CONFIDENCE" in line))
    assert lines[header].split() == [
        "RUN", "KIND", "STARTED", "DURATION", "CLASS", "EXIT/SIGNAL", "CONFIDENCE",
    ]  # fmt: skip
    first_row, second_row = (lines[header + 1].split(), lines[header + 2].split())
    assert first_row[:2] + first_row[4:] == [
        "1", "fresh", "1m15s", "process-crash", "SIGKILL", "authoritative",
    ]  # fmt: skip
    assert second_row[:2] + second_row[4:] == [
        "2", "resume", "2.5s", "agent-failure", "3", "authoritative",
    ]  # fmt: skip
    start = lines.index("Diagnostic of run 2, last 10 of 15 lines")
    assert [line.strip() for line in lines[start + 1 : start + 11]] == [
        f"diagnostic line {n:02}" for n in range(6, 16)
    ]


def test_show_json_keeps_its_shape(initialised: Path, clock: FakeClock) -> None:
    item_id = needing_attention(initialised, clock, runs=1)
    detail = json.loads(wrighty("show", str(item_id), "--json").stdout)
    assert "next_commands" not in detail
    assert detail["runs"][0]["signal"] is None


STANDINGS = [
    Standing(resumable=r, has_logs=h, lease_expired=e)
    for r in (True, False)
    for h in (True, False)
    for e in (True, False)
]


@pytest.mark.parametrize("state", list(ItemState))
@pytest.mark.parametrize("standing", STANDINGS)
def test_every_suggested_command_is_one_the_cli_accepts(
    state: ItemState, standing: Standing
) -> None:
    group = typer.main.get_command(app)
    root = typer.Context(group, info_name="wrighty")
    for suggestion in next_commands(7, state, standing):
        program, name, *args = shlex.split(suggestion.command)
        assert program == "wrighty"
        command = group.get_command(root, name)  # type: ignore[attr-defined]
        assert command is not None, suggestion.command
        command.make_context(name, args, parent=root)  # raises on an unknown option


def test_titles_and_reasons_print_as_written(initialised: Path, clock: FakeClock) -> None:
    item_id = needing_attention(initialised, clock, runs=1, title="fix [/tmp] and [bold]x")
    listed = wrighty("list", "--attention")
    assert listed.exit_code == 0, listed.output
    assert "fix [/tmp] and [bold]x" in listed.stdout
    assert "[bold]x" in show(item_id)
