"""`wrighty diff ITEM [--stat]`: an item's change against its base
(docs/work-product.md#seeing-the-change-wrighty-diff), paged on a terminal."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from wrighty.cli.common import ItemId, app_context
from wrighty.domain.text import printable, printable_line
from wrighty.operator.actions import change_now

if TYPE_CHECKING:
    pass

# The pager when $PAGER is not set, and what `less` is told when $LESS is not: quit when the
# text fits on one screen, show escapes as they are (there are none left), keep the screen.
DEFAULT_PAGER = "less -R"
DEFAULT_LESS = "FRX"


def diff(
    ctx: typer.Context,
    item_id: ItemId,
    stat: Annotated[
        bool,
        typer.Option("--stat", help="Only the files changed and their lines added and removed."),
    ] = False,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Replace the secrets it holds (known values, and what looks like a key) with "
            "[REDACTED]: to show it to someone.",
        ),
    ] = False,
) -> None:
    """Show an item's change against its base: its commits and its changes not committed,
    new files included (a worktree item's; docs/work-product.md)."""
    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        change = change_now(app_ctx, store, item_id, stat=stat)
    if redact:
        from wrighty.services.diff import redacted

        change = redacted(change, app_ctx.secrets())
    if change.note is not None:
        typer.echo(printable_line(change.note), err=True)
    if not change.text:
        typer.echo(f"item {change.item_id} has no change against {change.base[:12]}", err=True)
        return
    show(neutralised(change.text), terminal=sys.stdout.isatty(), environ=os.environ)


def neutralised(text: str) -> list[str]:
    """``text`` (a diff: from outside) as lines, each with every unsafe character escaped
    but its tabs; a line ends at a newline alone (a carriage return is shown escaped)."""
    return [printable(line) for line in text.removesuffix("\n").split("\n")]


def show(lines: Sequence[str], *, terminal: bool, environ: Mapping[str, str]) -> None:
    """Print ``lines``: through the pager ($PAGER, else ``less -R``; no shell) when stdout is
    a terminal and the pager starts, plainly otherwise."""
    text = "".join(f"{line}\n" for line in lines)
    if terminal and _paged(text, environ):
        return
    sys.stdout.write(text)
    sys.stdout.flush()


def _paged(text: str, environ: Mapping[str, str]) -> bool:
    """Whether the pager ran with ``text`` on its input (False: it could not be started)."""
    try:
        argv = shlex.split(environ.get("PAGER") or DEFAULT_PAGER)
    except ValueError:
        return False
    if not argv:  # PAGER set to nothing but spaces
        return False
    env = {**environ, "LESS": environ.get("LESS") or DEFAULT_LESS}
    sys.stdout.flush()
    try:
        pager = subprocess.Popen(argv, stdin=subprocess.PIPE, env=env, text=True)
    except OSError:
        return False
    assert pager.stdin is not None
    try:
        pager.stdin.write(text)
        pager.stdin.close()
    except BrokenPipeError:  # the reader quit before the end
        pass
    pager.wait()
    return True
