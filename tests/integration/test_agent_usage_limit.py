"""A `command` agent reports a usage limit from inside its run (`wrighty fail --usage-limit
[--resets-at TIME]`): the run is rate-limited, worker.usageFailure retries it at the reset the
agent reported, the provider circuit opens until then (docs/usage-limits.md). Real agent
processes calling the real `wrighty fail`, a worker in the test's process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import open_project
from tests.integration.test_worker import AGENT, Project
from tests.integration.worker_process import project_document
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.times import rfc3339
from wrighty.services.runlogs import run_log_dir

REFUSED = """
    import subprocess
    done = subprocess.run([sys.executable, "-m", "wrighty", "fail", "--usage-limit", {extra}
                           "--reason", "the five-hour window is spent"],
                          capture_output=True, text=True)
    print(done.returncode, done.stdout, done.stderr, flush=True)
    sys.exit(1)
"""


def project_with(tmp_path: Path, usage_failure: dict[str, Any] | None) -> Project:
    root = tmp_path / "project"
    worker: dict[str, Any] = {"leaseSeconds": 2, "heartbeatSeconds": 0.2, "pollSeconds": 0.05}
    if usage_failure is not None:
        worker["usageFailure"] = usage_failure
    document = project_document(
        root, programs={"fake": ("agent.py", AGENT)}, resumable=True, worker=worker
    )
    return open_project(Project, root, document)


@pytest.fixture
def retrying(tmp_path: Path) -> Iterator[Project]:
    made = project_with(tmp_path, {"action": "retry", "maxAttempts": 2, "initialRetryMinutes": 1})
    yield made
    made.store.close()


def test_a_reported_reset_is_when_the_retry_is_due_and_the_circuit_opens_until(
    retrying: Project,
) -> None:
    item = retrying.item(REFUSED.format(extra='"--resets-at", "2h",'))
    after = retrying.run_once()
    [run] = retrying.store.list_runs(item.id)
    assert (run.outcome_class, run.confidence) == (
        OutcomeClass.RATE_LIMITED, Confidence.AUTHORITATIVE)  # fmt: skip
    assert run.agent_report == "usage-limit"
    assert run.agent_resets_at is not None
    assert run.ended_at is not None
    # 2h from when the agent said it (before the run ended), not from the run's end
    assert timedelta(hours=2) - timedelta(seconds=60) < run.agent_resets_at - run.started_at
    assert run.agent_resets_at - run.started_at <= timedelta(hours=2) + timedelta(seconds=60)
    assert (after.state, after.reason_code) == (ItemState.RETRY_SCHEDULED, "rate-limited")
    grace = timedelta(minutes=2)  # worker.usageFailure.resetGraceSeconds' default
    assert after.not_before == run.agent_resets_at + grace
    assert after.reason is not None
    assert f"the agent reported its reset at {rfc3339(run.agent_resets_at)}" in after.reason
    assert "usage retry 1 of 2 resumes its session" in after.reason
    assert after.usage_retries == 1
    [circuit] = retrying.store.list_circuits()
    assert circuit.until == after.not_before
    assert run.diagnostic is not None
    assert "agent says: the five-hour window is spent" in run.diagnostic


def test_without_a_reset_the_backoff_says_when(retrying: Project) -> None:
    item = retrying.item(REFUSED.format(extra=""))
    after = retrying.run_once()
    [run] = retrying.store.list_runs(item.id)
    assert run.agent_resets_at is None
    assert (after.state, after.reason_code) == (ItemState.RETRY_SCHEDULED, "rate-limited")
    assert after.reason is not None
    assert "backoff: the provider named no reset" in after.reason


def test_without_the_policy_the_item_needs_attention(tmp_path: Path) -> None:
    project = project_with(tmp_path, None)
    try:
        project.item(REFUSED.format(extra='"--resets-at", "2h",'))
        after = project.run_once()
        assert (after.state, after.reason_code) == (ItemState.NEEDS_ATTENTION, "rate-limited")
    finally:
        project.store.close()


def test_a_bad_reset_is_refused_inside_the_run_and_nothing_is_recorded(
    retrying: Project,
) -> None:
    item = retrying.item(REFUSED.format(extra='"--resets-at", "2026-12-03T14:00",'))
    after = retrying.run_once()
    [run] = retrying.store.list_runs(item.id)
    assert run.agent_report is None  # refused: nothing recorded
    assert (after.state, after.reason_code) == (ItemState.NEEDS_ATTENTION, "agent-failure")
    said = (run_log_dir(retrying.root / ".wrighty", run) / "stdout.log").read_text()
    assert said.startswith("2 ")  # its exit code, printed by the agent
    assert "wrighty: --resets-at: time '2026-12-03T14:00' names no offset" in said


# Wait or hand off (docs/handoff.md#wait-or-hand-off): alpha's fallback is beta.

BETA = """
import json, os, pathlib, sys
told = sys.stdin.read()
pathlib.Path(os.environ["BETA_RECORD"]).write_text(json.dumps(
    {"prompt": told, "cwd": os.getcwd(), "found": pathlib.Path("work.txt").exists()}))
"""
LEAVES_WORK = (
    """
    import pathlib
    pathlib.Path("work.txt").write_text("half done\\n")
"""
    + REFUSED
)


def handing_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **usage: Any) -> Project:
    root = tmp_path / "project"
    monkeypatch.setenv("BETA_RECORD", str(tmp_path / "beta.json"))
    document = project_document(
        root, programs={"fake": ("agent.py", AGENT), "beta": BETA}, resumable={"fake"},
        agents={"fake": {"fallback": ["beta"]}},
        worker={"leaseSeconds": 2, "heartbeatSeconds": 0.2, "pollSeconds": 0.05,
                "workspaceMode": "directory",
                "usageFailure": {"action": "retry", "handoffAfterMinutes": 45, **usage}},
    )  # fmt: skip
    return open_project(Project, root, document)


def test_a_reset_hours_away_hands_the_item_to_the_fallback_in_the_same_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = handing_off(tmp_path, monkeypatch)
    try:
        item = project.item(LEAVES_WORK.format(extra='"--resets-at", "5h",'), pinned=False)
        after = project.run_once()
        assert (after.state, after.reason_code, after.agent, after.handoffs) == (
            ItemState.RETRY_SCHEDULED, "handed-off", "beta", 1)  # fmt: skip
        assert after.reason is not None
        assert "longer than worker.usageFailure.handoffAfterMinutes: handed off to beta" in (
            after.reason
        )
        [run] = project.store.list_runs(item.id)
        assert after.not_before == run.ended_at  # due now
        [circuit] = project.store.list_circuits()  # the refused agent's provider waits
        assert circuit.name.startswith("agent:fake")
        project.pass_once(agent="beta")
        done = project.get(item.id)
        assert (done.state, done.agent) == (ItemState.DONE, "beta")
        told = json.loads((tmp_path / "beta.json").read_text())
        assert told["found"] is True
        assert "Another agent (fake) worked on this task before you" in told["prompt"]
        assert "Its last run ended as rate-limited" in told["prompt"]
        alpha_run, beta_run = project.store.list_runs(item.id)
        assert (alpha_run.agent, beta_run.agent) == ("fake", "beta")
    finally:
        project.store.close()


def test_a_near_reset_waits_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = handing_off(tmp_path, monkeypatch)
    try:
        project.item(REFUSED.format(extra='"--resets-at", "10m",'), pinned=False)
        after = project.run_once()
        assert (after.state, after.reason_code, after.agent) == (
            ItemState.RETRY_SCHEDULED, "rate-limited", None)  # fmt: skip
    finally:
        project.store.close()


def test_a_fallback_whose_circuit_is_open_cannot_take_it_and_the_item_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime

    from wrighty.domain.circuits import Circuit, circuit_name, opened

    project = handing_off(tmp_path, monkeypatch)
    try:
        now = datetime.now(UTC)
        name = circuit_name("beta", account=None, installation_id=project.installation_id)
        shut = opened(Circuit(name), at=now, until=now + timedelta(hours=3), reason="x",
                      item_id=None)  # fmt: skip
        assert project.store.write_circuit(Circuit(name), shut, at=now)
        project.item(REFUSED.format(extra='"--resets-at", "5h",'), pinned=False)
        after = project.run_once()
        assert (after.state, after.reason_code, after.agent) == (
            ItemState.RETRY_SCHEDULED, "rate-limited", None)  # fmt: skip
        assert after.reason is not None
        assert "no fallback can take it (beta: its provider circuit is open until" in after.reason
    finally:
        project.store.close()


def test_past_max_handoffs_the_item_waits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = handing_off(tmp_path, monkeypatch, maxHandoffs=1)
    try:
        item = project.item(REFUSED.format(extra='"--resets-at", "5h",'), pinned=False)
        project.store._connection.execute("UPDATE items SET handoffs = 1 WHERE id = ?", (item.id,))
        after = project.run_once()
        assert (after.state, after.reason_code) == (ItemState.RETRY_SCHEDULED, "rate-limited")
        assert after.reason is not None
        assert "not handed off: it was 1 times already (worker.usageFailure.maxHandoffs)" in (
            after.reason
        )
    finally:
        project.store.close()
