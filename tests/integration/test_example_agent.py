"""The example agent, run as real processes with the task on stdin."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil
import pytest

from tests.helpers import wait_for
from wrighty.domain.redact import redact

AGENT = Path(__file__).resolve().parents[2] / "examples" / "agent.py"
NOTES = "WRIGHTY_EXAMPLE_NOTES.md"

pytestmark = pytest.mark.slow


def agent_env(**variables: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("WRIGHTY_")}
    return env | variables


def run_agent(task: str, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, str(AGENT), *args],
        input=task.encode(),
        cwd=cwd,
        env=agent_env(**env),
        capture_output=True,
        timeout=30,
        check=False,
    )


@contextmanager
def started_agent(
    task: str, cwd: Path, **env: str
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """The agent in its own process group, its stdout going to a file; killed on the way out."""
    stdout_path = cwd / "agent-stdout.txt"
    with stdout_path.open("wb") as stdout:
        agent = subprocess.Popen(
            [sys.executable, str(AGENT)],
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=agent_env(**env),
            start_new_session=True,
        )
    try:
        assert agent.stdin is not None
        agent.stdin.write(task.encode())
        agent.stdin.close()
        yield agent, stdout_path
    finally:
        if agent.poll() is None:
            os.killpg(agent.pid, signal.SIGKILL)
        agent.wait(timeout=5)


def is_running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_task_without_a_directive_succeeds_and_notes_the_run(tmp_path: Path) -> None:
    result = run_agent("Fix the flaky test.\nKeep it small.", tmp_path, WRIGHTY_ITEM_ID="7")
    result_again = run_agent("", tmp_path, WRIGHTY_RUN_ID="3", WRIGHTY_SESSION_ID="s-1")

    assert (result.returncode, result_again.returncode) == (0, 0)
    notes = (tmp_path / NOTES).read_text().splitlines()
    assert len(notes) == 2
    assert notes[0].endswith("item_id=7 run_id=- session_id=- run_kind=- action=succeed")
    assert notes[1].endswith("item_id=- run_id=3 session_id=s-1 run_kind=- action=succeed")
    assert len(result.stdout.decode().splitlines()) >= 2
    assert len(result.stderr.decode().splitlines()) == 1


def test_the_first_directive_wins_in_any_case(tmp_path: Path) -> None:
    task = "Please:\n  WRIGHTY-EXAMPLE: Fail\nwrighty-example: succeed\n"
    result = run_agent(task, tmp_path)
    assert result.returncode == 3
    assert b"failing on purpose" in result.stderr
    assert "action=fail" in (tmp_path / NOTES).read_text()


def test_the_task_comes_from_stdin_not_arguments(tmp_path: Path) -> None:
    assert run_agent("", tmp_path, "wrighty-example: fail").returncode == 0


def test_an_unknown_action_is_refused(tmp_path: Path) -> None:
    result = run_agent("wrighty-example: dance", tmp_path)
    assert result.returncode == 2
    assert b"unknown action 'dance'" in result.stderr


@pytest.mark.parametrize(
    ("action", "returncode"),
    [
        ("crash-kill", -signal.SIGKILL),
        ("crash-segv", -signal.SIGSEGV),
        ("crash-abort", -signal.SIGABRT),
    ],
)
def test_crashes_are_deaths_by_signal(tmp_path: Path, action: str, returncode: int) -> None:
    result = run_agent(f"wrighty-example: {action}", tmp_path)
    assert result.returncode == returncode
    assert not list(tmp_path.glob("core*"))


def test_binary_output_is_not_utf8(tmp_path: Path) -> None:
    result = run_agent("wrighty-example: output-binary", tmp_path)
    assert result.returncode == 0
    assert b"\x00" in result.stdout
    with pytest.raises(UnicodeDecodeError):
        result.stdout.decode("utf-8")


def test_large_output_is_over_four_megabytes(tmp_path: Path) -> None:
    result = run_agent("wrighty-example: output-large", tmp_path)
    assert result.returncode == 0
    assert len(result.stdout) > 4_000_000


def test_the_fake_secrets_are_caught_by_redaction(tmp_path: Path) -> None:
    result = run_agent("wrighty-example: secret", tmp_path)
    output = result.stdout.decode()
    key = re.search(r"sk-ant-\S{40}", output)
    token = re.search(r"Authorization: Bearer (\S+)", output)

    assert result.returncode == 0
    assert key is not None
    assert token is not None
    assert key[0] not in redact(output)
    assert token[1] not in redact(output)


def test_slow_prints_until_its_time_is_up(tmp_path: Path) -> None:
    result = run_agent("wrighty-example: slow 0.3", tmp_path)
    assert result.returncode == 0
    assert result.stdout.count(b"tick") >= 2


def test_hang_waits_until_terminated(tmp_path: Path) -> None:
    with started_agent("wrighty-example: hang", tmp_path) as (agent, stdout):
        wait_for(
            lambda: "noted the run" in stdout.read_text(), timeout=30, what="the agent to start"
        )
        assert agent.poll() is None
        os.killpg(agent.pid, signal.SIGTERM)
        assert agent.wait(timeout=5) == -signal.SIGTERM


def test_ignore_term_survives_sigterm(tmp_path: Path) -> None:
    with started_agent("wrighty-example: ignore-term", tmp_path) as (agent, stdout):
        wait_for(
            lambda: "ignoring SIGTERM" in stdout.read_text(),
            timeout=30,
            what="the agent to ignore SIGTERM",
        )
        os.killpg(agent.pid, signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):
            agent.wait(timeout=0.2)


def test_grandchild_leaves_the_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    env = {"WRIGHTY_EXAMPLE_GRANDCHILD_PIDFILE": str(pidfile)}
    with started_agent("wrighty-example: grandchild", tmp_path, **env) as (agent, stdout):
        wait_for(pidfile.exists, timeout=30, what="the grandchild's pid file")
        grandchild = int(pidfile.read_text())
        try:
            assert os.getpgid(grandchild) != os.getpgid(agent.pid)
            wait_for(
                lambda: f"grandchild pid {grandchild}" in stdout.read_text(),
                timeout=30,
                what="its pid",
            )
            os.killpg(agent.pid, signal.SIGKILL)
            assert agent.wait(timeout=5) == -signal.SIGKILL
            assert is_running(grandchild)
        finally:
            with suppress(ProcessLookupError):
                os.kill(grandchild, signal.SIGKILL)
