"""The `wrighty` command: the root app, its global options, and where each command lives.

Typer builds every command's options from its function's signature before it knows which
command runs, so all the command modules are imported at start-up. They are kept cheap to
import: each command imports what only it needs (the config and pydantic, the services,
agents and vendors, psutil, rich, the worker, a store's driver) inside its body, so that a
read command loads no more than it uses (`python -X importtime -m wrighty list` shows the
tree; tests/cli/test_import_cost.py keeps it that way).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from wrighty import __version__
from wrighty.cli import items, observability, setup, worker
from wrighty.cli.common import WrightyGroup
from wrighty.cli.context import AppContext
from wrighty.cli.flags import show_flags_without_a_value

app = typer.Typer(
    cls=WrightyGroup,
    help="Supervise unattended coding agents working through a queue of items.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
show_flags_without_a_value()


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


# In the order `wrighty --help` lists them.
app.command()(setup.init)
app.command()(items.create)
app.command("list")(items.list_items)
app.command()(items.show)
app.command()(items.logs)
app.command("queue")(items.queue_command)
app.command()(items.cancel)
app.command()(items.requeue)
app.command()(items.release)
app.command()(items.reap)
app.command()(observability.workers)
app.command()(observability.status)
app.command()(setup.agents)
app.command()(worker.finish)
app.command()(worker.fail)
app.add_typer(setup.config_app, name="config")
app.add_typer(worker.worker_app, name="worker")
