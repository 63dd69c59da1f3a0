"""Nothing about one item stops a worker: a value wrighty cannot handle, or a bug it trips over
while claiming, preparing, supervising or settling one item, settles that item as
internal-error, and the worker goes on with the next. Real `wrighty worker start` processes;
failures are planted by a launcher script that patches wrighty, then runs its main."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import process_ended
from tests.integration.worker_process import ProjectOnDisk
from wrighty.domain.durations import MAX_ITEM_TIMEOUT_SECONDS
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState

# The `project` fixture's project (tests/conftest.py): the example agent, in directory mode.
pytestmark = pytest.mark.project(worker={"workspaceMode": "directory"})


def launcher(tmp_path: Path, patch: str) -> Path:
    """A script that runs ``patch`` (Python), then wrighty's command line."""
    script = tmp_path / "launcher.py"
    script.write_text(textwrap.dedent(patch) + "\nfrom wrighty.cli.app import main\nmain()\n")
    return script


def test_timeouts_no_clock_can_hold_run_with_the_longest_limit(project: ProjectOnDisk) -> None:
    # Written past the CLI's checks, as an older wrighty or a hand-edited store could.
    huge = project.plant("wrighty-example: succeed", timeout_seconds=10**12)
    endless = project.plant("wrighty-example: succeed", timeout_seconds=float("inf"))
    negative = project.plant("wrighty-example: succeed", timeout_seconds=-5)
    finished = project.worker("--max-items", "3")
    assert finished.returncode == 0, finished.stderr
    assert "Traceback" not in finished.stderr
    for item_id in (huge, endless, negative):
        assert project.get(item_id).state is ItemState.DONE


def test_the_lease_deadline_of_a_huge_timeout_is_the_longest_one(project: ProjectOnDisk) -> None:
    from datetime import UTC, datetime

    from wrighty.domain.claims import ClaimRequest, LeaseTerms

    item_id = project.plant("b", timeout_seconds=10**12)
    store = project.store()
    try:
        now = datetime.now(UTC)
        request = ClaimRequest("w-1", "inst", LeaseTerms(5, 600), "example")
        held = store.acquire(request, now=now)
    finally:
        store.close()
    assert held is not None
    claimed = held.item
    assert claimed.id == item_id
    assert claimed.renew_deadline is not None
    assert (claimed.renew_deadline - now).total_seconds() == MAX_ITEM_TIMEOUT_SECONDS + 5


CLAIM_FAILS = """
from wrighty.domain.claims import LeaseTerms
original = LeaseTerms.renew_deadline
def renew_deadline(self, now, timeout):
    if timeout == 4242:
        raise ZeroDivisionError("planted: this claim cannot be computed, token=hunter2hunter2")
    return original(self, now, timeout)
LeaseTerms.renew_deadline = renew_deadline
"""


def test_an_item_whose_claim_cannot_be_computed_is_set_aside_and_the_next_one_runs(
    project: ProjectOnDisk, tmp_path: Path
) -> None:
    poisoned = project.plant("wrighty-example: succeed", timeout_seconds=4242)
    good = project.plant("wrighty-example: succeed")
    script = launcher(tmp_path, CLAIM_FAILS)
    finished = project.worker("--once", launcher=script)
    assert finished.returncode == 0, finished.stderr
    assert "Traceback" not in finished.stderr
    [failed] = finished.named("claim-failed")
    assert failed["error"] == "ZeroDivisionError"
    assert "hunter2" not in failed["cause"]  # redacted
    item = project.get(poisoned)
    assert (item.state, item.reason_code, item.claimed_by) == (
        ItemState.NEEDS_ATTENTION, "internal-error", None)  # fmt: skip
    assert "ZeroDivisionError: planted: this claim cannot be computed" in (item.reason or "")
    assert "hunter2" not in (item.reason or "")
    assert item.next_action == f"wrighty requeue {poisoned} --fresh"
    assert project.get(good).state is ItemState.DONE
    # Set aside once: the next worker neither claims it again nor fails on it.
    again = project.worker("--once", launcher=script)
    assert again.returncode == 0
    assert again.named("claim-failed") == []
    assert again.named("claimed") == []
    assert project.get(poisoned).generation == item.generation


PREPARE_FAILS = """
import wrighty.worker.prepare
original = wrighty.worker.prepare.choose_workspace
def choose_workspace(mode, **facts):
    if facts["item"].title == "poisoned":
        raise RuntimeError("planted: no workspace for this one")
    return original(mode, **facts)
wrighty.worker.prepare.choose_workspace = choose_workspace
"""

SUPERVISION_FAILS = """
from wrighty.store.sqlstore import SqlStore
original = SqlStore.renew
def renew(self, claimed, **kwargs):
    if claimed.title == "poisoned":
        raise RuntimeError("planted: renewing this one fails")
    return original(self, claimed, **kwargs)
SqlStore.renew = renew
"""

SETTLING_FAILS = """
import wrighty.worker.watch
original = wrighty.worker.watch.classify_exit
def classify_exit(facts):
    if facts.exit_code == 3:
        raise RuntimeError("planted: this exit cannot be classified")
    return original(facts)
wrighty.worker.watch.classify_exit = classify_exit
"""


# Exits 0, or 3 for "fail"; for "tree", starts a child in a session of its own, writes its pid
# to $PIDFILE and waits.
TREE_AGENT = """
import os, subprocess, sys, time
task = sys.stdin.read()
if task == "tree":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             start_new_session=True)
    with open(os.environ["PIDFILE"] + ".tmp", "w") as f:
        f.write(str(child.pid))
    os.rename(os.environ["PIDFILE"] + ".tmp", os.environ["PIDFILE"])
    time.sleep(60)
sys.exit(3 if task == "fail" else 0)
"""


@pytest.mark.parametrize(
    ("patch", "task", "agent_ran"),
    [
        (PREPARE_FAILS, "succeed", False),
        (SUPERVISION_FAILS, "tree", True),  # the agent's tree still runs when wrighty fails
        (SETTLING_FAILS, "fail", True),
    ],
    ids=["preparing", "supervising", "settling"],
)
def test_a_failure_after_the_claim_settles_that_item_and_the_worker_goes_on(
    tmp_path: Path,
    make_project: Callable[..., ProjectOnDisk],
    patch: str,
    task: str,
    agent_ran: bool,
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    agent = {"adapter": "command", "command": [sys.executable, "-c", TREE_AGENT],
             "env": {"PIDFILE": str(pidfile)}}  # fmt: skip
    project = make_project(agents={"example": agent})
    poisoned = project.plant(task, title="poisoned")
    good = project.plant("succeed")
    finished = project.worker("--max-items", "2", launcher=launcher(tmp_path, patch))
    assert finished.returncode == 0, finished.stderr
    assert "Traceback" not in finished.stderr
    item = project.get(poisoned)
    assert (item.state, item.reason_code, item.claimed_by) == (
        ItemState.NEEDS_ATTENTION, "internal-error", None)  # fmt: skip
    assert "RuntimeError: planted" in (item.reason or "")
    assert item.next_action == f"wrighty requeue {poisoned} --fresh"  # no resume command
    [event] = [e for e in finished.named("internal-error") if e["item_id"] == poisoned]
    assert event["error"] == "RuntimeError"
    store = project.store()
    try:
        runs = store.list_runs(poisoned)
    finally:
        store.close()
    if agent_ran:
        [run] = runs
        assert run.outcome_class is OutcomeClass.INTERNAL_ERROR
        assert run.diagnostic is not None
        assert run.diagnostic.startswith("wrighty failed: RuntimeError: planted")
        assert run.pid is not None
        assert process_ended(run.pid, within=1)
    else:
        assert runs == []
    assert project.get(good).state is ItemState.DONE
    if task == "tree":  # the agent's whole tree was stopped, not only the agent
        assert process_ended(int(pidfile.read_text()), within=1)
