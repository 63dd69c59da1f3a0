from __future__ import annotations

import signal

import pytest

from wrighty.domain.classify import AgentReport, RunFacts, StopReason, classify_exit
from wrighty.domain.outcomes import Confidence, OutcomeClass

AUTH, INF = Confidence.AUTHORITATIVE, Confidence.INFERRED


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (RunFacts(0, None), (OutcomeClass.SUCCEEDED, AUTH)),
        (RunFacts(2, None), (OutcomeClass.AGENT_FAILURE, INF)),
        (RunFacts(None, signal.SIGKILL), (OutcomeClass.PROCESS_CRASH, AUTH)),
        (RunFacts(None, signal.SIGSEGV), (OutcomeClass.PROCESS_CRASH, AUTH)),
        (RunFacts(None, signal.SIGABRT), (OutcomeClass.PROCESS_CRASH, AUTH)),
        # wrighty's own facts win over what the process did
        (RunFacts(None, signal.SIGTERM, StopReason.TIMEOUT), (OutcomeClass.TIMEOUT, AUTH)),
        (RunFacts(None, signal.SIGKILL, StopReason.CANCELLED), (OutcomeClass.CANCELLED, AUTH)),
        (RunFacts(0, None, StopReason.FENCED), (OutcomeClass.FENCED, AUTH)),
        (RunFacts(None, signal.SIGTERM, StopReason.SHUTDOWN), (OutcomeClass.UNKNOWN, AUTH)),
        # then what the agent reported from inside the run
        (RunFacts(0, None, agent_report=AgentReport.FAILED), (OutcomeClass.AGENT_FAILURE, AUTH)),
        (
            RunFacts(1, None, agent_report=AgentReport.USAGE_LIMIT),
            (OutcomeClass.RATE_LIMITED, AUTH),
        ),
        (
            RunFacts(0, None, agent_report=AgentReport.USAGE_LIMIT),
            (OutcomeClass.RATE_LIMITED, AUTH),
        ),
        (
            RunFacts(None, signal.SIGTERM, StopReason.TIMEOUT, AgentReport.USAGE_LIMIT),
            (OutcomeClass.TIMEOUT, AUTH),
        ),
        (RunFacts(1, None, agent_report=AgentReport.FINISHED), (OutcomeClass.SUCCEEDED, INF)),
        (
            RunFacts(None, signal.SIGKILL, agent_report=AgentReport.FINISHED),
            (OutcomeClass.PROCESS_CRASH, AUTH),
        ),
    ],
)
def test_precedence_of_facts(facts: RunFacts, expected: tuple[OutcomeClass, Confidence]) -> None:
    result = classify_exit(facts)
    assert (result.outcome_class, result.confidence) == expected


def test_summaries_name_the_signal() -> None:
    assert classify_exit(RunFacts(None, signal.SIGSEGV)).summary == "killed by SIGSEGV"
    assert "timeout" in classify_exit(RunFacts(None, 15, StopReason.TIMEOUT)).summary


def test_a_nonzero_exit_alone_is_never_a_crash() -> None:
    for code in range(1, 256):
        assert classify_exit(RunFacts(code, None)).outcome_class is not OutcomeClass.PROCESS_CRASH


# -- choosing between a fresh run and a resume ---------------------------------------------------

from wrighty.domain.decisions import choose_run  # noqa: E402
from wrighty.domain.model import Session  # noqa: E402
from wrighty.domain.outcomes import RunKind  # noqa: E402
from wrighty.domain.resume import ResumeFacts  # noqa: E402
from wrighty.domain.states import ItemState  # noqa: E402

SESSION = Session(1, "command", "s-1", "/work/ws", "inst-a")


def choose(**overrides: object):
    facts: dict[str, object] = {
        "session": SESSION,
        "installation_id": "inst-a",
        "adapter": "command",
        "can_resume": True,
        "workspace_exists": True,
    }
    claimed_from = overrides.pop("claimed_from", ItemState.RETRY_SCHEDULED)
    facts.update(overrides)
    resume = None if facts["session"] is None else ResumeFacts(**facts)  # type: ignore[arg-type]
    return choose_run(claimed_from=claimed_from, resume=resume)  # type: ignore[arg-type]


def test_a_due_retry_with_a_complete_address_resumes() -> None:
    assert choose().kind is RunKind.RESUME
    assert choose().missing == ()


def test_fresh_work_starts_fresh() -> None:
    assert choose(claimed_from=ItemState.QUEUED).kind is RunKind.FRESH
    assert choose(session=None).kind is RunKind.FRESH


def test_every_missing_piece_of_the_address_is_named() -> None:
    missing = choose(
        session=Session(1, "codex", None, "/work/ws", "inst-b"),
        workspace_exists=False,
        can_resume=False,
    ).missing
    assert missing == (
        "no session id was recorded",
        "the session belongs to codex, not command",
        "the session lives on another installation",
        "the workspace /work/ws is gone",
        "the command agent cannot resume (no resume command, or resume off)",
    )


@pytest.mark.parametrize(
    ("stored", "read"),
    [(None, None), ("", None), ("failed", AgentReport.FAILED),
     ("usage-limit", AgentReport.USAGE_LIMIT), ("a-newer-report", None)],
)  # fmt: skip
def test_a_stored_report_this_version_does_not_know_is_none(
    stored: str | None, read: AgentReport | None
) -> None:
    assert AgentReport.of(stored) is read
