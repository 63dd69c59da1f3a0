"""`wrighty handoff ID --to AGENT [--note TEXT | --note-file PATH]`: an item handed to another
agent by a person (docs/handoff.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wrighty.cli.common import ItemId, JsonFlag, app_context, text_or_file
from wrighty.errors import WrightyError

if TYPE_CHECKING:
    from wrighty.cli.context import AppContext
    from wrighty.domain.model import Item
    from wrighty.store.port import Store


def handoff(
    ctx: typer.Context,
    item_id: ItemId,
    to: Annotated[
        str, typer.Option("--to", metavar="AGENT", help="The agent to hand the item to.")
    ],
    note: Annotated[
        str | None,
        typer.Option("--note", metavar="TEXT", help="What the new agent should know."),
    ] = None,
    note_file: Annotated[
        Path | None,
        typer.Option(
            "--note-file", metavar="PATH", help="The note from a file ('-': standard input)."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Hand an item that waits (needs-attention, retry-scheduled, review) to another agent: a
    new session of it, now, in the same workspace, told what the agent before it left."""
    text = _note(note, note_file)
    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        item, before = handoff_now(app_ctx, store, item_id, to, text)
    if as_json:
        from wrighty.cli.documents import item_summary_json, print_json

        print_json({**item_summary_json(item), "agent": item.agent, "handoffs": item.handoffs})
        return
    typer.echo(handed_line(item, before))


def handoff_now(
    app_ctx: AppContext, store: Store, item_id: int, to: str, note: str | None
) -> tuple[Item, str]:
    """`wrighty handoff`'s service call: the item after it, and the agent it was handed from."""
    from wrighty.services.review import handoff_item

    config = app_ctx.config().config
    if to not in config.agent_names():
        known = ", ".join(config.agent_names())
        raise WrightyError(f"--to {to}: unknown agent (known: {known}); see docs/config.md")
    default = config.worker.default_agent
    change = handoff_item(
        store,
        item_id,
        to,
        note=note,
        default_agent=default,
        now=app_ctx.now(),
        secrets=app_ctx.secrets(),
    )
    return change.after, change.before.agent or default


def handed_line(item: Item, before: str) -> str:
    return (
        f"item {item.id} is {item.state}, handed from {before} to {item.agent} (handoff "
        f"{item.handoffs}): a new session of {item.agent} takes it up in the same workspace"
    )


def _note(note: str | None, note_file: Path | None) -> str | None:
    from wrighty.domain.handoff import MAX_NOTE_BYTES

    return text_or_file("note", "--note", note, "--note-file", note_file, limit=MAX_NOTE_BYTES)
