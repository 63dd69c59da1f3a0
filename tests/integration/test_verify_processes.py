"""Verification with real processes (docs/verify.md): `wrighty worker start` runs the project's
checks after a succeeded run, a failing check sends its output back into the same session as a
fix turn, and every check leaves evidence; on both stores."""

from __future__ import annotations

import json
import signal
import subprocess
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from tests.helpers import read_pid, wait_for
from tests.integration.worker_process import LiveWorker, ProjectOnDisk
from tests.integration.worker_process import make_project as new_project
from wrighty.domain.outcomes import OutcomeClass, RunKind
from wrighty.domain.states import ItemState

# An agent that answers 41 on its first turn, and 42 once it has been told what its checks
# said (never, if its task says STUBBORN); it keeps every prompt it gets (outside the
# workspace), its session id and its run's kind.
AGENT = textwrap.dedent(
    """\
    import os, pathlib, sys
    task = sys.stdin.read()
    log = pathlib.Path(os.environ["PROMPTS"])
    with log.open("a") as handle:
        handle.write(
            f"--- {os.environ.get('WRIGHTY_SESSION_ID')} {os.getcwd()} "
            f"{os.environ.get('WRIGHTY_RUN_KIND')}\\n{task}\\n"
        )
    # A STUBBORN task stays so in its session's later turns, whose prompt is the feedback.
    if "STUBBORN" in task:
        pathlib.Path(".stubborn").touch()
    stubborn = pathlib.Path(".stubborn").exists()
    fixed = "wrighty ran the project's checks" in task and not stubborn
    pathlib.Path("answer.txt").write_text("42\\n" if fixed else "41\\n")
    """
)
ANSWER_CHECK = {
    "name": "answer",
    "argv": ["sh", "-c", 'a=$(cat answer.txt); echo "the answer is $a"; test "$a" = 42'],
}


def make_project(
    root: Path,
    store_url: str | None,
    *,
    verify: dict[str, Any],
    worker: dict[str, Any] | None = None,
    notify: dict[str, Any] | None = None,
) -> ProjectOnDisk:
    """A project whose agent is AGENT (command adapter, resumable), with ``verify``."""
    sections = {"verify": verify, **({"notify": notify} if notify is not None else {})}
    return new_project(
        root, programs={"answer": ("agent.py", AGENT)}, resumable=True,
        worker={"workspaceMode": "directory", **(worker or {})}, store_url=store_url,
        env={"PROMPTS": str(root / "prompts.log")}, **sections,
    )  # fmt: skip


def test_a_failing_check_is_fixed_in_the_same_session_and_the_item_is_done(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(tmp_path / "p", store_url, verify={"checks": [ANSWER_CHECK]})
    item_id = project.plant("answer the question")

    first = project.worker("--once")
    assert first.returncode == 0, first.stderr
    scheduled = project.get(item_id)
    assert (scheduled.state, scheduled.reason_code) == (
        ItemState.RETRY_SCHEDULED,
        "verification-failed",
    )
    assert scheduled.fix_turns == 1
    [failed] = first.named("check-failed")
    assert (failed["check"], failed["exit_code"]) == ("answer", 1)
    assert first.named("fix-scheduled")

    second = project.worker("--once")
    assert second.returncode == 0, second.stderr
    done = project.get(item_id)
    assert done.state is ItemState.DONE, done.reason
    [passed] = second.named("check-passed")
    assert passed["check"] == "answer"

    store = project.store()
    try:
        runs = store.list_runs(item_id)
        records = store.list_checks(item_id)
        session = store.get_session(item_id)
    finally:
        store.close()
    assert [run.kind for run in runs] == [RunKind.FRESH, RunKind.FIX]
    assert all(run.outcome_class is OutcomeClass.SUCCEEDED for run in runs)
    assert runs[0].session_id == runs[1].session_id is not None
    # both runs' evidence, each under its run, never rewritten
    assert [(r.run_id, r.evidence.passed) for r in records] == [
        (runs[0].run_id, False),
        (runs[1].run_id, True),
    ]
    assert "the answer is 41" in records[0].evidence.output_tail
    # the fix turn resumed the same session, in the same workspace, told what the check said
    prompts = (project.root / "prompts.log").read_text().split("--- ")[1:]
    assert len(prompts) == 2
    assert session is not None
    header = f"{runs[0].session_id} {session.workspace}"
    assert all(prompt.startswith(header) for prompt in prompts)
    assert "the answer is 41" in prompts[1]
    assert "answer: exit code 1" in prompts[1]
    # each run is told what it is for: the first the task, the fix turn the checks' feedback alone
    assert [prompt.split("\n", 1)[0].rsplit(" ", 1)[1] for prompt in prompts] == ["fresh", "fix"]
    assert prompts[0].split("\n", 1)[1].startswith("answer the question")
    assert "answer the question" not in prompts[1]


def test_fix_turns_spent_wait_for_a_person_naming_the_check(
    tmp_path: Path, store_url: str | None
) -> None:
    # a sink nobody listens on: the notices stay in the outbox, to be read
    sink = {"command": ["/bin/false"], "events": ["needs-attention"]}
    project = make_project(
        tmp_path / "p",
        store_url,
        verify={"checks": [ANSWER_CHECK], "maxFixTurns": 1},
        notify=sink,
    )
    item_id = project.plant("STUBBORN: always 41")
    project.worker("--once")
    assert project.get(item_id).state is ItemState.RETRY_SCHEDULED
    project.worker("--once")
    waiting = project.get(item_id)
    assert (waiting.state, waiting.reason_code) == (
        ItemState.NEEDS_ATTENTION,
        "verification-failed",
    )
    assert waiting.reason is not None
    assert "answer" in waiting.reason
    assert "after 1 fix turn" in waiting.reason
    assert waiting.next_action == f"wrighty requeue {item_id} --resume"
    assert waiting.fix_turns == 1
    store = project.store()
    try:
        told = store.list_notices(["pending", "delivered", "given-up"])
    finally:
        store.close()
    [notice] = [n.notice for n in told if n.notice.event == "needs-attention"]
    assert notice.payload["failing_checks"] == [{"name": "answer", "ending": "exit code 1"}]


def test_a_check_that_cannot_start_is_a_configuration_problem(
    tmp_path: Path, store_url: str | None
) -> None:
    checks = [{"name": "missing", "argv": ["./no-such-check"]}, ANSWER_CHECK]
    project = make_project(tmp_path / "p", store_url, verify={"checks": checks})
    item_id = project.plant("answer")
    finished = project.worker("--once")
    waiting = project.get(item_id)
    assert (waiting.state, waiting.reason_code) == (ItemState.NEEDS_ATTENTION, "check-start-failed")
    assert waiting.reason is not None
    assert "missing" in waiting.reason
    assert "not found" in waiting.reason
    assert waiting.fix_turns == 0
    [told] = finished.named("check-failed")
    assert told["start_failure"] is not None
    assert not finished.named("check-passed")  # it stops at a check that cannot start


def test_a_hanging_check_is_stopped_at_its_time_limit_tree_and_all(
    tmp_path: Path, store_url: str | None
) -> None:
    pids = tmp_path / "pids"
    hang = {
        "name": "hang",
        "argv": ["sh", "-c", f"sleep 600 & echo $! > {pids}; echo $$ >> {pids}; wait"],
        "timeoutMinutes": 1 / 60,
    }
    project = make_project(tmp_path / "p", store_url, verify={"checks": [hang]})
    item_id = project.plant("answer")
    finished = project.worker("--once")
    [told] = finished.named("check-failed")
    assert told["timed_out"] is True
    assert told["signal"] is not None
    for pid in map(int, pids.read_text().split()):
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    scheduled = project.get(item_id)
    assert scheduled.reason_code == "verification-failed"


def test_a_worker_killed_during_a_check_is_reaped_and_the_retry_verifies_again(
    tmp_path: Path, store_url: str | None
) -> None:
    check, pid_file = slow_check(tmp_path)
    project = make_project(
        tmp_path / "p",
        store_url,
        verify={"checks": [check]},
        worker={"leaseSeconds": 2, "heartbeatSeconds": 0.5},
    )
    item_id = project.plant("answer")
    live = LiveWorker(project, "--once")
    live.until("verify-start")
    pid = read_pid(pid_file)
    live.process.send_signal(signal.SIGKILL)
    live.process.wait(timeout=30)
    wait_for(lambda: gone(pid), timeout=10, what=f"the check {pid} to end")  # parent-death signal
    # the check never ended, so no evidence of it was written
    store = project.store()
    try:
        assert store.list_checks(item_id) == []
        expires = project.get(item_id).lease_expires_at
    finally:
        store.close()
    assert expires is not None
    while datetime.now(UTC) <= expires:  # the killed worker's lease must end first
        time.sleep(0.05)
    document = json.loads((project.root / "wrighty.json").read_text())
    document["verify"]["checks"] = [ANSWER_CHECK]
    (project.root / "wrighty.json").write_text(json.dumps(document))

    after = project.worker("--once")
    assert after.returncode == 0, after.stderr
    store = project.store()
    try:
        runs = store.list_runs(item_id)
        records = store.list_checks(item_id)
    finally:
        store.close()
    # reaped as worker-lost, the retry resumed the session, and its run was verified again
    assert [run.outcome_class for run in runs] == [
        OutcomeClass.WORKER_LOST,
        OutcomeClass.SUCCEEDED,
    ]
    assert runs[1].kind is RunKind.RESUME
    assert [record.run_id for record in records] == [runs[1].run_id]
    assert project.get(item_id).reason_code == "verification-failed"


def slow_check(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    """A check that says it started (its pid in a file), then runs for ten minutes."""
    pid_file = tmp_path / "check-pid"
    check = {"name": "slow", "argv": ["sh", "-c", f"echo $$ > {pid_file}; exec sleep 600"]}
    return check, pid_file


def gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_worker_stopped_during_a_check_stops_it_and_leaves_the_item_to_resume(
    tmp_path: Path, store_url: str | None
) -> None:
    check, pid_file = slow_check(tmp_path)
    project = make_project(tmp_path / "p", store_url, verify={"checks": [ANSWER_CHECK, check]})
    item_id = project.plant("answer")
    live = LiveWorker(project, "--once")
    live.until("check-failed", check="answer")
    pid = read_pid(pid_file)
    live.process.send_signal(signal.SIGTERM)
    code, _ = live.finish()
    assert code == 130
    assert gone(pid)
    item = project.get(item_id)
    assert (item.state, item.reason_code) == (ItemState.RETRY_SCHEDULED, "worker-stopped")
    assert item.fix_turns == 0
    store = project.store()
    try:
        records = store.list_checks(item_id)
    finally:
        store.close()
    assert [record.evidence.name for record in records] == ["answer"]  # the one that ended


def test_a_cancel_during_a_check_stops_it_and_writes_nothing_more(
    tmp_path: Path, store_url: str | None
) -> None:
    check, pid_file = slow_check(tmp_path)
    project = make_project(tmp_path / "p", store_url, verify={"checks": [check]})
    item_id = project.plant("answer")
    live = LiveWorker(project, "--once")
    live.until("verify-start")
    pid = read_pid(pid_file)
    cancel = subprocess.run(
        project.command("cancel", str(item_id)), env=project.env, cwd=project.root,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert cancel.returncode == 0, cancel.stderr
    lost = live.until("claim-lost")
    assert lost["reason"] == "cancelled"
    live.finish()
    assert gone(pid)
    assert project.get(item_id).state is ItemState.CANCELLED
    store = project.store()
    try:
        assert store.list_checks(item_id) == []
    finally:
        store.close()
