"""`wrighty inbox`: the terminal inbox (wrighty/inbox/, on Textual), on the operator's desk
(`operator/desk.OperatorDesk`) with `wrighty show`'s text as its detail. Textual is imported
only when the inbox starts."""

from __future__ import annotations

from typing import Annotated

import typer

from wrighty.cli.common import app_context
from wrighty.errors import WrightyError

# How often the board is read again, at least and at most (seconds).
MIN_INTERVAL_SECONDS = 0.5
MAX_INTERVAL_SECONDS = 3600.0


def inbox(
    ctx: typer.Context,
    read_only: Annotated[
        bool,
        typer.Option("--read-only", help="Look, do not act: every action is refused."),
    ] = False,
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            min=MIN_INTERVAL_SECONDS,
            max=MAX_INTERVAL_SECONDS,
            help="Seconds between reads of the store.",
        ),
    ] = 2.0,
) -> None:
    """The items that need a person, live, with the actions one key away (? for the keys)."""
    import sys

    if not (sys.stdin is not None and sys.stdin.isatty() and sys.stdout.isatty()):
        raise WrightyError(
            "wrighty inbox needs a terminal on stdin and stdout; for scripts use "
            "`wrighty list --attention --json` or `wrighty status --json`"
        )
    from wrighty.operator.desk import OperatorDesk, board_settings

    app_ctx = app_context(ctx)
    settings = board_settings(app_ctx)
    from wrighty.cli.items import print_show
    from wrighty.inbox.app import InboxApp

    with app_ctx.store() as store:
        desk = OperatorDesk(app_ctx, store, settings)
        InboxApp(desk, show=print_show, read_only=read_only, interval=interval).run()
