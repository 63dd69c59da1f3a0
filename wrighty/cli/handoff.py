"""`wrighty handoff ID --to AGENT [--note TEXT | --note-file PATH]`: an item handed to another
agent by a person (docs/handoff.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wrighty.cli.common import ItemId, JsonFlag, app_context, text_or_file
from wrighty.operator.actions import handoff_now
from wrighty.operator.sentences import handed_line

if TYPE_CHECKING:
    pass


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
        from wrighty.cli.documents import print_json
        from wrighty.operator.documents import item_summary_json

        print_json({**item_summary_json(item), "agent": item.agent, "handoffs": item.handoffs})
        return
    typer.echo(handed_line(item, before))


def _note(note: str | None, note_file: Path | None) -> str | None:
    from wrighty.domain.handoff import MAX_NOTE_BYTES

    return text_or_file("note", "--note", note, "--note-file", note_file, limit=MAX_NOTE_BYTES)
