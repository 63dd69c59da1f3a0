"""The worker against real agent processes (the command adapter) and a real SQLite store."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import file_appears, poll, process_ended
from tests.integration.harness import WorkerProject
from wrighty.config import LoadedConfig, check_config_text
from wrighty.domain.claims import ClaimRequest, LeaseTerms, Settlement, settle
from wrighty.domain.model import Item, NewItem, NewRun, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.services import items as item_service
from wrighty.services import reaper
from wrighty.store.sqlite import SqliteStore
from wrighty.worker.loop import Worker, WorkerOptions


class Project(WorkerProject):
    def item(
        self,
        code: str,
        *,
        timeout: float | None = None,
        workspace: Path | None = None,
        pinned: bool = True,
    ) -> Item:
        where = str(workspace or self.root) if pinned else None
        return self.store.create_item(
            NewItem("t", textwrap.dedent(code), None, timeout, where, ItemState.QUEUED),
            at=services_now(),
            actor="op",
        )  # fmt: skip

    def run_once(self, **options: Any) -> Item:
        self.pass_once(**options)
        return self.only_item()


def services_now():
    from datetime import UTC, datetime

    return datetime.now(UTC)


AGENT = """
import os, sys
code = sys.stdin.read()
exec(compile(code, "<task>", "exec"))
"""


# The `project` fixture's project (tests/conftest.py): AGENT runs each item's body as Python.
pytestmark = pytest.mark.project(
    kind=Project, programs={"fake": ("agent.py", AGENT)},
    worker={"leaseSeconds": 2, "heartbeatSeconds": 0.2, "pollSeconds": 0.05},
)  # fmt: skip


def test_a_successful_run_is_done_with_its_records(project: Project) -> None:
    project.item("""
        print("working in", os.getcwd(), "on item", os.environ["WRIGHTY_ITEM_ID"])
        open("result.txt", "w").write(os.environ["WRIGHTY_SESSION_ID"])
    """)
    item = project.run_once()
    assert item.state is ItemState.DONE
    [run] = project.store.list_runs(item.id)
    assert (run.outcome_class, run.confidence, run.exit_code) == (
        OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, 0)  # fmt: skip
    assert run.pid is not None
    assert run.process_started_at is not None
    session = project.store.get_session(item.id)
    assert session is not None
    assert (project.root / "result.txt").read_text() == session.session_id
    log = project.root / ".wrighty" / "runs" / str(item.id) / run.run_id / "stdout.log"
    assert f"on item {item.id}" in log.read_text()
    assert project.names() == ["started", "claimed", "spawned", "exited", "settled", "stopping"]


@pytest.mark.parametrize(
    ("code", "outcome", "exit_code", "signal_number"),
    [
        ("sys.exit(4)", OutcomeClass.AGENT_FAILURE, 4, None),
        (
            "import signal; os.kill(os.getpid(), signal.SIGKILL)",
            OutcomeClass.PROCESS_CRASH,
            None,
            9,
        ),
        (
            "import signal; os.kill(os.getpid(), signal.SIGSEGV)",
            OutcomeClass.PROCESS_CRASH,
            None,
            11,
        ),
    ],
    ids=["exit-4", "sigkill", "sigsegv"],
)
def test_failures_need_attention_with_their_class(
    project: Project,
    code: str,
    outcome: OutcomeClass,
    exit_code: int | None,
    signal_number: int | None,
) -> None:
    project.item(code)
    item = project.run_once()
    assert item.state is ItemState.NEEDS_ATTENTION
    assert item.reason_code == outcome.value
    [run] = project.store.list_runs(item.id)
    assert (run.outcome_class, run.exit_code, run.signal) == (outcome, exit_code, signal_number)


def test_a_hanging_agent_times_out_and_keeps_its_workspace(project: Project) -> None:
    project.item("""
        open("partial.txt", "w").write("half done")
        import time
        while True: time.sleep(1)
    """, timeout=1.0)  # fmt: skip
    item = project.run_once()
    assert (item.state, item.reason_code) == (ItemState.NEEDS_ATTENTION, "timeout")
    [run] = project.store.list_runs(item.id)
    assert (run.outcome_class, run.signal) == (OutcomeClass.TIMEOUT, signal.SIGTERM)
    assert (project.root / "partial.txt").read_text() == "half done"


def _when_started(project: Project, action) -> threading.Thread:
    """Run ``action`` once the agent has written started.txt."""

    def wait_then_act() -> None:
        poll((project.root / "started.txt").exists, timeout=20)  # in a thread: never fails
        action()

    thread = threading.Thread(target=wait_then_act)
    thread.start()
    return thread


HANG = """
open("pid.txt", "w").write(str(os.getpid()))
open("started.txt", "w").write("yes")
import time
while True: time.sleep(1)
"""


def test_an_operator_cancel_stops_the_running_agent(project: Project) -> None:
    item = project.item(HANG)
    other = SqliteStore.open(project.root / ".wrighty" / "wrighty.db")
    thread = _when_started(
        project, lambda: item_service.cancel_item(other, item.id, now=services_now())
    )
    after = project.run_once()
    thread.join()
    other.close()
    assert after.state is ItemState.CANCELLED
    [run] = project.store.list_runs(item.id)
    assert (run.outcome_class, run.confidence) == (OutcomeClass.CANCELLED, Confidence.AUTHORITATIVE)
    assert process_ended(int((project.root / "pid.txt").read_text()))
    assert "claim-lost" in project.names()
    assert "settled" not in project.names()


def test_a_fenced_worker_stops_its_agent_and_writes_nothing(project: Project) -> None:
    item = project.item(HANG)
    other = SqliteStore.open(project.root / ".wrighty" / "wrighty.db")
    thread = _when_started(
        project, lambda: item_service.release_item(other, item.id, now=services_now())
    )
    after = project.run_once()
    thread.join()
    other.close()
    assert (after.state, after.reason_code) == (ItemState.NEEDS_ATTENTION, "operator-released")
    assert after.generation == 2
    [run] = project.store.list_runs(item.id)
    assert run.outcome_class is OutcomeClass.WORKER_LOST  # the release's record, untouched
    assert process_ended(int((project.root / "pid.txt").read_text()))
    assert "settled" not in project.names()
    # Told as claim-lost, and under its old name for readers written against it.
    [lost] = [e for e in project.events if e["event"] == "claim-lost"]
    [alias] = [e for e in project.events if e["event"] == "heartbeat-lost"]
    assert (lost["item_id"], lost["generation"], lost["reason"]) == (item.id, 1, "fenced")
    del lost["at"], alias["at"]  # a clock read each
    assert alias == {**lost, "event": "heartbeat-lost", "alias_of": "claim-lost"}


def test_a_missing_workspace_is_start_failed(project: Project, tmp_path: Path) -> None:
    project.item("print('never runs')", workspace=tmp_path / "deleted")
    item = project.run_once()
    assert (item.state, item.reason_code) == (ItemState.NEEDS_ATTENTION, "start-failed")
    assert (
        f"the workspace {tmp_path / 'deleted'} that item {item.id} was created with "
        f"(--workspace) is gone; make that folder again and run `wrighty requeue {item.id} "
        "--fresh`"
    ) in (item.reason or "")
    assert item.next_action == f"wrighty requeue {item.id} --fresh"
    assert project.store.list_runs(item.id) == []  # found before anything was recorded


def test_secrets_in_the_output_are_redacted_in_the_run_record(project: Project) -> None:
    key = "sk-ant-" + "q9w8e7r6" * 6
    project.item(f"print('token {key}', file=sys.stderr); sys.exit(2)")
    item = project.run_once()
    [run] = project.store.list_runs(item.id)
    assert run.diagnostic is not None
    assert "token" in run.diagnostic
    assert key not in run.diagnostic


def test_a_killed_worker_takes_its_agent_along_and_the_reaper_settles(project: Project) -> None:
    item = project.item(HANG)
    worker = subprocess.Popen(
        [sys.executable, "-m", "wrighty", "--config", str(project.root / "wrighty.json"),
         "worker", "start", "--once", "--json"],
        cwd=project.root, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        file_appears(project.root / "started.txt")  # it comes after pid.txt is written whole
        agent_pid = int((project.root / "pid.txt").read_text())
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        assert process_ended(agent_pid), "the agent outlived its killed worker"
    finally:
        worker.kill()
        worker.wait()
        if worker.stdout:
            worker.stdout.close()
    running = project.store.get_item(item.id)
    assert running is not None
    assert running.state is ItemState.RUNNING
    later = services_now() + timedelta(seconds=3)
    [change] = reaper.reap_expired(project.store, now=later, max_requeues=3)
    assert change.after.state is ItemState.RETRY_SCHEDULED  # a session was recorded
    [run] = project.store.list_runs(item.id)
    assert run.outcome_class is OutcomeClass.WORKER_LOST


def _start_worker_process(project: Project) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "wrighty", "--config", str(project.root / "wrighty.json"),
         "worker", "start", "--json"],
        cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("stop_signal", "resumable"),
    [(signal.SIGTERM, True), (signal.SIGTERM, False), (signal.SIGINT, False)],
    ids=["sigterm-resumable", "sigterm-not-resumable", "sigint-not-resumable"],
)
def test_a_stop_signal_stops_the_worker_cleanly_and_leaves_no_item_running(
    project: Project, stop_signal: signal.Signals, resumable: bool
) -> None:
    if resumable:
        document = json.loads((project.root / "wrighty.json").read_text())
        document["agents"]["fake"]["resumeCommand"] = document["agents"]["fake"]["command"]
        (project.root / "wrighty.json").write_text(json.dumps(document))
    item = project.item(HANG)
    worker = _start_worker_process(project)
    try:
        file_appears(project.root / "started.txt")  # written after pid.txt is whole
        agent_pid = int((project.root / "pid.txt").read_text())
        worker.send_signal(stop_signal)
        assert worker.wait(30) == 130
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        out, err = worker.communicate()
    assert "stopping after the running agent is settled" in err
    assert process_ended(agent_pid)
    after = project.store.get_item(item.id)
    assert after is not None
    expected = ItemState.RETRY_SCHEDULED if resumable else ItemState.NEEDS_ATTENTION
    assert (after.state, after.reason_code) == (expected, "worker-stopped")
    events = [json.loads(line)["event"] for line in out.splitlines()]
    if resumable:
        assert events[-3:] == ["settled", "retry-scheduled", "stopping"]
    else:
        assert events[-2:] == ["settled", "stopping"]


def test_an_agent_can_report_failure_from_inside_its_run(project: Project) -> None:
    project.item("""
        import json, subprocess
        done = subprocess.run([sys.executable, "-m", "wrighty", "fail", "--reason",
                               "the tests do not compile\\n key sk-ant-" + "z9" * 24],
                              capture_output=True, text=True)
        print(done.returncode, done.stdout, done.stderr)
        json.dump({k: v for k, v in os.environ.items() if k.startswith("WRIGHTY_")},
                  open("env.json", "w"))
    """)  # fmt: skip
    item = project.run_once()
    assert (item.state, item.reason_code) == (ItemState.NEEDS_ATTENTION, "agent-failure")
    [run] = project.store.list_runs(item.id)
    assert (run.outcome_class, run.confidence, run.exit_code) == (
        OutcomeClass.AGENT_FAILURE, Confidence.AUTHORITATIVE, 0)  # fmt: skip
    assert run.diagnostic is not None
    assert "agent says: the tests do not compile key [REDACTED]" in run.diagnostic
    assert "z9z9" not in run.diagnostic
    assert "the tests do not compile" in (item.reason or "")
    # The same token after the run ended: refused, nothing recorded.
    env = {**os.environ, **json.loads((project.root / "env.json").read_text())}
    late = subprocess.run(
        [sys.executable, "-m", "wrighty", "finish"], env=env, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert late.returncode == 2
    assert "no longer holds its claim" in late.stderr
    assert project.store.list_runs(item.id)[0].agent_report == "failed"


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_an_agents_reports_land_though_it_half_wrote_wrighty_json(
    project: Project, backend: str, request: pytest.FixtureRequest
) -> None:
    """`wrighty fail` and `report-usage` work from what the worker gave the run
    (WRIGHTY_RUN_STORE, WRIGHTY_RUN_PRICING), not from re-reading wrighty.json, which the
    agent has left half-written: the item ends as the agent said, with the usage it
    reported, priced from the worker's pricing. The store given to the run holds no password
    (on PostgreSQL the worker was given one in its URL)."""
    document = json.loads((project.root / "wrighty.json").read_text())
    document["pricing"] = {"house-model": {"inputPerMtok": 10, "outputPerMtok": 30}}
    (project.root / "wrighty.json").write_text(json.dumps(document))
    store_option: list[str] = []
    expected_store = f"sqlite:///{project.root}/.wrighty/wrighty.db"
    if backend == "postgresql":
        from tests.conftest import open_postgres, postgres_schema

        stack = contextlib.ExitStack()
        request.addfinalizer(stack.close)  # the store closed, then its schema dropped
        url = stack.enter_context(postgres_schema())
        project.store = stack.enter_context(contextlib.closing(open_postgres(url)))  # type: ignore[assignment]
        store_option = ["--store", url.replace("postgres@", "postgres:Hunter2Secret@", 1)]
        expected_store = url
    item = project.item("""
        import json, subprocess
        config = open("wrighty.json").read()
        open("wrighty.json", "w").write(config[: len(config) // 2])
        for argv in (["report-usage", "--input-tokens", "1000", "--output-tokens", "1000",
                      "--model", "house-model"], ["fail", "--reason", "the build is red"]):
            done = subprocess.run([sys.executable, "-m", "wrighty", *argv],
                                  capture_output=True, text=True)
            print(done.returncode, done.stdout, done.stderr, flush=True)
        json.dump({k: v for k, v in os.environ.items() if k.startswith("WRIGHTY_")},
                  open("env.json", "w"))
    """)  # fmt: skip
    worker = subprocess.run(
        [sys.executable, "-m", "wrighty", "--config", str(project.root / "wrighty.json"),
         *store_option, "worker", "start", "--once", "--json"],
        cwd=project.root, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stderr
    after = project.store.get_item(item.id)
    assert after is not None
    assert (after.state, after.reason_code) == (ItemState.NEEDS_ATTENTION, "agent-failure")
    assert "the build is red" in (after.reason or "")
    [run] = project.store.list_runs(item.id)
    assert run.agent_report == "failed"
    assert run.usage is not None
    assert (run.usage.input_tokens, run.usage.output_tokens) == (1000, 1000)
    assert run.usage.cost_source == "estimated"
    assert run.usage.cost_usd == pytest.approx(0.04)
    with pytest.raises(json.JSONDecodeError):  # the agent did leave it half-written
        json.loads((project.root / "wrighty.json").read_text())
    given = (project.root / "env.json").read_text()
    assert json.loads(given)["WRIGHTY_RUN_STORE"] == expected_store
    assert "Hunter2Secret" not in given


def test_finish_outside_a_run_is_bad_usage(project: Project) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    outside = subprocess.run(
        [sys.executable, "-m", "wrighty", "finish"], env=env, capture_output=True, text=True,
        cwd=project.root, check=False,
    )  # fmt: skip
    assert outside.returncode == 2
    assert "runs inside an agent's run" in outside.stderr


def _use_mode(project: Project, mode: str) -> None:
    document = json.loads((project.root / "wrighty.json").read_text())
    document["worker"]["workspaceMode"] = mode
    (project.root / "wrighty.json").write_text(json.dumps(document))
    config, problems = check_config_text(json.dumps(document))
    assert config is not None, problems
    project.loaded = LoadedConfig(project.root / "wrighty.json", config)


def test_two_items_run_at_once_without_crossing_their_logs(project: Project) -> None:
    _use_mode(project, "directory")
    marks = str(project.root)
    code = f"""
        import time
        item = os.environ["WRIGHTY_ITEM_ID"]
        open(os.path.join({marks!r}, "started-" + item), "w").close()
        deadline = time.monotonic() + 20
        other = os.path.join({marks!r}, "started-" + ("2" if item == "1" else "1"))
        while not os.path.exists(other) and time.monotonic() < deadline:
            time.sleep(0.01)  # proves the two ran at the same time
        for n in range(200):
            print(f"item {{item}} line {{n}}")
        sys.exit(0 if os.path.exists(other) else 7)
    """
    first, second = project.item(code), project.item(code)
    project.worker().run(WorkerOptions(concurrency=2, max_items=2, stop_grace_seconds=1))
    for item in (first, second):
        after = project.store.get_item(item.id)
        assert after is not None
        assert after.state is ItemState.DONE, after.reason
        [run] = project.store.list_runs(item.id)
        log = project.root / ".wrighty" / "runs" / str(item.id) / run.run_id / "stdout.log"
        lines = log.read_text().splitlines()
        assert len(lines) == 200
        assert all(line.startswith(f"item {item.id} ") for line in lines)


RESUMER = """
import json, os, sys
json.dump({"argv": sys.argv[1:], "task": sys.stdin.read(),
           "session": os.environ["WRIGHTY_SESSION_ID"]}, open("resumed.json", "w"))
"""


def test_a_stopped_run_is_resumed_by_the_next_worker_in_the_same_session(
    project: Project,
) -> None:
    (project.root / "resumer.py").write_text(RESUMER)
    document = json.loads((project.root / "wrighty.json").read_text())
    document["agents"]["fake"]["resumeCommand"] = [
        sys.executable, str(project.root / "resumer.py"), "--resume"]  # fmt: skip
    (project.root / "wrighty.json").write_text(json.dumps(document))
    config, _ = check_config_text(json.dumps(document))
    assert config is not None
    project.loaded = LoadedConfig(project.root / "wrighty.json", config)
    item = project.item(HANG)
    worker = project.worker()
    _when_started(project, worker.request_stop)
    worker.run(WorkerOptions(once=True, stop_grace_seconds=1))
    stopped = project.store.get_item(item.id)
    assert stopped is not None
    assert (stopped.state, stopped.reason_code) == (ItemState.RETRY_SCHEDULED, "worker-stopped")
    first_session = project.store.get_session(item.id)
    assert first_session is not None
    after = project.run_once()
    assert after.state is ItemState.DONE
    fresh, resumed = project.store.list_runs(item.id)
    assert (fresh.kind.value, resumed.kind.value) == ("fresh", "resume")
    assert resumed.session_id == first_session.session_id
    seen = json.loads((project.root / "resumed.json").read_text())
    assert seen["argv"] == ["--resume"]
    assert seen["session"] == first_session.session_id
    assert seen["task"].startswith("The previous attempt at this task ended")
    assert seen["task"].endswith(HANG)
    assert "resumed" in project.names()


def test_a_retry_whose_workspace_is_gone_is_never_run_fresh(
    project: Project, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    document = json.loads((project.root / "wrighty.json").read_text())
    document["agents"]["fake"]["resumeCommand"] = document["agents"]["fake"]["command"]
    config, _ = check_config_text(json.dumps(document))
    assert config is not None
    project.loaded = LoadedConfig(project.root / "wrighty.json", config)
    item = project.item("import signal; os.kill(os.getpid(), signal.SIGKILL)", workspace=workspace)
    held = project.store.acquire(
        ClaimRequest("w-x", "inst-test", LeaseTerms(60, 600), "fake"), now=services_now()
    )
    assert held is not None
    claimed = held.item
    first_run = NewRun("r0", RunKind.FRESH, "w-x", "inst-test", services_now(), "s-0")
    project.store.start_run(claimed, first_run)
    session = Session(item.id, "command", "s-0", str(workspace), "inst-test")
    project.store.record_session(claimed, session, at=services_now())
    retry = settle(claimed, Settlement(ItemState.RETRY_SCHEDULED, process_started=True,
                   not_before=services_now()), at=services_now())  # fmt: skip
    assert project.store.write_transition(retry)
    workspace.rmdir()
    after = project.run_once()
    assert (after.state, after.reason_code) == (ItemState.NEEDS_ATTENTION, "resume-state-missing")
    assert f"the workspace {workspace} is gone" in (after.reason or "")
    assert [r.run_id for r in project.store.list_runs(item.id)] == ["r0"]  # no fresh run


WHERE = 'open("where.txt", "w").write(os.getcwd())'


def test_directory_mode_gives_each_item_its_own_folder_and_keeps_it(project: Project) -> None:
    _use_mode(project, "directory")
    item = project.item(WHERE, pinned=False)
    after = project.run_once()
    assert after.state is ItemState.DONE
    folder = project.root / ".wrighty" / "workspaces" / str(item.id)
    assert (folder / "where.txt").read_text() == str(folder)
    session = project.store.get_session(item.id)
    assert session is not None
    assert session.workspace == str(folder)


def test_worktree_mode_runs_each_item_in_a_git_worktree(project: Project) -> None:
    _use_mode(project, "worktree")
    git = [
        "git",
        "-C",
        str(project.root),
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
    ]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "config", "user.name", "t"], check=True)  # wrighty's commit's
    subprocess.run([*git, "config", "user.email", "t@example.invalid"], check=True)
    (project.root / "README").write_text("hello")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    item = project.item(WHERE, pinned=False)
    after = project.run_once()
    assert after.state is ItemState.DONE, after.reason
    tree = project.root / ".wrighty" / "worktrees" / str(item.id)
    assert (tree / "where.txt").read_text() == str(tree)
    assert (tree / "README").read_text() == "hello"  # a checkout of the project
    listed = subprocess.run([*git, "worktree", "list"], capture_output=True, text=True, check=True)
    assert str(tree) in listed.stdout


def test_current_mode_runs_one_agent_at_a_time_in_the_project(project: Project) -> None:
    from filelock import FileLock

    item = project.item(WHERE, pinned=False)
    held = FileLock(str(project.root / ".wrighty" / "current-workspace.lock"))
    with held.acquire(timeout=5):  # another worker's agent is working in the project
        project.worker().run(WorkerOptions(once=True, stop_grace_seconds=1))
        waiting = project.store.get_item(item.id)
        assert waiting is not None
        assert waiting.state is ItemState.QUEUED
    after = project.run_once()
    assert after.state is ItemState.DONE
    assert (project.root / "where.txt").read_text() == str(project.root)


def test_current_mode_hands_the_directory_from_one_item_to_the_next(project: Project) -> None:
    first = project.item(WHERE, pinned=False)
    second = project.item(WHERE, pinned=False)
    worker = project.worker()
    worker.run(WorkerOptions(max_items=2, idle_timeout_seconds=0.2, stop_grace_seconds=1))
    for item in (first, second):
        after = project.store.get_item(item.id)
        assert after is not None
        assert after.state is ItemState.DONE
    # The worker held the directory from one item to the next, and let go when it stopped:
    # another process can take it now.
    lock = project.root / ".wrighty" / "current-workspace.lock"
    probe = "import fcntl, sys; fcntl.flock(open(sys.argv[1]), fcntl.LOCK_EX | fcntl.LOCK_NB)"
    subprocess.run([sys.executable, "-c", probe, str(lock)], check=True)


ESCAPEE = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.setsid()
open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    time.sleep(1)
"""


def test_a_process_that_escaped_before_any_heartbeat_is_still_swept(project: Project) -> None:
    pidfile = project.root / "escaped.pid"
    script = project.root / "escapee.py"
    script.write_text(ESCAPEE)
    project.item(f"""
        import subprocess, time
        subprocess.Popen([sys.executable, {str(script)!r}, {str(pidfile)!r}],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not os.path.exists({str(pidfile)!r}) and time.monotonic() < deadline:
            time.sleep(0.01)
    """)  # fmt: skip
    after = project.run_once()  # the agent exits at once, long before its first heartbeat
    assert after.state is ItemState.DONE, after.reason
    escaped = int(pidfile.read_text())
    assert process_ended(escaped), "a process the agent left behind outlived the run"


def test_before_resuming_whatever_is_left_of_the_earlier_run_is_stopped(
    project: Project,
) -> None:
    """Never two live agents on one session: an orphan of the earlier run (its worker was
    SIGKILLed, say) is stopped before the resume starts."""
    (project.root / "resumer.py").write_text(RESUMER)
    document = json.loads((project.root / "wrighty.json").read_text())
    document["agents"]["fake"]["resumeCommand"] = [sys.executable, str(project.root / "resumer.py")]
    config, _ = check_config_text(json.dumps(document))
    assert config is not None
    project.loaded = LoadedConfig(project.root / "wrighty.json", config)
    item = project.item("print('first attempt')")
    # Unique: the stop looks for this marker in every process of the machine, other tests' too.
    earlier_run = f"r-old-{uuid.uuid4().hex[:12]}"
    held = project.store.acquire(
        ClaimRequest("w-old", "inst-test", LeaseTerms(60, 600), "fake"), now=services_now()
    )
    assert held is not None
    claimed = held.item
    session = Session(item.id, "command", "s-0", str(project.root), "inst-test")
    first = NewRun(earlier_run, RunKind.FRESH, "w-old", "inst-test", services_now(), "s-0")
    assert project.store.start_run(claimed, first, session=session) is not None
    orphan = subprocess.Popen(
        [sys.executable, "-c",
         "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
         "while True: time.sleep(1)"],
        env={**os.environ, "WRIGHTY_RUN_ID": earlier_run}, start_new_session=True,
    )  # fmt: skip
    try:
        started = psutil.Process(orphan.pid).create_time()
        project.store.record_process(
            claimed, earlier_run, pid=orphan.pid, process_started_at=started
        )
        retry = settle(claimed, Settlement(ItemState.RETRY_SCHEDULED, process_started=True,
                       not_before=services_now()), at=services_now())  # fmt: skip
        assert project.store.write_transition(retry)
        after = project.run_once()
        assert process_ended(orphan.pid), "the earlier run's process was still alive"
        assert after.state is ItemState.DONE
        assert project.store.list_runs(item.id)[-1].kind is RunKind.RESUME
    finally:
        if orphan.poll() is None:
            orphan.kill()
            orphan.wait()


def test_a_closed_output_does_not_interrupt_supervision(project: Project) -> None:
    item = project.item(WHERE, pinned=False)

    def closed(_: dict[str, object]) -> None:
        raise BrokenPipeError(32, "Broken pipe")  # stdout piped into `head`, which has exited

    worker = Worker(project.store, project.loaded, installation_id="inst-a", output=closed)
    worker.run(WorkerOptions(once=True, stop_grace_seconds=1))
    after = project.store.get_item(item.id)
    assert after is not None
    assert after.state is ItemState.DONE


def test_a_vendor_cli_missing_from_the_agents_path_puts_the_item_back_unspent(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker finds `claude` on its own PATH, but the agent's configured PATH lacks it: the
    # worker's machine cannot start any item, so the item goes back to the queue (docs/worker.md
    # #when-the-workers-machine-fails).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    document = json.loads((project.root / "wrighty.json").read_text())
    document["agents"] = {"claude": {"env": {"PATH": str(tmp_path / "empty")}}}
    document["worker"]["defaultAgent"] = "claude"
    config, problems = check_config_text(json.dumps(document))
    assert config is not None, problems
    project.loaded = LoadedConfig(project.root / "wrighty.json", config)
    project.item("print('never runs')")
    item = project.run_once()
    assert (item.state, item.reason_code, item.claimed_by) == (
        ItemState.QUEUED, "machine-failure", None)  # fmt: skip
    assert (item.crash_retries, item.usage_retries, item.requeues) == (0, 0, 0)
    assert item.reason is not None
    assert "machine could not find the agent's program: agent executable 'claude' not found" in (
        item.reason
    )
    [run] = project.store.list_runs(item.id)
    assert (run.outcome_class, run.pid) == (OutcomeClass.START_FAILED, None)
    assert run.diagnostic is not None
    assert "'claude' not found" in run.diagnostic
    [failure] = [e for e in project.events if e["event"] == "machine-failure"]
    assert (failure["item_id"], failure["failures"]) == (item.id, 1)


def test_the_claims_of_a_worker_renew_together(project: Project) -> None:
    """Three agents at once: at a heartbeat their three leases are renewed in one transaction
    (docs/scale.md), and all three end done."""
    _use_mode(project, "directory")
    gate = project.root / "gate"
    batches: list[list[int]] = []
    renew_many = project.store.renew_many

    def recorded(renewals):  # type: ignore[no-untyped-def]
        batches.append(sorted(renewal.claimed.id for renewal in renewals))
        return renew_many(renewals)

    project.store.renew_many = recorded  # type: ignore[method-assign]
    code = f"""
        import time
        deadline = time.monotonic() + 30
        while not os.path.exists({str(gate)!r}) and time.monotonic() < deadline:
            time.sleep(0.01)
        sys.exit(0 if os.path.exists({str(gate)!r}) else 7)
    """
    ids = sorted(project.item(code).id for _ in range(3))

    def open_gate() -> None:
        poll(lambda: ids in batches, timeout=30)
        gate.touch()

    opener = threading.Thread(target=open_gate)
    opener.start()
    project.worker().run(WorkerOptions(concurrency=3, max_items=3, stop_grace_seconds=1))
    opener.join()
    assert ids in batches
    assert [project.get(item_id).state for item_id in ids] == [ItemState.DONE] * 3
