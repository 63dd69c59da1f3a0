"""How a run ended (the outcome classes of docs/worker.md, "6. Classify")."""

from enum import StrEnum


class OutcomeClass(StrEnum):
    SUCCEEDED = "succeeded"
    PROCESS_CRASH = "process-crash"
    AGENT_FAILURE = "agent-failure"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    FENCED = "fenced"
    AUTH = "auth"
    PERMISSION = "permission"
    BILLING = "billing"
    CONTEXT_LIMIT = "context-limit"
    RATE_LIMITED = "rate-limited"
    PROVIDER_UNAVAILABLE = "provider-unavailable"
    BUDGET_EXCEEDED = "budget-exceeded"
    WORKER_LOST = "worker-lost"
    START_FAILED = "start-failed"
    INTERNAL_ERROR = "internal-error"
    UNKNOWN = "unknown"


class Confidence(StrEnum):
    AUTHORITATIVE = "authoritative"
    INFERRED = "inferred"


class RunKind(StrEnum):
    FRESH = "fresh"
    RESUME = "resume"
    FIX = "fix"  # a resume whose prompt is the feedback of the checks that failed

    @property
    def resumes(self) -> bool:
        """Whether the run continues the item's recorded session (a resume or a fix turn)."""
        return self is not RunKind.FRESH


# What worker.usageFailure covers: a provider that said "not now". Never auth, permission,
# billing, context-limit, an agent's failure, a timeout, a cancel or a lost claim.
USAGE_CLASSES = frozenset({OutcomeClass.RATE_LIMITED, OutcomeClass.PROVIDER_UNAVAILABLE})

# The reason code of a usage retry that starts a new session (see decisions._after_usage).
USAGE_RETRY_FRESH = "usage-retry-fresh"
