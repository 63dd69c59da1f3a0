"""The `wrighty` command: thin commands over the services, rendered with rich or as JSON."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import signal
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

try:  # typer 0.2x ships its own copy of click
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - older typer, on click itself
    from click.exceptions import UsageError  # type: ignore[no-redef,import-not-found,unused-ignore]

from wrighty import __version__, services
from wrighty.agents import AgentPlan, describe_agent, plan_agent, probe_agent
from wrighty.cli.context import AppContext
from wrighty.cli.flags import show_flags_without_a_value
from wrighty.cli.health import (
    status_json,
    status_prometheus,
    status_view,
    watch_status,
    worker_json,
    workers_table,
)
from wrighty.cli.render import (
    OutputConsole,
    agent_json,
    agents_table,
    attention_table,
    item_detail_json,
    item_summary_json,
    items_table,
    print_item_detail,
    print_json,
    reaped_json,
    waiting_item_json,
)
from wrighty.cli.suggestions import Standing
from wrighty.config import (
    CONFIG_FILENAME,
    DEFAULT_STORE_URL,
    STATE_DIRNAME,
    WrightyConfig,
    check_config_text,
    config_json_schema,
    find_config,
    read_config_text,
)
from wrighty.domain.claims import lease_expired
from wrighty.domain.classify import AgentReport
from wrighty.domain.durations import (
    MAX_IDLE_TIMEOUT_SECONDS,
    MAX_ITEM_TIMEOUT_SECONDS,
    MAX_QUEUE_WAIT_SECONDS,
    MAX_WORKER_AGE_SECONDS,
    parse_duration,
)
from wrighty.domain.health import Thresholds
from wrighty.domain.model import MAX_BODY_BYTES, MAX_ITEM_ID, Item, NewItem, Run
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.redact import redact
from wrighty.domain.states import TERMINAL_STATES, ItemState, parse_state
from wrighty.domain.text import printable_line
from wrighty.domain.transitions import validate_new_item
from wrighty.errors import ConfigError, WrightyError
from wrighty.inputs import InputError, read_text_file, read_text_stream
from wrighty.installation import installation_id
from wrighty.project import (
    config_document,
    ensure_gitignored,
    write_json_file,
    write_schema_copy,
)
from wrighty.runlogs import (
    LogReader,
    Stream,
    check_logs_here,
    follow_output,
    logs_problem,
    output_bytes,
    print_output,
    printable_output,
    run_log_dir,
)
from wrighty.store import init_store, parse_store_url
from wrighty.supervisor.linux import become_subreaper
from wrighty.worker import Worker, WorkerOptions

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
MAX_AGENT_REASON = 500
MAX_REAP_LIMIT = 100_000


def _refuse(message: str, exit_code: int = EXIT_USAGE) -> NoReturn:
    """One line on stderr, with no control character of the user's input left in it."""
    typer.echo(f"wrighty: {printable_line(message)}", err=True)
    raise typer.Exit(exit_code)


def _usage_line(error: UsageError) -> str:
    where = f" (see `{error.ctx.command_path} --help`)" if error.ctx is not None else ""
    return " ".join(error.format_message().split()) + where


class WrightyGroup(typer.core.TyperGroup):
    """Reports a WrightyError or a usage error (an unknown option, a value of the wrong type)
    from any command as one line on stderr with exit code 2."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except UsageError as error:
            _refuse(_usage_line(error))

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except UsageError as error:
            _refuse(_usage_line(error))
        except WrightyError as error:
            _refuse(str(error), error.exit_code)
        except KeyboardInterrupt:
            _refuse("interrupted", EXIT_INTERRUPTED)


app = typer.Typer(
    cls=WrightyGroup,
    help="Supervise unattended coding agents working through a queue of items.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(cls=WrightyGroup, help="Check and describe wrighty.json.")
app.add_typer(config_app, name="config")

console = OutputConsole(highlight=False, soft_wrap=False)
show_flags_without_a_value()

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON (docs/json.md).")]
# Bounded by the stores' 64-bit ids, so a larger number is refused instead of crashing a query.
ItemId = Annotated[int, typer.Argument(help="The item's id.", min=1, max=MAX_ITEM_ID)]


def _context(ctx: typer.Context) -> AppContext:
    obj = ctx.find_root().obj
    assert isinstance(obj, AppContext)
    return obj


def _version(value: bool) -> None:
    if value:
        typer.echo(f"wrighty {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            envvar="WRIGHTY_CONFIG",
            help="wrighty.json to use (default: the nearest one upward from here).",
            dir_okay=False,
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            envvar="WRIGHTY_STORE",
            help="State store URL or path; overrides store.url in wrighty.json.",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    ctx.obj = AppContext(config_option=config, store_option=store)


def main() -> NoReturn:
    """Console-script entry point."""
    sys.exit(app())  # pragma: no cover - typer raises SystemExit itself


# -- init -------------------------------------------------------------------------------------


@app.command()
def init(
    ctx: typer.Context,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing wrighty.json with defaults.")
    ] = False,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Where the state lives: a SQLite path or postgresql://... "
            "(same as the global --store).",
        ),
    ] = None,
) -> None:
    """Create wrighty.json and the state store here (safe to run again)."""
    app_ctx = _context(ctx)
    if store is not None:
        app_ctx = dataclasses.replace(app_ctx, store_option=store)
    config_path = (app_ctx.config_option or app_ctx.cwd / CONFIG_FILENAME).absolute()
    root_dir = config_path.parent
    config_existed = config_path.exists()
    keep_existing = config_existed and not force
    kept_url = app_ctx.config().config.store.url if keep_existing else DEFAULT_STORE_URL
    if app_ctx.store_option is not None:
        target = parse_store_url(app_ctx.store_option, base=app_ctx.cwd)
    else:
        target = parse_store_url(kept_url, base=root_dir)
    done: list[str] = []
    verb = {"created": "created", "migrated": "opened (and migrated)", "opened": "opened"}
    done.append(f"{verb[init_store(target)]} store {target.describe()}")
    write_schema_copy(root_dir)
    store_url = None if app_ctx.store_option is None else target.url()
    # Without --force an existing file is kept, also one that a racing init wrote meanwhile.
    if not keep_existing and write_json_file(
        config_path, config_document(store_url), replace=config_existed
    ):
        done.append(f"{'replaced' if config_existed else 'created'} {config_path}")
    else:
        done.append(f"kept existing {config_path} (use --force to replace it)")
    if ensure_gitignored(root_dir):
        done.append(f"added .wrighty/ to {root_dir / '.gitignore'}")
    done.append(f"installation {installation_id()}")
    for line in done:
        typer.echo(printable_line(line))


# -- items ------------------------------------------------------------------------------------


def _read_body(body: str | None, body_file: Path | None) -> str:
    if body is not None and body_file is not None:
        raise WrightyError("give the body once: --body or --body-file, not both")
    if body is not None:
        return body
    if body_file is not None and str(body_file) != "-":
        try:
            return read_text_file(body_file, limit=MAX_BODY_BYTES)
        except FileNotFoundError:
            raise WrightyError(f"--body-file {body_file}: no such file") from None
        except OSError as error:
            why = (error.strerror or type(error).__name__).lower()
            raise WrightyError(f"--body-file {body_file}: cannot read ({why})") from None
        except InputError as error:
            raise WrightyError(f"--body-file {body_file}: {error}") from None
    if body_file is None and sys.stdin.isatty():
        raise WrightyError(
            "no task given: pass --body TEXT, --body-file PATH, or pipe the task on stdin"
        )
    try:
        return read_text_stream(sys.stdin.buffer, limit=MAX_BODY_BYTES)
    except InputError as error:
        raise WrightyError(f"the task on standard input {error}") from None


@app.command()
def create(
    ctx: typer.Context,
    title: Annotated[str, typer.Option("--title", help="One line saying what to do.")],
    body: Annotated[str | None, typer.Option("--body", help="The task given to the agent.")] = None,
    body_file: Annotated[
        Path | None,
        typer.Option("--body-file", help="Read the task from this file ('-' for stdin)."),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Agent to run (default: worker.defaultAgent).")
    ] = None,
    timeout: Annotated[
        str | None, typer.Option("--timeout", help="Run time limit, e.g. 30m or 1h30m.")
    ] = None,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace", help="Pin the agent to this directory (default: worker.workspaceMode)."
        ),
    ] = None,
    queue: Annotated[
        bool, typer.Option("--queue", help="Queue it right away instead of leaving it todo.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Add an item. The task comes from --body, --body-file, or standard input."""
    app_ctx = _context(ctx)
    loaded = app_ctx.config()
    if agent is not None and agent not in loaded.config.agent_names():
        known = ", ".join(loaded.config.agent_names())
        raise WrightyError(f"--agent {agent}: unknown agent (known: {known}); see docs/config.md")
    timeout_seconds = _seconds_option("--timeout", timeout, MAX_ITEM_TIMEOUT_SECONDS)
    workspace_path = workspace.absolute() if workspace else None
    if workspace_path is not None and not workspace_path.is_dir():
        raise WrightyError(f"--workspace {workspace}: no such directory")
    new = NewItem(
        title=title,
        body=_read_body(body, body_file),
        agent=agent,
        timeout_seconds=timeout_seconds,
        workspace=str(workspace_path) if workspace_path else None,
        initial_state=ItemState.QUEUED if queue else ItemState.TODO,
    )
    validate_new_item(new)
    with app_ctx.store() as store:
        item = services.create_item(store, new, now=app_ctx.now())
    if as_json:
        print_json(console, item_summary_json(item))
    else:
        typer.echo(f"created item {item.id} ({item.state}): {printable_line(item.title)}")


@app.command("list")
def list_items(
    ctx: typer.Context,
    state: Annotated[
        list[str] | None,
        typer.Option("--state", help="Only items in this state (repeatable)."),
    ] = None,
    attention: Annotated[
        bool,
        typer.Option(
            "--attention",
            help="Only needs-attention items, longest waiting first (= --state needs-attention).",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """List items, oldest first; needs-attention items alone: longest waiting first."""
    try:
        states = [parse_state(s) for s in state or []]
    except ValueError as error:
        raise WrightyError(f"--state: {error}") from None
    if attention:
        if any(s is not ItemState.NEEDS_ATTENTION for s in states):
            raise WrightyError("--attention lists needs-attention items only; leave out --state")
        states = [ItemState.NEEDS_ATTENTION]
    if set(states) == {ItemState.NEEDS_ATTENTION}:
        _list_needing_attention(_context(ctx), as_json)
        return
    with _context(ctx).store() as store:
        items = store.list_items(states)
    if as_json:
        print_json(console, [item_summary_json(item) for item in items])
    elif not items:
        typer.echo("no items" + (f" in state {', '.join(states)}" if states else ""))
    else:
        console.print(items_table(items))


def _list_needing_attention(app_ctx: AppContext, as_json: bool) -> None:
    with app_ctx.store() as store:
        waiting = services.items_needing_attention(store)
    if as_json:
        print_json(console, [waiting_item_json(entry) for entry in waiting])
    elif not waiting:
        typer.echo(f"no items in state {ItemState.NEEDS_ATTENTION}")
    else:
        console.print(attention_table(waiting))


@app.command()
def show(ctx: typer.Context, item_id: ItemId, as_json: JsonFlag = False) -> None:
    """Show an item: its fields, session, runs and history."""
    app_ctx = _context(ctx)
    with app_ctx.store() as store:
        detail = services.item_detail(store, item_id)
    plan = _item_agent(app_ctx, detail.item.agent)
    resumable = (
        detail.session is not None
        and detail.item.state not in TERMINAL_STATES
        and (plan is None or plan.can_resume)
        and services.resume_address_complete(
            detail.session,
            installation_id=installation_id(),
            env={**os.environ, **(plan.env if plan else {})},
        )
    )
    max_attempts = _crash_retry_limit(app_ctx)
    if as_json:
        print_json(
            console, item_detail_json(detail, resumable=resumable, max_attempts=max_attempts)
        )
        return
    standing = Standing(
        resumable=resumable,
        has_logs=_has_logs(app_ctx, detail.runs),
        lease_expired=detail.item.state is ItemState.RUNNING
        and lease_expired(detail.item.lease_expires_at, app_ctx.now()),
    )
    print_item_detail(console, detail, standing, max_attempts=max_attempts)


def _has_logs(app_ctx: AppContext, runs: list[Run]) -> bool:
    """Whether `wrighty logs` would print the last run's output here."""
    if not runs:
        return False
    last = max(runs, key=lambda run: run.attempt)  # as `wrighty logs` picks it
    log_dir = run_log_dir(app_ctx.config().root / STATE_DIRNAME, last)
    return logs_problem(last, log_dir, installation_id=installation_id()) is None


def _crash_retry_limit(app_ctx: AppContext) -> int | None:
    """worker.processCrash.maxAttempts when the policy retries; None otherwise or unknown."""
    try:
        crash = app_ctx.config().config.worker.process_crash
    except WrightyError:
        return None
    return crash.max_attempts if crash.action == "retry" else None


def _item_agent(app_ctx: AppContext, agent: str | None) -> AgentPlan | None:
    """The agent that runs an item (whether it can resume; where its vendor keeps
    transcripts); None when the config does not say."""
    try:
        loaded = app_ctx.config()
        name = agent or loaded.config.worker.default_agent
        return plan_agent(loaded.config, name, project_root=loaded.root)
    except WrightyError:
        return None


class LogStreams(StrEnum):
    STDOUT = "stdout"
    STDERR = "stderr"
    BOTH = "both"


_LOG_FILES: dict[LogStreams, tuple[Stream, ...]] = {
    LogStreams.STDOUT: ("stdout",),
    LogStreams.STDERR: ("stderr",),
    LogStreams.BOTH: ("stdout", "stderr"),
}
FOLLOW_POLL_SECONDS = 0.5


@app.command()
def logs(
    ctx: typer.Context,
    item_id: ItemId,
    run: Annotated[
        int | None,
        typer.Option("--run", min=1, help="The run's attempt number (default: the last run)."),
    ] = None,
    follow: Annotated[
        bool,
        typer.Option("--follow", "-f", help="Keep printing new output until the run ends."),
    ] = False,
    stream: Annotated[
        LogStreams,
        typer.Option("--stream", help="The agent's stdout, its stderr, or both."),
    ] = LogStreams.BOTH,
    raw: Annotated[
        bool,
        typer.Option(
            "--raw",
            help="Write the bytes as the agent wrote them (secrets still redacted), "
            "control characters included: for a pipe into another tool.",
        ),
    ] = False,
) -> None:
    """Print a run's captured output with secrets redacted (stderr's on standard error)."""
    write = _write_raw if raw else _write_output
    app_ctx = _context(ctx)
    state_dir = app_ctx.config().root / STATE_DIRNAME
    with app_ctx.store() as store:
        chosen = services.find_run(store, item_id, run)
        log_dir = run_log_dir(state_dir, chosen)
        check_logs_here(chosen, log_dir, installation_id=installation_id())
        readers = [LogReader(log_dir / f"{name}.log", name) for name in _LOG_FILES[stream]]
        if not follow:
            print_output(readers, final=chosen.ended_at is not None, write=write)
            return

        def run_open() -> bool:
            current = store.get_run(chosen.run_id)
            return current is not None and current.ended_at is None

        follow_output(
            readers,
            run_open=run_open,
            write=write,
            sleep=app_ctx.sleep,
            interval=FOLLOW_POLL_SECONDS,
        )


def _write_output(stream: Stream, text: str) -> None:
    typer.echo(printable_output(text), nl=False, err=stream == "stderr")


def _write_raw(stream: Stream, text: str) -> None:
    # Bytes go to the stream's binary buffer as they are.
    typer.echo(output_bytes(text), nl=False, err=stream == "stderr")


@app.command("queue")
def queue_command(ctx: typer.Context, item_id: ItemId, as_json: JsonFlag = False) -> None:
    """Queue a todo item so that a worker can take it."""
    _operator_move(ctx, services.queue_item, item_id, as_json)


@app.command()
def cancel(ctx: typer.Context, item_id: ItemId, as_json: JsonFlag = False) -> None:
    """Cancel an item that has not finished. Cancelled is final."""
    _operator_move(ctx, services.cancel_item, item_id, as_json)


@app.command()
def requeue(
    ctx: typer.Context,
    item_id: ItemId,
    resume: Annotated[
        bool, typer.Option("--resume", help="Resume the recorded session now (same workspace).")
    ] = False,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Start over: a new session, same workspace.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Put a needs-attention or retry-scheduled item back to work: --resume or --fresh."""
    if resume == fresh:
        raise WrightyError(
            f"say how item {item_id} starts again: `wrighty requeue {item_id} --resume` "
            f"(same session) or `wrighty requeue {item_id} --fresh` (new session)"
        )
    _operator_move(ctx, functools.partial(services.requeue_item, resume=resume), item_id, as_json)


@app.command()
def release(
    ctx: typer.Context,
    item_id: ItemId,
    force: Annotated[
        bool,
        typer.Option("--force", help="Confirm that the item's worker is gone."),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Take a running item from a worker that is gone: it goes to needs-attention."""
    if not force:
        raise WrightyError(
            f"release takes item {item_id} away from its worker; if that worker is really "
            f"gone, run `wrighty release {item_id} --force` (or wait for the reaper)"
        )
    _operator_move(ctx, services.release_item, item_id, as_json)


@app.command()
def reap(
    ctx: typer.Context,
    limit: Annotated[
        int,
        typer.Option("--limit", min=1, max=MAX_REAP_LIMIT, help="Reap at most this many items."),
    ] = 100,
    as_json: JsonFlag = False,
) -> None:
    """Settle running items whose worker stopped renewing its lease (run once)."""
    app_ctx = _context(ctx)
    max_requeues = app_ctx.config().config.worker.max_requeues
    with app_ctx.store() as store:
        changes = services.reap_expired(
            store, now=app_ctx.now(), max_requeues=max_requeues, limit=limit
        )
    if as_json:
        print_json(console, [reaped_json(change) for change in changes])
    elif not changes:
        typer.echo("nothing to reap")
    else:
        for change in changes:
            after = change.after
            reason = printable_line(after.reason or "")
            typer.echo(f"item {after.id}: running -> {after.state}: {reason}")


def _operator_move(
    ctx: typer.Context, action: Callable[..., Item], item_id: int, as_json: bool
) -> None:
    """Run one operator action (a services function) on an item and report where it went."""
    app_ctx = _context(ctx)
    with app_ctx.store() as store:
        item = action(store, item_id, now=app_ctx.now())
    if as_json:
        print_json(console, item_summary_json(item))
    else:
        typer.echo(f"item {item.id} is {item.state}")


# -- worker -----------------------------------------------------------------------------------

worker_app = typer.Typer(cls=WrightyGroup, help="Run a worker that claims items and runs agents.")
app.add_typer(worker_app, name="worker")


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
    idle_seconds = _seconds_option("--idle-timeout", idle_timeout, MAX_IDLE_TIMEOUT_SECONDS)
    app_ctx = _context(ctx)
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


# -- health -----------------------------------------------------------------------------------


def _seconds_option(name: str, value: str | None, at_most: float) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value, at_most=at_most)
    except ValueError as error:
        raise WrightyError(f"{name}: {error}") from None


WorkerMaxAge = Annotated[
    str | None,
    typer.Option(
        "--worker-max-age",
        help="A worker is live if its heartbeat is this recent, e.g. 60s "
        "(default: status.workerMaxAgeSeconds).",
    ),
]


@app.command()
def workers(
    ctx: typer.Context, worker_max_age: WorkerMaxAge = None, as_json: JsonFlag = False
) -> None:
    """The registered workers, with their liveness."""
    max_age = _seconds_option("--worker-max-age", worker_max_age, MAX_WORKER_AGE_SECONDS)
    app_ctx = _context(ctx)
    settings = app_ctx.config().config.status
    with app_ctx.store() as store:
        views = services.worker_views(
            store,
            now=app_ctx.now(),
            max_age_seconds=max_age or settings.worker_max_age_seconds,
            installation_id=installation_id(),
        )
    if as_json:
        print_json(console, [worker_json(view) for view in views])
    elif views:
        console.print(workers_table(views))
    else:
        typer.echo("no registered workers")


@app.command()
def status(
    ctx: typer.Context,
    max_queue_wait: Annotated[
        str | None, typer.Option("--max-queue-wait", help="Unhealthy if an item waited longer.")
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
    output_format: Annotated[
        str, typer.Option("--format", help="text, json or prometheus.")
    ] = "text",
    watch: Annotated[
        bool, typer.Option("--watch", help="Keep a live view in the terminal (Ctrl-C stops).")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Is the queue healthy? Counts, waits, expired leases, workers; exit 1 when unhealthy."""
    fmt = "json" if as_json else output_format
    if fmt not in ("text", "json", "prometheus"):
        raise WrightyError(f"--format: expected text, json or prometheus, got {output_format!r}")
    if watch and fmt != "text":
        raise WrightyError("--watch shows the terminal view; leave out --json and --format")
    wait_limit = _seconds_option("--max-queue-wait", max_queue_wait, MAX_QUEUE_WAIT_SECONDS)
    max_age = _seconds_option("--worker-max-age", worker_max_age, MAX_WORKER_AGE_SECONDS)
    app_ctx = _context(ctx)
    settings = app_ctx.config().config.status
    thresholds = Thresholds(
        max_queue_wait_seconds=wait_limit or settings.max_queue_wait_seconds,
        min_workers=settings.min_workers if min_workers is None else min_workers,
        max_expired_leases=settings.max_expired_leases
        if max_expired_leases is None
        else max_expired_leases,
        max_needs_attention=settings.max_needs_attention
        if max_needs_attention is None
        else max_needs_attention,
    )
    with app_ctx.store() as store:

        def report() -> services.StatusReport:
            return services.status_report(
                store,
                now=app_ctx.now(),
                thresholds=thresholds,
                worker_max_age_seconds=max_age or settings.worker_max_age_seconds,
                installation_id=installation_id(),
            )

        if watch:
            watch_status(console, lambda: status_view(report()))
            return
        current = report()
    if fmt == "json":
        print_json(console, status_json(current))
    elif fmt == "prometheus":
        typer.echo(status_prometheus(current), nl=False)
    else:
        console.print(status_view(current))
    if not current.healthy:
        raise typer.Exit(1)


# -- agents -----------------------------------------------------------------------------------


@app.command()
def agents(
    ctx: typer.Context,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Only this agent (default: every one known).")
    ] = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Run each installed agent once for real on a tiny task."),
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="Confirm --check: a real run may spend usage.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """The agents wrighty knows: installed where, which version, with which permission flags."""
    if check and not yes:
        raise WrightyError(
            "--check starts each agent for real and may spend usage or credits; "
            "add --yes to go ahead"
        )
    app_ctx = _context(ctx)
    if find_config(app_ctx.cwd, app_ctx.config_option) is None:
        config, root = WrightyConfig(), app_ctx.cwd  # outside a project: built-in defaults
    else:
        loaded = app_ctx.config()  # a broken wrighty.json is reported, not ignored
        config, root = loaded.config, loaded.root
    names = [agent] if agent else [n for n in config.agent_names() if n != "command"]
    plans = [plan_agent(config, name, project_root=root) for name in names]
    rows = []
    for plan in plans:
        info = describe_agent(plan)
        rows.append((info, probe_agent(plan) if check and info.path else None))
    if as_json:
        print_json(console, [agent_json(info, result) for info, result in rows])
    else:
        console.print(agents_table(rows))
    if any(r is not None and r.outcome_class is not OutcomeClass.SUCCEEDED for _, r in rows):
        raise typer.Exit(1)


@app.command()
def finish(ctx: typer.Context) -> None:
    """From inside a run: report that the task is done (the agent still exits as usual)."""
    _report_from_run(ctx, AgentReport.FINISHED, None)


@app.command()
def fail(
    ctx: typer.Context,
    reason: Annotated[str, typer.Option("--reason", help="Why the task failed, in one line.")],
) -> None:
    """From inside a run: report that the task failed; the run ends as agent-failure."""
    _report_from_run(ctx, AgentReport.FAILED, reason)


def _report_from_run(ctx: typer.Context, report: AgentReport, reason: str | None) -> None:
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
    with _context(ctx).store() as store:
        landed = store.record_agent_report(
            run_id, claim_token=token, report=report.value, reason=reason
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
    # Values come from outside: reasons, session ids, vendor text.
    details = " ".join(
        f"{key}={printable_line(str(value))}"
        for key, value in event.items()
        if key not in ("event", "at", "worker_id") and value is not None
    )
    typer.echo(f"{event['at'][11:19]} {event['event']:<14} {details}".rstrip())


# -- config -----------------------------------------------------------------------------------


@config_app.command("validate")
def config_validate(
    ctx: typer.Context,
    path: Annotated[
        Path | None,
        typer.Argument(help="Config file to check (default: the one wrighty would use)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Check wrighty.json: print ok, or every problem as `JSON path: message`."""
    app_ctx = _context(ctx)
    target = path or find_config(app_ctx.cwd, app_ctx.config_option)
    if target is None:
        raise ConfigError(f"no {CONFIG_FILENAME} here or above; run `wrighty init`")
    _, problems = check_config_text(read_config_text(target))
    if as_json:
        print_json(
            console,
            {
                "path": str(target),
                "valid": not problems,
                "problems": [{"path": p.path, "message": p.message} for p in problems],
            },
        )
    elif problems:
        for problem in problems:
            typer.echo(printable_line(str(problem)))
    else:
        typer.echo("ok")
    if problems:
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        raise WrightyError(f"{target}: {count}, listed on standard output")


@config_app.command("schema")
def config_schema() -> None:
    """Print the JSON Schema of wrighty.json."""
    print_json(console, config_json_schema())
