"""A worker's machine that cannot start runs (pure, and the worker's side of it): which
failures are the machine's and which the item's (the table of docs/worker.md), where the item
goes without spending an attempt, and the worker's back-off and hold."""

from __future__ import annotations

import dataclasses
import errno
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from wrighty.domain.claims import ClaimRequest, LeaseTerms, claim, settle
from wrighty.domain.health import QueueFigures, Thresholds, WorkerCounts, WorkerRow, concerns
from wrighty.domain.health import WorkerState as State
from wrighty.domain.machine import (
    MACHINE_FAILURE,
    Backoff,
    MachineHealth,
    StartFailure,
    Step,
    after_machine_failure,
    cause_of,
    machine_cannot,
    machine_failed,
    machine_started,
)
from wrighty.domain.model import Item
from wrighty.domain.outcomes import OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import replay
from wrighty.worker.machine import MachineWatch

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "worker.md"

MACHINE, ITEM = "machine", "item"
# (step, OS error, whose): the table of docs/worker.md#when-the-workers-machine-fails.
TABLE = [
    (Step.WORKSPACE_ROOT, errno.ENOSPC, MACHINE),
    (Step.WORKSPACE_ROOT, errno.ENOTDIR, MACHINE),  # the worker's own folder, whatever the error
    (Step.WORKSPACE_ROOT, errno.ELOOP, MACHINE),
    (Step.WORKSPACE_ROOT, errno.ENAMETOOLONG, MACHINE),
    (Step.WORKSPACE_ROOT, errno.EEXIST, MACHINE),
    (Step.WORKSPACE, errno.ENOSPC, MACHINE),  # no space, or no inodes
    (Step.WORKSPACE, errno.EDQUOT, MACHINE),
    (Step.WORKSPACE, errno.EROFS, MACHINE),
    (Step.WORKSPACE, errno.EACCES, MACHINE),
    (Step.WORKSPACE, errno.EPERM, MACHINE),
    (Step.WORKSPACE, errno.EIO, MACHINE),
    (Step.WORKSPACE, errno.EMFILE, MACHINE),
    (Step.WORKSPACE, errno.ENOTDIR, MACHINE),  # a file where the worker's folder goes
    (Step.WORKSPACE, errno.ELOOP, MACHINE),
    (Step.WORKSPACE, errno.ENAMETOOLONG, MACHINE),
    (Step.WORKSPACE, errno.EEXIST, ITEM),  # something else where the item's own folder goes
    (Step.WORKSPACE, None, MACHINE),
    (Step.GIT, None, MACHINE),
    (Step.PINNED_WORKSPACE, None, ITEM),
    (Step.PINNED_WORKSPACE, errno.ENOSPC, ITEM),
    (Step.RECORDED_WORKSPACE, None, ITEM),
    (Step.ARGV, None, ITEM),
    (Step.CWD, None, ITEM),
    (Step.PROGRAM, None, MACHINE),
    (Step.LOGS, errno.ENOSPC, MACHINE),
    (Step.LOGS, errno.ENOTDIR, MACHINE),
    (Step.LOGS, errno.ELOOP, MACHINE),
    (Step.SPAWN, errno.EAGAIN, MACHINE),  # fork: no more processes
    (Step.SPAWN, errno.ENOMEM, MACHINE),
    (Step.SPAWN, errno.ENOENT, MACHINE),  # exec: the program went away
    (Step.SPAWN, errno.EACCES, MACHINE),
    (Step.SPAWN, errno.ENOEXEC, MACHINE),
    (Step.SPAWN, errno.E2BIG, ITEM),
]


@pytest.mark.parametrize(("step", "number", "whose"), TABLE)
def test_the_table_tells_the_machines_failures_from_the_items(
    step: Step, number: int | None, whose: str
) -> None:
    found = machine_cannot(StartFailure(step, "why", number))
    assert (MACHINE if found else ITEM) == whose


def test_every_step_is_in_the_table_and_in_the_docs() -> None:
    assert {step for step, _, _ in TABLE} == set(Step)
    text = DOCS.read_text()
    start = text.index("## When the worker's machine fails")
    section = text[start : text.index("\n## ", start + 1)]
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", section, re.MULTILINE))
    assert documented == {step.value for step in Step}


def running(**changes: Any) -> Item:
    base = Item(
        id=7, title="t", body="b", agent=None, timeout_seconds=None, workspace=None,
        state=ItemState.QUEUED, generation=3, claimed_by=None, lease_expires_at=None,
        queued_at=NOW - timedelta(hours=1), not_before=None, reason_code=None, reason=None,
        next_action=None, crash_retries=2, usage_retries=1, requeues=1, created_at=NOW,
        updated_at=NOW,
    )  # fmt: skip
    queued = dataclasses.replace(base, **changes)
    return claim(queued, ClaimRequest("w-aaaaaaaaaaaa", "inst", TERMS, "example"), at=NOW).after


CAUSE = cause_of(StartFailure(Step.WORKSPACE, "No space left on device", errno.ENOSPC), "x")


def test_a_fresh_run_goes_back_to_the_queue_keeping_its_place_and_its_attempts() -> None:
    claimed = running()
    settlement = after_machine_failure(
        claimed_from=ItemState.QUEUED, kind=RunKind.FRESH, worker_id="w-aaaaaaaaaaaa",
        cause=CAUSE, at=NOW, run_recorded=False,
    )  # fmt: skip
    change = settle(claimed, settlement, at=NOW)
    after = change.after
    assert (after.state, after.reason_code, after.claimed_by) == (
        ItemState.QUEUED, MACHINE_FAILURE, None)  # fmt: skip
    assert (after.crash_retries, after.usage_retries, after.requeues) == (2, 1, 1)
    assert after.queued_at == NOW - timedelta(hours=1)  # its place in the queue
    assert after.reason is not None
    assert "worker w-aaaaaaaaaaaa's machine could not x: No space left" in after.reason
    assert after.reason.endswith("; back in the queue, no attempt spent")
    assert change.event.reason_code == MACHINE_FAILURE
    assert change.run_end is not None  # no run was recorded: the store ends none
    assert settlement.run_end is None


def test_a_resume_stays_a_due_retry_and_a_recorded_run_ends_start_failed() -> None:
    claimed = running(state=ItemState.RETRY_SCHEDULED, not_before=NOW - timedelta(1))
    settlement = after_machine_failure(
        claimed_from=ItemState.RETRY_SCHEDULED, kind=RunKind.RESUME,
        worker_id="w-aaaaaaaaaaaa", cause=CAUSE, at=NOW, run_recorded=True,
    )  # fmt: skip
    after = settle(claimed, settlement, at=NOW).after
    assert (after.state, after.not_before, after.reason_code) == (
        ItemState.RETRY_SCHEDULED, NOW, MACHINE_FAILURE)  # fmt: skip
    assert (after.reason or "").endswith(
        "; the retry is due again, its session kept, no attempt spent")  # fmt: skip
    assert (after.crash_retries, after.usage_retries, after.requeues) == (2, 1, 1)
    assert settlement.run_end is not None
    assert settlement.run_end.outcome_class is OutcomeClass.START_FAILED


def test_a_due_retry_that_was_to_start_a_new_session_goes_back_to_the_queue() -> None:
    claimed = running(state=ItemState.RETRY_SCHEDULED, not_before=NOW)
    settlement = after_machine_failure(
        claimed_from=ItemState.RETRY_SCHEDULED, kind=RunKind.FRESH,
        worker_id="w-aaaaaaaaaaaa", cause=CAUSE, at=NOW, run_recorded=True,
    )  # fmt: skip
    assert settle(claimed, settlement, at=NOW).after.state is ItemState.QUEUED


def test_a_long_cause_is_cut_to_one_bounded_line() -> None:
    cause = cause_of(StartFailure(Step.LOGS, "x" * 1000, errno.ENOSPC), "write the run's logs")
    assert len(cause) == 300
    assert cause.startswith("could not write the run's logs: xxx")
    assert cause.endswith("…")


# -- the back-off and the hold ---------------------------------------------------------------


def test_the_back_off_doubles_then_holds_at_its_longest() -> None:
    policy = Backoff(initial_seconds=1, max_seconds=120, hold_after=3)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 10)] == [1, 2, 120, 120, 120]
    assert Backoff(initial_seconds=50, max_seconds=60, hold_after=5).delay(2) == 60


@pytest.mark.parametrize(
    "bad", [{"initial_seconds": 0}, {"initial_seconds": 5, "max_seconds": 1}, {"hold_after": 0}]
)
def test_a_back_off_that_could_not_work_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="back-off"):
        Backoff(**bad)


def test_three_failures_in_a_row_hold_the_worker_and_a_start_frees_it() -> None:
    policy = Backoff(initial_seconds=1, max_seconds=120, hold_after=3)
    health = MachineHealth()
    assert health.may_claim(0.0)
    health = machine_failed(health, "could not a", now=10.0, policy=policy)
    assert (health.may_claim(10.5), health.may_claim(11.0), health.held) == (False, True, False)
    assert health.pause_seconds(10.25) == 0.75
    health = machine_failed(health, "could not b", now=11.0, policy=policy)
    assert (health.next_claim_at, health.held, health.held_reason(policy)) == (13.0, False, None)
    health = machine_failed(health, "could not c", now=13.0, policy=policy)
    assert (health.failures, health.held, health.next_claim_at) == (3, True, 133.0)
    assert health.held_reason(policy) == (
        "its machine could not c (3 times in a row); it tries one claim every 120 s"
    )
    assert machine_started(health) == MachineHealth()


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.holds: list[str | None] = []
        self.clock = 100.0

    def emit(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))

    def names(self) -> list[str]:
        return [name for name, _ in self.events]


def test_the_worker_says_once_that_it_holds_and_once_that_it_claims_again() -> None:
    seen = Recorder()
    watch = MachineWatch(seen.emit, seen.holds.append, monotonic=lambda: seen.clock)
    watch.started()  # nothing failed: nothing to say
    assert (seen.events, seen.holds) == ([], [])
    for item_id in (1, 2, 3, 4):
        watch.failed(item_id, "could not create the workspace: no space left on device")
    assert seen.names() == [
        "machine-failure", "machine-failure", "machine-failure", "worker-held", "machine-failure",
    ]  # fmt: skip
    pauses = [
        fields["retry_in_seconds"] for name, fields in seen.events if name == "machine-failure"
    ]
    assert pauses == [1, 2, 120, 120]
    held = dict(seen.events[3][1])
    assert (held["failures"], held["cause"]) == (
        3, "could not create the workspace: no space left on device")  # fmt: skip
    assert seen.holds[0] == held["reason"]  # the row then counts on: 4 times in a row
    assert seen.holds[-1] is not None
    assert "(4 times in a row)" in seen.holds[-1]
    assert watch.pause_seconds() == 120
    seen.clock += 120
    assert watch.pause_seconds() == 0  # the held worker tries one claim
    watch.started()
    assert seen.names()[-1] == "worker-unheld"
    assert seen.holds[-1] is None
    assert watch.health == MachineHealth()


def test_status_warns_of_each_held_worker() -> None:
    figures = QueueFigures({}, 3, NOW, 0, 0, None)
    row = WorkerRow(
        "w-aaaaaaaaaaaa", "laptop", "inst", 1, 0.0, "0", State.IDLE, (), NOW, NOW,
        held_reason="its machine could not create the workspace: x (3 times in a row)",
    )  # fmt: skip
    found = concerns(figures, workers=WorkerCounts(live=1), thresholds=Thresholds(), held=[row])
    assert [(c.check, c.message) for c in found] == [
        ("held_workers", "worker w-aaaaaaaaaaaa (laptop) claims nothing: its machine could not "
         "create the workspace: x (3 times in a row)"),
    ]  # fmt: skip


def test_replay_accepts_a_machine_failure_between_claims() -> None:
    item = running()
    settlement = after_machine_failure(
        claimed_from=ItemState.QUEUED, kind=RunKind.FRESH, worker_id="w-aaaaaaaaaaaa",
        cause=CAUSE, at=NOW, run_recorded=False,
    )  # fmt: skip
    back = settle(item, settlement, at=NOW)
    again = claim(back.after, ClaimRequest("w-bbbbbbbbbbbb", "inst", TERMS, "e"), at=NOW)
    created = dataclasses.replace(back.event, from_state=None, to_state=ItemState.QUEUED)
    claimed = dataclasses.replace(
        back.event, from_state=ItemState.QUEUED, to_state=ItemState.RUNNING
    )
    assert replay([created, claimed, back.event, again.event]) is ItemState.RUNNING
