"""Real agent processes: launch, exit detection, output capture, stopping whole trees."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers import process_ended
from wrighty.supervisor.process import AgentProcess, LaunchError, LaunchSpec, launch

TASK = "Refactor the parser. MARKER-7f3a"


def spec(tmp_path: Path, code: str, *, task: str = TASK, cap: int = 10_000_000) -> LaunchSpec:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return LaunchSpec(
        argv=(sys.executable, "-c", textwrap.dedent(code)),
        cwd=workspace,
        env=dict(os.environ),
        task=task,
        log_dir=tmp_path / "runs" / "r1",
        log_cap_bytes=cap,
    )


def run_to_exit(agent: AgentProcess):
    status = agent.wait(timeout=30)
    assert status is not None, "the agent did not exit"
    agent.close()
    return status


def read_pid(path: Path, within: float = 10.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def test_the_task_arrives_on_stdin_and_the_output_is_logged(tmp_path: Path) -> None:
    agent = launch(spec(tmp_path, """
        import os, sys
        task = sys.stdin.read()
        print("got:", task)
        print("argv:", sys.argv, "env has marker:", any("MARKER" in v for v in os.environ.values()))
        print("cwd:", os.getcwd(), file=sys.stderr)
    """))  # fmt: skip
    assert agent.pid > 0
    assert agent.started_at > 0
    status = run_to_exit(agent)
    assert (status.exit_code, status.signal) == (0, None)
    out = (tmp_path / "runs" / "r1" / "stdout.log").read_text()
    assert f"got: {TASK}" in out
    assert "MARKER" not in out.split("argv:")[1].split("env has marker")[0]
    assert "env has marker: False" in out
    err = (tmp_path / "runs" / "r1" / "stderr.log").read_text()
    assert str(tmp_path / "workspace") in err
    assert oct((tmp_path / "runs" / "r1" / "stdout.log").stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize(
    ("code", "exit_code", "signal_number"),
    [
        ("import sys; sys.exit(3)", 3, None),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", None, signal.SIGKILL),
        ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", None, signal.SIGSEGV),
    ],
    ids=["exit-3", "sigkill", "sigsegv"],
)
def test_exit_codes_and_signals_are_reported(
    tmp_path: Path, code: str, exit_code: int | None, signal_number: int | None
) -> None:
    status = run_to_exit(launch(spec(tmp_path, code)))
    assert (status.exit_code, status.signal) == (exit_code, signal_number)


def test_stop_ends_a_hanging_agent_with_sigterm(tmp_path: Path) -> None:
    agent = launch(spec(tmp_path, "import time\nwhile True: time.sleep(1)"))
    assert agent.wait(timeout=0.2) is None
    agent.stop(grace_seconds=5)
    assert agent.status is not None
    assert agent.status.signal == signal.SIGTERM  # the grace sufficed: it was not killed
    agent.close()


GRANDCHILD = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.setsid()
open(sys.argv[1], "w").write(str(os.getpid()))
while True:
    time.sleep(1)
"""


def test_stop_kills_what_ignores_sigterm_even_outside_the_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    script = tmp_path / "grandchild.py"
    script.write_text(GRANDCHILD)
    agent = launch(spec(tmp_path, f"""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        subprocess.Popen([sys.executable, {str(script)!r}, {str(pidfile)!r}])
        while True:
            time.sleep(1)
    """))  # fmt: skip
    grandchild = read_pid(pidfile)
    assert os.getpgid(grandchild) != agent.pgid  # it left the agent's group
    try:
        agent.stop(grace_seconds=0.5)
        assert process_ended(grandchild)  # it ignores SIGTERM: it was killed
        assert agent.status is not None
        assert agent.status.signal == signal.SIGKILL
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(grandchild, signal.SIGKILL)
        agent.close()


def test_the_agent_dies_when_its_worker_is_killed(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    worker = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import os, sys, time
            from pathlib import Path
            from wrighty.supervisor.process import LaunchSpec, launch
            agent = launch(LaunchSpec(
                argv=(sys.executable, "-c", "import time\\nwhile True: time.sleep(1)"),
                cwd=Path({str(workspace)!r}), env=dict(os.environ), task="x",
                log_dir=Path({str(tmp_path / "logs")!r})))
            print(agent.pid, flush=True)
            while True: time.sleep(1)
        """)],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert worker.stdout is not None
    agent_pid = int(worker.stdout.readline())
    assert psutil.pid_exists(agent_pid)
    worker.kill()  # SIGKILL: the worker gets no chance to clean up
    worker.wait(10)
    assert process_ended(agent_pid), "the agent outlived its worker"


def test_output_is_capped_with_a_visible_marker(tmp_path: Path) -> None:
    code = "import sys\nfor _ in range(3000): sys.stdout.write('x' * 1023 + '\\n')"
    status = run_to_exit(launch(spec(tmp_path, code, cap=1_000_000)))
    assert status.exit_code == 0
    log = (tmp_path / "runs" / "r1" / "stdout.log").read_bytes()
    assert log.startswith(b"x" * 1000)
    assert b"[wrighty: output truncated at 1000000 bytes; 2072000 more bytes were not kept]" in log
    assert len(log) < 1_000_200


def test_the_diagnostic_tail_is_bounded_decoded_and_redacted(tmp_path: Path) -> None:
    fake_key = "sk-ant-" + "a1b2c3d4" * 6
    code = f"""
        import sys
        sys.stdout.write("filler\\n" * 20000)
        sys.stdout.buffer.write(b"bad bytes: \\xff\\xfe\\x00 end\\n")
        sys.stderr.write("failed with key {fake_key}\\n")
        sys.exit(1)
    """
    agent = launch(spec(tmp_path, code))
    run_to_exit(agent)
    tail = agent.diagnostic_tail()
    assert "failed with key" in tail
    assert fake_key not in tail
    assert "bad bytes:" in tail
    assert "\ufffd" in tail
    assert len(tail) < 10_000


def test_launch_failures_are_start_failed(tmp_path: Path) -> None:
    missing_program = spec(tmp_path, "")
    missing_program = LaunchSpec(("no-such-agent-binary",), missing_program.cwd,
                                 missing_program.env, "t", missing_program.log_dir)  # fmt: skip
    with pytest.raises(LaunchError, match="'no-such-agent-binary' not found"):
        launch(missing_program)
    missing_workspace = LaunchSpec((sys.executable,), tmp_path / "nope", {}, "t", tmp_path)
    with pytest.raises(LaunchError, match="does not exist"):
        launch(missing_workspace)
