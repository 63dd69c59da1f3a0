"""Invariant 5 with real processes: before a resume, whatever is still alive of the item's
earlier run on this installation is stopped, and only then does the resumed agent start.

A process of the earlier run is found by its WRIGHTY_RUN_ID marker or by the pid and start
time recorded for the run, each path on its own; a live process that merely reuses the
recorded pid (another start time) is left alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime

import psutil
import pytest

from tests.helpers import process_ended
from tests.integration.harness import WorkerProject
from wrighty.config import LoadedConfig, check_config_text
from wrighty.domain.claims import ClaimRequest, LeaseTerms, Settlement, settle
from wrighty.domain.model import Item, NewItem, NewRun, Session
from wrighty.domain.outcomes import RunKind
from wrighty.domain.states import ItemState
from wrighty.supervisor.process import stop_earlier_run

INSTALLATION = "inst-test"
# Unique to this test process: the stop looks for the marker in every process of the machine,
# and another test process (an xdist worker, another checkout's suite) may run these tests too.
EARLIER_RUN = f"r-old-{uuid.uuid4().hex[:12]}"

# The resumed agent: on start, before anything else, it looks whether the process named in
# watched.pid is alive and writes what it saw to seen.json.
RESUMER = """
import json, psutil
pid = int(open("watched.pid").read())
try:
    alive = psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
except psutil.NoSuchProcess:
    alive = False
json.dump({"alive": alive}, open("seen.json", "w"))
"""

# A process that outlived its worker; it ignores SIGTERM, so only a SIGKILL after the stop's
# grace period ends it.
STUBBORN = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" \
    "print('ready', flush=True)\nwhile True: time.sleep(1)"  # fmt: skip


class Project(WorkerProject):
    def resume_once(self, *, stop_grace_seconds: float = 1) -> Item:
        """One worker pass as this installation; the item afterwards."""
        self.pass_once(stop_grace_seconds=stop_grace_seconds)
        return self.only_item()

    def seen_by_the_resumed_agent(self) -> bool:
        """Whether the resumed agent found the watched process alive when it started."""
        seen: bool = json.loads((self.root / "seen.json").read_text())["alive"]
        return seen


# The `project` fixture's project (tests/conftest.py): RESUMER, resumable, as INSTALLATION.
pytestmark = [pytest.mark.slow, pytest.mark.project(
    kind=Project, programs={"fake": ("resumer.py", RESUMER)}, resumable=True,
    worker={"leaseSeconds": 5, "heartbeatSeconds": 0.5, "pollSeconds": 0.05},
    fields={"installation_id": INSTALLATION},
)]  # fmt: skip


def spawn(*, marked: bool) -> subprocess.Popen[str]:
    """A stubborn process in its own session, carrying the earlier run's marker or not."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    if marked:
        env["WRIGHTY_RUN_ID"] = EARLIER_RUN
    process = subprocess.Popen(
        [sys.executable, "-c", STUBBORN],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"  # its SIGTERM handler is in place
    return process


def an_ended_process() -> tuple[int, float]:
    """The pid and start time of a process that has since exited."""
    ended = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    started = psutil.Process(ended.pid).create_time()
    ended.communicate(timeout=30)
    return ended.pid, started


def an_earlier_run(project: Project, pid: int, started_at: float, watched: int) -> Item:
    """An item whose earlier run on this installation (pid and start time recorded) was set
    to be resumed, as after a worker that died; the resumed agent will watch ``watched``."""
    now = datetime.now(UTC)
    new = NewItem("t", "resume me", None, None, str(project.root), ItemState.QUEUED)
    item = project.store.create_item(new, at=now, actor="op")
    held = project.store.acquire(
        ClaimRequest("w-old", INSTALLATION, LeaseTerms(60, 600), "fake"), now=now
    )
    assert held is not None
    claimed = held.item
    session = Session(item.id, "command", "s-0", str(project.root), INSTALLATION)
    first = NewRun(EARLIER_RUN, RunKind.FRESH, "w-old", INSTALLATION, now, "s-0")
    assert project.store.start_run(claimed, first, session=session) is not None
    assert project.store.record_process(
        claimed, EARLIER_RUN, pid=pid, process_started_at=started_at
    )
    retry = settle(claimed, Settlement(ItemState.RETRY_SCHEDULED, process_started=True,
                   not_before=now), at=now)  # fmt: skip
    assert project.store.write_transition(retry)
    (project.root / "watched.pid").write_text(str(watched))
    return item


def end(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
    process.communicate(timeout=30)


@pytest.mark.parametrize("found_by", ["marker only", "recorded pid only"])
def test_a_live_process_of_the_earlier_run_is_dead_before_the_resumed_agent_starts(
    project: Project, found_by: str
) -> None:
    orphan = spawn(marked=found_by == "marker only")
    try:
        if found_by == "recorded pid only":
            recorded = orphan.pid, psutil.Process(orphan.pid).create_time()
        else:  # the recorded process is long gone; a descendant with the marker lives on
            recorded = an_ended_process()
        item = an_earlier_run(project, *recorded, watched=orphan.pid)
        after = project.resume_once()
        assert project.seen_by_the_resumed_agent() is False, "two live agents on one session"
        assert process_ended(orphan.pid)
        assert after.state is ItemState.DONE, after.reason
        assert [run.kind for run in project.store.list_runs(item.id)] == [
            RunKind.FRESH,
            RunKind.RESUME,
        ]
    finally:
        end(orphan)


def test_a_process_that_reuses_the_recorded_pid_is_left_alone(project: Project) -> None:
    # The earlier run's process ended long ago; an unrelated process now has its pid.
    bystander = spawn(marked=False)
    try:
        started = psutil.Process(bystander.pid).create_time()
        an_earlier_run(project, bystander.pid, started - 3600, watched=bystander.pid)
        after = project.resume_once()
        assert after.state is ItemState.DONE, after.reason
        assert project.seen_by_the_resumed_agent() is True
        assert bystander.poll() is None, "a process that only reuses the pid was stopped"
        assert psutil.Process(bystander.pid).create_time() == started
    finally:
        end(bystander)


def test_the_claim_is_renewed_while_a_stubborn_earlier_run_is_stopped(project: Project) -> None:
    # A lease of 2 s (its guard fires 1.5 s after the last renewal), and an earlier run that
    # ignores SIGTERM for a stop grace of 3 s: only renewals during the wait keep the claim.
    document = json.loads(project.loaded.path.read_text())  # type: ignore[union-attr]
    document["worker"].update(leaseSeconds=2, heartbeatSeconds=0.2)
    config, problems = check_config_text(json.dumps(document))
    assert config is not None, problems
    project.loaded = LoadedConfig(project.loaded.path, config)
    orphan = spawn(marked=True)
    try:
        item = an_earlier_run(project, *an_ended_process(), watched=orphan.pid)
        after = project.resume_once(stop_grace_seconds=3)  # the project's only worker pass
        assert process_ended(orphan.pid)
        assert project.seen_by_the_resumed_agent() is False
        assert "claim-lost" not in project.names()
        assert after.state is ItemState.DONE, after.reason
        assert [run.kind for run in project.store.list_runs(item.id)] == [
            RunKind.FRESH,
            RunKind.RESUME,
        ]
    finally:
        end(orphan)


# Starts a child that carries the earlier run's marker and ends on SIGTERM, prints its pid,
# and never reaps it.
NEGLECTFUL_PARENT = f"""
import os, subprocess, sys, time
env = dict(os.environ, WRIGHTY_RUN_ID="{EARLIER_RUN}")
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env=env)
print(child.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.timeout(60)
def test_a_zombie_under_a_stopped_parent_counts_as_stopped() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", NEGLECTFUL_PARENT], stdout=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        started = psutil.Process(child).create_time()
        os.kill(parent.pid, signal.SIGSTOP)  # its dead child stays a zombie
        # A wait for the zombie to go would last the grace, then as long again after SIGKILL.
        stopped = stop_earlier_run(EARLIER_RUN, child, started, grace_seconds=3600)
        assert stopped == [child]
        assert psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.communicate(timeout=30)
