"""Verification's pure core: the policy's bounds, the feedback a fix turn gets (bounded,
redacted, printable, naming every failing check) and where an item goes after its checks."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.unit.test_redact import SECRETS
from wrighty.domain.check_evidence import BaseCheck, CheckEvidence, CheckRecord
from wrighty.domain.claims import Settlement, settle
from wrighty.domain.durations import MAX_ITEM_TIMEOUT_SECONDS
from wrighty.domain.model import Item, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.redact import REDACTED
from wrighty.domain.states import ItemState
from wrighty.domain.verify import (
    CHECK_START_FAILED,
    MAX_CHECKS,
    MAX_FEEDBACK_BYTES,
    MAX_FIX_TURNS,
    MIN_FEEDBACK_BYTES,
    VERIFICATION_FAILED,
    Check,
    VerifyPolicy,
    after_checks,
    base_run_due,
    check_key,
    feedback_prompt,
    on_base,
    owed_feedback,
    select_checks,
)

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
RUN_END = RunEnd(NOW, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, exit_code=0)
POLICY = VerifyPolicy((Check("tests", ("pytest", "-q")), Check("lint", ("ruff", "check"))))


def running() -> Item:
    return Item(
        id=7, title="t", body="b", agent=None, timeout_seconds=None, workspace=None,
        state=ItemState.RUNNING, generation=3, claimed_by="w-1", lease_expires_at=NOW,
        queued_at=NOW, not_before=None, reason_code=None, reason=None, next_action=None,
        crash_retries=0, requeues=0, created_at=NOW, updated_at=NOW,
    )  # fmt: skip


def passed(name: str) -> CheckEvidence:
    return CheckEvidence(name, (name,), 0.5, "ok\n", exit_code=0)


def failed(name: str, output: str = "boom\n", code: int = 1) -> CheckEvidence:
    return CheckEvidence(name, (name, "--strict"), 2.0, output, exit_code=code)


def decide(evidence: list[CheckEvidence], *, fix_turns: int = 0, missing: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    return after_checks(
        running(), RUN_END, evidence, policy=POLICY, fix_turns=fix_turns, resume_missing=missing
    )


# --- the policy -------------------------------------------------------------------------


_REFUSED = {
    "empty-argv": (lambda: Check("tests", ()), "argv must name a program"),
    "empty-program": (lambda: Check("tests", ("",)), "argv must name a program"),
    "nul": (lambda: Check("tests", ("a\x00b",)), "NUL"),
    "empty-name": (lambda: Check("", ("x",)), "check name"),
    "name-space": (lambda: Check("has space", ("x",)), "check name"),
    "name-long": (lambda: Check("x" * 65, ("x",)), "check name"),
    "timeout-short": (lambda: Check("t", ("x",), timeout_seconds=0.5), "timeout"),
    "timeout-nan": (lambda: Check("t", ("x",), timeout_seconds=float("nan")), "timeout"),
    "timeout-long": (lambda: Check("t", ("x",), timeout_seconds=1e12), "timeout"),
    "too-many-checks": (
        lambda: VerifyPolicy(tuple(Check(f"c{n}", ("x",)) for n in range(MAX_CHECKS + 1))),
        "at most 20 checks",
    ),
    "duplicate-names": (lambda: VerifyPolicy((Check("a", ("x",)),) * 2), "unique: a"),
    "fix-turns-negative": (lambda: VerifyPolicy((), max_fix_turns=-1), "fix turns"),
    "fix-turns-high": (lambda: VerifyPolicy((), max_fix_turns=MAX_FIX_TURNS + 1), "fix turns"),
    "feedback-low": (
        lambda: VerifyPolicy((), feedback_bytes=MIN_FEEDBACK_BYTES - 1),
        "feedback bytes",
    ),
    "feedback-high": (
        lambda: VerifyPolicy((), feedback_bytes=MAX_FEEDBACK_BYTES + 1),
        "feedback bytes",
    ),
    "evidence-no-ending": (lambda: CheckEvidence("a", ("a",), 1.0), "exactly one"),
    "evidence-both": (
        lambda: CheckEvidence("a", ("a",), 1.0, exit_code=1, signal=9),
        "exactly one",
    ),
    "evidence-start-failure-with-code": (
        lambda: CheckEvidence("a", ("a",), 1.0, exit_code=1, start_failure="x"),
        "did not start",
    ),
}


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_bad_input_is_refused(case: str) -> None:
    build, message = _REFUSED[case]
    with pytest.raises(ValueError, match=re.escape(message)):
        build()


def test_the_bounds_themselves_are_accepted() -> None:
    """Each bound that `_REFUSED` steps past by one is itself accepted, and kept as given."""
    checks = tuple(Check(f"c{n}", ("x",), timeout_seconds=1) for n in range(MAX_CHECKS))
    least = VerifyPolicy(checks, max_fix_turns=0, feedback_bytes=MIN_FEEDBACK_BYTES)
    assert (least.checks, least.max_fix_turns, least.feedback_bytes) == (
        checks, 0, MIN_FEEDBACK_BYTES)  # fmt: skip
    assert [check.timeout_seconds for check in least.checks] == [1] * MAX_CHECKS
    most = VerifyPolicy((), max_fix_turns=MAX_FIX_TURNS, feedback_bytes=MAX_FEEDBACK_BYTES)
    assert (most.checks, most.max_fix_turns, most.feedback_bytes) == (
        (), MAX_FIX_TURNS, MAX_FEEDBACK_BYTES)  # fmt: skip
    longest = Check("x" * 64, ("x",), timeout_seconds=MAX_ITEM_TIMEOUT_SECONDS)
    assert (longest.name, longest.timeout_seconds) == ("x" * 64, MAX_ITEM_TIMEOUT_SECONDS)


# --- after the checks -------------------------------------------------------------------


def waits_for_a_person(settlement: Settlement, reason_code: str, *said: str) -> Settlement:
    """The settlement, once it is checked to wait for a person for ``reason_code``
    with a reason that says each of ``said``, and to spend no fix turn."""
    assert settlement.to_state is ItemState.NEEDS_ATTENTION
    assert settlement.reason_code == reason_code
    assert settlement.reason is not None
    for words in said:
        assert words in settlement.reason
    assert not settlement.counts_as_fix_turn
    return settlement


def test_all_checks_passed_is_done() -> None:
    decision = decide([passed("tests"), passed("lint")])
    assert decision.to_state is ItemState.DONE
    assert decision.reason == "every check passed (2 checks)"
    assert decide([passed("tests")]).reason == "every check passed (1 check)"
    assert decision.run_end == RUN_END
    assert not decision.counts_as_fix_turn


def test_a_failed_check_with_turns_left_resumes_at_once_and_spends_a_turn() -> None:
    decision = decide([failed("tests"), passed("lint")], fix_turns=1)
    settlement = decision
    assert settlement.to_state is ItemState.RETRY_SCHEDULED
    assert settlement.reason_code == VERIFICATION_FAILED
    assert settlement.not_before == RUN_END.ended_at
    assert settlement.reason is not None
    assert "tests" in settlement.reason
    assert "lint" not in settlement.reason
    assert "fix turn 2 of 2" in settlement.reason
    assert decision.counts_as_fix_turn
    # the move is one the claim's settle accepts, and it counts the turn on the item
    after = settle(dataclasses.replace(running(), fix_turns=1), settlement, at=NOW).after
    assert after.state is ItemState.RETRY_SCHEDULED
    assert (after.fix_turns, after.crash_retries, after.usage_retries) == (2, 0, 0)


def test_a_failed_check_whose_session_cannot_be_resumed_waits_for_a_person() -> None:
    decision = decide([failed("tests")], missing=("no session id",))
    settlement = waits_for_a_person(decision, VERIFICATION_FAILED, "no session id")
    assert settlement.next_action == "wrighty requeue 7 --fresh"


def test_turns_spent_name_the_checks_that_still_fail_and_the_commands() -> None:
    decision = decide([failed("tests"), failed("lint")], fix_turns=POLICY.max_fix_turns)
    settlement = waits_for_a_person(
        decision, VERIFICATION_FAILED, "tests, lint still fail after 2 fix turns", "wrighty show 7"
    )
    assert settlement.next_action == "wrighty requeue 7 --resume"


def test_no_fix_turns_at_all_needs_attention_at_the_first_failure() -> None:
    policy = dataclasses.replace(POLICY, max_fix_turns=0)
    decision = after_checks(running(), RUN_END, [failed("tests")], policy=policy, fix_turns=0)
    assert decision.to_state is ItemState.NEEDS_ATTENTION
    assert decision.reason is not None
    assert "verify.maxFixTurns is 0" in decision.reason


def test_a_check_that_could_not_start_is_the_configurations_problem() -> None:
    broken = CheckEvidence("lint", ("ruff",), 0.0, start_failure="ruff: not found\x1b[2J")
    decision = decide([failed("tests"), broken], fix_turns=0)
    settlement = waits_for_a_person(decision, CHECK_START_FAILED, "lint", "ruff: not found")
    assert settlement.reason is not None
    assert "\x1b" not in settlement.reason


@given(
    outcomes=st.lists(st.sampled_from(["pass", "fail", "no-start"]), max_size=6),
    fix_turns=st.integers(0, MAX_FIX_TURNS + 2),
    max_fix_turns=st.integers(0, MAX_FIX_TURNS),
    resumable=st.booleans(),
)
def test_every_outcome_of_the_checks_has_one_settlement(
    outcomes: list[str], fix_turns: int, max_fix_turns: int, resumable: bool
) -> None:
    evidence = [
        passed(f"c{n}")
        if what == "pass"
        else failed(f"c{n}")
        if what == "fail"
        else CheckEvidence(f"c{n}", ("x",), 0.0, start_failure="gone")
        for n, what in enumerate(outcomes)
    ]
    policy = VerifyPolicy((), max_fix_turns=max_fix_turns)
    decision = after_checks(
        running(),
        RUN_END,
        evidence,
        policy=policy,
        fix_turns=fix_turns,
        resume_missing=() if resumable else ("gone",),
    )
    settlement = decision
    if "no-start" in outcomes:
        assert settlement.reason_code == CHECK_START_FAILED
    elif "fail" not in outcomes:
        assert settlement.to_state is ItemState.DONE
    else:
        assert settlement.reason_code == VERIFICATION_FAILED
    # a fix turn is spent only on a resumed retry, and only while turns are left
    retry = settlement.to_state is ItemState.RETRY_SCHEDULED
    assert decision.counts_as_fix_turn == retry
    assert not retry or (resumable and fix_turns < max_fix_turns)
    if settlement.to_state is ItemState.NEEDS_ATTENTION:
        assert settlement.next_action is not None
    settle(running(), settlement, at=NOW)  # every one is a legal move


# --- the feedback -----------------------------------------------------------------------


def test_the_feedback_names_the_failures_their_endings_output_and_what_to_do() -> None:
    evidence = [
        failed("tests", "E   assert 41 == 42\n1 failed\n"),
        passed("lint"),
        CheckEvidence("types", ("mypy",), 9.0, "…", signal=9, timed_out=True),
    ]
    prompt = feedback_prompt(evidence, feedback_bytes=12_000)
    assert "2 of 3 failed" in prompt
    assert "- tests: exit code 1\n" in prompt
    assert "- types: stopped at its time limit (signal 9)\n" in prompt
    assert "E   assert 41 == 42\n1 failed\n" in prompt
    assert "lint" not in prompt
    assert "Do not change" in prompt
    assert "checks pass" in prompt


def test_a_long_output_keeps_its_end_and_says_what_it_left_out() -> None:
    output = "".join(f"line {n}\n" for n in range(5000)) + "FAILED test_answer\n"
    prompt = feedback_prompt([failed("tests", output)], feedback_bytes=MIN_FEEDBACK_BYTES)
    assert len(prompt.encode()) <= MIN_FEEDBACK_BYTES
    assert prompt.endswith("FAILED test_answer\n")
    assert re.search(r"the first \d+ bytes of this output are left out", prompt)


def test_known_secrets_and_carriage_returns_and_escapes_in_the_output() -> None:
    output = "token sk9Zq-known-VALUE\r\nprogress\r50%\x1b]52;c;aGk=\x07\tdone\n"
    prompt = feedback_prompt(
        [failed("tests", output)], feedback_bytes=12_000, secrets=["sk9Zq-known-VALUE"]
    )
    assert "sk9Zq-known-VALUE" not in prompt
    assert REDACTED in prompt
    assert "progress\\r50%\\x1b]52;c;aGk=\\x07\tdone\n" in prompt


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# (text, the secret in it) as test_redact knows them; a secret of a few characters ("X") also
# occurs in the prompt's own words
_SECRET_FORMS = [
    (str(param.values[0]), str(param.values[1])) for param in SECRETS if len(param.values[1]) >= 8
]
_NAME = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", fullmatch=True)
_KNOWN = st.text("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", min_size=12, max_size=40)


@st.composite
def evidence_lists(draw: st.DrawFn) -> tuple[list[CheckEvidence], list[str], list[str]]:
    """Evidence with failing checks whose output holds secrets: in a form `redact` knows, and
    known values passed in; returns the evidence, the secrets and the known values."""
    names = draw(st.lists(_NAME, min_size=1, max_size=MAX_CHECKS, unique=True))
    secrets: list[str] = []
    known: list[str] = []
    evidence = []
    for name in names:
        form, secret = draw(st.sampled_from(_SECRET_FORMS))
        value = draw(_KNOWN)
        secrets.append(secret)
        known.append(value)
        noise = draw(st.text(max_size=300))
        output = draw(st.permutations([noise, f"\n{form}\n", f" {value} "]))
        ending = draw(st.sampled_from(["pass", "code", "signal"]))
        evidence.append(
            CheckEvidence(
                name,
                (name, f"--password={value}"),
                1.0,
                "".join(output) * draw(st.integers(1, 50)),
                exit_code=None if ending == "signal" else (0 if ending == "pass" else 2),
                signal=9 if ending == "signal" else None,
            )
        )
    return evidence, secrets, known


@settings(max_examples=150, deadline=None)
@given(drawn=evidence_lists(), feedback_bytes=st.integers(MIN_FEEDBACK_BYTES, 30_000))
def test_the_feedback_is_bounded_redacted_printable_and_names_every_failure(
    drawn: tuple[list[CheckEvidence], list[str], list[str]], feedback_bytes: int
) -> None:
    evidence, secrets, known = drawn
    # a known secret that is part of a check's name hides that name too, as it should
    assume(not any(value in check.name for value in known for check in evidence))
    prompt = feedback_prompt(evidence, feedback_bytes=feedback_bytes, secrets=known)
    assert len(prompt.encode("utf-8")) <= feedback_bytes
    for secret in [*secrets, *known]:
        assert secret not in prompt
    assert _CONTROL.search(prompt) is None
    listed = "".join(f"- {check.name}: {check.ending()}\n" for check in evidence if check.failed)
    if "feedback was cut" not in prompt:
        assert listed in prompt
    if len(listed) + 400 <= feedback_bytes:  # the instructions and the list fit
        assert listed in prompt
        assert "feedback was cut" not in prompt


@given(text=st.text(min_size=1, max_size=400), feedback_bytes=st.integers(1000, 1200))
def test_a_cut_never_splits_a_character(text: str, feedback_bytes: int) -> None:
    output = text * 20
    prompt = feedback_prompt([failed("tests", output)], feedback_bytes=feedback_bytes)
    assert len(prompt.encode("utf-8")) <= feedback_bytes
    assert "\ufffd" not in prompt or "\ufffd" in output


def test_when_the_names_alone_overflow_the_feedback_it_is_cut_and_says_so() -> None:
    evidence = [failed(f"{n:02d}" + "x" * 62) for n in range(MAX_CHECKS)]
    prompt = feedback_prompt(evidence, feedback_bytes=MIN_FEEDBACK_BYTES)
    assert len(prompt.encode()) <= MIN_FEEDBACK_BYTES
    assert prompt.endswith("…[the feedback was cut here: it may be at most 1000 bytes]\n")


def test_outputs_that_do_not_fit_are_left_out_whole_and_counted() -> None:
    evidence = [failed(f"check-{n}", "x" * 5000) for n in range(8)]
    prompt = feedback_prompt(evidence, feedback_bytes=MIN_FEEDBACK_BYTES)
    assert len(prompt.encode()) <= MIN_FEEDBACK_BYTES
    assert all(f"- check-{n}: exit code 1" in prompt for n in range(8))
    assert re.search(r"the output of \d more failing checks is left out", prompt)
    assert "feedback was cut" not in prompt


# --- which checks, and whether feedback is owed -----------------------------------------


def test_an_item_runs_every_check_of_its_agent_or_exactly_those_it_names() -> None:
    tests, lint = POLICY.checks
    assert select_checks(POLICY.checks, None) == ((tests, lint), ())
    assert select_checks(POLICY.checks, ()) == ((), ())
    # the configured order, whatever order the item named them in
    assert select_checks(POLICY.checks, ("lint", "tests")) == ((tests, lint), ())
    assert select_checks(POLICY.checks, ("lint", "typo")) == ((lint,), ("typo",))


def record(
    verification: str, run_id: str | None, evidence: CheckEvidence, minute: int
) -> CheckRecord:
    at = NOW.replace(minute=minute)
    return CheckRecord(7, verification, run_id, 0, "worker w-1", at, evidence)


def test_feedback_is_owed_for_a_failed_verification_no_run_has_followed() -> None:
    first = record("v1", "run-a", failed("tests"), 1)
    assert owed_feedback([first], latest_run_id="run-a", latest_run_started=NOW) == (
        first.evidence,
    )
    # a later run (a fresh start, say) has had its chance: nothing is owed
    assert owed_feedback([first], latest_run_id="run-b", latest_run_started=NOW) == ()
    # the latest verification passed: nothing is owed, whatever failed before it
    passing = record("v2", "run-b", passed("tests"), 2)
    assert owed_feedback([first, passing], latest_run_id="run-b", latest_run_started=NOW) == ()
    # checks run by hand after the latest run's start count as its verification
    by_hand = dataclasses.replace(record("v3", None, failed("lint"), 30), actor="operator")
    started = NOW.replace(minute=20)
    owed = owed_feedback([first, by_hand], latest_run_id="run-b", latest_run_started=started)
    assert owed == (by_hand.evidence,)
    later = NOW.replace(minute=40)
    assert owed_feedback([first, by_hand], latest_run_id="run-c", latest_run_started=later) == ()


# --- checks that fail on the base (docs/verify.md#checks-that-fail-on-the-base) ----------------
def on_the_base(check: CheckEvidence, *, fails: bool) -> CheckEvidence:
    base = BaseCheck("b" * 40, check.name, "key", fails, "exit code 1", "boom\n", NOW)
    return on_base(check, base)


def test_a_check_failing_on_the_base_too_spends_no_fix_turn_and_is_done() -> None:
    lint = on_the_base(failed("lint"), fails=True)
    assert lint.fails_on_base
    assert lint.failed
    assert not lint.agents_failure
    assert lint.ending() == "exit code 1, fails on the base too"
    decision = decide([passed("tests"), lint])
    assert decision.to_state is ItemState.DONE
    assert not decision.counts_as_fix_turn
    assert decision.reason == (
        "every check passed but lint, which fails on the base too (2 checks)"
    )
    # whatever fix turns were spent already
    assert decide([lint], fix_turns=POLICY.max_fix_turns).to_state is ItemState.DONE


def test_a_check_that_passes_on_the_base_is_the_agents_failure() -> None:
    lint = on_the_base(failed("lint"), fails=False)
    assert not lint.fails_on_base
    assert lint.agents_failure
    decision = decide([passed("tests"), lint])
    assert decision.to_state is ItemState.RETRY_SCHEDULED
    assert decision.counts_as_fix_turn
    # not run on the base at all: the agent's, as before
    assert on_base(failed("lint"), None) == failed("lint")
    # a passing check is never marked, whatever the base says
    assert not on_the_base(passed("lint"), fails=True).fails_on_base


def test_the_agents_own_failure_beside_one_on_the_base_is_a_fix_turn_about_its_own() -> None:
    lint = on_the_base(failed("lint", "base finding\n"), fails=True)
    tests = failed("tests", "E   assert 41 == 42\n")
    decision = decide([tests, lint])
    assert decision.to_state is ItemState.RETRY_SCHEDULED
    assert decision.reason is not None
    assert "tests" in decision.reason
    assert "lint" not in decision.reason
    prompt = feedback_prompt([tests, lint], feedback_bytes=12_000)
    assert "1 of 2 failed" in prompt
    assert "lint" not in prompt
    assert "base finding" not in prompt
    # feedback is owed only for the agent's own failures
    assert owed_feedback([record("v1", "run-a", lint, 1)], latest_run_id="run-a",
                         latest_run_started=NOW) == ()  # fmt: skip


def test_a_check_runs_on_the_base_only_when_it_failed_has_a_base_and_allows_it() -> None:
    lint = Check("lint", ("ruff", "check"))
    assert base_run_due(lint, failed("lint"), "abc")
    timed_out = CheckEvidence("lint", ("ruff",), 9.0, signal=9, timed_out=True)
    assert base_run_due(lint, timed_out, "abc")
    assert not base_run_due(lint, passed("lint"), "abc")
    assert not base_run_due(lint, failed("lint"), None)  # no base: today's way
    assert not base_run_due(dataclasses.replace(lint, on_base=False), failed("lint"), "abc")
    not_started = CheckEvidence("lint", ("ruff",), 0.0, start_failure="not found")
    assert not base_run_due(lint, not_started, "abc")


def test_a_checks_key_changes_with_its_command_and_time_limit_only() -> None:
    lint = Check("lint", ("ruff", "check"))
    assert check_key(lint) == check_key(Check("lint", ("ruff", "check")))
    assert check_key(lint) == check_key(dataclasses.replace(lint, on_base=False))
    assert check_key(lint) != check_key(Check("lint", ("ruff", "check", ".")))
    assert check_key(lint) != check_key(Check("lint", ("ruff", "check"), 60.0))
    # a check that passed cannot be said to fail on the base
    with pytest.raises(ValueError, match="cannot fail on the base"):
        CheckEvidence("lint", ("ruff",), 1.0, exit_code=0, fails_on_base=True)
