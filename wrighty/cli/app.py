"""The `wrighty` command: the root app, its global options, and where each command lives.

The root builds a command only when it is asked for: `wrighty list` imports
wrighty/cli/items.py and turns `list_items` into a click command, and no other command module
is loaded (`wrighty --help` loads them all, for their help). Inside a module each command
imports what only it needs (the config and pydantic, the services, agents and vendors,
psutil, rich, the worker, a store's driver) in its body, so that a read command loads no more
than it uses (`python -X importtime -m wrighty list` shows the tree;
tests/cli/test_import_cost.py keeps it that way).
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
import typer.main

from wrighty import __version__
from wrighty.cli.common import WrightyGroup
from wrighty.cli.flags import show_values_in_command_line_words
from wrighty.cli.numbers import plain_numbers_only
from wrighty.operator.context import AppContext

if TYPE_CHECKING:
    from wrighty.services.settings import ReadSettings

# Each command: its module and the function (or, for a group, the sub-app) that defines it, in
# the order `wrighty --help` lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("wrighty.cli.setup", "init"),
    "create": ("wrighty.cli.items", "create"),
    "import": ("wrighty.cli.importing", "import_file"),
    "edit": ("wrighty.cli.items", "edit"),
    "list": ("wrighty.cli.items", "list_items"),
    "show": ("wrighty.cli.items", "show"),
    "logs": ("wrighty.cli.items", "logs"),
    "queue": ("wrighty.cli.items", "queue_command"),
    "cancel": ("wrighty.cli.items", "cancel"),
    "requeue": ("wrighty.cli.items", "requeue"),
    "release": ("wrighty.cli.items", "release"),
    "reap": ("wrighty.cli.items", "reap"),
    "verify": ("wrighty.cli.verify", "verify"),
    "diff": ("wrighty.cli.diff", "diff"),
    "accept": ("wrighty.cli.review", "accept"),
    "reject": ("wrighty.cli.review", "reject"),
    "land": ("wrighty.cli.review", "land"),
    "handoff": ("wrighty.cli.handoff", "handoff"),
    "workspaces": ("wrighty.cli.workspaces", "workspaces_app"),
    "inbox": ("wrighty.cli.inbox", "inbox"),
    "serve": ("wrighty.cli.serve", "serve"),
    "workers": ("wrighty.cli.observability", "workers"),
    "status": ("wrighty.cli.observability", "status"),
    "usage": ("wrighty.cli.usage", "usage"),
    "providers": ("wrighty.cli.providers", "providers_app"),
    "notify": ("wrighty.cli.notify", "notify_app"),
    "sources": ("wrighty.cli.sources", "sources_app"),
    "agents": ("wrighty.cli.setup", "agents"),
    "finish": ("wrighty.cli.worker", "finish"),
    "fail": ("wrighty.cli.worker", "fail"),
    "report-usage": ("wrighty.cli.worker", "report_usage"),
    "config": ("wrighty.cli.setup", "config_app"),
    "worker": ("wrighty.cli.worker", "worker_app"),
}

# The commands that print and end, closing what they open: the reads, and `providers reset`,
# whose one write is committed before it prints. When the process runs one of them and nothing
# else (main), it collects no garbage (what the command makes ends with the process; `status
# --watch`, which runs until stopped, collects again) and it ends as soon as the command has
# (RootGroup.invoke).
READ_COMMANDS = frozenset({"list", "show", "status", "workers", "usage", "providers"})


class RootGroup(WrightyGroup):
    """The root: builds a command from COMMANDS the first time it is asked for."""

    # True when this process runs one command and ends with it: the installed executable.
    whole_process = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = _build(cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """The command named first in ``args``; garbage is collected again (main turned it
        off) unless the process runs a read command."""
        name, command, rest = super().resolve_command(ctx, args)
        if self.whole_process and name not in READ_COMMANDS:
            gc.enable()
        return name, command, rest

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        """The command; after a read command, in a process of its own, the end of it.

        What the interpreter would do next frees every object of every module it loaded, one
        by one, for a process about to end (about 40 ms of `wrighty list`, bench/README.md).
        Having flushed what it printed, the process ends at once, with the command's exit
        status, as click would have ended it. Not when a thread or an exit handler is left to
        run: then the interpreter ends it as usual."""
        if not self.whole_process:
            return super().invoke(ctx)
        try:
            result = super().invoke(ctx)
        except typer.Exit as done:
            _end_after_reading(ctx, done.exit_code)
            raise
        _end_after_reading(ctx, 0)
        return result


def _end_after_reading(ctx: typer.Context, exit_code: int) -> None:
    """End the process now if it ran a read command that left nothing to run after it."""
    if ctx.invoked_subcommand not in READ_COMMANDS:
        return
    if threading.active_count() > 1 or atexit._ncallbacks() > 0:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: the interpreter reports it as usual
        return
    os._exit(exit_code)


def _build(name: str) -> Any:
    plain_numbers_only()  # before any number option is read (not for `--version`)
    module, attribute = COMMANDS[name]
    target = getattr(importlib.import_module(module), attribute)
    command: Any
    if isinstance(target, typer.Typer):  # a group, even of one command (`worker start`)
        command = typer.main.get_group(target)
    else:  # one command, made on an app of its own
        one = typer.Typer(add_completion=False)
        one.command(name)(target)
        command = typer.main.get_command(one)
    command.name = name
    return command


app = typer.Typer(
    cls=RootGroup,
    help="Supervise unattended coding agents working through a queue of items.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
show_values_in_command_line_words()


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
            metavar="URL",
            envvar="WRIGHTY_STORE",
            help="State store URL or path; overrides store.url in wrighty.json.",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    ctx.obj = AppContext(config_option=config, store_option=store, quick_settings=_quick_settings)


def _quick_settings(cwd: Path, explicit: Path | None) -> ReadSettings | None:
    """The read settings of the init document without the config's models (quick_config.py)."""
    from wrighty.cli.quick_config import quick_read_settings

    return quick_read_settings(cwd, explicit)


def main() -> NoReturn:
    """Console-script entry point: this process runs one command."""
    RootGroup.whole_process = True
    gc.disable()  # until the command is known: RootGroup.resolve_command
    sys.exit(app())  # pragma: no cover - typer raises SystemExit itself
