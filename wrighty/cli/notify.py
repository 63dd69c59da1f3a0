"""Notifications (docs/notifications.md): `wrighty notify test` sends a test message through
the sinks, `notify pending` lists what is not delivered yet, `notify flush` tries every pending
notification now. Workers deliver on their own (wrighty/notify/delivery.py); these commands are for
trying the sinks and for looking at the outbox."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from wrighty.cli.common import (
    JsonFlag,
    WrightyGroup,
    app_context,
    console,
    refuse_unusable_notify_urls,
)
from wrighty.cli.documents import print_json
from wrighty.domain.text import printable_line
from wrighty.errors import WrightyError
from wrighty.operator.documents import notice_json

if TYPE_CHECKING:
    from wrighty.config import NotifySettings
    from wrighty.domain.notices import Source

notify_app = typer.Typer(
    cls=WrightyGroup,
    help="Notifications: try the sinks, list what is not delivered, deliver it now.",
)

NO_SINKS = (
    "no notification sinks are configured: add notify.urls or notify.command to wrighty.json "
    "(docs/notifications.md)"
)


def _settings(ctx: typer.Context) -> NotifySettings:
    return app_context(ctx).config().config.notify


@notify_app.command("test")
def notify_test(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Send only to this Apprise URL, instead of every configured sink (mind your "
            "shell history: a URL may carry a token).",
        ),
    ] = None,
) -> None:
    """Send a test message through each sink and say whether it went out; exit 1 if not."""
    from wrighty.config import apprise_url_problem
    from wrighty.installation import installation_id
    from wrighty.notify.sinks import Sink, sinks_of, url_sink
    from wrighty.services.notify import send_test

    app_ctx = app_context(ctx)
    sinks: list[Sink]
    if url is not None:
        problem = apprise_url_problem(url)
        if problem is not None:
            raise WrightyError(f"--url {problem}")
        sinks = [url_sink(url)]
    else:
        refuse_unusable_notify_urls(app_ctx.config())
        sinks = sinks_of(_settings(ctx))
        if not sinks:
            raise WrightyError(NO_SINKS + ", or pass --url")
    tried = send_test(sinks, _source(installation_id()), now=app_ctx.now())
    for result in tried:
        outcome = "sent" if result.error is None else f"failed: {result.error}"
        typer.echo(printable_line(f"{result.label}: {outcome}"))
    if any(result.error is not None for result in tried):
        raise typer.Exit(1)


@notify_app.command("pending")
def notify_pending(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the notifications not delivered yet and those given up, oldest first."""
    from wrighty.services.notify import undelivered

    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        notices = undelivered(store)
    if as_json:
        print_json([notice_json(stored) for stored in notices])
    elif notices:
        from wrighty.cli.status_views import notices_table

        console().print(notices_table(notices))
    else:
        typer.echo("no notifications waiting")


@notify_app.command("flush")
def notify_flush(ctx: typer.Context) -> None:
    """Try every pending notification now, retries not yet due included; exit 1 if any
    attempt failed."""
    from wrighty.installation import installation_id
    from wrighty.notify.sinks import sinks_of
    from wrighty.services.notify import flush

    app_ctx = app_context(ctx)
    refuse_unusable_notify_urls(app_ctx.config())
    loaded = app_ctx.config().config
    sinks = sinks_of(loaded.notify)
    if not sinks:
        # Without a sink every notice would count as delivered, to nobody.
        raise WrightyError(NO_SINKS + "; nothing was delivered")
    with app_ctx.store() as store:
        done = flush(
            store,
            loaded.notify,
            sinks,
            source=_source(installation_id()),
            now=app_ctx.now,
            worker_max_age_seconds=loaded.status.worker_max_age_seconds,
        )
    failed = done.count("pending") + done.count("given-up")
    line = (
        f"delivered {done.count('delivered')} notifications, {done.count('pending')} failed "
        f"(retried later), {done.count('given-up')} given up"
    )
    if done.hastened:
        line += f"; {done.hastened} of them were waiting for a retry"
    if done.quiet_workers:
        line += f"; {done.quiet_workers} workers gone quiet added first"
    typer.echo(line)
    for attempt in done.attempts:
        if attempt.outcome.last_error and attempt.outcome.state != "delivered":
            typer.echo(
                printable_line(f"  {attempt.claimed.notice.id}: {attempt.outcome.last_error}")
            )
    if failed:
        raise typer.Exit(1)


def _source(installation: str) -> Source:
    """The notices' writer from the command line: this installation, no worker."""
    from wrighty.domain.notices import Source

    return Source(installation)
