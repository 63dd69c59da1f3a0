"""`wrighty verify ITEM`: an item's checks run by hand (docs/verify.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from wrighty.cli.common import ItemId, JsonFlag, app_context
from wrighty.operator.actions import verify_now
from wrighty.operator.sentences import check_lines, verified_line

if TYPE_CHECKING:
    from wrighty.domain.check_evidence import CheckEvidence

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
        from wrighty.cli.documents import print_json
        from wrighty.operator.documents import check_json

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


def _print_check(evidence: CheckEvidence) -> None:
    for line in check_lines(evidence, tail_lines=TAIL_LINES):
        typer.echo(line)
