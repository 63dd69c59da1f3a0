"""Budgets against real agent processes (the command adapter reporting its usage with
`wrighty report-usage`) and a real SQLite store: a run past its item's budget is stopped, an
item whose budget is spent is not launched again, an agent whose day budget is spent gets no
new run, and a stopped run keeps the usage it reported."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import process_ended
from tests.integration.test_worker import AGENT, Project, services_now
from wrighty.domain.model import Item, NewItem
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.services import items as item_service
from wrighty.services import reaper
from wrighty.store.sqlite import SqliteStore
from wrighty.worker.loop import WorkerOptions

# The task of an agent that reports `tokens` and then works until it is stopped, writing its
# pid first so that the test can check the process is gone.
SPENDER = """
import subprocess, time
open("pid-" + os.environ["WRIGHTY_RUN_ID"], "w").write(str(os.getpid()))
done = subprocess.run([sys.executable, "-m", "wrighty", "report-usage",
                       "--input-tokens", "{input}", "--output-tokens", "{output}",
                       "--model", "house-model"], capture_output=True, text=True)
print(done.returncode, done.stdout, done.stderr, flush=True)
if {linger}:
    time.sleep(60)
"""


@pytest.fixture
def make_project(make_project: Callable[..., Project]) -> Callable[..., Project]:
    """tests/conftest.py's factory, for projects that differ in their budgets and pricing."""
    count = itertools.count()

    def make(budgets: dict[str, Any], pricing: dict[str, Any] | None = None) -> Project:
        sections = {"budgets": budgets, **({"pricing": pricing} if pricing is not None else {})}
        return make_project(
            f"project{next(count)}", kind=Project, programs={"fake": ("agent.py", AGENT)},
            worker={"leaseSeconds": 2, "heartbeatSeconds": 0.2, "pollSeconds": 0.05},
            **sections,
        )  # fmt: skip

    return make


def _spender(project: Project, *, input: int, output: int, linger: bool, **own: Any) -> Item:
    code = textwrap.dedent(SPENDER.format(input=input, output=output, linger=linger))
    return project.store.create_item(
        NewItem("t", code, None, None, str(project.root), ItemState.QUEUED, **own),
        at=services_now(),
        actor="op",
    )


def _pids(project: Project) -> list[int]:
    return [int(path.read_text()) for path in project.root.glob("pid-*")]


def test_a_run_past_its_items_token_budget_is_stopped_and_keeps_its_usage(make_project) -> None:
    project = make_project({"perItem": {"maxTokens": 1000}})
    item = _spender(project, input=900, output=300, linger=True)
    project.worker().run(WorkerOptions(once=True, stop_grace_seconds=1))
    item = project.store.get_item(item.id)
    assert item is not None
    assert (item.state, item.reason_code) == (ItemState.NEEDS_ATTENTION, "budget-exceeded")
    assert "1,000 tokens" in (item.reason or "")
    assert "1,200 tokens" in (item.reason or "")
    # The command adapter here has no resumeCommand: the next run starts a new session.
    assert item.next_action == f"wrighty requeue {item.id} --fresh --max-tokens 2400"
    [run] = project.store.list_runs(item.id)
    assert (run.outcome_class, run.confidence) == (
        OutcomeClass.BUDGET_EXCEEDED, Confidence.AUTHORITATIVE)  # fmt: skip
    assert run.usage is not None
    assert (run.usage.input_tokens, run.usage.output_tokens) == (900, 300)
    assert run.usage.models == ("house-model",)
    # It was stopped long before its 60 s sleep ended, and its process is gone.
    [pid] = _pids(project)
    assert process_ended(pid)


def test_a_raised_budget_lets_the_item_run_on(make_project) -> None:
    project = make_project({"perItem": {"maxTokens": 1000}})
    item = _spender(project, input=900, output=300, linger=True)
    project.worker().run(WorkerOptions(once=True, stop_grace_seconds=1))
    # Without a higher budget the requeued item is settled before anything launches...
    item_service.requeue_item(project.store, item.id, resume=False, now=services_now())
    held = project.run_once()
    assert (held.reason_code, len(project.store.list_runs(item.id))) == ("budget-exceeded", 1)
    assert "no new run was started" in (held.reason or "")
    assert len(_pids(project)) == 1
    # ...with one, it runs again (and is stopped again once it passes the new bound).
    from wrighty.domain.usage import Limit

    item_service.requeue_item(
        project.store, item.id, resume=False, now=services_now(), budget=Limit(max_tokens=2000)
    )
    ran = project.run_once()
    runs = project.store.list_runs(item.id)
    assert len(runs) == 2
    assert len(_pids(project)) == 2
    assert ran.max_tokens == 2000
    # The item's total counts both runs: 1,200 + 1,200 passes the new 2,000.
    assert (ran.state, ran.reason_code) == (ItemState.NEEDS_ATTENTION, "budget-exceeded")
    assert "(2,000 tokens)" in (ran.reason or "")
    assert "2,400 tokens" in (ran.reason or "")


def test_an_agents_day_budget_stops_its_runs_and_holds_its_items_queued(make_project) -> None:
    project = make_project({"perDay": {"fake": {"maxTokens": 1000}}})
    done = [_spender(project, input=400, output=0, linger=False) for _ in range(2)]
    stopped = _spender(project, input=400, output=0, linger=True)
    held = _spender(project, input=400, output=0, linger=False)
    project.worker().run(WorkerOptions(max_items=4, idle_timeout_seconds=1, stop_grace_seconds=1))
    states = [project.store.get_item(i.id).state for i in (*done, stopped, held)]  # type: ignore[union-attr]
    # 400, then 800: both run to their end. The third starts (800 < 1,000) and is stopped once
    # it takes the day past 1,000; the fourth is never started, and waits in the queue.
    assert states == [ItemState.DONE, ItemState.DONE, ItemState.NEEDS_ATTENTION, ItemState.QUEUED]
    third = project.store.get_item(stopped.id)
    assert third is not None
    assert third.reason_code == "budget-exceeded"
    assert "fake's budget for the day (1,000 tokens)" in (third.reason or "")
    assert project.store.list_runs(held.id) == []
    event = next(e for e in project.events if e["event"] == "budget-held")
    assert event["agent"] == "fake"
    assert "1,200 tokens" in event["reason"]


def test_an_estimated_cost_stops_a_run_at_its_dollar_budget(make_project) -> None:
    project = make_project(
        {"perItem": {"maxCostUsd": 0.01}},
        pricing={"house-model": {"inputPerMtok": 10, "outputPerMtok": 30}},
    )
    item = _spender(project, input=1000, output=1000, linger=True)  # $0.01 + $0.03
    project.worker().run(WorkerOptions(once=True, stop_grace_seconds=1))
    item = project.store.get_item(item.id)
    assert item is not None
    assert item.reason_code == "budget-exceeded"
    [run] = project.store.list_runs(item.id)
    assert run.usage is not None
    assert run.usage.cost_source == "estimated"
    assert run.usage.cost_usd == pytest.approx(0.04)
    assert "--max-cost-usd 0.08" in (item.next_action or "")
    assert all(process_ended(pid) for pid in _pids(project))


def test_no_process_outlives_a_budget_stop(make_project) -> None:
    project = make_project({"perItem": {"maxTokens": 10}})
    _spender(project, input=50, output=0, linger=True)
    project.worker().run(WorkerOptions(once=True, stop_grace_seconds=1))
    for pid in _pids(project):
        assert process_ended(pid)
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"


# A stand-in for Claude Code's print mode: its stream-json init and one assistant message with
# the usage a provider reported at the message's start, then it works until it is killed.
FAKE_CLAUDE = """
import json, os, sys, time
sys.stdin.read()
session = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--session-id="))
def say(record):
    print(json.dumps({**record, "session_id": session}), flush=True)
say({"type": "system", "subtype": "init"})
say({"type": "assistant", "message": {"id": "msg_1", "model": "claude-test-model", "usage": {
    "input_tokens": 1500, "output_tokens": 7, "cache_read_input_tokens": 40,
    "cache_creation_input_tokens": 2}}})
open(os.path.join(os.getcwd(), "agent-pid"), "w").write(str(os.getpid()))
time.sleep(120)
"""


def test_a_sigkilled_workers_run_keeps_the_usage_seen_before_its_death(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "claude.py").write_text(FAKE_CLAUDE)
    executable = root / "claude"
    executable.write_text(f'#!/bin/sh\nexec {sys.executable} {root / "claude.py"} "$@"\n')
    executable.chmod(0o700)
    document = {
        "worker": {"leaseSeconds": 1, "heartbeatSeconds": 0.1, "pollSeconds": 0.05},
        "agents": {"claude": {"executable": str(executable)}},
    }
    (root / "wrighty.json").write_text(json.dumps(document))
    store = SqliteStore.open(root / ".wrighty" / "wrighty.db")
    item = store.create_item(
        NewItem("t", "work", None, None, str(root), ItemState.QUEUED), at=services_now(), actor="op"
    )
    worker = subprocess.Popen(
        [sys.executable, "-m", "wrighty", "--config", str(root / "wrighty.json"),
         "worker", "start", "--once", "--json"],
        cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        recorded = None
        while recorded is None and time.monotonic() < deadline:
            runs = store.list_runs(item.id)
            recorded = runs[0].usage if runs else None
            time.sleep(0.05)
        assert recorded is not None, "the worker never recorded the run's usage"
        agent_pid = int((root / "agent-pid").read_text())
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        assert process_ended(agent_pid)
    finally:
        worker.kill()
        worker.wait()
    later = services_now() + timedelta(seconds=3)
    reaper.reap_expired(store, now=later, max_requeues=3)
    [run] = store.list_runs(item.id)
    assert run.outcome_class is OutcomeClass.WORKER_LOST
    assert run.agent == "claude"
    usage = run.usage
    assert usage is not None
    assert usage.final is False
    assert (usage.input_tokens, usage.output_tokens) == (1500, 7)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (40, 2)
    assert usage.models == ("claude-test-model",)
    [entry] = store.list_ledger(default_agent="claude", item_id=item.id)
    assert entry.usage.tokens == 1549
    store.close()


REPORTER = """
import json, subprocess
def report(*flags):
    return subprocess.run([sys.executable, "-m", "wrighty", "report-usage", *flags],
                          capture_output=True, text=True)
print(report("--input-tokens", "10", "--cost-usd", "1").stdout, flush=True)
# A later report replaces the earlier one: totals, not increments.
done = report("--input-tokens", "1200", "--output-tokens", "300", "--cache-read-tokens", "5",
              "--cost-usd", "0.0081", "--model", "m-1", "--model", "m-2", "--final")
bad = report("--input-tokens", "12.5")
json.dump({"out": done.stdout, "bad": [bad.returncode, bad.stderr],
           "env": {k: v for k, v in os.environ.items() if k.startswith("WRIGHTY_")}},
          open("report.json", "w"))
"""


def test_report_usage_records_the_runs_totals_under_its_claim_only(make_project) -> None:
    project = make_project({})
    item = project.store.create_item(
        NewItem("t", textwrap.dedent(REPORTER), None, None, str(project.root), ItemState.QUEUED),
        at=services_now(),
        actor="op",
    )
    assert project.run_once().state is ItemState.DONE
    said = json.loads((project.root / "report.json").read_text())
    assert said["out"] == "recorded: 1,505 tokens, $0.0081 reported\n"
    returncode, stderr = said["bad"]
    assert returncode == 2
    whole = "is not a whole number: write it in plain digits, such as 30"
    assert stderr == f"wrighty: --input-tokens: '12.5' {whole}\n"
    [run] = project.store.list_runs(item.id)
    assert run.usage is not None
    assert (run.usage.input_tokens, run.usage.output_tokens, run.usage.cache_read_tokens) == (
        1200, 300, 5)  # fmt: skip
    assert (run.usage.cost_usd, run.usage.cost_source) == (0.0081, "reported")
    assert (run.usage.models, run.usage.final) == (("m-1", "m-2"), True)
    # The same token once the run has ended: refused, and nothing changes.
    late = subprocess.run(
        [sys.executable, "-m", "wrighty", "report-usage", "--input-tokens", "999999"],
        env={**os.environ, **said["env"]}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert late.returncode == 2
    assert "no longer holds its claim" in late.stderr
    assert project.store.list_runs(item.id)[0].usage == run.usage
