"""How the queue is doing: `status` (healthy or not, for people, scripts and Prometheus) and
`workers`. The provider circuits have a group of their own: providers.py."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer

from wrighty.cli.common import JsonFlag, app_context, console
from wrighty.cli.documents import print_json
from wrighty.cli.prometheus import status_prometheus
from wrighty.domain.durations import MAX_QUEUE_WAIT_SECONDS, MAX_WORKER_AGE_SECONDS
from wrighty.errors import WrightyError
from wrighty.operator.documents import status_json, worker_json
from wrighty.operator.forms import seconds_option

# The largest --max-open-circuits: as status.minWorkers, far more than any fleet has circuits.
MAX_OPEN_CIRCUITS = 10_000

WorkerMaxAge = Annotated[
    str | None,
    typer.Option(
        "--worker-max-age",
        metavar="DURATION",
        help="A worker is live if its heartbeat is this recent, e.g. 60s "
        "(default: status.workerMaxAgeSeconds).",
    ),
]


def workers(
    ctx: typer.Context, worker_max_age: WorkerMaxAge = None, as_json: JsonFlag = False
) -> None:
    """The registered workers, with their liveness."""
    from wrighty.installation import installation_id
    from wrighty.services import status as status_service

    max_age = seconds_option("--worker-max-age", worker_max_age, MAX_WORKER_AGE_SECONDS)
    app_ctx = app_context(ctx)
    settings = app_ctx.config().config.status
    with app_ctx.store() as store:
        views = status_service.worker_views(
            store,
            now=app_ctx.now(),
            max_age_seconds=max_age or settings.worker_max_age_seconds,
            installation_id=installation_id(),
        )
    if as_json:
        print_json([worker_json(view) for view in views])
    elif views:
        from wrighty.cli.status_views import held_lines, workers_table

        console().print(workers_table(views))
        for line in held_lines(views):
            console().print(line)
    else:
        typer.echo("no registered workers")


def status(
    ctx: typer.Context,
    max_queue_wait: Annotated[
        str | None,
        typer.Option(
            "--max-queue-wait", metavar="DURATION", help="Unhealthy if an item waited longer."
        ),
    ] = None,
    min_workers: Annotated[
        int | None, typer.Option("--min-workers", min=0, help="Unhealthy with fewer live workers.")
    ] = None,
    worker_max_age: WorkerMaxAge = None,
    max_expired_leases: Annotated[
        int | None,
        typer.Option("--max-expired-leases", min=0, help="Unhealthy with more expired leases."),
    ] = None,
    max_needs_attention: Annotated[
        int | None,
        typer.Option("--max-needs-attention", min=0, help="Unhealthy with more such items."),
    ] = None,
    max_open_circuits: Annotated[
        int | None,
        typer.Option(
            "--max-open-circuits",
            min=0,
            max=MAX_OPEN_CIRCUITS,
            help="Unhealthy with more provider circuits open or half-open.",
        ),
    ] = None,
    max_notify_age: Annotated[
        str | None,
        typer.Option(
            "--max-notify-age",
            metavar="DURATION",
            help="Unhealthy if a notification has waited longer than this to be delivered.",
        ),
    ] = None,
    max_review_wait: Annotated[
        str | None,
        typer.Option(
            "--max-review-wait",
            metavar="DURATION",
            help="Unhealthy if an item has waited longer than this in review.",
        ),
    ] = None,
    output_format: Annotated[
        str,
        typer.Option(
            "--format", metavar="[text|json|prometheus]", help="text, json or prometheus."
        ),
    ] = "text",
    watch: Annotated[
        bool, typer.Option("--watch", help="Keep a live view in the terminal (Ctrl-C stops).")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Is the queue healthy? Counts, waits (for a worker, for review), leases, workers,
    provider circuits, each agent's spend, the notifications not delivered yet; exit 1 if
    not."""
    from wrighty.installation import installation_id
    from wrighty.services import status as status_service

    fmt = "json" if as_json else output_format
    if fmt not in ("text", "json", "prometheus"):
        raise WrightyError(f"--format: expected text, json or prometheus, got {output_format!r}")
    if watch and fmt != "text":
        raise WrightyError("--watch shows the terminal view; leave out --json and --format")
    wait_limit = seconds_option("--max-queue-wait", max_queue_wait, MAX_QUEUE_WAIT_SECONDS)
    notify_limit = seconds_option("--max-notify-age", max_notify_age, MAX_QUEUE_WAIT_SECONDS)
    review_limit = seconds_option("--max-review-wait", max_review_wait, MAX_QUEUE_WAIT_SECONDS)
    max_age = seconds_option("--worker-max-age", worker_max_age, MAX_WORKER_AGE_SECONDS)
    app_ctx = app_context(ctx)
    settings = app_ctx.settings()
    # Prometheus's counters add up every run; the other views read the budget period and the
    # last 24 hours only.
    ledger = status_service.LedgerScope(
        settings.budgets, settings.default_agent, lifetime=fmt == "prometheus"
    )
    # Each option given overrides its status.* setting.
    options: dict[str, Any] = {
        "max_queue_wait_seconds": wait_limit,
        "min_workers": min_workers,
        "max_expired_leases": max_expired_leases,
        "max_needs_attention": max_needs_attention,
        "max_open_circuits": max_open_circuits,
        "max_notify_age_seconds": notify_limit,
        "max_review_wait_seconds": review_limit,
    }
    thresholds = dataclasses.replace(
        settings.thresholds(), **{key: value for key, value in options.items() if value is not None}
    )
    with app_ctx.store() as store:

        def report() -> status_service.StatusReport:
            return status_service.status_report(
                store,
                now=app_ctx.now(),
                thresholds=thresholds,
                worker_max_age_seconds=max_age or settings.worker_max_age_seconds,
                installation_id=installation_id(),
                default_agent=settings.default_agent,
                ledger=ledger,
            )

        if watch:
            from wrighty.cli.status_views import status_view, watch_status

            watch_status(console(), lambda: status_view(report()))
            return
        current = report()
    if fmt == "json":
        print_json(status_json(current))
    elif fmt == "prometheus":
        typer.echo(status_prometheus(current), nl=False)
    else:
        from wrighty.cli.status_views import status_view

        console().print(status_view(current))
    if not current.healthy:
        raise typer.Exit(1)
