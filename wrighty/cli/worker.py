"""The commands of a run: `worker start`, which claims items and runs their agent, and
`finish` and `fail`, which an agent runs from inside its run."""

from __future__ import annotations

import json
import os
import signal
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wrighty.cli.common import EXIT_INTERRUPTED, WrightyGroup, app_context, seconds_option
from wrighty.domain.durations import MAX_IDLE_TIMEOUT_SECONDS
from wrighty.domain.model import MAX_ITEM_ID
from wrighty.domain.text import printable_line
from wrighty.errors import WrightyError

if TYPE_CHECKING:
    from wrighty.domain.classify import AgentReport
    from wrighty.worker.loop import Worker

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
        typer.Option("--item", min=1, max=MAX_ITEM_ID, help="Work on this item only."),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Run this agent (default: worker.defaultAgent).")
    ] = None,
    max_items: Annotated[
        int | None, typer.Option("--max-items", min=1, help="Stop after this many items.")
    ] = None,
    idle_timeout: Annotated[
        str | None, typer.Option("--idle-timeout", help="Stop after idling this long, e.g. 5m.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON lifecycle event per line.")
    ] = False,
) -> None:
    """Claim queued items and run their agent until stopped (Ctrl-C stops cleanly)."""
    from wrighty.installation import installation_id
    from wrighty.supervisor.linux import become_subreaper
    from wrighty.worker.loop import Worker, WorkerOptions

    idle_seconds = seconds_option("--idle-timeout", idle_timeout, MAX_IDLE_TIMEOUT_SECONDS)
    app_ctx = app_context(ctx)
    loaded = app_ctx.config()
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
            emit=_print_json_line if as_json else _print_event_line,
            now=app_ctx.now,
        )
        signals = _stop_on_signals(worker)
        worker.run(options)
    if signals:
        raise typer.Exit(EXIT_INTERRUPTED)


def _stop_on_signals(worker: Worker) -> list[int]:
    """First SIGINT/SIGTERM: stop claiming and settle the running agent cleanly. Second: force.

    Returns the list that records the signals received.
    """
    received: list[int] = []

    def handle(signum: int, _frame: object) -> None:
        received.append(signum)
        if len(received) > 1:
            raise KeyboardInterrupt
        typer.echo(
            "wrighty: stopping after the running agent is settled (again to force)", err=True
        )
        worker.request_stop()

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)
    return received


def finish(ctx: typer.Context) -> None:
    """From inside a run: report that the task is done (the agent still exits as usual)."""
    from wrighty.domain.classify import AgentReport

    _report_from_run(ctx, AgentReport.FINISHED, None)


def fail(
    ctx: typer.Context,
    reason: Annotated[str, typer.Option("--reason", help="Why the task failed, in one line.")],
) -> None:
    """From inside a run: report that the task failed; the run ends as agent-failure."""
    from wrighty.domain.classify import AgentReport

    _report_from_run(ctx, AgentReport.FAILED, reason)


def _report_from_run(ctx: typer.Context, report: AgentReport, reason: str | None) -> None:
    from wrighty.domain.redact import redact
    from wrighty.services.items import record_agent_report

    run_id = os.environ.get("WRIGHTY_RUN_ID")
    token = os.environ.get("WRIGHTY_CLAIM_TOKEN")
    if not run_id or not token:
        raise WrightyError(
            "this command runs inside an agent's run: WRIGHTY_RUN_ID and WRIGHTY_CLAIM_TOKEN "
            "are not set"
        )
    if reason is not None:
        # One line, bounded, and no secrets: it ends up in the run's diagnostic.
        reason = redact(" ".join(reason.split()))[:MAX_AGENT_REASON]
    with app_context(ctx).store() as store:
        landed = record_agent_report(
            store, run_id, claim_token=token, report=report.value, reason=reason
        )
    if not landed:
        raise WrightyError(
            f"run {run_id} no longer holds its claim (it ended, or the item moved on); "
            "nothing was recorded"
        )
    typer.echo(printable_line(f"recorded: {report.value}" + (f" ({reason})" if reason else "")))


def _print_json_line(event: dict[str, Any]) -> None:
    typer.echo(json.dumps(event, sort_keys=False))


def _print_event_line(event: dict[str, Any]) -> None:
    if "alias_of" in event:
        return  # an old name kept for JSON readers; a person reads the event once
    # Values come from outside: reasons, session ids, vendor text.
    details = " ".join(
        f"{key}={printable_line(str(value))}"
        for key, value in event.items()
        if key not in ("event", "at", "worker_id") and value is not None
    )
    typer.echo(f"{event['at'][11:19]} {event['event']:<14} {details}".rstrip())
