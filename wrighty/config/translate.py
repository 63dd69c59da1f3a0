"""Every translation of wrighty.json into the domain's objects: budgets, prices, concurrency
limits, health thresholds, lease terms, retry policies, the provider circuit an agent's
items wait on and the checks that verify its runs. Nothing else reads settings to build a
domain object. The config given is a valid one (checks.py has run)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, time, tzinfo
from typing import TYPE_CHECKING, TypedDict
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from wrighty.domain.budgets import Budgets
from wrighty.domain.scheduling import ConcurrencyLimits
from wrighty.domain.usage import Limit, Price
from wrighty.domain.verify_limits import DEFAULT_FIX_TURNS

# Circuits, lease terms, health thresholds and retry policies are imported by the translation
# that builds them: a read that checks the config (`wrighty list`) loads none of them.
if TYPE_CHECKING:
    from wrighty.config.models import (
        BudgetLimit,
        CheckSettings,
        ProcessCrashPolicy,
        UsageFailurePolicy,
        WrightyConfig,
    )
    from wrighty.config.notify_settings import NotifySettings
    from wrighty.config.sandbox_settings import BubblewrapProfile
    from wrighty.domain.claims import LeaseTerms
    from wrighty.domain.health import Thresholds
    from wrighty.domain.retry import CrashPolicy, UsagePolicy
    from wrighty.domain.sandbox import Profile
    from wrighty.domain.sources import PullRequestPlace, SourceSettings
    from wrighty.domain.verify import Check, VerifyPolicy
    from wrighty.domain.work_product import Completion


def zone_named(name: str) -> tzinfo:
    """The IANA zone ``name`` (ValueError, saying so, when this machine knows none)."""
    if name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"unknown time zone {name!r} (use an IANA name such as Europe/Berlin)"
        ) from None


def known_secrets(config: WrightyConfig, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values no output, prompt, note or page shows (docs/config.md#agents): those of
    ``environ``'s credential variables and every value of every `agents.<name>.env`."""
    from wrighty.domain.redact import secret_values  # a read of the config loads no redaction

    tokens = {name: environ[name] for name in tracker_tokens(config) if name in environ}
    configured = [agent.env for agent in config.agents.values()]
    return secret_values(environ, configured=[*configured, tokens])


def tracker_tokens(config: WrightyConfig) -> frozenset[str]:
    """The variables that hold the trackers' tokens (each source's tokenEnv, and
    completion.pullRequest's): withheld from every agent and every check, which run what an
    agent wrote (docs/sources.md#the-token)."""
    names = {tracker.token_env for tracker in config.sources.trackers}
    pull = config.completion.pull_request
    if pull is not None:
        names.add(pull.token_env)
    return frozenset(names)


def budgets_of(config: WrightyConfig) -> Budgets:
    """The budgets wrighty.json sets, as the domain reads them (after validation)."""
    settings = config.budgets
    hour, minute = (int(part) for part in settings.day_starts_at.split(":"))
    return Budgets(
        per_item=_limit(settings.per_item),
        per_day={name: _limit(limit) for name, limit in settings.per_day.items()},
        day_starts_at=time(hour, minute),
        time_zone=zone_named(settings.time_zone),
    )


def _limit(settings: BudgetLimit) -> Limit:
    return Limit(settings.max_cost_usd, settings.max_tokens)


def thresholds_of(config: WrightyConfig) -> Thresholds:
    """The health thresholds status.* sets (`wrighty status`'s options override each)."""
    from wrighty.domain.health import Thresholds

    settings = config.status
    return Thresholds(
        max_queue_wait_seconds=settings.max_queue_wait_seconds,
        min_workers=settings.min_workers,
        max_expired_leases=settings.max_expired_leases,
        max_needs_attention=settings.max_needs_attention,
        max_open_circuits=settings.max_open_circuits,
        max_notify_age_seconds=settings.max_notify_age_seconds,
        max_review_wait_seconds=settings.max_review_wait_seconds,
    )


def agent_circuit(config: WrightyConfig, agent: str, *, installation_id: str) -> str | None:
    """The provider circuit that can hold ``agent``'s items back: only under a usage policy
    that retries (docs/usage-limits.md); None otherwise."""
    from wrighty.domain.circuits import circuit_name

    if config.worker.usage_failure.action != "retry":
        return None
    settings = config.agents.get(agent)
    account = settings.account if settings is not None else None
    return circuit_name(agent, account=account, installation_id=installation_id)


def limits_of(config: WrightyConfig) -> ConcurrencyLimits:
    """The concurrency limits wrighty.json sets (after validation), as a claim carries them."""
    return ConcurrencyLimits(
        agents={
            name: agent.max_concurrent
            for name, agent in sorted(config.agents.items())
            if agent.max_concurrent is not None
        },
        labels={
            label: limit.max_concurrent for label, limit in sorted(config.limits.labels.items())
        },
    )


def pricing_of(config: WrightyConfig) -> dict[str, Price]:
    return {
        model: Price(p.input_per_mtok, p.output_per_mtok, p.cache_read_per_mtok,
                     p.cache_write_per_mtok)
        for model, p in config.pricing.items()
    }  # fmt: skip


def crash_policy_of(config: WrightyConfig) -> CrashPolicy:
    """What a process crash leads to (worker.processCrash)."""
    from wrighty.domain.retry import CrashPolicy

    crash = config.worker.process_crash
    return CrashPolicy(action=crash.action, max_attempts=crash.max_attempts, **_backoff(crash))


def usage_policy_of(config: WrightyConfig) -> UsagePolicy:
    """What a rate-limited or provider-unavailable run leads to (worker.usageFailure)."""
    from wrighty.domain.retry import UsagePolicy

    usage = config.worker.usage_failure
    return UsagePolicy(
        action=usage.action,
        max_attempts=usage.max_attempts,
        reset_grace_seconds=usage.reset_grace_minutes * 60,
        handoff_after_seconds=(
            None if usage.handoff_after_minutes is None else usage.handoff_after_minutes * 60
        ),
        max_handoffs=usage.max_handoffs,
        **_backoff(usage),
    )


class _Backoff(TypedDict):
    initial_seconds: float
    multiplier: float
    max_seconds: float


def _backoff(policy: ProcessCrashPolicy | UsageFailurePolicy) -> _Backoff:
    """A retry policy's waits, from minutes in the file to seconds."""
    return _Backoff(
        initial_seconds=policy.initial_retry_minutes * 60,
        multiplier=policy.backoff_multiplier,
        max_seconds=policy.max_retry_minutes * 60,
    )


def lease_terms_of(config: WrightyConfig) -> LeaseTerms:
    """How long a worker's claim lasts, and a run without a timeout of its own."""
    from wrighty.domain.claims import LeaseTerms

    return LeaseTerms(
        lease_seconds=config.worker.lease_seconds,
        default_timeout_seconds=config.worker.item_timeout_minutes * 60,
    )


def agent_checks(config: WrightyConfig, agent: str) -> tuple[Check, ...]:
    """The checks ``agent``'s items run unless they choose: the project's (verify.checks), then
    the agent's own (agents.<name>.verify.checks), in the order written."""
    from wrighty.domain.verify import Check

    return tuple(
        Check(check.name, tuple(check.argv), check.timeout_minutes * 60, check.on_base)
        for check in _check_settings(config, agent)
    )


def _check_settings(config: WrightyConfig, agent: str) -> list[CheckSettings]:
    project = config.verify.checks if config.verify is not None else []
    settings = config.agents.get(agent)
    own = settings.verify.checks if settings is not None and settings.verify is not None else []
    return [*project, *own]


def fix_turns_limit(config: WrightyConfig, agent: str) -> int | None:
    """The fix turns ``agent``'s items get (``verify_policy``'s max_fix_turns); None when the
    agent has no checks. It builds no check: `show` reads it and loads no more."""
    if not _check_settings(config, agent):
        return None
    return config.verify.max_fix_turns if config.verify is not None else DEFAULT_FIX_TURNS


def sandbox_profile(config: WrightyConfig, agent: str) -> tuple[str, Profile] | None:
    """The sandbox ``agent`` runs in, with the setting that chose it (agents.<name>.sandbox or
    worker.sandbox); None: none (docs/sandbox.md)."""
    from wrighty.config.models import sandbox_of

    chosen = sandbox_of(config, agent)
    if chosen is None:
        return None
    own = config.agents.get(agent)
    where = f"agents.{agent}.sandbox" if own is not None and own.sandbox else "worker.sandbox"
    return where, _profile(chosen)


def check_sandbox_profile(config: WrightyConfig, agent: str) -> tuple[str, Profile] | None:
    """The sandbox the checks and the integration command of ``agent``'s items run in, with
    the setting that chose it: verify.sandbox's own profile, none, or (by default) the
    agent's (docs/sandbox.md#checks-and-integration)."""
    chosen = config.verify.sandbox if config.verify is not None else "agent"
    if chosen == "agent":
        return sandbox_profile(config, agent)
    if chosen == "none":
        return None
    return "verify.sandbox", _profile(chosen)


def _profile(chosen: BubblewrapProfile) -> Profile:
    from wrighty.domain.sandbox import Profile

    return Profile(
        program=chosen.program,
        network=chosen.network,
        hide=tuple(chosen.hide),
        writable=tuple(chosen.writable),
        env=tuple(chosen.env),
    )


def verify_policy(config: WrightyConfig, agent: str) -> VerifyPolicy | None:
    """How ``agent``'s runs are verified (docs/verify.md); None when wrighty.json gives the
    agent no checks (a succeeded run is done)."""
    from wrighty.domain.verify import VerifyPolicy

    checks = agent_checks(config, agent)
    if not checks:
        return None
    if config.verify is None:
        return VerifyPolicy(checks)
    return VerifyPolicy(
        checks,
        max_fix_turns=config.verify.max_fix_turns,
        feedback_bytes=config.verify.feedback_bytes,
    )


def completion_of(config: WrightyConfig) -> Completion:
    """How worktree items' branches are made, their done runs committed and their branches
    integrated when accepted (docs/work-product.md)."""
    from wrighty.domain.integration import Integration
    from wrighty.domain.work_product import Completion

    section = config.completion
    author = section.author
    return Completion(
        branch_prefix=section.branch_prefix,
        base=section.base,
        commit=section.commit,
        author_name=author.name if author is not None else None,
        author_email=author.email if author is not None else None,
        review=section.review,
        max_rejections=section.max_rejections,
        hooks=section.hooks,
        integration=Integration(
            kind=section.integrate,
            merge=section.merge,
            remote=section.remote,
            command=tuple(section.integrate_command or ()),
            timeout_seconds=section.integrate_timeout_seconds,
        ),
        update=section.update,
        squash=section.squash,
        stack=section.stack,
        review_after_fix=section.review_after_fix,
    )


def digest_time_of(settings: NotifySettings) -> time | None:
    """notify.digest as the time of day (with its offset) the digest is due at; None: off."""
    from wrighty.domain.morning import parse_digest_time

    return None if settings.digest is None else parse_digest_time(settings.digest)


def sources_of(config: WrightyConfig) -> tuple[SourceSettings, ...]:
    """The trackers of wrighty.json's sources section, as a sync reads them (docs/sources.md)."""
    from wrighty.domain.sources import SourceSettings

    return tuple(
        SourceSettings(
            name=tracker.shown_name,
            repo=tracker.repo,
            labels=tuple(tracker.labels),
            token_env=tracker.token_env,
            api_url=tracker.api_url,
            priority_labels={
                label: int(priority[1:]) for label, priority in tracker.priority_labels.items()
            },
            agent=tracker.agent,
            queue=tracker.queue,
            timeout_seconds=tracker.timeout_seconds,
            status_comments=tracker.status_comments,
            answers=tracker.answers,
            trusted=tuple(tracker.trusted_authors),
            trust_collaborators=tracker.trust_collaborators,
        )
        for tracker in config.sources.trackers
    )


def pull_request_of(config: WrightyConfig) -> PullRequestPlace | None:
    """Where completion.integrate github-pr opens pull requests: completion.pullRequest, or
    the one GitHub source's repository (None: not github-pr, or nowhere is said)."""
    from wrighty.domain.sources import PullRequestPlace

    completion = config.completion
    if completion.integrate != "github-pr":
        return None
    given = completion.pull_request
    if given is not None:
        return PullRequestPlace(
            given.repo, given.api_url, given.token_env, given.draft, given.timeout_seconds
        )
    trackers = config.sources.trackers
    if len(trackers) != 1:
        return None
    tracker = trackers[0]
    return PullRequestPlace(
        tracker.repo, tracker.api_url, tracker.token_env, False, tracker.timeout_seconds
    )


def pull_request_problems(config: WrightyConfig) -> list[tuple[str, str]]:
    """integrate github-pr with nowhere to open its pull requests."""
    if config.completion.integrate != "github-pr" or pull_request_of(config) is not None:
        return []
    return [
        (
            "completion.pullRequest",
            'is required when completion.integrate is "github-pr" and sources.trackers does '
            'not name exactly one repository: give {"repo": "owner/name"}',
        )
    ]
