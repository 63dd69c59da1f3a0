"""worker.processCrash "retry" with real agent processes (examples/agent.py): a crash is
scheduled, and the due run resumes the same session in the same workspace."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from rich.console import Console

from tests.conftest import FakeClock
from tests.integration.harness import WorkerProject
from wrighty.cli.render import print_item_detail
from wrighty.domain.model import Item, NewItem
from wrighty.domain.outcomes import OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.suggestions import Standing
from wrighty.domain.times import rfc3339
from wrighty.operator.documents import item_detail_json
from wrighty.services import items as item_service
from wrighty.services.show import crash_standing
from wrighty.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
AGENT = [sys.executable, str(ROOT / "examples" / "agent.py")]


class Project(WorkerProject):
    @property
    def clock(self) -> FakeClock:
        """The worker's clock, which the test moves."""
        assert isinstance(self.now, FakeClock)
        return self.now

    def item(self, body: str) -> Item:
        new = NewItem("t", body, None, None, None, ItemState.QUEUED)
        return self.store.create_item(new, at=self.clock(), actor="op")

    def run_once(self, installation_id: str = "inst-a") -> None:
        self.pass_once(installation_id=installation_id)


@pytest.fixture
def project(make_project: Callable[..., Project], clock: FakeClock) -> Project:
    """The example agent, resumable, on the test's clock; a crash is retried. Wrighty's own
    timings: the test moves the clock by minutes."""
    example = {"adapter": "command", "command": AGENT, "resumeCommand": AGENT}
    return make_project(
        kind=Project, fields={"now": clock}, agents={"example": example}, timings=False,
        worker={"workspaceMode": "directory", "processCrash": {"action": "retry"}},
    )  # fmt: skip


@pytest.mark.parametrize("how", ["kill", "segv"])
def test_a_crash_is_retried_by_resuming_the_same_session_in_the_same_workspace(
    project: Project, how: str
) -> None:
    item = project.item(f"wrighty-example: crash-{how}-until 1")
    project.run_once()
    scheduled = project.get(item.id)
    assert (scheduled.state, scheduled.reason_code) == (ItemState.RETRY_SCHEDULED, "process-crash")
    assert scheduled.crash_retries == 1
    assert scheduled.claimed_by is None
    assert scheduled.not_before == project.clock() + timedelta(minutes=2)
    [crashed] = project.store.list_runs(item.id)
    expected_signal = signal.SIGKILL if how == "kill" else signal.SIGSEGV
    assert (crashed.outcome_class, crashed.signal) == (OutcomeClass.PROCESS_CRASH, expected_signal)
    retry_events = [e for e in project.events if e["event"] == "retry-scheduled"]
    assert retry_events[0]["crash_retries"] == 1

    detail = item_service.item_detail(project.store, item.id)
    shown = item_detail_json(detail, resumable=True, crash_retry=crash_standing(detail, 2))
    assert shown["crash_retry"] == {
        "retries": 1,
        "max_attempts": 2,
        "next_due": rfc3339(scheduled.not_before),
        "last_crash": {
            "run_id": crashed.run_id,
            "ended_at": rfc3339(crashed.ended_at),
            "exit_code": None,
            "signal": expected_signal,
            "summary": f"killed by {signal.Signals(expected_signal).name}",
        },
    }
    console = Console(record=True, width=120)
    standing = Standing(resumable=True, has_logs=True, lease_expired=False)
    print_item_detail(console, detail, standing, crash_retry=crash_standing(detail, 2))
    text = console.export_text()
    assert "retries    1 of 2, next due" in text
    assert f"last crash killed by {signal.Signals(expected_signal).name}" in text

    project.run_once()  # not due yet: nothing is claimed
    assert project.get(item.id).state is ItemState.RETRY_SCHEDULED
    assert len(project.store.list_runs(item.id)) == 1

    project.clock.advance(120)
    project.run_once()
    done = project.get(item.id)
    assert done.state is ItemState.DONE
    first, second = project.store.list_runs(item.id)
    assert (second.kind, second.outcome_class) == (RunKind.RESUME, OutcomeClass.SUCCEEDED)
    assert second.generation > first.generation
    assert second.session_id == first.session_id is not None
    session = project.store.get_session(item.id)
    assert session is not None
    workspace = Path(session.workspace)
    notes = (workspace / "WRIGHTY_EXAMPLE_NOTES.md").read_text().splitlines()
    assert len(notes) == 2
    assert all(f"session_id={first.session_id} " in line for line in notes)
    # the resumed run was told so (WRIGHTY_RUN_KIND)
    assert [line.split(" run_kind=")[1].split()[0] for line in notes] == ["fresh", "resume"]
    assert [e["session_id"] for e in project.events if e["event"] == "resumed"] == [
        first.session_id
    ]


def test_crashes_beyond_max_attempts_need_attention(project: Project) -> None:
    item = project.item("wrighty-example: crash-kill-until 9")
    for _ in range(3):  # the first run and 2 retries
        project.run_once()
        project.clock.advance(15 * 60)
    after = project.get(item.id)
    assert (after.state, after.reason_code) == (ItemState.NEEDS_ATTENTION, "retries-exhausted")
    assert "crashed 3 times" in (after.reason or "")
    runs = project.store.list_runs(item.id)
    assert [run.kind for run in runs] == [RunKind.FRESH, RunKind.RESUME, RunKind.RESUME]
    assert {run.outcome_class for run in runs} == {OutcomeClass.PROCESS_CRASH}

    # An operator starts it over: a new session, a new retry budget.
    requeued = item_service.requeue_item(project.store, item.id, resume=False, now=project.clock())
    assert (requeued.state, requeued.crash_retries) == (ItemState.QUEUED, 0)
    project.run_once()
    fresh = project.store.list_runs(item.id)[-1]
    assert fresh.kind is RunKind.FRESH
    assert fresh.session_id != runs[0].session_id
    assert project.get(item.id).state is ItemState.RETRY_SCHEDULED


def test_a_workspace_gone_before_the_retry_is_resume_state_missing(project: Project) -> None:
    item = project.item("wrighty-example: crash-kill-until 1")
    project.run_once()
    session = project.store.get_session(item.id)
    assert session is not None
    Path(session.workspace).rename(Path(session.workspace + "-moved"))
    project.clock.advance(120)
    project.run_once()
    after = project.get(item.id)
    assert (after.state, after.reason_code) == (ItemState.NEEDS_ATTENTION, "resume-state-missing")
    assert "is gone" in (after.reason or "")
    assert len(project.store.list_runs(item.id)) == 1  # never a silent fresh session


def test_a_due_retry_is_not_taken_by_another_installation(project: Project) -> None:
    item = project.item("wrighty-example: crash-kill-until 1")
    project.run_once(installation_id="inst-a")
    project.clock.advance(120)
    project.run_once(installation_id="inst-b")
    assert project.get(item.id).state is ItemState.RETRY_SCHEDULED
    project.run_once(installation_id="inst-a")
    assert project.get(item.id).state is ItemState.DONE


def test_a_concurrent_reader_never_sees_the_claim_released_without_the_retry(
    project: Project,
) -> None:
    item = project.item("wrighty-example: crash-kill-until 1")
    seen: set[tuple[str, bool, int, bool]] = set()
    stop = threading.Event()
    reader = SqliteStore.open(project.root / ".wrighty" / "wrighty.db")

    def watch() -> None:
        while True:
            last = stop.is_set()  # then this read comes after the worker's pass: its end state
            now = reader.get_item(item.id)
            assert now is not None
            seen.add(
                (
                    now.state.value,
                    now.claimed_by is not None,
                    now.crash_retries,
                    now.not_before is not None,
                )
            )
            if last:
                return

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        project.run_once()
    finally:
        stop.set()
        watcher.join()
        reader.close()
    assert seen <= {
        ("queued", False, 0, False),
        ("running", True, 0, False),
        ("retry-scheduled", False, 1, True),
    }
    assert ("retry-scheduled", False, 1, True) in seen


KILL_BEFORE_COMMIT = """
import os, signal, sys
from wrighty.store import sqlite

real_apply = sqlite.SqliteStore._apply

def apply_then_die(self, connection, change, **kwargs):
    real_apply(self, connection, change, **kwargs)
    if change.after.state.value == "retry-scheduled":
        os.kill(os.getpid(), signal.SIGKILL)  # the worker dies inside the settle transaction

sqlite.SqliteStore._apply = apply_then_die
from wrighty.cli.app import app
sys.exit(app(["worker", "start", "--once"]))
"""


def test_a_worker_killed_inside_the_settle_leaves_the_claim_held_for_the_reaper(
    project: Project, tmp_path: Path
) -> None:
    item = project.item("wrighty-example: crash-kill-until 1")
    script = tmp_path / "die_in_settle.py"
    script.write_text(textwrap.dedent(KILL_BEFORE_COMMIT))
    died = subprocess.run(
        [sys.executable, str(script)],
        cwd=project.root,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert died.returncode == -signal.SIGKILL, died.stderr
    after = project.get(item.id)
    # Nothing half done: still running under the dead worker's claim, no retry recorded.
    assert (after.state, after.crash_retries, after.not_before) == (ItemState.RUNNING, 0, None)
    assert after.claimed_by is not None
    [run] = project.store.list_runs(item.id)
    assert run.ended_at is None


def test_a_due_retry_its_machine_cannot_start_stays_due_with_its_session_and_attempts(
    project: Project,
) -> None:
    # The worker's machine cannot write the run's logs (a file where their folder goes): the
    # resume is not the item's fault (docs/worker.md#when-the-workers-machine-fails).
    item = project.item("wrighty-example: crash-kill-until 1")
    project.run_once()
    [crashed] = project.store.list_runs(item.id)
    runs = project.root / ".wrighty" / "runs" / str(item.id)
    moved = runs.rename(runs.with_name("moved"))
    runs.write_text("not a folder")
    project.clock.advance(120)
    project.run_once()
    after = project.get(item.id)
    assert (after.state, after.reason_code, after.not_before) == (
        ItemState.RETRY_SCHEDULED, "machine-failure", project.clock())  # fmt: skip
    assert (after.crash_retries, after.usage_retries, after.requeues) == (1, 0, 0)
    assert "machine could not write the run's logs" in (after.reason or "")
    session = project.store.get_session(item.id)
    assert session is not None
    assert session.session_id == crashed.session_id
    failed = project.store.list_runs(item.id)[-1]
    assert (failed.kind, failed.outcome_class) == (RunKind.RESUME, OutcomeClass.START_FAILED)

    runs.unlink()
    moved.rename(runs)
    project.run_once()  # the machine works again: the same session resumes, and succeeds
    assert project.get(item.id).state is ItemState.DONE
    last = project.store.list_runs(item.id)[-1]
    assert (last.kind, last.session_id) == (RunKind.RESUME, crashed.session_id)
