"""What `wrighty show` reports about an item, the inbox's detail shows, and any other entry
point asks: the item's detail and what this installation knows about it (`show_facts`).

wrighty.json is read through the caller's `Context`. When it cannot be read, the facts taken
from it fall back to what holds without it (no limits, no budget, the default agent, no retry
limits, no circuit, no agent to resume with); only whether the last run's logs are here needs
it (they are in the state directory beside it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from wrighty.domain.model import WAITS_FOR_CHECKS
from wrighty.domain.outcomes import USAGE_CLASSES, USAGE_RETRY_FRESH, OutcomeClass
from wrighty.domain.states import TERMINAL_STATES, ItemState
from wrighty.domain.suggestions import Standing
from wrighty.errors import WrightyError

if TYPE_CHECKING:
    from wrighty.agents import AgentPlan
    from wrighty.config import LoadedConfig
    from wrighty.domain.budgets import AgentHold, Budgets
    from wrighty.domain.model import Item, Run
    from wrighty.domain.scheduling import ConcurrencyLimits
    from wrighty.domain.usage import Limit, Usage
    from wrighty.services.circuits import CircuitView
    from wrighty.services.items import ItemDetail
    from wrighty.services.settings import ReadSettings
    from wrighty.store.port import Store
    from wrighty.workproduct.listing import Progress


class Context(Protocol):
    """What the gathering reads beside the store: wrighty.json (WrightyError when it cannot be
    read), as plain values and whole, and the fleet's time. The CLI's `AppContext` is one."""

    def settings(self) -> ReadSettings: ...

    def config(self) -> LoadedConfig: ...

    def now(self) -> datetime: ...


@dataclass(frozen=True)
class RetryStanding:
    """Where an item stands under one retry policy (worker.processCrash, worker.usageFailure):
    its retries so far of the policy's maxAttempts (None: it does not retry, or unknown), when
    the one it waits for is due (None: it waits for none under this policy), and its last run
    that ended as the policy's kind of failure (None: none did)."""

    retries: int
    max_attempts: int | None
    next_due: datetime | None
    last: Run | None


# The outcomes each policy retries, and the reason codes an item waits with under it
# (domain/decisions._after_usage for a usage retry).
CRASH_CLASSES = frozenset({OutcomeClass.PROCESS_CRASH})
CRASH_RETRY_CODES = frozenset({"process-crash"})
USAGE_RETRY_CODES = frozenset({*(cls.value for cls in USAGE_CLASSES), USAGE_RETRY_FRESH})


def _retry_standing(
    detail: ItemDetail,
    retries: int,
    classes: frozenset[OutcomeClass],
    codes: frozenset[str],
    max_attempts: int | None,
) -> RetryStanding | None:
    item = detail.item
    matching = [run for run in detail.runs if run.outcome_class in classes]
    last = matching[-1] if matching else None
    if last is None and retries == 0:
        return None
    scheduled = item.state is ItemState.RETRY_SCHEDULED and item.reason_code in codes
    return RetryStanding(retries, max_attempts, item.not_before if scheduled else None, last)


def crash_standing(detail: ItemDetail, max_attempts: int | None) -> RetryStanding | None:
    """Where the item stands under worker.processCrash; None when it never crashed."""
    return _retry_standing(
        detail, detail.item.crash_retries, CRASH_CLASSES, CRASH_RETRY_CODES, max_attempts
    )


def usage_standing(detail: ItemDetail, max_attempts: int | None) -> RetryStanding | None:
    """Where the item stands under worker.usageFailure; None when no provider refused it."""
    return _retry_standing(
        detail, detail.item.usage_retries, USAGE_CLASSES, USAGE_RETRY_CODES, max_attempts
    )


@dataclass(frozen=True)
class ShowFacts:
    """What `wrighty show` reports about an item (and the inbox's detail shows)."""

    detail: ItemDetail
    standing: Standing
    resumable: bool
    circuit: CircuitView | None
    hold: AgentHold | None
    budget: Limit
    spent: Usage
    crash_limit: int | None
    usage_limit: int | None
    default_agent: str  # worker.defaultAgent: the agent of an item that names none
    max_fix_turns: int | None = None  # its agent's verify.maxFixTurns; None: no checks
    # Its worktree's commits since its base and uncommitted changes; None: not known here (no
    # base recorded, or `wrighty diff` would not show its change here).
    progress: Progress | None = None
    # An item in review: git's stat of its change against its base (None: another state, or
    # not known here), for the person who reviews it.
    change_stat: str | None = None
    # Where it stands under each retry policy it met (None: it never met that one).
    crash_retry: RetryStanding | None = None
    usage_retry: RetryStanding | None = None


def show_facts(context: Context, store: Store, item_id: int) -> ShowFacts:
    """The item's detail and what this installation knows about it: whether it can resume its
    session, the circuit or budget that holds it, its budget and spend, the retry limits."""
    from wrighty.domain.budgets import raise_flags
    from wrighty.domain.leases import lease_expired
    from wrighty.domain.ledger import runs_total
    from wrighty.installation import installation_id
    from wrighty.services import items as item_service
    from wrighty.services.resume import resumable_here

    limits, default_agent = scheduling_settings(context)
    detail = item_service.item_detail(store, item_id, limits=limits, default_agent=default_agent)
    circuit = _holding_back(context, store, detail.item)
    hold = held(context, store, [detail.item]).get(item_id)
    budget = ledger_settings(context)[0].item_limit(detail.item)
    spent = runs_total(run.usage for run in detail.runs)
    # The agent is planned (vendors loaded) only when there is a session it could resume.
    could_resume = detail.session is not None and detail.item.state not in TERMINAL_STATES
    plan = _item_agent(context, detail.item.agent) if could_resume else None
    resumable = resumable_here(
        detail.item, detail.session, plan, installation_id=installation_id(), environ=os.environ
    )
    crash_limit, usage_limit = _retry_limits(context)
    has_change = _has_change(context, detail)
    standing = Standing(
        resumable=resumable,
        has_logs=_has_logs(context, detail.runs),
        lease_expired=detail.item.state is ItemState.RUNNING
        and lease_expired(detail.item.lease_expires_at, context.now()),
        raise_budget=raise_flags(budget, spent),
        can_verify=_can_verify(context, detail),
        has_change=has_change,
        retry_due=detail.item.state is ItemState.RETRY_SCHEDULED
        and (detail.item.not_before is None or detail.item.not_before <= context.now()),
    )
    return ShowFacts(
        detail, standing, resumable, circuit, hold, budget, spent, crash_limit, usage_limit,
        default_agent, _fix_turns_limit(context, detail.item.agent),
        _progress(detail) if has_change else None,
        _review_stat(detail) if has_change else None,
        crash_standing(detail, crash_limit), usage_standing(detail, usage_limit),
    )  # fmt: skip


def ledger_settings(context: Context) -> tuple[Budgets, str]:
    """The budgets and the default agent (wrighty.json's; its defaults when it cannot be
    read)."""
    settings = _settings(context)
    return settings.budgets, settings.default_agent


def scheduling_settings(context: Context) -> tuple[ConcurrencyLimits, str]:
    """The concurrency limits and the default agent (wrighty.json's; none and its default
    when it cannot be read)."""
    settings = _settings(context)
    return settings.limits, settings.default_agent


def _settings(context: Context) -> ReadSettings:
    """wrighty.json's read settings; its defaults' when it cannot be read."""
    try:
        return context.settings()
    except WrightyError:
        from wrighty.config import LoadedConfig, WrightyConfig
        from wrighty.services.settings import read_settings_of

        return read_settings_of(LoadedConfig(path=None, config=WrightyConfig()))


def held(context: Context, store: Store, items: list[Item]) -> dict[int, AgentHold]:
    """The waiting items among ``items`` whose agent's budget for the day is spent (one read
    per agent with a budget, as the worker checks before a claim)."""
    from wrighty.services.usage import held_items

    budgets, default_agent = ledger_settings(context)
    return held_items(store, items, budgets=budgets, default_agent=default_agent, now=context.now())


def _holding_back(context: Context, store: Store, item: Item) -> CircuitView | None:
    """The provider circuit that keeps a waiting item's agent from being launched, if one
    does (only under a usage retry policy; see docs/usage-limits.md)."""
    if item.state not in (ItemState.QUEUED, ItemState.RETRY_SCHEDULED):
        return None
    try:
        if not context.settings().agent_rules:
            return None  # no usage policy that retries: no circuit
        config = context.config().config
    except WrightyError:
        return None
    from wrighty.config import agent_circuit
    from wrighty.installation import installation_id
    from wrighty.services.circuits import holding

    agent = item.agent or config.worker.default_agent
    name = agent_circuit(config, agent, installation_id=installation_id())
    return holding(store, name, context.now()) if name is not None else None


def _has_logs(context: Context, runs: list[Run]) -> bool:
    """Whether `wrighty logs` would print the last run's output here."""
    from wrighty.config_file import STATE_DIRNAME
    from wrighty.installation import installation_id
    from wrighty.services.runlogs import logs_problem, run_log_dir

    if not runs:
        return False
    last = max(runs, key=lambda run: run.attempt)  # as `wrighty logs` picks it
    log_dir = run_log_dir(context.settings().root / STATE_DIRNAME, last)
    return logs_problem(last, log_dir, installation_id=installation_id()) is None


def _retry_limits(context: Context) -> tuple[int | None, int | None]:
    """worker.processCrash's and worker.usageFailure's maxAttempts, each when its policy
    retries; None otherwise or unknown."""
    try:
        settings = context.settings()
    except WrightyError:
        return None, None
    return settings.crash_limit, settings.usage_limit


def _fix_turns_limit(context: Context, agent: str | None) -> int | None:
    """verify.maxFixTurns for the item's agent; None when it has no checks, or wrighty.json
    cannot be read."""
    try:
        if not context.settings().agent_rules:
            return None  # no checks
        config = context.config().config
    except WrightyError:
        return None
    from wrighty.config.translate import fix_turns_limit

    return fix_turns_limit(config, agent or config.worker.default_agent)


def _can_verify(context: Context, detail: ItemDetail) -> bool:
    """Whether `wrighty verify` would run the checks of an item that waits for a person
    because of them (the only item it is offered for; asked of no other, so that `show`
    loads no check's code for the rest)."""
    item = detail.item
    if item.state is not ItemState.NEEDS_ATTENTION or item.reason_code not in WAITS_FOR_CHECKS:
        return False
    from wrighty.config import verify_policy
    from wrighty.installation import installation_id
    from wrighty.services.verify import runs_here

    try:
        config = context.config().config
    except WrightyError:
        return False
    policy = verify_policy(config, item.agent or config.worker.default_agent)
    return runs_here(item, detail.session, policy, installation_id=installation_id())


def _has_change(context: Context, detail: ItemDetail) -> bool:
    """Whether the item has a change of its own that `wrighty diff` would show here: its
    session recorded a base (a worktree made on a branch: `current` and pinned folders hold
    others' changes too), and `wrighty diff` would not refuse it (its rule: one git command at
    most)."""
    if detail.session is None or detail.session.base_commit is None:
        return False
    # git's service is loaded only for an item that has a branch
    from wrighty.config_file import STATE_DIRNAME
    from wrighty.installation import installation_id
    from wrighty.services.diff import change_refusal

    try:
        root = context.settings().root
    except WrightyError:
        return False
    refusal = change_refusal(
        detail.item,
        detail.session,
        project_root=root,
        state_dir=root / STATE_DIRNAME,
        installation_id=installation_id(),
    )
    return refusal is None


def _progress(detail: ItemDetail) -> Progress | None:
    """How far the item's worktree is from the base its session recorded (two git commands);
    None when no base is recorded (no worktree made with a branch)."""
    session = detail.session
    if session is None or session.base_commit is None:
        return None
    from pathlib import Path

    from wrighty.workproduct.listing import worktree_progress

    return worktree_progress(Path(session.workspace), session.base_commit)


def _review_stat(detail: ItemDetail) -> str | None:
    """The stat of an item in review's change (one git command), for its reviewer."""
    session = detail.session
    if detail.item.state is not ItemState.REVIEW or session is None or not session.base_commit:
        return None
    from pathlib import Path

    from wrighty.domain.work_product import SHOWN_STAT_LINES, bounded_stat
    from wrighty.workproduct.diff import change_stat

    stat = change_stat(Path(session.workspace), session.base_commit)
    # Bounded as the console's diff page is: a change of 100,000 files is not 100,000 lines.
    return None if stat is None else bounded_stat(stat, max_lines=SHOWN_STAT_LINES)


def _item_agent(context: Context, agent: str | None) -> AgentPlan | None:
    """The agent that runs an item (whether it can resume; where its vendor keeps
    transcripts); None when the config does not say."""
    from wrighty.agents import plan_agent

    try:
        loaded = context.config()
        name = agent or loaded.config.worker.default_agent
        return plan_agent(loaded.config, name, project_root=loaded.root)
    except WrightyError:
        return None
