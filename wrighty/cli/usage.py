"""`wrighty usage`: what the runs spent, from the usage ledger, by agent, budget day or item
(docs/usage.md#where-to-look)."""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from typing import Annotated

import typer

from wrighty.cli.common import JsonFlag, app_context, console
from wrighty.cli.documents import print_json
from wrighty.domain.ledger import MAX_USAGE_SINCE_SECONDS, no_cost_line
from wrighty.operator.documents import usage_report_json
from wrighty.operator.forms import seconds_option


class Grouping(StrEnum):
    AGENT = "agent"
    DAY = "day"
    ITEM = "item"


def usage(
    ctx: typer.Context,
    since: Annotated[
        str,
        typer.Option(
            "--since",
            metavar="DURATION",
            help="Runs started this long ago or later, e.g. 24h or 30d.",
        ),
    ] = "7d",
    by: Annotated[
        Grouping, typer.Option("--by", help="Group by agent, day (the budget day) or item.")
    ] = Grouping.AGENT,
    as_json: JsonFlag = False,
) -> None:
    """What the runs spent: tokens and cost by agent, budget day or item."""
    from wrighty.config import budgets_of
    from wrighty.services.usage import usage_report

    seconds = seconds_option("--since", since, MAX_USAGE_SINCE_SECONDS)
    assert seconds is not None  # the option has a default
    app_ctx = app_context(ctx)
    config = app_ctx.config().config
    budgets = budgets_of(config)
    with app_ctx.store() as store:
        now = app_ctx.now()
        report = usage_report(
            store,
            since=now - timedelta(seconds=seconds),
            now=now,
            by=by.value,
            budgets=budgets,
            default_agent=config.worker.default_agent,
        )
    if as_json:
        print_json(
            usage_report_json(
                report,
                time_zone=config.budgets.time_zone,
                day_starts_at=config.budgets.day_starts_at,
            )
        )
        return
    from wrighty.cli.render import usage_table
    from wrighty.richtext import local_time

    heading = f"runs started since {local_time(report.since)}"
    if by is Grouping.DAY:
        heading += (
            f", by budget day ({config.budgets.time_zone}, from {config.budgets.day_starts_at})"
        )
    typer.echo(heading)
    if not report.groups:
        typer.echo("no runs")
        return
    console().print(usage_table(report))
    missing = no_cost_line(report.total)
    if missing is not None:
        typer.echo(missing)
