"""`wrighty verify ITEM`: an item's checks run by hand, in its workspace, their evidence
recorded; an item that waited because of its checks is done once they all pass
(docs/verify.md#running-the-checks-by-hand)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import create_queued, open_store, start_run
from tests.conftest import FakeClock
from wrighty.domain.model import RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition

PASSING = {"name": "answer", "argv": ["sh", "-c", "echo the answer is 42"]}
FAILING = {"name": "answer", "argv": ["sh", "-c", "echo 'the answer is 41\x1b[2J'; exit 1"]}


def with_checks(project: Path, *checks: dict[str, Any]) -> None:
    path = project / "wrighty.json"
    document = json.loads(path.read_text())
    document["verify"] = {"checks": list(checks)}
    path.write_text(json.dumps(document))


def waiting_on_checks(project: Path, clock: FakeClock, reason_code: str) -> int:
    """An item whose run succeeded in ``project`` and whose checks then failed."""
    item_id = create_queued()
    started = start_run(project, item_id, at=clock(), session_id="s-1")
    store = open_store(project)
    try:
        change = transition(
            started.claimed,
            ItemState.NEEDS_ATTENTION,
            at=clock(),
            actor="worker:w-test",
            reason_code=reason_code,
            reason="the check answer failed",
            next_action=f"wrighty requeue {item_id} --resume",
            run_end=RunEnd(clock(), OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, 0),
        )
        assert store.write_transition(change)
    finally:
        store.close()
    return item_id


def stored(project: Path, item_id: int) -> tuple[ItemState, list[Any]]:
    store = open_store(project)
    try:
        item = store.get_item(item_id)
        assert item is not None
        return item.state, list(store.list_checks(item_id))
    finally:
        store.close()


@pytest.mark.parametrize("reason_code", ["verification-failed", "check-start-failed"])
def test_checks_that_pass_by_hand_finish_an_item_that_waited_for_them(
    initialised: Path, clock: FakeClock, reason_code: str
) -> None:
    with_checks(initialised, PASSING)
    item_id = waiting_on_checks(initialised, clock, reason_code)
    result = wrighty("verify", str(item_id))
    assert result.exit_code == 0, result.output
    assert "passed  answer" in result.stdout
    assert f"item {item_id} is done: every check passed" in result.stdout
    state, records = stored(initialised, item_id)
    assert state is ItemState.DONE
    [record] = records
    assert (record.run_id, record.actor, record.evidence.passed) == (None, "operator", True)
    assert "the answer is 42" in record.evidence.output_tail
    shown = json.loads(wrighty("show", str(item_id), "--json").stdout)
    assert shown["reason_code"] == "verified-by-hand"


def test_a_failing_check_by_hand_leaves_the_item_waiting_with_the_evidence(
    initialised: Path, clock: FakeClock
) -> None:
    with_checks(initialised, FAILING)
    item_id = waiting_on_checks(initialised, clock, "verification-failed")
    result = wrighty("verify", str(item_id))
    assert result.exit_code == 1
    assert "FAILED  answer: exit code 1" in result.stdout
    assert "the answer is 41" in result.stdout
    assert "\x1b" not in result.output  # the check's own output, neutralised
    assert f"item {item_id} stays needs-attention" in result.stdout
    state, [record] = stored(initialised, item_id)
    assert state is ItemState.NEEDS_ATTENTION
    assert record.evidence.exit_code == 1


def test_the_json_form_lists_each_check(initialised: Path, clock: FakeClock) -> None:
    with_checks(initialised, FAILING)
    item_id = waiting_on_checks(initialised, clock, "verification-failed")
    result = wrighty("verify", str(item_id), "--json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert (document["passed"], document["done"], document["state"]) == (
        False,
        False,
        "needs-attention",
    )
    [check] = document["checks"]
    assert (check["name"], check["exit_code"], check["passed"]) == ("answer", 1, False)
    assert "\x1b" not in result.stdout


def test_an_item_that_does_not_wait_for_its_checks_only_gains_the_evidence(
    initialised: Path, clock: FakeClock
) -> None:
    with_checks(initialised, PASSING)
    item_id = waiting_on_checks(initialised, clock, "agent-failure")
    result = wrighty("verify", str(item_id))
    assert result.exit_code == 0, result.output
    assert f"every check passed; item {item_id} stays needs-attention" in result.stdout
    state, records = stored(initialised, item_id)
    assert state is ItemState.NEEDS_ATTENTION
    assert len(records) == 1


@pytest.mark.parametrize("case", ["unknown", "running", "never-ran", "no-checks"])
def test_what_cannot_be_verified_is_refused_and_nothing_runs(
    initialised: Path, clock: FakeClock, case: str
) -> None:
    marker = initialised / "ran"
    with_checks(initialised, {"name": "mark", "argv": ["touch", str(marker)]})
    if case == "unknown":
        item_id, said = 99, "item 99 does not exist"
    elif case == "running":
        item_id = create_queued()
        start_run(initialised, item_id, at=clock(), session_id="s-1")
        said = "is running"
    elif case == "never-ran":
        item_id = create_queued()
        # a queued item is not told to be queued
        said = (
            f"item {item_id} has never run, so it has no workspace to check; it is queued: a "
            "worker of its agent makes its workspace"
        )
    else:
        with_checks(initialised)
        item_id = waiting_on_checks(initialised, clock, "verification-failed")
        said = "has no checks to run"
    result = wrighty("verify", str(item_id))
    assert result.exit_code == 2
    assert said in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not marker.exists()
    if case != "unknown":
        assert stored(initialised, item_id)[1] == []


def test_a_checks_evidence_hides_the_values_of_an_agents_env(
    initialised: Path, clock: FakeClock
) -> None:
    """A check that prints a value set in agents.<name>.env (a file the agent wrote, say):
    its evidence, stored and printed, shows [REDACTED] (docs/config.md)."""
    hook = "hook-Plain-value-5521"
    with_checks(initialised, {"name": "leak", "argv": ["sh", "-c", f"echo calling {hook}"]})
    path = initialised / "wrighty.json"
    document = json.loads(path.read_text())
    document["agents"] = {"fake": {"adapter": "command", "command": ["true"], "env": {"H": hook}}}
    path.write_text(json.dumps(document))
    item_id = waiting_on_checks(initialised, clock, "verification-failed")
    result = wrighty("verify", str(item_id))
    assert result.exit_code == 0, result.output
    _, [record] = stored(initialised, item_id)
    assert "calling [REDACTED]" in record.evidence.output_tail
    assert hook not in record.evidence.output_tail
    assert hook not in result.stdout
