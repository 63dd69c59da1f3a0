"""How a run ended, from the facts wrighty has (docs/worker.md, "6. Classify").

Precedence, most authoritative first: wrighty's own facts (it fired the timeout, it cancelled,
it lost the claim, it was shutting down) > what the agent reported from inside the run
(`wrighty fail` / `wrighty finish`) > a signal wrighty did not send (a crash) > the vendor
adapter's reading of its CLI's records (terminal record, structured error fields, then text
patterns inside a failed run; wrighty/vendors) > the bare exit status.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from enum import StrEnum

from wrighty.domain.outcomes import Confidence, OutcomeClass


class StopReason(StrEnum):
    """Why wrighty itself stopped an agent."""

    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    FENCED = "fenced"
    SHUTDOWN = "shutdown"
    BUDGET = "budget"  # the run's spend passed its item's (or its agent's period) budget


class AgentReport(StrEnum):
    """What the agent said about its own run, through `wrighty finish` / `wrighty fail`."""

    FINISHED = "finished"
    FAILED = "failed"
    USAGE_LIMIT = "usage-limit"  # `wrighty fail --usage-limit`: its provider refused it

    @classmethod
    def of(cls, stored: str | None) -> AgentReport | None:
        """The report a run holds; None for none, and for one this version does not know (a
        newer wrighty's, read back from a shared store): the run is classified by its exit."""
        try:
            return cls(stored) if stored else None
        except ValueError:
            return None


@dataclass(frozen=True)
class Classification:
    outcome_class: OutcomeClass
    confidence: Confidence
    summary: str


@dataclass(frozen=True)
class RunFacts:
    exit_code: int | None
    signal: int | None
    stopped_by: StopReason | None = None
    agent_report: AgentReport | None = None
    # A vendor adapter's classification of its CLI's output (None: the command adapter).
    vendor: Classification | None = None


_STOP_CLASSES = {
    StopReason.TIMEOUT: OutcomeClass.TIMEOUT,
    StopReason.CANCELLED: OutcomeClass.CANCELLED,
    StopReason.FENCED: OutcomeClass.FENCED,
    StopReason.BUDGET: OutcomeClass.BUDGET_EXCEEDED,
    # A worker shutdown is not the agent's fault and not a crash: nothing to classify yet.
    StopReason.SHUTDOWN: OutcomeClass.UNKNOWN,
}


def signal_name(number: int) -> str:
    """SIGTERM for 15; "signal N" for a number that names no signal here."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe_exit(exit_code: int | None, signal_number: int | None) -> str:
    if signal_number is not None:
        return f"killed by {signal_name(signal_number)}"
    return f"exit code {exit_code}"


def classify_exit(facts: RunFacts) -> Classification:
    """The outcome of a run that wrighty watched to its end."""
    how = describe_exit(facts.exit_code, facts.signal)
    if facts.stopped_by is not None:
        return Classification(
            _STOP_CLASSES[facts.stopped_by],
            Confidence.AUTHORITATIVE,
            f"wrighty stopped the agent ({facts.stopped_by}); it ended with {how}",
        )
    if facts.agent_report is AgentReport.FAILED:
        return Classification(
            OutcomeClass.AGENT_FAILURE,
            Confidence.AUTHORITATIVE,
            f"the agent reported failure; {how}",
        )
    if facts.agent_report is AgentReport.USAGE_LIMIT:
        return Classification(
            OutcomeClass.RATE_LIMITED,
            Confidence.AUTHORITATIVE,
            f"the agent reported a usage limit; {how}",
        )
    if facts.signal is not None:
        # A signal wrighty did not send: SIGKILL from the OOM killer, SIGSEGV, SIGABRT...
        return Classification(OutcomeClass.PROCESS_CRASH, Confidence.AUTHORITATIVE, how)
    if facts.vendor is not None:
        return facts.vendor
    if facts.exit_code == 0:
        return Classification(OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, how)
    if facts.agent_report is AgentReport.FINISHED:
        return Classification(
            OutcomeClass.SUCCEEDED,
            Confidence.INFERRED,
            f"the agent reported it finished, then ended with {how}",
        )
    # A plain nonzero exit says the program failed, not that it crashed: never a crash retry.
    return Classification(OutcomeClass.AGENT_FAILURE, Confidence.INFERRED, how)
