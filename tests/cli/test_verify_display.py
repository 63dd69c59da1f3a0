"""Verification's evidence where a person reads it (docs/verify.md#where-to-read-the-evidence):
`wrighty show` (text and --json) with each run's checks, the ones run by hand, the fix turns and
whether the latest verification passed; the commands it offers an item that waits because of
its checks (each of which runs); and `wrighty list`'s CHECKS column and `verified`."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import create_queued, open_store, start_run
from tests.cli.test_verify_cli import FAILING, PASSING, with_checks
from tests.conftest import FakeClock
from wrighty.domain.check_evidence import CheckEvidence, CheckRecord
from wrighty.domain.model import RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition

# What a check wrote: an ESC sequence (clear the screen), a bell, a bidi override and a
# carriage return, which a terminal would obey, then the line a person needs.
NASTY_TAIL = "collected 3 items\n\x1b[2Jwiped\x07 \u202egnp.exe\rover\nFAILED test_answer\n"
LINT = CheckEvidence("lint", ("ruff", "check", "."), 0.25, "All good\n", exit_code=0)
TESTS = CheckEvidence("tests", ("pytest", "-q"), 12.5, NASTY_TAIL, exit_code=1)


def checked_then_waiting(
    project: Path,
    clock: FakeClock,
    evidence: list[CheckEvidence],
    *,
    reason_code: str = "verification-failed",
    installation: str | None = None,
) -> int:
    """An item whose run succeeded, whose checks (``evidence``) the worker recorded under its
    claim, and which then went to needs-attention with ``reason_code``."""
    item_id = create_queued()
    started = start_run(project, item_id, at=clock(), session_id="s-1", installation=installation)
    store = open_store(project)
    try:
        for position, one in enumerate(evidence):
            record = CheckRecord(item_id, f"ver-worker-{item_id}", started.run.run_id, position,
                                 "worker:w-test", clock(), one)  # fmt: skip
            assert store.record_check(started.claimed, record)
        change = transition(
            started.claimed,
            ItemState.NEEDS_ATTENTION,
            at=clock.advance(1),
            actor="worker:w-test",
            reason_code=reason_code,
            reason="the check tests still fails",
            run_end=RunEnd(clock(), OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, 0),
        )
        assert store.write_transition(change)
    finally:
        store.close()
    return item_id


def shown(item_id: int) -> dict[str, Any]:
    result = wrighty("show", str(item_id), "--json")
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


CHECK_KEYS = {"name", "argv", "passed", "exit_code", "signal", "timed_out", "start_failure",
              "fails_on_base", "duration_seconds", "output_tail"}  # fmt: skip


def test_show_json_has_each_runs_checks_the_fix_turns_and_the_latest_outcome(
    initialised: Path, clock: FakeClock
) -> None:
    with_checks(initialised, PASSING)
    item_id = checked_then_waiting(initialised, clock, [LINT, TESTS])
    document = shown(item_id)
    assert (document["fix_turns"], document["max_fix_turns"]) == (0, 2)
    assert (document["verify_checks"], document["verified"]) == (None, False)
    [run] = document["runs"]
    assert [set(check) for check in run["checks"]] == [CHECK_KEYS, CHECK_KEYS]
    lint, tests = run["checks"]
    assert (lint["name"], lint["passed"], lint["exit_code"]) == ("lint", True, 0)
    assert (tests["name"], tests["passed"], tests["exit_code"]) == ("tests", False, 1)
    assert (tests["argv"], tests["duration_seconds"]) == (["pytest", "-q"], 12.5)
    assert tests["output_tail"] == NASTY_TAIL  # exact in JSON, escaped on the way out
    assert document["hand_verifications"] == []
    # By hand, the check passes: the item is done, and the evidence is beside the run's.
    assert wrighty("verify", str(item_id)).exit_code == 0
    after = shown(item_id)
    assert (after["state"], after["verified"]) == ("done", True)
    assert after["runs"][0]["checks"] == run["checks"]
    [by_hand] = after["hand_verifications"]
    assert (by_hand["actor"], by_hand["passed"]) == ("operator", True)
    assert [check["name"] for check in by_hand["checks"]] == ["answer"]
    assert by_hand["started_at"] is not None
    assert by_hand["verification_id"].startswith("ver-")


def test_show_json_without_checks_says_null(initialised: Path, clock: FakeClock) -> None:
    item_id = create_queued()
    document = shown(item_id)
    assert (document["fix_turns"], document["max_fix_turns"]) == (0, None)
    assert (document["verify_checks"], document["verified"]) == (None, None)
    assert document["hand_verifications"] == []


def test_show_text_tells_each_check_and_the_failing_ones_output_neutralised(
    initialised: Path, clock: FakeClock
) -> None:
    with_checks(initialised, PASSING)
    item_id = checked_then_waiting(initialised, clock, [LINT, TESTS])
    result = wrighty("show", str(item_id))
    assert result.exit_code == 0, result.output
    out = result.stdout
    lines = [line.strip() for line in out.splitlines()]
    assert "checks     failed" in lines
    assert "fix turns  0 of 2" in lines
    assert "passed  lint (0.2s)" in lines
    assert "FAILED  tests: exit code 1 (12.5s)" in lines
    assert "FAILED test_answer" in lines  # the end of the failing check's output
    assert "All good" not in out  # a passing check's output is not shown
    assert "\\x1b[2Jwiped\\x07 \\u202egnp.exe\\rover" in lines
    for unsafe in ("\x1b", "\x07", "\u202e", "\r"):
        assert unsafe not in out


def test_only_the_latest_verifications_failures_show_their_output(
    initialised: Path, clock: FakeClock
) -> None:
    with_checks(initialised, FAILING)
    item_id = checked_then_waiting(initialised, clock, [TESTS])
    assert wrighty("verify", str(item_id)).exit_code == 1
    out = wrighty("show", str(item_id)).stdout
    assert "FAILED  tests: exit code 1 (12.5s)" in out
    assert "FAILED test_answer" not in out  # the earlier verification's output: in --json
    assert "the answer is 41\\x1b[2J" in out  # the latest's, by hand, neutralised
    assert "by hand" in out


def offered(item_id: int) -> list[str]:
    """The commands `show`'s panel offers, in order."""
    out = wrighty("show", str(item_id)).stdout
    return [
        line.strip("│ ").strip()
        for line in out.splitlines()
        if line.strip("│ ").startswith("wrighty ")
    ]


@pytest.mark.parametrize(
    ("reason_code", "order"),
    [
        # (--resume is offered too where the session can be resumed: tests/unit)
        ("verification-failed", ["verify", "--fresh", "cancel"]),
        ("check-start-failed", ["verify", "--fresh", "cancel"]),
    ],
)
def test_an_item_waiting_because_of_its_checks_is_offered_its_checks_again(
    initialised: Path, clock: FakeClock, reason_code: str, order: list[str]
) -> None:
    with_checks(initialised, PASSING)
    item_id = checked_then_waiting(initialised, clock, [TESTS], reason_code=reason_code)
    commands = offered(item_id)
    expected = {
        "--resume": f"wrighty requeue {item_id} --resume",
        "verify": f"wrighty verify {item_id}",
        "--fresh": f"wrighty requeue {item_id} --fresh",
        "cancel": f"wrighty cancel {item_id}",
    }
    assert [c for c in commands if c in expected.values()] == [expected[o] for o in order]
    # The offered check run works: it runs the checks, and they pass.
    ran = wrighty(*shlex.split(f"wrighty verify {item_id}")[1:])
    assert ran.exit_code == 0, ran.output
    assert shown(item_id)["state"] == "done"


@pytest.mark.parametrize("case", ["no-checks", "elsewhere", "other-reason"])
def test_the_checks_are_not_offered_where_wrighty_verify_would_refuse(
    initialised: Path, clock: FakeClock, case: str
) -> None:
    if case != "no-checks":
        with_checks(initialised, PASSING)
    reason = "agent-failure" if case == "other-reason" else "verification-failed"
    installation = "inst-" + "f" * 24 if case == "elsewhere" else None  # its workspace's
    item_id = checked_then_waiting(
        initialised, clock, [TESTS], reason_code=reason, installation=installation
    )
    commands = offered(item_id)
    assert f"wrighty requeue {item_id} --fresh" in commands
    assert f"wrighty verify {item_id}" not in commands
    if case != "other-reason":
        assert wrighty("verify", str(item_id)).exit_code == 2  # it would have been refused


def test_list_has_a_checks_column_and_json_verified_once_an_item_was_verified(
    initialised: Path, clock: FakeClock
) -> None:
    plain = create_queued("never verified")
    before = wrighty("list").stdout
    assert "CHECKS" not in before.splitlines()[0]  # nothing verified: the table as ever
    with_checks(initialised, PASSING)
    failed = checked_then_waiting(initialised, clock, [LINT, TESTS])
    mended = checked_then_waiting(initialised, clock, [TESTS])
    assert wrighty("verify", str(mended)).exit_code == 0
    out = wrighty("list").stdout.splitlines()
    assert out[0].split() == ["ID", "STATE", "PRI", "AGENT", "TITLE", "UPDATED", "CHECKS",
                              "REASON"]  # fmt: skip
    rows = {int(line.split()[0]): line for line in out[1:]}
    assert rows[plain].split()[-1] == "-"  # no reason: CHECKS is the last cell
    assert rows[failed].split()[-2:] == ["failed", "verification-failed"]
    assert rows[mended].split()[-2:] == ["passed", "verified-by-hand"]
    listed = {
        entry["id"]: entry["verified"] for entry in json.loads(wrighty("list", "--json").stdout)
    }
    assert listed == {plain: None, failed: False, mended: True}


def test_list_attention_json_says_whether_each_items_latest_verification_passed(
    initialised: Path, clock: FakeClock
) -> None:
    with_checks(initialised, PASSING)
    failed = checked_then_waiting(initialised, clock, [LINT, TESTS])
    passed = checked_then_waiting(initialised, clock, [LINT], reason_code="agent-failure")
    never = checked_then_waiting(initialised, clock, [], reason_code="agent-failure")
    expected = {failed: False, passed: True, never: None}
    for args in (["--attention"], ["--state", "needs-attention"]):
        listed = json.loads(wrighty("list", *args, "--json").stdout)
        assert {entry["id"]: entry["verified"] for entry in listed} == expected
