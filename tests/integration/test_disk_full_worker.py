"""A disk that fills up while an agent runs: the project (wrighty.json, the store, the run logs,
the workspace) on a small tmpfs, a real `wrighty worker start` and a real agent. The worker
says what is wrong, keeps supervising, settles the item once space is back within the lease,
and exits non-zero, saying why, when it had to give an item up."""

from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from tests.helpers import file_appears, process_ended
from tests.integration.worker_process import LiveWorker, ProjectOnDisk, make_project
from wrighty.domain.states import ItemState

# Waits for the file named by its task, then writes 1 MB to stdout, says so in a file beside
# the one it waited for, and exits 0.
AGENT = """
import os, sys, time
go = sys.stdin.read()
while not os.path.exists(go):
    time.sleep(0.02)
for _ in range(1000):
    sys.stdout.write("x" * 1023 + "\\n")
sys.stdout.flush()
open(go + ".written", "w").close()
"""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs; skipped, saying why, where it cannot be mounted."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    """Write a file until the disk has no space left."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as handle:
        while _wrote_more(handle):
            pass
    return filler


def _wrote_more(handle: IO[bytes]) -> bool:
    try:
        handle.write(b"\0" * 65536)
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
        return False
    return True


@pytest.fixture
def project(small_disk: Path) -> ProjectOnDisk:
    agent = {"adapter": "command", "command": [sys.executable, "-c", AGENT]}
    return make_project(
        small_disk / "project",
        worker={"workspaceMode": "directory", "leaseSeconds": 6, "heartbeatSeconds": 0.3},
        agents={"example": agent},
    )


def fill_the_disk_under_a_running_agent(
    project: ProjectOnDisk, small_disk: Path, tmp_path: Path
) -> tuple[int, LiveWorker, Path, Path]:
    """A worker runs the agent, the disk fills up, then the agent writes its output onto the
    full disk and exits: the item, the worker, the filler file, and the agent's go file."""
    go = tmp_path / "go"
    item_id = project.plant(str(go))
    worker = LiveWorker(project, "--once")
    worker.until("spawned")
    filler = fill(small_disk)
    go.touch()
    return item_id, worker, filler, go


def test_the_run_is_settled_once_space_is_back_within_the_lease(
    project: ProjectOnDisk, small_disk: Path, tmp_path: Path
) -> None:
    item_id, worker, filler, go = fill_the_disk_under_a_running_agent(project, small_disk, tmp_path)
    unreachable = worker.until("store-unreachable")
    assert "no space left on device" in unreachable["cause"]
    assert str(project.root / ".wrighty" / "wrighty.db") in unreachable["cause"]
    file_appears(Path(f"{go}.written"))  # its output went to the full disk
    filler.unlink()
    returncode, stderr = worker.finish()
    assert returncode == 0, stderr
    assert "Traceback" not in stderr
    item = project.get(item_id)
    assert item.state is ItemState.DONE
    store = project.store()
    try:
        [run] = store.list_runs(item_id)
    finally:
        store.close()
    assert run.diagnostic is not None
    assert "[wrighty: stdout.log is incomplete: no space left on device]" in run.diagnostic


def test_a_finished_run_is_settled_past_its_lease_and_given_up_only_when_the_worker_stops(
    project: ProjectOnDisk, small_disk: Path, tmp_path: Path
) -> None:
    item_id, worker, filler, _ = fill_the_disk_under_a_running_agent(project, small_disk, tmp_path)
    # The agent ended on its own: its outcome is known, so the worker keeps trying to record
    # it past the lease's end (the disk stays full), and says so...
    pending = worker.until("settle-pending", item_id=item_id)
    assert "no space left on device" in pending["cause"]
    worker.until("store-unreachable")  # ...and goes on trying
    worker.process.send_signal(signal.SIGTERM)  # until it is stopped
    returncode, stderr = worker.finish()
    filler.unlink()
    assert returncode == 1, stderr
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    # (done) when the disk filled before the settlement, not already before the pid's record
    assert re.match(
        rf"wrighty: gave up item {item_id}: its agent's outcome( \(done\))? was not", last
    )
    assert "no space left on device" in last
    assert last.endswith("the item stays running until its lease is reaped")
    [spawned] = [e for e in worker.events if e["event"] == "spawned"]
    assert process_ended(spawned["pid"], within=1)  # it was never blocked on a full pipe
    item = project.get(item_id)
    assert (item.state, item.claimed_by is not None) == (ItemState.RUNNING, True)  # reaper's
