"""`wrighty workspaces`: every item's workspace on this installation, with what git says of it,
and `wrighty workspaces clean`: removing those no run, retry or resume can need again
(docs/work-product.md). The facts and the cleaning are services/workspaces.py's; the rule is
domain/workspaces.py's; here are the options, the table and the JSON (docs/json.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from wrighty.cli.common import JsonFlag, WrightyGroup, app_context, console
from wrighty.domain.model import MAX_ITEM_ID
from wrighty.domain.text import printable_line
from wrighty.operator.forms import seconds_option

if TYPE_CHECKING:
    from rich.table import Table

    from wrighty.domain.workspaces import Workspace
    from wrighty.operator.context import AppContext
    from wrighty.services.workspaces import Cleaned, Project

# Exit code when a workspace was refused or could not be removed (2 is for bad input).
REFUSED_EXIT = 1

workspaces_app = typer.Typer(
    cls=WrightyGroup,
    help="The items' workspaces on this machine: list them, remove those no longer needed.",
    invoke_without_command=True,
)


@workspaces_app.callback()
def workspaces(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List every item's workspace on this installation: its mode, branch, commits ahead of
    and behind its base, uncommitted changes, whether the project's HEAD has its commits, and
    its size."""
    if ctx.invoked_subcommand is not None:
        return
    from wrighty.installation import installation_id
    from wrighty.services.workspaces import list_workspaces

    app_ctx = app_context(ctx)
    project = _project(app_ctx)
    with app_ctx.store() as store:
        found = list_workspaces(store, project, installation_id=installation_id())
    if as_json:
        from wrighty.cli.documents import print_json
        from wrighty.operator.workspace_documents import workspace_json

        print_json([workspace_json(workspace) for workspace in found])
    elif found:
        console().print(workspaces_table(found))
    else:
        typer.echo("no workspaces on this installation")


@workspaces_app.command("clean")
def clean(
    ctx: typer.Context,
    item_ids: Annotated[
        list[int] | None,
        typer.Argument(
            metavar="ID",
            min=1,
            max=MAX_ITEM_ID,
            show_default=False,
            help="The items whose workspaces to remove (or pick them with the filters).",
        ),
    ] = None,
    done: Annotated[
        bool, typer.Option("--done", help="Pick the workspaces of items done or cancelled.")
    ] = False,
    merged: Annotated[
        bool,
        typer.Option("--merged", help="Pick those whose commits the project's HEAD has."),
    ] = False,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            metavar="DURATION",
            help="Pick those whose item last changed longer ago than this, e.g. 7d.",
        ),
    ] = None,
    branches: Annotated[
        bool, typer.Option("--branches", help="Delete each item's branch too.")
    ] = False,
    logs: Annotated[
        bool, typer.Option("--logs", help="Remove each item's run logs too (.wrighty/runs/ID).")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Remove uncommitted changes and commits the project's HEAD lacks too.",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be removed; remove nothing.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Remove workspaces of finished items (and with --branches their branches): never one
    a run, a retry or a resume may still need, a pinned one or the project directory. Exit
    code 1 if one was refused."""
    from datetime import timedelta

    from wrighty.domain.durations import MAX_CLEAN_AGE_SECONDS
    from wrighty.domain.workspaces import Filters
    from wrighty.installation import installation_id
    from wrighty.services import workspaces as service

    seconds = seconds_option("--older-than", older_than, MAX_CLEAN_AGE_SECONDS)
    app_ctx = app_context(ctx)
    project = _project(app_ctx)
    with app_ctx.store() as store:
        cutoff = None if seconds is None else app_ctx.now() - timedelta(seconds=seconds)
        request = service.CleanRequest(
            ids=tuple(item_ids or ()),
            filters=Filters(done=done, merged=merged, updated_before=cutoff),
            branches=branches,
            logs=logs,
            force=force,
            dry_run=dry_run,
        )
        found = service.list_workspaces(
            store, project, installation_id=installation_id(), size_entries=0
        )
        chosen = service.select(found, request, store)
    results = service.clean(chosen, request, project)
    if as_json:
        from wrighty.cli.documents import print_json
        from wrighty.operator.workspace_documents import cleaned_json

        print_json({"dry_run": dry_run, "results": [cleaned_json(done) for done in results]})
    else:
        for line in cleaned_lines(results):
            typer.echo(line)
    if not service.nothing_refused(results):
        raise typer.Exit(REFUSED_EXIT)


def _project(app_ctx: AppContext) -> Project:
    from wrighty.config import STATE_DIRNAME
    from wrighty.services.workspaces import Project

    root = app_ctx.config().root
    return Project(root=root, state_dir=root / STATE_DIRNAME)


# -- output -----------------------------------------------------------------------------------


def _yes_no(value: bool | None, yes: str, no: str) -> str:
    return "-" if value is None else yes if value else no


def size_text(workspace: Workspace) -> str:
    """A size as people read it (``-``: not measured), ``>=`` when the walk stopped early."""
    if workspace.size_bytes is None:
        return "-"
    size = float(workspace.size_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            break
        size /= 1024
    shown = f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
    return shown if workspace.size_complete else f">= {shown}"


def workspaces_table(found: list[Workspace]) -> Table:
    """`wrighty workspaces`'s table: every path and branch is outside text."""
    from rich.table import Table
    from rich.text import Text

    from wrighty.cli.render import styled_state
    from wrighty.richtext import outside

    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("ID", "STATE", "MODE", "BRANCH", "AHEAD", "BEHIND", "CHANGES", "MERGED",
                   "SIZE", "PATH"):  # fmt: skip
        table.add_column(column, no_wrap=True)
    for workspace in found:
        path = outside(workspace.path)
        if not workspace.exists:
            path.append(" (gone)", style="yellow")
        branch = outside(workspace.branch or "-")
        if workspace.branch and not workspace.branch_exists:
            branch.append(" (gone)", style="yellow")
        table.add_row(
            str(workspace.item_id),
            styled_state(workspace.state.value),
            workspace.mode.value,
            branch,
            "-" if workspace.ahead is None else str(workspace.ahead),
            "-" if workspace.behind is None else str(workspace.behind),
            Text(
                _yes_no(workspace.dirty, "dirty", "clean"),
                style="yellow" if workspace.dirty else "",
            ),
            _merged_words(workspace),
            size_text(workspace),
            path,
        )
    return table


def _merged_words(workspace: Workspace) -> str:
    """MERGED: whether the project's HEAD has the branch's own commits; `-` when it has none
    (nothing of it was merged, whatever its worktree holds uncommitted) or git cannot tell."""
    if workspace.ahead == 0:
        return "-"
    return _yes_no(workspace.merged, "yes", "no")


def cleaned_lines(results: list[Cleaned]) -> list[str]:
    """One line per workspace `clean` looked at, each value from outside neutralised."""
    from wrighty.services.workspaces import Outcome

    if not results:
        return ["no workspace to remove"]
    lines = []
    for cleaned in results:
        workspace = cleaned.workspace
        item = f"item {workspace.item_id}"
        folder = f"{item}'s {workspace.mode.value} {workspace.path}"
        branch = f"its branch {workspace.branch}"
        if cleaned.outcome in (Outcome.REMOVED, Outcome.WOULD_REMOVE):
            would = "would " if cleaned.outcome is Outcome.WOULD_REMOVE else ""
            logs = " and its run logs" if cleaned.removed_logs else ""
            if cleaned.removed_workspace:
                line = f"{would}remove{'' if would else 'd'} {folder}"
                if cleaned.deleted_branch:
                    line += f" and {branch}"
                line += logs
            elif cleaned.deleted_branch:
                line = (
                    f"{item}: {would}delete{'' if would else 'd'} {branch}{logs} (its workspace "
                    "is gone)"
                )
            else:
                verb = f"{would}remove{'' if would else 'd'}"
                line = f"{item}: {verb} its run logs (its workspace is gone)"
        elif cleaned.outcome is Outcome.NOTHING:
            line = f"{item}: nothing left to remove ({workspace.path} is gone)"
        elif cleaned.outcome is Outcome.REFUSED:
            line = f"refused: {cleaned.reason}"
        else:
            line = f"could not clean {item}: {cleaned.reason}"
        lines.append(printable_line(line))
    return lines
