"""The commands on items: create, list, show, logs, and the operator's moves (queue, cancel,
requeue, release, reap)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wrighty.cli.common import (
    ItemId,
    JsonFlag,
    MaxCostOption,
    MaxTokensOption,
    app_context,
    console,
    file_option,
    stdin_text,
)
from wrighty.cli.documents import print_json
from wrighty.domain import suggestions
from wrighty.domain.model import (
    MAX_BODY_BYTES,
    MAX_ITEM_ID,
    Item,
)
from wrighty.domain.states import ItemState, parse_state
from wrighty.errors import WrightyError
from wrighty.operator.actions import reap_now
from wrighty.operator.context import AppContext
from wrighty.operator.documents import (
    item_detail_json,
    item_summary_json,
    item_usage_json,
    listed_item_json,
    reaped_json,
    scheduling_json,
    status_circuit_json,
    waiting_item_json,
)
from wrighty.operator.forms import (
    ItemOptions,
    check_names_of,
    chosen_checks,
    limit_options,
    new_item_of,
)
from wrighty.operator.sentences import created_line, edited_line, moved_line, reaped_lines

if TYPE_CHECKING:
    from rich.console import Console

    from wrighty.domain.model import Dependency, Stream
    from wrighty.services.show import ShowFacts

MAX_REAP_LIMIT = 100_000
PriorityOption = Annotated[
    str | None,
    typer.Option(
        "--priority", metavar="PRIORITY", help="0 (P0, the highest) to 3 (P3); the default is P2."
    ),
]
AfterOption = Annotated[
    list[int] | None,
    typer.Option(
        "--after",
        metavar="ID",
        min=1,
        max=MAX_ITEM_ID,
        help="Start only once this item is done (repeatable).",
    ),
]
VerifyOption = Annotated[
    list[str] | None,
    typer.Option(
        "--verify",
        metavar="CHECK",
        help="After a succeeded run, run only this check of wrighty.json's (repeatable).",
    ),
]
NoVerifyOption = Annotated[
    bool, typer.Option("--no-verify", help="Run no checks: a succeeded run is done.")
]


def _read_body(body: str | None, body_file: Path | None) -> str:
    if body is not None and body_file is not None:
        raise WrightyError("give the body once: --body or --body-file, not both")
    if body is not None:
        return body
    if body_file is not None and str(body_file) != "-":
        return file_option("--body-file", body_file, limit=MAX_BODY_BYTES)
    if body_file is None and (sys.stdin is None or sys.stdin.isatty()):
        raise WrightyError(
            "no task given: pass --body TEXT, --body-file PATH, or pipe the task on stdin"
        )
    return stdin_text("the task", limit=MAX_BODY_BYTES)


def create(
    ctx: typer.Context,
    title: Annotated[str, typer.Option("--title", help="One line saying what to do.")],
    body: Annotated[str | None, typer.Option("--body", help="The task given to the agent.")] = None,
    body_file: Annotated[
        Path | None,
        typer.Option("--body-file", help="Read the task from this file ('-' for stdin)."),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", metavar="NAME", help="Agent to run (default: worker.defaultAgent)."
        ),
    ] = None,
    timeout: Annotated[
        str | None,
        typer.Option("--timeout", metavar="DURATION", help="Run time limit, e.g. 30m or 1h30m."),
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
    max_cost_usd: MaxCostOption = None,
    max_tokens: MaxTokensOption = None,
    priority: PriorityOption = None,
    after: AfterOption = None,
    verify: VerifyOption = None,
    no_verify: NoVerifyOption = False,
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            metavar="LABEL",
            help="A label, for limits.labels.<label>.maxConcurrent (repeatable).",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Add an item. The task comes from --body, --body-file, or standard input."""
    from wrighty.services import items as item_service

    app_ctx = app_context(ctx)
    options = ItemOptions(
        title=title,
        agent=agent,
        timeout=timeout,
        workspace=workspace,
        queue=queue,
        max_cost_usd=max_cost_usd,
        max_tokens=max_tokens,
        priority=priority,
        after=tuple(after or ()),
        labels=tuple(label or ()),
        verify=tuple(verify or ()),
        no_verify=no_verify,
    )
    new = new_item_of(
        app_ctx.config().config, options, functools.partial(_read_body, body, body_file)
    )
    with app_ctx.store() as store:
        item = item_service.create_item(store, new, now=app_ctx.now())
    if as_json:
        print_json(item_summary_json(item))
    else:
        typer.echo(created_line(item, new))


def edit(
    ctx: typer.Context,
    item_id: ItemId,
    priority: PriorityOption = None,
    after: AfterOption = None,
    not_after: Annotated[
        list[int] | None,
        typer.Option(
            "--not-after",
            metavar="ID",
            min=1,
            max=MAX_ITEM_ID,
            help="No longer wait for this item (repeatable).",
        ),
    ] = None,
    verify: VerifyOption = None,
    no_verify: NoVerifyOption = False,
    verify_default: Annotated[
        bool,
        typer.Option("--verify-default", help="Run the checks wrighty.json gives its agent."),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Change the priority, dependencies or checks of an item that is not running or
    finished."""
    from wrighty.domain.scheduling import parse_priority
    from wrighty.domain.transitions import KEEP, Keep
    from wrighty.services import items as item_service

    if (
        priority is None
        and not after
        and not not_after
        and not verify
        and not no_verify
        and (not verify_default)
    ):
        raise WrightyError(
            f"say what to change: `wrighty edit {item_id} --priority P0`, `--after ID`, "
            "`--not-after ID`, `--verify CHECK`, `--no-verify` or `--verify-default`"
        )
    if verify_default and (verify or no_verify):
        raise WrightyError("give --verify-default alone, without --verify or --no-verify")
    checks: tuple[str, ...] | Keep | None = KEEP  # as the item has them
    if verify_default:
        checks = None
    elif verify or no_verify:
        checks = chosen_checks(verify, no_verify)
    chosen = None if priority is None else parse_priority(priority)
    app_ctx = app_context(ctx)
    check_names = check_names_of(app_ctx.config().config)
    with app_ctx.store() as store:
        change = item_service.edit_item(
            store,
            item_id,
            now=app_ctx.now(),
            priority=chosen,
            after=list(dict.fromkeys(after or ())),
            not_after=list(dict.fromkeys(not_after or ())),
            verify_checks=checks,
            check_names=check_names,
        )
    if as_json:
        print_json(item_summary_json(change.after))
    else:
        typer.echo(edited_line(change))


def list_items(
    ctx: typer.Context,
    state: Annotated[
        list[str] | None,
        typer.Option("--state", metavar="STATE", help="Only items in this state (repeatable)."),
    ] = None,
    attention: Annotated[
        bool,
        typer.Option(
            "--attention",
            help="Only needs-attention items, longest waiting first (= --state needs-attention).",
        ),
    ] = False,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="DURATION|TIME",
            help="Only items that moved (any event) since then: 12h, 2026-12-05T18:00 (this "
            "machine's time zone), 2026-12-05T18:00Z, or 18:00 (its latest past one).",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """List items, oldest first; needs-attention items alone: longest waiting first."""
    try:
        states = [parse_state(s) for s in state or []]
    except ValueError as error:
        raise WrightyError(f"--state: {error}") from None
    app_ctx = app_context(ctx)
    moment = None if since is None else _since_moment(app_ctx, since)
    if attention:
        if any(s is not ItemState.NEEDS_ATTENTION for s in states):
            raise WrightyError("--attention lists needs-attention items only; leave out --state")
        states = [ItemState.NEEDS_ATTENTION]
    if set(states) == {ItemState.NEEDS_ATTENTION} and moment is None:
        _list_needing_attention(app_ctx, as_json)
        return
    from wrighty.domain.usage import total
    from wrighty.services import items as item_service
    from wrighty.services import usage as usage_service
    from wrighty.services.show import held, ledger_settings, scheduling_settings

    with app_ctx.store() as store:
        items = item_service.list_items(store, states, moved_since=moment)
        holds = held(app_ctx, store, items)
        edges = store.list_dependencies()
        labels = store.list_labels()
        limits, default_agent = scheduling_settings(app_ctx)
        waits = item_service.scheduling_waits(
            store, items, limits=limits, default_agent=default_agent, edges=edges, labels=labels
        )
        verified = store.verified_items([item.id for item in items])  # one read for them all
        # One read of the ledger for every item's total (--since: the listed items' runs alone).
        totals = (
            usage_service.item_totals(
                store,
                default_agent=ledger_settings(app_ctx)[1],
                item_ids=None if moment is None else [item.id for item in items],
            )
            if as_json
            else {}
        )
    if as_json:
        nothing = total(())
        after: dict[int, list[Dependency]] = {}
        for edge in edges:
            after.setdefault(edge.item_id, []).append(edge)
        print_json(
            [
                listed_item_json(
                    item,
                    totals.get(item.id, nothing),
                    holds.get(item.id),
                    scheduling_json(
                        labels.get(item.id, ()), after.get(item.id, ()), waits.get(item.id)
                    ),
                    verified=verified.get(item.id),
                )
                for item in items
            ]
        )
    elif not items:
        typer.echo(
            "no items"
            + (f" in state {', '.join(states)}" if states else "")
            + (f" moved since {since}" if since is not None else "")
        )
    else:
        from wrighty.cli.render import Trimmed, held_lines, items_table, wait_lines

        table = items_table(items, verified, default_agent=default_agent)
        console().print(Trimmed(table))
        for line in held_lines(items, holds) + wait_lines(items, waits):
            console().print(line)


def _since_moment(app_ctx: AppContext, text: str) -> datetime:
    """--since's moment: a look back from the fleet's time, or a time; a time without an offset
    is read in this machine's time zone."""
    from wrighty.domain.morning import parse_since
    from wrighty.domain.times import local_zone

    now = app_ctx.now()
    try:
        return parse_since(text, now=now, zone=local_zone(now))
    except ValueError as error:
        raise WrightyError(f"--since: {error}") from None


def _list_needing_attention(app_ctx: AppContext, as_json: bool) -> None:
    from wrighty.domain.usage import total
    from wrighty.services import items as item_service
    from wrighty.services import usage as usage_service
    from wrighty.services.show import ledger_settings

    with app_ctx.store() as store:
        waiting = item_service.items_needing_attention(store)
        totals, verified = (
            (
                usage_service.item_totals(store, default_agent=ledger_settings(app_ctx)[1]),
                store.verified_items([entry.item.id for entry in waiting]),  # one read
            )
            if as_json
            else ({}, {})
        )
    if as_json:
        nothing = total(())
        print_json(
            [
                waiting_item_json(
                    entry, totals.get(entry.item.id, nothing), verified.get(entry.item.id)
                )
                for entry in waiting
            ]
        )
    elif not waiting:
        typer.echo(f"no items in state {ItemState.NEEDS_ATTENTION}")
    else:
        from wrighty.cli.render import attention_table

        console().print(attention_table(waiting))


def show(ctx: typer.Context, item_id: ItemId, as_json: JsonFlag = False) -> None:
    """Show an item: its fields, session, runs and history."""
    from wrighty.services.show import show_facts

    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        facts = show_facts(app_ctx, store, item_id)
    if as_json:
        document = item_detail_json(
            facts.detail,
            resumable=facts.resumable,
            crash_retry=facts.crash_retry,
            usage_retry=facts.usage_retry,
            max_fix_turns=facts.max_fix_turns,
        )
        print_json(
            {
                **document,
                "circuit": status_circuit_json(facts.circuit) if facts.circuit else None,
                **item_usage_json(facts.spent, facts.budget, facts.hold),
            }
        )
        return
    print_show(console(), facts)


def print_show(out: Console, facts: ShowFacts) -> None:
    """`wrighty show`'s text, printed to ``out``."""
    from wrighty.cli.render import print_item_detail
    from wrighty.operator.showing import known_of

    print_item_detail(
        out, facts.detail, facts.standing, change_stat=facts.change_stat, **known_of(facts)
    )


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
    from wrighty.config import STATE_DIRNAME
    from wrighty.domain.output import output_bytes, printable_output
    from wrighty.installation import installation_id
    from wrighty.services import items as item_service
    from wrighty.services.runlogs import (
        LogReader,
        check_logs_here,
        follow_output,
        print_output,
        run_log_dir,
    )

    # Raw bytes go to the stream's binary buffer as they are; shown to a person, both streams
    # are told apart by a line where one follows the other.
    write = _writer(
        output_bytes if raw else printable_output, marked=stream is LogStreams.BOTH and not raw
    )
    app_ctx = app_context(ctx)
    state_dir = app_ctx.config().root / STATE_DIRNAME
    with app_ctx.store() as store:
        chosen = item_service.find_run(store, item_id, run)
        log_dir = run_log_dir(state_dir, chosen)
        check_logs_here(chosen, log_dir, installation_id=installation_id())
        secrets = app_ctx.secrets()
        readers = [
            LogReader(log_dir / f"{name}.log", name, secrets=secrets) for name in _LOG_FILES[stream]
        ]
        if not follow:
            print_output(readers, final=chosen.ended_at is not None, write=write)
            return

        def run_open() -> bool:
            current = item_service.get_run(store, chosen.run_id)
            return current is not None and current.ended_at is None

        follow_output(
            readers,
            run_open=run_open,
            write=write,
            sleep=app_ctx.sleep,
            interval=FOLLOW_POLL_SECONDS,
        )


def _writer(
    convert: Callable[[str], str | bytes], *, marked: bool
) -> Callable[[Stream, str], None]:
    """Writes a stream's output, converted, to the same stream of wrighty's. ``marked``: where
    one stream's output follows the other's, a line `── stderr ──` (or `── stdout ──`) first,
    on the stream that follows, and the line before it ended (a terminal shows both as one)."""
    last: list[tuple[Stream, str]] = []  # the stream written last, and the end of its text

    def write(stream: Stream, text: str) -> None:
        if marked and last and last[-1][0] != stream:
            before, tail = last[-1]
            if not tail.endswith("\n"):
                typer.echo("", err=before == "stderr")
            typer.echo(f"── {stream} ──", err=stream == "stderr")
        typer.echo(convert(text), nl=False, err=stream == "stderr")
        last[:] = [(stream, text)]

    return write


def queue_command(ctx: typer.Context, item_id: ItemId, as_json: JsonFlag = False) -> None:
    """Queue a todo item so that a worker can take it."""
    from wrighty.services import items as item_service

    _operator_move(ctx, item_service.queue_item, item_id, as_json)


def cancel(ctx: typer.Context, item_id: ItemId, as_json: JsonFlag = False) -> None:
    """Cancel an item that has not finished. Cancelled is final."""
    from wrighty.services import items as item_service

    _operator_move(ctx, item_service.cancel_item, item_id, as_json)


def requeue(
    ctx: typer.Context,
    item_id: ItemId,
    resume: Annotated[
        bool, typer.Option("--resume", help="Resume the recorded session now (same workspace).")
    ] = False,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Start over: a new session, same workspace.")
    ] = False,
    max_cost_usd: MaxCostOption = None,
    max_tokens: MaxTokensOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Put a needs-attention or retry-scheduled item back to work: --resume or --fresh
    (--max-cost-usd / --max-tokens give it a new budget of its own)."""
    from wrighty.services import items as item_service

    if resume == fresh:
        raise WrightyError(
            f"say how item {item_id} starts again: "
            f"`{suggestions.requeue(item_id, resume=True)}` (same session) or "
            f"`{suggestions.requeue(item_id, resume=False)}` (new session)"
        )
    budget = limit_options(max_cost_usd, max_tokens)
    move = functools.partial(item_service.requeue_item, resume=resume, budget=budget)
    _operator_move(ctx, move, item_id, as_json)


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
    from wrighty.services import items as item_service

    if not force:
        raise WrightyError(
            f"release takes item {item_id} away from its worker; if that worker is really "
            f"gone, run `wrighty release {item_id} --force` (or wait for the reaper)"
        )
    _operator_move(ctx, item_service.release_item, item_id, as_json)


def reap(
    ctx: typer.Context,
    limit: Annotated[
        int,
        typer.Option("--limit", min=1, max=MAX_REAP_LIMIT, help="Reap at most this many items."),
    ] = 100,
    as_json: JsonFlag = False,
) -> None:
    """Settle running items whose worker stopped renewing its lease (run once)."""
    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        changes = reap_now(app_ctx, store, limit=limit)
    if as_json:
        print_json([reaped_json(change) for change in changes])
    else:
        for line in reaped_lines(changes):
            typer.echo(line)


def _operator_move(
    ctx: typer.Context, action: Callable[..., Item], item_id: int, as_json: bool
) -> None:
    """Run one operator action (a services function) on an item and report where it went."""
    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        item = action(store, item_id, now=app_ctx.now())
    if as_json:
        print_json(item_summary_json(item))
    else:
        typer.echo(moved_line(item))
