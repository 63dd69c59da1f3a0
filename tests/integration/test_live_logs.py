"""A run's log is live: what the agent printed is in its log file while the agent still runs,
so `wrighty logs --follow` and the inbox's log pane show it then, and a worker killed by SIGKILL
leaves it behind. Real workers, real agents (the example agent, and one that knows when the
worker has read its output), real followers."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from tests.helpers import process_ended
from tests.inbox.seed import drive, make_app, settled
from tests.integration.worker_process import LiveWorker, ProjectOnDisk, make_project
from wrighty.inbox.app import InboxApp

# How long a test waits for what it expects before it fails (only a failing test waits it out).
WITHIN_SECONDS = 30.0
# What the example agent prints on stdout before `hang` sleeps until it is killed.
HANG_LINE = "example agent: read the task, action hang"

# Prints a line, waits until the worker has read it from the pipe (nothing left unread), prints
# a second line and waits for that too: the worker only reads the second after it has handled
# the first. Then it writes the file named by its task and sleeps until it is killed.
DRAINED_AGENT = """
import fcntl, os, struct, sys, termios, time
ready = sys.stdin.read().strip()
def unread():
    return struct.unpack("i", fcntl.ioctl(1, termios.FIONREAD, b"\\0" * 4))[0]
for line in ("printed before the kill", "printed after the first line was read"):
    os.write(1, (line + "\\n").encode())
    while unread():
        time.sleep(0.01)
open(ready, "w").close()
while True:
    time.sleep(1)
"""


@pytest.fixture
def workers() -> Iterator[list[LiveWorker]]:
    """The workers a test starts; any still running at its end is killed."""
    started: list[LiveWorker] = []
    yield started
    for worker in started:
        if worker.process.poll() is None:
            worker.process.kill()
        worker.process.communicate()


def start_worker(project: ProjectOnDisk, workers: list[LiveWorker]) -> LiveWorker:
    worker = LiveWorker(project, "--once")
    workers.append(worker)
    return worker


class Lines:
    """A process's output, line by line as it comes, read by a thread of its own."""

    def __init__(self, stream: IO[str]) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def until(self, wanted: str) -> None:
        """Wait until a line holds ``wanted``; fail if the output ends or it never comes."""
        deadline = time.monotonic() + WITHIN_SECONDS
        while not any(wanted in line for line in self.seen):
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no {wanted!r} within {WITHIN_SECONDS} s; output: {self.seen}")
            if line is None:
                pytest.fail(f"the output ended without {wanted!r}: {self.seen}")
            self.seen.append(line)


@dataclass
class Hanging:
    """A worker running the example agent's `hang` on an item."""

    project: ProjectOnDisk
    item_id: int
    worker: LiveWorker
    agent_pid: int

    def still_running(self) -> bool:
        """The agent's process is alive and its run is still open."""
        store = self.project.store()
        try:
            [run] = store.list_runs(self.item_id)
        finally:
            store.close()
        return run.ended_at is None and not process_ended(self.agent_pid, within=0)


@pytest.fixture
def hanging(tmp_path: Path, workers: list[LiveWorker]) -> Hanging:
    project = make_project(tmp_path / "project")
    item_id = project.plant("wrighty-example: hang")
    worker = start_worker(project, workers)
    spawned = worker.until("spawned", item_id=item_id)
    return Hanging(project, item_id, worker, spawned["pid"])


def test_logs_follow_shows_a_line_while_the_agent_still_runs(hanging: Hanging) -> None:
    project, item_id = hanging.project, hanging.item_id
    follower = subprocess.Popen(
        project.command("logs", str(item_id), "--follow"),
        cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert follower.stdout is not None
        Lines(follower.stdout).until(HANG_LINE)
        assert hanging.still_running()
        hanging.worker.process.send_signal(signal.SIGTERM)
        follower.wait(WITHIN_SECONDS)  # it ends by itself with the run
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.stderr is not None
    assert follower.returncode == 0, follower.stderr.read()


def test_the_inbox_log_pane_shows_a_line_while_the_agent_still_runs(hanging: Hanging) -> None:
    item_id = hanging.item_id
    app, store = make_app(hanging.project.root)
    shown: list[str] = []

    async def script(app: InboxApp, pilot: object) -> None:
        assert app.selected_id() == item_id
        await pilot.press("l")  # type: ignore[attr-defined]
        await settled(app, pilot)
        deadline = time.monotonic() + WITHIN_SECONDS
        while app.detail is None or HANG_LINE not in (app.detail.log or ""):
            shown_so_far = app.detail.log if app.detail else None
            assert time.monotonic() < deadline, f"the log pane never showed it: {shown_so_far!r}"
            await pilot.press("g")  # type: ignore[attr-defined]  # read the board again
            await settled(app, pilot)
        assert app.detail.following
        shown.append(app.detail.log or "")

    try:
        drive(app, script)
    finally:
        store.close()
    assert HANG_LINE in shown[0]
    assert hanging.still_running()


def test_a_worker_killed_by_sigkill_leaves_what_its_agent_printed_in_the_log(
    tmp_path: Path, workers: list[LiveWorker]
) -> None:
    ready = tmp_path / "ready"
    agent = {"adapter": "command", "command": [sys.executable, "-c", DRAINED_AGENT]}
    project = make_project(tmp_path / "project", agents={"example": agent})
    item_id = project.plant(str(ready))
    worker = start_worker(project, workers)
    spawned = worker.until("spawned", item_id=item_id)
    deadline = time.monotonic() + WITHIN_SECONDS
    while not ready.exists():
        assert worker.process.poll() is None, "the worker ended before its agent printed"
        assert time.monotonic() < deadline, "the agent never saw its output read"
        time.sleep(0.02)
    worker.process.send_signal(signal.SIGKILL)
    worker.process.wait(WITHIN_SECONDS)
    assert process_ended(spawned["pid"])  # the agent died with its worker
    log = project.root / ".wrighty" / "runs" / str(item_id) / spawned["run_id"] / "stdout.log"
    assert "printed before the kill\n" in log.read_text()
    shown = subprocess.run(
        project.command("logs", str(item_id)),
        cwd=project.root, capture_output=True, text=True, timeout=WITHIN_SECONDS, check=False,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "printed before the kill" in shown.stdout
