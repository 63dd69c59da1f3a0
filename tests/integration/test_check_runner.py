"""One check as a supervised process (wrighty/supervisor/checks.py): its evidence, its time
limit (the whole tree stopped), a program that cannot start, and its runner's word to stop."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import psutil

from wrighty.domain.redact import REDACTED
from wrighty.domain.verify import Check
from wrighty.supervisor.checks import TAIL_CHARS, CheckSpec, Keep, run_check


def spec(tmp_path: Path, *argv: str, timeout: float = 60, **fields: object) -> CheckSpec:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    check = Check("c", tuple(argv), timeout_seconds=timeout)
    return CheckSpec(
        check, workspace, tmp_path / "logs", dict(os.environ), heartbeat_seconds=0.2, **fields
    )  # type: ignore[arg-type]


def test_a_passing_check_keeps_its_exit_code_and_output(tmp_path: Path) -> None:
    evidence = run_check(spec(tmp_path, "sh", "-c", "echo ok; echo warn >&2"))
    assert evidence is not None
    assert evidence.passed
    assert evidence.exit_code == 0
    assert not evidence.timed_out
    assert "ok" in evidence.output_tail
    assert "warn" in evidence.output_tail
    assert (tmp_path / "logs" / "stdout.log").read_text() == "ok\n"


def test_a_failing_check_keeps_the_end_of_a_long_output_with_secrets_hidden(
    tmp_path: Path,
) -> None:
    secret = "s3cr3t-value-1234"
    script = f"seq 1 20000; echo 'token={secret}'; echo {secret}; exit 3"
    evidence = run_check(spec(tmp_path, "sh", "-c", script, secrets=(secret,)))
    assert evidence is not None
    assert (evidence.exit_code, evidence.passed, evidence.failed) == (3, False, True)
    assert secret not in evidence.output_tail
    assert REDACTED in evidence.output_tail
    assert "20000" in evidence.output_tail  # the end is kept
    assert "\n1\n" not in evidence.output_tail  # the start is not
    assert len(evidence.output_tail) <= TAIL_CHARS + 200


def test_output_past_the_logs_cap_still_leaves_its_end_in_the_evidence(tmp_path: Path) -> None:
    """12 MiB then a last line: the log file keeps the first 10 MiB (its cap), the evidence
    the end, the last line included, under a line that counts what was cut before it."""
    script = "head -c 12582912 /dev/zero | tr '\\0' A; echo; echo 'FINAL LINE 42'; exit 1"
    evidence = run_check(spec(tmp_path, "sh", "-c", script))
    assert evidence is not None
    assert evidence.exit_code == 1
    assert evidence.output_tail.endswith("A\nFINAL LINE 42")
    assert evidence.output_tail.startswith("…[truncated ")
    assert len(evidence.output_tail) <= TAIL_CHARS + 200
    log = (tmp_path / "logs" / "stdout.log").read_bytes()
    assert log.startswith(b"A" * 1000)
    assert b"FINAL LINE" not in log


def test_a_check_past_its_time_limit_is_stopped_tree_and_all(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = f"sleep 600 & echo $! > {pids}; echo $$ >> {pids}; wait"
    evidence = run_check(spec(tmp_path, "sh", "-c", script, timeout=1, grace_seconds=0.5))
    assert evidence is not None
    assert evidence.timed_out
    assert evidence.signal is not None
    assert evidence.failed
    for pid in map(int, pids.read_text().split()):
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_program_that_cannot_start_says_why(tmp_path: Path) -> None:
    evidence = run_check(spec(tmp_path, "no-such-check-program"))
    assert evidence is not None
    assert not evidence.started
    assert not evidence.failed
    assert not evidence.passed
    assert evidence.start_failure is not None
    assert "check c executable 'no-such-check-program' not found" in evidence.start_failure


def test_a_relative_program_is_found_in_the_workspace(tmp_path: Path) -> None:
    made = spec(tmp_path, "./bin/check.sh")
    program = made.cwd / "bin" / "check.sh"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\necho from the workspace\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    evidence = run_check(made)
    assert evidence is not None
    assert evidence.passed
    assert evidence.argv == ("./bin/check.sh",)  # as configured
    assert "from the workspace" in evidence.output_tail


def test_its_runner_can_stop_it(tmp_path: Path) -> None:
    asked: list[int] = []

    def keep() -> Keep:
        asked.append(1)
        return Keep.STOP

    pids = tmp_path / "pids"
    evidence = run_check(spec(tmp_path, "sh", "-c", f"echo $$ > {pids}; sleep 600"), keep=keep)
    assert evidence is None
    assert asked
    pid = int(pids.read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_time_up_from_its_runner_is_a_time_limit(tmp_path: Path) -> None:
    evidence = run_check(spec(tmp_path, "sleep", "600"), keep=lambda: Keep.TIME_UP)
    assert evidence is not None
    assert evidence.timed_out
    assert evidence.failed
