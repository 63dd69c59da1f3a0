"""`wrighty logs`: a run's captured output, redacted, once or followed until the run ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import create_queued, open_store, settle, start_run, write_logs
from tests.conftest import FakeClock
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.operator import context
from wrighty.services.items import release_item
from wrighty.services.runlogs import LogReader

KEY = "sk-ant-" + "q9w8e7r6" * 6


def refused(*args: str) -> str:
    """The one-line message of a command that must exit with 2."""
    result = wrighty(*args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("wrighty: ")
    return line


def two_runs(project: Path, clock: FakeClock) -> int:
    """An item whose first run ended unknown (queued again) and whose second failed, each with
    its own output."""
    item_id = create_queued()
    first = start_run(project, item_id, at=clock())
    write_logs(project, first.run, stdout=b"first run out\n", stderr=b"first run err\n")
    settle(project, first, ItemState.QUEUED, at=clock.advance(5), outcome=OutcomeClass.UNKNOWN)
    second = start_run(project, item_id, at=clock.advance(5))
    write_logs(project, second.run, stdout=b"second run out\n", stderr=b"second run err\n")
    settle(project, second, ItemState.NEEDS_ATTENTION, at=clock.advance(5), exit_code=3)
    return item_id


def test_logs_prints_the_last_run_stdout_to_stdout_and_stderr_to_stderr(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = two_runs(initialised, clock)
    result = wrighty("logs", str(item_id))
    assert result.exit_code == 0, result.output
    # a line tells the two apart where a terminal shows them together
    assert (result.stdout, result.stderr) == ("second run out\n", "── stderr ──\nsecond run err\n")
    assert result.output == "second run out\n── stderr ──\nsecond run err\n"


def test_the_stderr_line_starts_a_line_of_its_own(initialised: Path, clock: FakeClock) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock())
    write_logs(initialised, started.run, stdout=b"50% done", stderr=b"killed\n")
    settle(initialised, started, ItemState.NEEDS_ATTENTION, at=clock.advance(1))
    assert wrighty("logs", str(item_id)).output == "50% done\n── stderr ──\nkilled\n"


def test_logs_run_picks_a_run_by_its_attempt_number(initialised: Path, clock: FakeClock) -> None:
    item_id = two_runs(initialised, clock)
    result = wrighty("logs", str(item_id), "--run", "1")
    assert result.output == "first run out\n── stderr ──\nfirst run err\n"


@pytest.mark.parametrize(
    ("stream", "stdout", "stderr"),
    [("stdout", "second run out\n", ""), ("stderr", "", "second run err\n")],
)
def test_logs_stream_prints_one_of_the_two(
    initialised: Path, clock: FakeClock, stream: str, stdout: str, stderr: str
) -> None:
    item_id = two_runs(initialised, clock)
    result = wrighty("logs", str(item_id), "--stream", stream)
    assert result.exit_code == 0, result.output
    assert (result.stdout, result.stderr) == (stdout, stderr)


def test_an_unknown_stream_is_a_usage_error(initialised: Path, clock: FakeClock) -> None:
    item_id = two_runs(initialised, clock)
    result = wrighty("logs", str(item_id), "--stream", "combined")
    assert result.exit_code == 2
    assert "combined" in result.stderr


def test_logs_redacts_secrets_that_the_files_keep(initialised: Path, clock: FakeClock) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock())
    raw_out = f"calling the API with {KEY}\ndone\n".encode()
    raw_err = f"ANTHROPIC_API_KEY={KEY}\n".encode()
    log_dir = write_logs(initialised, started.run, stdout=raw_out, stderr=raw_err)
    settle(initialised, started, ItemState.NEEDS_ATTENTION, at=clock.advance(1))
    result = wrighty("logs", str(item_id))
    assert result.exit_code == 0, result.output
    assert result.stdout == "calling the API with [REDACTED]\ndone\n"
    assert result.stderr == "── stderr ──\nANTHROPIC_API_KEY=[REDACTED]\n"
    assert (log_dir / "stdout.log").read_bytes() == raw_out  # the file on disk stays raw


def test_logs_prints_bytes_that_are_not_utf8_as_replacement_characters(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock())
    write_logs(initialised, started.run, stdout=b"caf\xc3\xa9 \xff\xfe\x00 end")
    settle(initialised, started, ItemState.NEEDS_ATTENTION, at=clock.advance(1))
    result = wrighty("logs", str(item_id), "--stream", "stdout")
    assert result.exit_code == 0, result.output
    assert result.stdout == "café \ufffd\ufffd\\x00 end"


def test_logs_show_control_characters_as_escapes_and_raw_writes_the_bytes(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock())
    out = b"\x1b]52;c;ZWNobyBwd25lZA==\x07 clip\n\tindented\r\n50%\r100%\n\xff end\n"
    err = f"\x1b[2J\x9b31m red {KEY}\n".encode()
    write_logs(initialised, started.run, stdout=out, stderr=err)
    settle(initialised, started, ItemState.NEEDS_ATTENTION, at=clock.advance(1))

    shown = wrighty("logs", str(item_id))
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == (
        "\\x1b]52;c;ZWNobyBwd25lZA==\\x07 clip\n\tindented\\r\n50%\\r100%\n\ufffd end\n"
    )
    assert shown.stderr == "── stderr ──\n\\x1b[2J\\x9b31m red [REDACTED]\n"

    raw = wrighty("logs", str(item_id), "--raw")
    assert raw.exit_code == 0, raw.output
    assert raw.stdout_bytes == out
    # still redacted, and no line of wrighty's in the bytes
    assert raw.stderr_bytes == "\x1b[2J\x9b31m red [REDACTED]\n".encode()


def test_logs_of_an_open_run_show_whole_lines_only(initialised: Path, clock: FakeClock) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock())
    write_logs(initialised, started.run, stdout=f"one\npartial {KEY[:12]}".encode())
    result = wrighty("logs", str(item_id))
    assert result.exit_code == 0, result.output
    assert result.stdout == "one\n"  # the line still being written could hold half a secret


def test_logs_of_an_open_run_whose_agent_has_not_started_are_empty(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = create_queued()
    start_run(initialised, item_id, at=clock())
    result = wrighty("logs", str(item_id))
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_logs_refuses_an_unknown_item(initialised: Path) -> None:
    assert "no item 99" in refused("logs", "99")


def test_logs_refuses_an_item_without_runs(initialised: Path) -> None:
    item_id = create_queued()
    assert f"item {item_id} has no runs yet (it is queued)" in refused("logs", str(item_id))


def test_logs_refuses_a_run_number_the_item_does_not_have(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = two_runs(initialised, clock)
    message = refused("logs", str(item_id), "--run", "3")
    assert f"item {item_id} has no run 3 (its runs: 1, 2)" in message


def test_logs_says_when_the_run_happened_on_another_installation(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock(), installation="inst-elsewhere")
    settle(initialised, started, ItemState.NEEDS_ATTENTION, at=clock.advance(1))
    message = refused("logs", str(item_id))
    assert f"run 1 of item {item_id} ran on installation inst-elsewhere, not on this one" in message
    assert f".wrighty/runs/{item_id}/{started.run.run_id} on that machine" in message


def test_logs_says_when_the_files_were_deleted(initialised: Path, clock: FakeClock) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock())
    log_dir = write_logs(initialised, started.run, stdout=b"x\n")
    settle(initialised, started, ItemState.NEEDS_ATTENTION, at=clock.advance(1))
    for path in log_dir.iterdir():
        path.unlink()
    log_dir.rmdir()
    message = refused("logs", str(item_id))
    assert f"the logs of run 1 of item {item_id} are gone from this machine" in message
    assert str(log_dir) in message


def test_logs_says_when_the_agent_never_started(initialised: Path, clock: FakeClock) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock())
    settle(
        initialised,
        started,
        ItemState.NEEDS_ATTENTION,
        at=clock.advance(1),
        outcome=OutcomeClass.START_FAILED,
    )
    message = refused("logs", str(item_id))
    assert "has no output: its agent never started (start-failed)" in message


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def test_follow_prints_new_output_until_the_run_ends(
    initialised: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock())
    log_dir = write_logs(initialised, started.run, stdout=b"line 1\n", stderr=b"warming up\n")
    stdout_log = log_dir / "stdout.log"
    # Each poll's wait is one step of the run: more output, a secret cut in two, then the end.
    steps = [
        lambda: _append(stdout_log, f"line 2\ntoken {KEY[:15]}".encode()),
        lambda: _append(stdout_log, f"{KEY[15:]} sent\nline 4".encode()),
        lambda: _end_run(initialised, item_id, clock),
    ]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        steps[len(waits) - 1]()

    monkeypatch.setattr(context, "sleep", sleep)
    result = wrighty("logs", str(item_id), "--follow")
    assert result.exit_code == 0, result.output
    assert result.output == (
        "line 1\n── stderr ──\nwarming up\n── stdout ──\nline 2\ntoken [REDACTED] sent\nline 4"
    )
    assert result.stderr == "── stderr ──\nwarming up\n"
    assert waits == [0.5, 0.5, 0.5]  # stopped at the first poll that found the run ended


def _end_run(project: Path, item_id: int, clock: FakeClock) -> None:
    store = open_store(project)
    try:
        release_item(store, item_id, now=clock.advance(1))
    finally:
        store.close()


def test_follow_of_an_ended_run_prints_it_and_returns(
    initialised: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    item_id = two_runs(initialised, clock)

    def never(seconds: float) -> None:
        raise AssertionError("follow waited for a run that had ended")

    monkeypatch.setattr(context, "sleep", never)
    result = wrighty("logs", str(item_id), "--follow", "--stream", "stdout")
    assert (result.exit_code, result.stdout) == (0, "second run out\n")


def test_follow_stops_on_ctrl_c_with_exit_130(
    initialised: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    item_id = create_queued()
    started = start_run(initialised, item_id, at=clock())
    write_logs(initialised, started.run, stdout=b"working\n")

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(context, "sleep", interrupted)
    result = wrighty("logs", str(item_id), "-f")
    assert result.exit_code == 130
    assert result.stdout == "working\n"
    assert result.stderr == "wrighty: interrupted\n"


def test_a_reader_never_hands_out_part_of_a_secret(tmp_path: Path) -> None:
    log = tmp_path / "stdout.log"
    reader = LogReader(log, "stdout")
    assert reader.read_new(final=False) == ""  # no file yet
    log.write_bytes(f"key {KEY[:20]}".encode())
    assert reader.read_new(final=False) == ""
    _append(log, f"{KEY[20:]}\n".encode())
    assert reader.read_new(final=False) == "key [REDACTED]\n"
    _append(log, b"last words")
    assert reader.read_new(final=False) == ""
    assert reader.read_new(final=True) == "last words"
    assert reader.read_new(final=True) == ""
