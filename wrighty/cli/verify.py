"""`wrighty verify ITEM`: an item's checks run by hand (docs/verify.md)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import typer

from wrighty.cli.common import ItemId, JsonFlag, app_context
from wrighty.domain.text import printable_line
from wrighty.errors import WrightyError

if TYPE_CHECKING:
    from collections.abc import Callable

    from wrighty.cli.context import AppContext
    from wrighty.domain.verify import CheckEvidence
    from wrighty.services.verify import ByHand
    from wrighty.store.port import Store

# How many of the last lines of a failing check's output the plain text shows.
TAIL_LINES = 20
# Exit code when a check failed or could not start (2 is for bad input).
CHECKS_FAILED_EXIT = 1


def verify(ctx: typer.Context, item_id: ItemId, as_json: JsonFlag = False) -> None:
    """Run an item's checks now, in its workspace, without an agent; an item waiting for a
    person because of its checks is done once they all pass. Exit code 1 if one fails."""
    app_ctx = app_context(ctx)

    def told(evidence: CheckEvidence) -> None:
        if not as_json:
            _print_check(evidence)

    with app_ctx.store() as store:
        result = verify_now(app_ctx, store, item_id, told=told)
    if as_json:
        from wrighty.cli.documents import check_json, print_json

        print_json(
            {
                "item_id": result.item.id,
                "state": result.item.state.value,
                "passed": result.passed,
                "done": result.done,
                "moved": result.moved,
                "checks": [check_json(evidence) for evidence in result.evidence],
            }
        )
    else:
        typer.echo(verified_line(result))
    if not result.passed:
        raise typer.Exit(CHECKS_FAILED_EXIT)


def verify_now(
    app_ctx: AppContext,
    store: Store,
    item_id: int,
    *,
    told: Callable[[CheckEvidence], None] = lambda _: None,
) -> ByHand:
    """`wrighty verify`'s service call, as the command and the web console make it: the
    item's checks by its agent's policy in wrighty.json, in its workspace on this
    installation, with this process's environment."""
    from wrighty.config import STATE_DIRNAME
    from wrighty.config.translate import completion_of, verify_policy
    from wrighty.installation import installation_id
    from wrighty.services.verify import verify_by_hand

    loaded = app_ctx.config()
    config = loaded.config
    item = store.get_item(item_id)
    agent = (item.agent if item is not None else None) or config.worker.default_agent
    return verify_by_hand(
        store,
        item_id,
        policy=verify_policy(config, agent),
        agent=agent,
        installation_id=installation_id(),
        state_dir=loaded.root / STATE_DIRNAME,
        now=app_ctx.now,
        environ=os.environ,
        completion=completion_of(config),
        told=told,
        known=app_ctx.secrets(),
    )


def _print_check(evidence: CheckEvidence) -> None:
    for line in check_lines(evidence, tail_lines=TAIL_LINES):
        typer.echo(line)


def check_lines(evidence: CheckEvidence, *, tail_lines: int) -> list[str]:
    """One check as plain text: a line saying how it ended and how long it took; for one
    that did not pass, why it could not start or the last ``tail_lines`` lines of its output
    (its evidence's: redacted already; shown as text from outside all the same)."""
    name = printable_line(evidence.name)
    took = f"{evidence.duration_seconds:.1f}s"
    if evidence.passed:
        return [f"passed  {name} ({took})"]
    lines = [f"FAILED  {name}: {printable_line(evidence.ending())} ({took})"]
    if evidence.start_failure is not None:
        return [*lines, f"        {printable_line(evidence.start_failure)}"]
    # Lines end at a newline alone: a carriage return (or any other break) is shown escaped.
    lines_of_output = evidence.output_tail.rstrip("\n").split("\n")
    tail = lines_of_output[-tail_lines:] if tail_lines and evidence.output_tail else []
    return [*lines, *(f"        {printable_line(line)}" for line in tail)]


def verified_line(result: ByHand) -> str:
    """What `wrighty verify` says it did (WrightyError when the item moved while its checks
    ran: the rest of them was not recorded)."""
    item_id, state = result.item.id, result.item.state.value
    if result.moved:
        raise WrightyError(
            f"item {item_id} moved while its checks ran (now {state}); the checks that ran "
            f"are recorded: `wrighty show {item_id}`"
        )
    if result.done:
        return f"item {item_id} is done: every check passed"
    if result.settled:
        reason = printable_line(result.item.reason or "")
        return f"every check passed; item {item_id} is {state}: {reason}"
    if result.passed:
        return f"every check passed; item {item_id} stays {state}"
    return f"item {item_id} stays {state}: `wrighty show {item_id}` has the evidence"
