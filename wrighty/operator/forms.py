"""The forms an operator fills in, read the same from every entry point: the options of a new
item (`wrighty create`, the web console's New item form) and the item it makes
(`new_item_of`), durations, budgets and counts, each refused in the command's words
(WrightyError)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wrighty.domain.budgets import MAX_ITEM_COST_USD, MAX_ITEM_TOKENS
from wrighty.domain.durations import MAX_ITEM_TIMEOUT_SECONDS, parse_duration
from wrighty.domain.model import DEFAULT_PRIORITY, NewItem
from wrighty.domain.states import ItemState
from wrighty.domain.usage import Limit
from wrighty.errors import WrightyError
from wrighty.operator.numbers import number_problem

if TYPE_CHECKING:
    from wrighty.config import WrightyConfig
    from wrighty.services.items import CheckNames


def chosen_checks(verify: list[str] | None, no_verify: bool) -> tuple[str, ...] | None:
    """The checks an item chooses, as ``Item.verify_checks`` holds them."""
    if verify and no_verify:
        raise WrightyError("give --verify CHECK or --no-verify, not both")
    if no_verify:
        return ()
    return tuple(dict.fromkeys(verify)) if verify else None


def check_names_of(config: WrightyConfig) -> CheckNames:
    """The names of the checks wrighty.json gives an agent (None: the default agent)."""
    from wrighty.config import agent_checks

    def names(agent: str | None) -> list[str]:
        return [check.name for check in agent_checks(config, agent or config.worker.default_agent)]

    return names


@dataclass(frozen=True)
class ItemOptions:
    """What `wrighty create` is given for a new item besides its task, as given (the web
    console's form gives the same)."""

    title: str
    agent: str | None = None
    timeout: str | None = None
    workspace: Path | None = None
    queue: bool = False
    max_cost_usd: str | None = None
    max_tokens: str | None = None
    priority: str | None = None
    after: tuple[int, ...] = ()
    labels: tuple[str, ...] = ()
    verify: tuple[str, ...] = ()
    no_verify: bool = False


def new_item_of(
    config: WrightyConfig, options: ItemOptions, read_body: Callable[[], str]
) -> NewItem:
    """The item `wrighty create` makes of its options, or its refusal of the first one that
    is wrong (WrightyError, in the command's words). The task is read last, once every option
    is accepted: a wrong one is told before standard input is waited for."""
    from wrighty.domain.scheduling import check_label, parse_priority
    from wrighty.domain.transitions import validate_new_item  # not for the read commands
    from wrighty.services import items as item_service

    agent = options.agent
    if agent is not None and agent not in config.agent_names():
        known = ", ".join(config.agent_names())
        raise WrightyError(f"--agent {agent}: unknown agent (known: {known}); see docs/config.md")
    timeout_seconds = seconds_option("--timeout", options.timeout, MAX_ITEM_TIMEOUT_SECONDS)
    budget = limit_options(options.max_cost_usd, options.max_tokens)
    priority = DEFAULT_PRIORITY if options.priority is None else parse_priority(options.priority)
    for name in options.labels:
        check_label(name)
    checks = chosen_checks(list(options.verify), options.no_verify)
    item_service.check_choice(
        checks, agent=agent, check_names=check_names_of(config), said="--verify"
    )
    workspace = options.workspace
    workspace_path = workspace.absolute() if workspace else None
    if workspace_path is not None and not workspace_path.is_dir():
        raise WrightyError(f"--workspace {workspace}: no such directory")
    new = NewItem(
        title=options.title,
        body=read_body(),
        agent=agent,
        timeout_seconds=timeout_seconds,
        workspace=str(workspace_path) if workspace_path else None,
        initial_state=ItemState.QUEUED if options.queue else ItemState.TODO,
        max_cost_usd=budget.max_cost_usd,
        max_tokens=budget.max_tokens,
        priority=priority,
        after=options.after,
        labels=options.labels,
        verify_checks=checks,
    )
    new = item_service.normalized(new)
    validate_new_item(new)
    return new


def seconds_option(name: str, value: str | None, at_most: float) -> float | None:
    """The seconds in a duration option (``--timeout 30m``); None when it was not given."""
    if value is None:
        return None
    try:
        return parse_duration(value, at_most=at_most)
    except ValueError as error:
        raise WrightyError(f"{name}: {error}") from None


# An item's own budget (create, requeue); the bounds are wrighty.json's (docs/config.md).
MAX_COST_USD = MAX_ITEM_COST_USD


MAX_TOKENS = MAX_ITEM_TOKENS


def limit_options(max_cost_usd: str | None, max_tokens: str | None) -> Limit:
    """The budget that ``--max-cost-usd`` / ``--max-tokens`` give (unbounded when neither)."""
    cost = None
    if max_cost_usd is not None:
        cost = bounded_number("--max-cost-usd", max_cost_usd, MAX_COST_USD, whole=False)
    tokens = None
    if max_tokens is not None:
        tokens = int(bounded_number("--max-tokens", max_tokens, MAX_TOKENS, whole=True))
    return Limit(cost, tokens)


def count_option(name: str, text: str | None) -> int:
    """A number of tokens that may be 0 (``report-usage``); 0 when not given."""
    if text is None:
        return 0
    return int(bounded_number(name, text, MAX_TOKENS, whole=True, zero=True))


def amount_option(name: str, text: str | None) -> float | None:
    """A cost in US dollars that may be 0 (``report-usage``); None when not given."""
    if text is None:
        return None
    return bounded_number(name, text, MAX_COST_USD, whole=False, zero=True)


def bounded_number(
    name: str, text: str, at_most: float, *, whole: bool, zero: bool = False
) -> float:
    """The number ``text`` by the one rule for numbers (operator/numbers.py), within
    (0 or more than 0, ``at_most``]."""
    problem = number_problem(text, whole=whole)
    if problem is not None:
        raise WrightyError(f"{name}: {problem}")
    value = float(text)
    if not ((value >= 0 if zero else value > 0) and value <= at_most):
        least = "at least 0" if zero else "more than 0"
        raise WrightyError(f"{name} {text}: must be {least} and at most {at_most:,.0f}")
    return value
