"""Every command wrighty suggests passes its own command line's validation.

Every builder of `domain/suggestions.py` (the one place suggested commands are worded) over
its arguments' range; `show`'s (and the inbox's) next commands; an item's `next` line (a
settlement's next action: a requeue, a requeue with a raised budget); a notification's next
action (a provider circuit's reset, the workers); and the commands named inside a waiting
item's reason, over item states, reason codes, budgets and configs: each is parsed by the
real command-line parser (the root group and the command's own context, as `wrighty` would on
the terminal; every option's type, bounds and callback run, the command's body does not).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import typer
import typer.main
from hypothesis import given, settings
from hypothesis import strategies as st

from wrighty.cli.app import app
from wrighty.cli.common import UsageError
from wrighty.config import AGENT_NAME_PATTERN
from wrighty.domain import suggestions
from wrighty.domain.budgets import MAX_ITEM_COST_USD, MAX_ITEM_TOKENS, raise_command, raise_flags
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.model import MAX_ITEM_ID
from wrighty.domain.notices import Source, circuit_notice, notices_for, quiet_worker_notice
from wrighty.domain.outbox import Notice
from wrighty.domain.scheduling import dependency_wait
from wrighty.domain.states import ItemState
from wrighty.domain.suggestions import Standing, next_commands
from wrighty.domain.usage import Limit, Usage
from wrighty.errors import WrightyError

ROOT = typer.main.get_command(app)
NOW = datetime(2025, 6, 1, tzinfo=UTC)


def parse(line: str) -> None:
    """Parse ``line`` as `wrighty` would, down to the command it names; raises what the parser
    raises for a line it refuses (a usage error, a bad value, a WrightyError from a callback)."""
    argv = shlex.split(line)
    assert argv[0] == "wrighty", line
    command = ROOT
    context = ROOT.make_context("wrighty", argv[1:])
    while isinstance(command, typer.core.TyperGroup):
        rest = [*context._protected_args, *context.args]
        name, found, args = command.resolve_command(context, rest)
        assert found is not None, line
        command = found
        context = command.make_context(name, args, parent=context)


def refused(line: str) -> bool:
    try:
        parse(line)
    except (WrightyError, typer.Exit, UsageError):  # a callback's, the group's, the parser's
        return True
    return False


item_ids = st.integers(min_value=1, max_value=MAX_ITEM_ID)
costs = st.floats(min_value=0.0, max_value=1e308, allow_nan=False, allow_infinity=False)
bounds = st.builds(
    Limit,
    max_cost_usd=st.none() | st.floats(min_value=0.01, max_value=1e308, allow_nan=False),
    max_tokens=st.none() | st.integers(min_value=1, max_value=10**15),
)
spending = st.builds(
    Usage,
    input_tokens=st.integers(min_value=0, max_value=10**15),
    output_tokens=st.integers(min_value=0, max_value=10**6),
    cost_usd=st.none() | costs,
)
agent_names = st.from_regex(AGENT_NAME_PATTERN.strip("^$"), fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(
    item_id=item_ids,
    state=st.sampled_from(list(ItemState)),
    resumable=st.booleans(),
    has_logs=st.booleans(),
    lease_expired=st.booleans(),
    limit=bounds,
    spent=spending,
    can_verify=st.booleans(),
    has_change=st.booleans(),
    reason_code=st.sampled_from(
        [
            None,
            "agent-failure",
            "budget-exceeded",
            "verification-failed",
            "check-start-failed",
            "commit-failed",
        ]
    ),
)
def test_every_command_show_offers_parses(
    item_id: int,
    state: ItemState,
    resumable: bool,
    has_logs: bool,
    lease_expired: bool,
    limit: Limit,
    spent: Usage,
    can_verify: bool,
    has_change: bool,
    reason_code: str | None,
) -> None:
    standing = Standing(
        resumable,
        has_logs,
        lease_expired,
        raise_flags(limit, spent),
        can_verify=can_verify,
        has_change=has_change,
    )
    for suggestion in next_commands(item_id, state, standing, reason_code=reason_code):
        parse(suggestion.command)


@settings(max_examples=300, deadline=None)
@given(item_id=item_ids, limit=bounds, spent=spending, resumable=st.booleans())
def test_every_next_line_of_a_spent_budget_parses_and_lifts_it(
    item_id: int, limit: Limit, spent: Usage, resumable: bool
) -> None:
    line = raise_command(item_id, limit, spent, resumable=resumable)
    parse(line)
    raised = dict(re.findall(r"(--max-cost-usd|--max-tokens) (\S+)", line))
    if "--max-cost-usd" in raised:
        assert spent.cost_usd is not None
        assert float(raised["--max-cost-usd"]) > spent.cost_usd  # the raise lifts the bound
    if "--max-tokens" in raised:
        assert int(raised["--max-tokens"]) > spent.tokens


@given(item_id=item_ids, resumable=st.booleans())
def test_every_requeue_a_settlement_names_parses(item_id: int, resumable: bool) -> None:
    parse(suggestions.requeue(item_id, resume=resumable))


circuit_names = agent_names  # a provider circuit is named after its agent
# The arguments of each builder in `suggestions.COMMANDS`, over the whole range wrighty may
# give it; a builder added there without a row here fails the walk below.
ARGUMENTS: dict[Any, st.SearchStrategy[dict[str, Any]]] = {
    suggestions.requeue: st.fixed_dictionaries(
        {"item_id": item_ids, "resume": st.booleans()},
        optional={
            "raised": st.builds(
                lambda limit, spent: raise_flags(limit, spent) or (), bounds, spending
            )
        },
    ),
    suggestions.cancel: st.fixed_dictionaries({"item_id": item_ids}),
    suggestions.logs: st.fixed_dictionaries({"item_id": item_ids, "follow": st.booleans()}),
    suggestions.reap: st.fixed_dictionaries({}),
    suggestions.force_release: st.fixed_dictionaries({"item_id": item_ids}),
    suggestions.queue: st.fixed_dictionaries({"item_id": item_ids}),
    suggestions.show: st.fixed_dictionaries({"item_id": item_ids}),
    suggestions.verify: st.fixed_dictionaries({"item_id": item_ids}),
    suggestions.diff: st.fixed_dictionaries({"item_id": item_ids, "stat": st.booleans()}),
    suggestions.accept: st.fixed_dictionaries({"item_id": item_ids}),
    suggestions.reject: st.fixed_dictionaries({"item_id": item_ids}),
    suggestions.start_worker: st.fixed_dictionaries({"item_id": item_ids, "agent": agent_names}),
    suggestions.drop_dependency: st.fixed_dictionaries(
        {"item_id": item_ids, "depends_on": item_ids}
    ),
    suggestions.reset_circuit: st.fixed_dictionaries({"name": circuit_names}),
    suggestions.list_workers: st.fixed_dictionaries({}),
    suggestions.list_since: st.fixed_dictionaries(
        {
            "since": st.from_regex(
                r"[1-9][0-9]{0,2}[smhd]|([01][0-9]|2[0-3]):[0-5][0-9]", fullmatch=True
            )
        }
    ),
}


def test_the_walk_covers_every_builder() -> None:
    assert set(ARGUMENTS) == set(suggestions.COMMANDS)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_every_command_the_suggestions_module_words_parses(data: st.DataObject) -> None:
    builder = data.draw(st.sampled_from(suggestions.COMMANDS))
    line = builder(**data.draw(ARGUMENTS[builder]))
    parse(line)


@settings(deadline=None)
@given(agent=agent_names, item_id=item_ids, worker=st.from_regex(r"w-[0-9a-f]{12}", fullmatch=True))
def test_every_notifications_next_action_parses(agent: str, item_id: int, worker: str) -> None:
    source = Source("inst-" + "0" * 24, worker)
    opened = circuit_notice(agent, until=NOW, reason=None, failures=3, at=NOW, source=source)
    row = WorkerRow(
        worker,
        None,
        "inst-x",
        1,
        0.0,
        "0",
        WorkerState.RUNNING,
        (item_id,),
        NOW,
        NOW,
    )
    quiet = quiet_worker_notice(
        row, now=NOW + timedelta(hours=1), max_age_seconds=60, source=source
    )
    assert quiet is not None
    for notice in (opened, quiet):
        parse(notice.payload["next_action"])
    # An item ready for review: a command for each thing a person does with it.
    for action in review_notice(item_id, source).payload["next_actions"]:
        parse(action["command"])


def review_notice(item_id: int, source: Source) -> Notice:
    """The notice of item ``item_id`` settled to review by a worker."""
    from tests.unit.test_notices import in_review

    change = in_review()
    waiting = dataclasses.replace(change.after, id=item_id)
    claimed = dataclasses.replace(change.before, id=item_id)
    event = dataclasses.replace(change.event, item_id=item_id)
    [notice] = notices_for(
        dataclasses.replace(change, before=claimed, after=waiting, event=event), source
    )
    return notice


@given(
    item_id=st.integers(min_value=1, max_value=50),
    upstream=st.dictionaries(
        st.integers(min_value=1, max_value=50),
        st.lists(st.integers(min_value=1, max_value=50), max_size=3),
        max_size=20,
    ),
    states=st.dictionaries(
        st.integers(min_value=1, max_value=50), st.sampled_from(list(ItemState)), max_size=50
    ),
)
def test_every_command_a_waiting_items_reason_names_parses(
    item_id: int, upstream: dict[int, list[int]], states: dict[int, ItemState]
) -> None:
    wait = dependency_wait(item_id, upstream, states)
    for line in re.findall(r"`(wrighty [^`]*)`", wait.reason if wait else ""):
        parse(line)


@pytest.mark.parametrize(
    "line",
    [
        "wrighty requeue 1 --fresh --max-cost-usd 80000000000",
        f"wrighty requeue 1 --fresh --max-tokens {MAX_ITEM_TOKENS + 1}",
        f"wrighty requeue 1 --resume --max-cost-usd {MAX_ITEM_COST_USD + 1}",
        "wrighty requeue 1 --fresh --max-tokens 1_000",
        "wrighty show 0",
        "wrighty verify 0",
        "wrighty providers reset",
    ],
)
def test_the_parser_refuses_what_the_command_refuses(line: str) -> None:
    # The check above is only worth as much as this: a line the command refuses, the parser
    # alone refuses too.
    assert refused(line)


def test_an_item_that_spent_the_most_a_budget_may_be_is_not_offered_a_requeue() -> None:
    spent = Usage(input_tokens=MAX_ITEM_TOKENS, cost_usd=1.0)
    limit = Limit(max_tokens=MAX_ITEM_TOKENS)
    assert raise_flags(limit, spent) is None
    assert raise_command(7, limit, spent) == "wrighty cancel 7"
    standing = Standing(True, True, False, raise_flags(limit, spent))
    offered = [s.command for s in next_commands(7, ItemState.NEEDS_ATTENTION, standing)]
    assert offered == ["wrighty logs 7", "wrighty cancel 7"]
