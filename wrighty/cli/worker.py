"""The commands of a run: `worker start`, which claims items and runs their agent, and
`finish` and `fail`, which an agent runs from inside its run."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wrighty.cli.common import (
    EXIT_INTERRUPTED,
    WrightyGroup,
    app_context,
    refuse_unusable_notify_urls,
)
from wrighty.domain.durations import MAX_IDLE_TIMEOUT_SECONDS
from wrighty.domain.model import MAX_ITEM_ID
from wrighty.domain.text import printable_line
from wrighty.domain.worker_events import PLAIN_SKIPS
from wrighty.errors import WrightyError
from wrighty.operator.forms import seconds_option

if TYPE_CHECKING:
    from wrighty.domain.classify import AgentReport

MAX_AGENT_REASON = 500

worker_app = typer.Typer(cls=WrightyGroup, help="Run a worker that claims items and runs agents.")


@worker_app.command("start")
def worker_start(
    ctx: typer.Context,
    once: Annotated[
        bool, typer.Option("--once", help="Process at most one item, then exit.")
    ] = False,
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", min=1, max=64, help="Items at once (default: config)."),
    ] = None,
    item_id: Annotated[
        int | None,
        typer.Option(
            "--item", metavar="ID", min=1, max=MAX_ITEM_ID, help="Work on this item only."
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", metavar="NAME", help="Run this agent (default: worker.defaultAgent)."
        ),
    ] = None,
    max_items: Annotated[
        int | None,
        typer.Option(
            "--max-items",
            min=1,
            help="Stop after this many items (each counted once, through its retries and fix "
            "turns).",
        ),
    ] = None,
    idle_timeout: Annotated[
        str | None,
        typer.Option(
            "--idle-timeout", metavar="DURATION", help="Stop after idling this long, e.g. 5m."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON lifecycle event per line.")
    ] = False,
) -> None:
    """Claim queued items and run their agent until stopped (Ctrl-C stops cleanly)."""
    from wrighty.installation import installation_id
    from wrighty.operator.answers import tracker_act
    from wrighty.supervisor.linux import become_subreaper
    from wrighty.worker.loop import Worker, WorkerOptions
    from wrighty.worker.signals import StopOnSignals

    idle_seconds = seconds_option("--idle-timeout", idle_timeout, MAX_IDLE_TIMEOUT_SECONDS)
    app_ctx = app_context(ctx)
    loaded = app_ctx.config()
    refuse_unusable_notify_urls(loaded)
    options = WorkerOptions(
        once=once,
        concurrency=concurrency or loaded.config.worker.concurrency,
        item_id=item_id,
        agent=agent,
        max_items=max_items,
        idle_timeout_seconds=idle_seconds,
    )
    become_subreaper()
    with app_ctx.store() as store:
        worker = Worker(
            store,
            loaded,
            installation_id=installation_id(),
            output=_print_json_line if as_json else _print_event_line,
            now=app_ctx.now,
            clock=app_ctx.store_clock,
            store_target=app_ctx.store_target(),
            act=tracker_act(app_ctx, store),
        )
        # First SIGINT/SIGTERM: stop claiming and settle the running agents cleanly. Second:
        # force (KeyboardInterrupt).
        with StopOnSignals(worker.request_stop, say=_say_stopping) as signals:
            worker.run(options)
    if signals.received:
        raise typer.Exit(EXIT_INTERRUPTED)


def _say_stopping() -> None:
    typer.echo("wrighty: stopping after the running agent is settled (again to force)", err=True)


def finish(ctx: typer.Context) -> None:
    """From inside a run: report that the task is done (the agent still exits as usual)."""
    from wrighty.domain.classify import AgentReport

    _report_from_run(ctx, AgentReport.FINISHED, None)


def fail(
    ctx: typer.Context,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why the task failed, in one line.")
    ] = None,
    usage_limit: Annotated[
        bool,
        typer.Option(
            "--usage-limit",
            help="The provider refused the agent a usage limit (or was down): the run ends as "
            "rate-limited, for worker.usageFailure and the provider circuit.",
        ),
    ] = False,
    resets_at: Annotated[
        str | None,
        typer.Option(
            "--resets-at",
            metavar="TIME",
            help="With --usage-limit: when the limit lifts, RFC 3339 with an offset "
            "(2026-12-03T14:00:00Z) or a wait from now (45m, 2h).",
        ),
    ] = None,
) -> None:
    """From inside a run: report that the task failed (the run ends as agent-failure), or
    with --usage-limit that the provider refused it (rate-limited)."""
    from wrighty.domain.classify import AgentReport

    if resets_at is not None and not usage_limit:
        raise WrightyError("--resets-at goes with --usage-limit: the reset of a usage limit")
    if reason is None and not usage_limit:
        raise WrightyError("wrighty fail needs --reason TEXT: why the task failed, in one line")
    report = AgentReport.USAGE_LIMIT if usage_limit else AgentReport.FAILED
    _report_from_run(ctx, report, reason, resets_at=resets_at)


_InputTokens = Annotated[
    str | None, typer.Option("--input-tokens", metavar="N", help="Input tokens so far.")
]
_OutputTokens = Annotated[
    str | None, typer.Option("--output-tokens", metavar="N", help="Output tokens so far.")
]
_CacheReadTokens = Annotated[
    str | None, typer.Option("--cache-read-tokens", metavar="N", help="Cached input read so far.")
]
_CacheWriteTokens = Annotated[
    str | None, typer.Option("--cache-write-tokens", metavar="N", help="Cache writes so far.")
]
_CostUsd = Annotated[
    str | None,
    typer.Option(
        "--cost-usd",
        metavar="USD",
        help="What the run cost so far, in US dollars (else estimated from pricing).",
    ),
]


def report_usage(
    ctx: typer.Context,
    input_tokens: _InputTokens = None,
    output_tokens: _OutputTokens = None,
    cache_read_tokens: _CacheReadTokens = None,
    cache_write_tokens: _CacheWriteTokens = None,
    cost_usd: _CostUsd = None,
    model: Annotated[
        list[str] | None,
        typer.Option("--model", metavar="MODEL", help="A model the run used (repeatable)."),
    ] = None,
    final: Annotated[
        bool, typer.Option("--final", help="These are the run's final figures.")
    ] = False,
) -> None:
    """From inside a run: report what the run has used so far (totals, not increments: each
    report replaces the last, so sending one twice is harmless)."""
    from wrighty.config import pricing_of
    from wrighty.domain.usage import Usage, priced, with_reported_cost
    from wrighty.operator.forms import amount_option, count_option
    from wrighty.runenv import run_pricing, run_store
    from wrighty.services.items import report_run_usage

    run_id, token = _run_identity()
    models = tuple(dict.fromkeys(_model_name(name) for name in model or ()))
    usage = Usage(
        input_tokens=count_option("--input-tokens", input_tokens),
        output_tokens=count_option("--output-tokens", output_tokens),
        cache_read_tokens=count_option("--cache-read-tokens", cache_read_tokens),
        cache_write_tokens=count_option("--cache-write-tokens", cache_write_tokens),
        cost_usd=amount_option("--cost-usd", cost_usd),
        models=models,
        final=final,
    )
    app_ctx = app_context(ctx)
    target = run_store(os.environ)  # what the worker gave the run: wrighty.json is not read
    pricing = run_pricing(os.environ) if target else pricing_of(app_ctx.config().config)
    usage = priced(with_reported_cost(usage), pricing)
    with app_ctx.store(target) as store:
        landed = report_run_usage(store, run_id, claim_token=token, usage=usage)
    if not landed:
        raise WrightyError(_no_claim(run_id))
    cost = "" if usage.cost_usd is None else f", ${usage.cost_usd:.4f} {usage.cost_source}"
    typer.echo(f"recorded: {usage.tokens:,} tokens{cost}")


MAX_MODEL_NAME = 200


def _model_name(name: str) -> str:
    cleaned = printable_line(name).strip()
    if not cleaned or len(cleaned) > MAX_MODEL_NAME:
        raise WrightyError(f"--model: give a model name of 1 to {MAX_MODEL_NAME} characters")
    return cleaned


def _run_identity() -> tuple[str, str]:
    run_id = os.environ.get("WRIGHTY_RUN_ID")
    token = os.environ.get("WRIGHTY_CLAIM_TOKEN")
    if not run_id or not token:
        raise WrightyError(
            "this command runs inside an agent's run: WRIGHTY_RUN_ID and WRIGHTY_CLAIM_TOKEN "
            "are not set"
        )
    return run_id, token


def _no_claim(run_id: str) -> str:
    return (
        f"run {run_id} no longer holds its claim (it ended, or the item moved on); "
        "nothing was recorded"
    )


def _report_from_run(
    ctx: typer.Context, report: AgentReport, reason: str | None, *, resets_at: str | None = None
) -> None:
    from wrighty.domain.durations import MAX_RESET_SECONDS, parse_moment
    from wrighty.domain.redact import redact_known
    from wrighty.domain.times import rfc3339
    from wrighty.runenv import run_secrets, run_store
    from wrighty.services.items import record_agent_report

    run_id, token = _run_identity()
    if reason is not None:
        # One line, bounded, and no secrets: it ends up in the run's diagnostic.
        reason = " ".join(redact_known(reason, run_secrets(os.environ)).split())
        reason = reason[:MAX_AGENT_REASON]
    app_ctx = app_context(ctx)
    # The store the worker gave the run, without reading wrighty.json (runenv.py).
    with app_ctx.store(run_store(os.environ)) as store:
        moment = None
        if resets_at is not None:  # read on the fleet's clock: a wait counts from its now
            try:
                moment = parse_moment(resets_at, now=app_ctx.now(), at_most=MAX_RESET_SECONDS)
            except ValueError as error:
                raise WrightyError(f"--resets-at: {error}") from None
        landed = record_agent_report(
            store, run_id, claim_token=token, report=report.value, reason=reason, resets_at=moment
        )
    if not landed:
        raise WrightyError(_no_claim(run_id))
    said = [part for part in (reason, moment and f"resets at {rfc3339(moment)}") if part]
    typer.echo(
        printable_line(f"recorded: {report.value}" + (f" ({'; '.join(said)})" if said else ""))
    )


def _print_json_line(event: dict[str, Any]) -> None:
    from wrighty.operator.documents import json_text

    typer.echo(json_text(event, ascii_only=True))


def _print_event_line(event: dict[str, Any]) -> None:
    if "alias_of" in event:
        return  # an old name kept for JSON readers; a person reads the event once
    if event["event"] in PLAIN_SKIPS:
        return  # for programs that read the JSON form (when the worker waits)
    # Values come from outside: reasons, session ids, vendor text.
    details = " ".join(
        f"{key}={printable_line(plain_value(value))}"
        for key, value in event.items()
        if key not in ("event", "at", "worker_id") and value is not None
    )
    typer.echo(f"{event['at'][11:19]} {event['event']:<14} {details}".rstrip())


def plain_value(value: object) -> str:
    """A field's value as the plain form writes it: a list as its items joined by commas (none:
    ``-``), a boolean as ``true`` or ``false``, as the JSON form writes them; never Python's
    own spelling of a value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(plain_value(part) for part in value) or "-"
    return str(value)
