"""The sources (docs/sources.md): `wrighty sources` (alone, or `sources list`) shows each
tracker's health, `wrighty sources sync` makes its open, labelled issues items now. A worker
syncs them on its own every `sources.pollSeconds`; the work is services/sources.py's."""

from __future__ import annotations

import os
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wrighty.cli.common import JsonFlag, WrightyGroup, app_context
from wrighty.cli.documents import print_json
from wrighty.domain.text import printable_line
from wrighty.domain.times import rfc3339
from wrighty.errors import WrightyError
from wrighty.richtext import local_time

if TYPE_CHECKING:
    from collections.abc import Callable

    from wrighty.domain.sources import SourceSettings, SourceState
    from wrighty.operator.context import AppContext
    from wrighty.services.conversation import Conversation, TalkReport
    from wrighty.services.sources import SyncReport
    from wrighty.store.port import Store

sources_app = typer.Typer(
    cls=WrightyGroup, invoke_without_command=True, subcommand_metavar="[COMMAND [ARGS]...]"
)

NO_SOURCES = "no sources are configured: add sources.trackers to wrighty.json (docs/sources.md)"


@sources_app.callback()
def sources(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """The trackers items come from: each one's last sync, next, rate limit and last error.

    Alone, lists them (as `wrighty sources list`)."""
    if ctx.invoked_subcommand is None:
        _list(ctx, as_json=as_json)
    elif as_json:
        raise WrightyError(
            f"--json goes after the subcommand: `wrighty sources {ctx.invoked_subcommand} ... "
            "--json`"
        )


@sources_app.command("list")
def list_sources(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the sources with their health (the same as `wrighty sources`)."""
    _list(ctx, as_json=as_json)


def _configured(ctx: typer.Context) -> tuple[tuple[SourceSettings, ...], float]:
    from wrighty.config import sources_of

    config = app_context(ctx).config().config
    return sources_of(config), config.sources.poll_seconds


def _list(ctx: typer.Context, *, as_json: bool) -> None:
    from wrighty.domain.sources import SourceState

    configured, poll = _configured(ctx)
    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        states = {state.name: state for state in store.list_sources()}
    now = app_ctx.now()
    rows = [(s, states.get(s.name) or SourceState(s.name)) for s in configured]
    if as_json:
        print_json([_health_json(s, state, poll, now) for s, state in rows])
        return
    if not rows:
        typer.echo(NO_SOURCES)
        return
    for settings, state in rows:
        health = _health_json(settings, state, poll, now)
        rate = "-" if state.rate_remaining is None else str(state.rate_remaining)
        if state.rate_remaining == 0 and state.rate_reset is not None:
            rate += f" (until {local_time(state.rate_reset)})"
        typer.echo(
            printable_line(
                f"{settings.name}  {settings.repo}  labels {', '.join(settings.labels)}  "
                f"last sync {local_time(state.synced_at)}  next {health['next_label']}  "
                f"rate limit left {rate}"
            )
        )
        if state.last_error is not None:
            typer.echo(printable_line(f"  last error: {state.last_error}"))


def _health_json(
    settings: SourceSettings, state: SourceState, poll: float, now: datetime
) -> dict[str, Any]:
    from wrighty.domain.sources import next_sync_at

    due = next_sync_at(state, poll)
    label = "now" if due is None or due <= now else local_time(due)
    return {
        "name": settings.name,
        "kind": "github",
        "repo": settings.repo,
        "labels": list(settings.labels),
        "token_env": settings.token_env,
        "last_sync": rfc3339(state.synced_at),
        "last_attempt": rfc3339(state.attempted_at),
        "next_sync": rfc3339(due),
        "next_label": label,
        "rate_limit_remaining": state.rate_remaining,
        "rate_limit_reset": rfc3339(state.rate_reset),
        "last_error": state.last_error,
        "failures": state.failures,
    }


@sources_app.command("sync")
def sync(
    ctx: typer.Context,
    name: Annotated[
        str | None,
        typer.Argument(metavar="[NAME]", help="Only this source (as `wrighty sources` names it)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would change; write nothing.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Make each open issue with a source's labels an item now: new issues are created,
    edited ones update items that have not started, closed ones cancel them."""
    from wrighty.services.sources import sync_source

    configured = _selected(ctx, name)
    app_ctx = app_context(ctx)
    default_agent = app_ctx.config().config.worker.default_agent
    reports: list[SyncReport] = []
    talked: list[tuple[str, TalkReport]] = []
    errors: list[str] = []
    with app_ctx.store() as store:
        talk = None if dry_run else _talker(app_ctx, store)
        for settings in configured:
            try:
                reports.append(
                    sync_source(
                        store,
                        settings,
                        environ=os.environ,
                        now=app_ctx.now(),
                        dry_run=dry_run,
                        default_agent=default_agent,
                    )
                )
                if talk is not None:
                    talked.append((settings.name, talk(settings).turn(now=app_ctx.now())))
            except WrightyError as error:
                errors.append(str(error))
    _print_sync(reports, talked, errors, dry_run=dry_run, as_json=as_json)
    if errors:
        raise WrightyError("; ".join(errors))


def _selected(ctx: typer.Context, name: str | None) -> tuple[SourceSettings, ...]:
    configured, _ = _configured(ctx)
    if not configured:
        raise WrightyError(NO_SOURCES)
    if name is None:
        return configured
    chosen = tuple(s for s in configured if s.name == name)
    if not chosen:
        known = ", ".join(s.name for s in configured)
        raise WrightyError(f"no source named {name!r} (known: {known})")
    return chosen


def _print_sync(
    reports: list[SyncReport],
    talked: list[tuple[str, TalkReport]],
    errors: list[str],
    *,
    dry_run: bool,
    as_json: bool,
) -> None:
    if as_json:
        print_json({"dry_run": dry_run, "sources": [_report_json(r) for r in reports],
                    "talked": [_talk_json(name, r) for name, r in talked],
                    "errors": errors})  # fmt: skip
    else:
        for report in reports:
            for line in _report_lines(report):
                typer.echo(printable_line(line))
        for name, done in talked:
            for line in _talk_lines(name, done):
                typer.echo(printable_line(line))


def _talker(app_ctx: AppContext, store: Store) -> Callable[[SourceSettings], Conversation]:
    """Each source's conversation, answers acted on at the operator's desk."""
    import time

    from wrighty.installation import installation_id
    from wrighty.operator.answers import tracker_act
    from wrighty.services.conversation import Viewer, conversation_of

    loaded = app_ctx.config()
    config = loaded.config
    viewer = Viewer(store, loaded.root, installation_id(), config.worker.default_agent,
                    config.serve.public_url)  # fmt: skip
    act = tracker_act(app_ctx, store)

    def talk(settings: SourceSettings) -> Conversation:
        return conversation_of(
            store, settings, os.environ, view_of=viewer, act=act, clock=time.monotonic
        )

    return talk


def _talk_json(name: str, report: TalkReport) -> dict[str, Any]:
    return {
        "source": name,
        "comments_posted": report.posted,
        "comments_edited": report.edited,
        "answered": report.answered,
        "pulls": report.pulls,
        "requests": report.requests,
    }


def _talk_lines(name: str, report: TalkReport) -> list[str]:
    lines = [f"{name}: answered {said}" for said in report.answered]
    lines += [f"{name}: {said}" for said in report.pulls]
    lines.append(
        f"{name}: status comments {len(report.posted)} posted, {len(report.edited)} edited; "
        f"{report.requests} requests"
    )
    return lines


def _report_json(report: SyncReport) -> dict[str, Any]:
    return {
        "source": report.source,
        "created": [{"issue": n, "item_id": i} for n, i in report.created],
        "updated": [{"issue": n, "item_id": i} for n, i in report.updated],
        "cancelled": [{"issue": n, "item_id": i} for n, i in report.cancelled],
        "unchanged": report.unchanged,
        "left_alone": report.left_alone,
        "requests": report.requests,
        "not_modified": report.not_modified,
        "rate_limit_remaining": report.rate_remaining,
        "notes": report.notes,
    }


def _report_lines(report: SyncReport) -> list[str]:
    would = "would be " if report.dry_run else ""
    lines = []
    for verb, done in (("created", report.created), ("updated", report.updated),
                       ("cancelled", report.cancelled)):  # fmt: skip
        for number, item_id in done:
            item = f" (item {item_id})" if item_id is not None else ""
            lines.append(f"{report.source}: issue #{number} {would}{verb}{item}")
    lines += [f"{report.source}: {note}" for note in report.notes]
    rate = "-" if report.rate_remaining is None else str(report.rate_remaining)
    lines.append(
        f"{report.source}: {len(report.created)} {would}created, {len(report.updated)} "
        f"{would}updated, {len(report.cancelled)} {would}cancelled, {report.unchanged} "
        f"unchanged, {report.left_alone} started (left alone); {report.requests} requests, "
        f"{report.not_modified} not modified; rate limit left {rate}"
    )
    return lines
