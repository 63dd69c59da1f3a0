"""The provider circuits (docs/usage-limits.md#the-provider-circuit): `wrighty providers`
(alone, or `wrighty providers list`) lists them, `wrighty providers reset NAME` closes one by
hand. Workers open and close them (wrighty/worker/circuit.py); this group only reads them and
resets them, through services/circuits.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from wrighty.cli.common import JsonFlag, WrightyGroup, app_context, console
from wrighty.cli.documents import print_json
from wrighty.errors import WrightyError
from wrighty.operator.documents import circuit_json
from wrighty.operator.sentences import reset_line

if TYPE_CHECKING:
    pass

providers_app = typer.Typer(
    cls=WrightyGroup, invoke_without_command=True, subcommand_metavar="[COMMAND [ARGS]...]"
)


@providers_app.callback()
def providers(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """The provider circuits: which agents wait for their provider, and until when.

    Alone, lists them (as `wrighty providers list`)."""
    if ctx.invoked_subcommand is None:
        _list(ctx, as_json=as_json)
    elif as_json:
        raise WrightyError(
            "--json goes after the subcommand: "
            f"`wrighty providers {ctx.invoked_subcommand} ... --json`"
        )


@providers_app.command("list")
def list_providers(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the provider circuits, with their state now (the same as `wrighty providers`)."""
    _list(ctx, as_json=as_json)


def _list(ctx: typer.Context, *, as_json: bool) -> None:
    from wrighty.services.circuits import circuit_views

    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        views = circuit_views(store, app_ctx.now())
    if as_json:
        print_json([circuit_json(view) for view in views])
    elif views:
        from wrighty.cli.status_views import providers_table

        console().print(providers_table(views))
    else:
        typer.echo("no provider circuits")


@providers_app.command("reset")
def reset(
    ctx: typer.Context,
    name: Annotated[
        str,
        typer.Argument(metavar="NAME", help="The circuit's name, as `wrighty providers` shows it."),
    ],
    as_json: JsonFlag = False,
) -> None:
    """Close a provider circuit by hand: workers launch its agents again at once."""
    from wrighty.services.circuits import reset_circuit

    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        done = reset_circuit(store, name, now=app_ctx.now())
    if as_json:
        print_json(circuit_json(done.after))
        return
    typer.echo(reset_line(name, done))
