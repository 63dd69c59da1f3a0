"""`wrighty import FILE.md`: a Markdown file's sections as items (docs/scheduling.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wrighty.cli.common import JsonFlag, app_context
from wrighty.cli.documents import print_json
from wrighty.domain.model import MAX_BODY_BYTES
from wrighty.errors import WrightyError
from wrighty.operator.actions import import_now
from wrighty.operator.sentences import imported_lines

if TYPE_CHECKING:
    pass

MAX_IMPORT_BYTES = 16 * MAX_BODY_BYTES


def import_file(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="The Markdown file: one item per `## Title`.")],
    queue: Annotated[
        bool, typer.Option("--queue", help="Queue the new items instead of leaving them todo.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be created; write nothing.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Create an item per second-level heading of a Markdown file; importing it again changes
    nothing (a changed section is reported, not created twice)."""
    from wrighty.inputs import InputError, read_text_file
    from wrighty.services.importing import summary

    try:
        text = read_text_file(path, limit=MAX_IMPORT_BYTES)
    except (OSError, InputError) as error:
        why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise WrightyError(f"{path}: {why}") from None
    from wrighty.services.importing import MarkdownSource

    try:
        source = MarkdownSource.read(path.name, text)
    except WrightyError as error:
        raise WrightyError(f"{path}: {error}") from None
    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        try:
            results = import_now(app_ctx, store, source, queue=queue, dry_run=dry_run)
        except WrightyError as error:
            raise WrightyError(f"{path}: {error}") from None
    if as_json:
        counts = summary(results)
        print_json(
            {
                "file": str(path),
                "dry_run": dry_run,
                "created": counts["created"],
                "unchanged": counts["unchanged"],
                "changed": counts["changed"],
                "sections": [
                    {"line": r.section.line, "key": r.section.key, "title": r.section.title,
                     "outcome": r.outcome, "item_id": r.item_id}
                    for r in results
                ],
            }
        )  # fmt: skip
        return
    for line in imported_lines(results, dry_run=dry_run):
        typer.echo(line)
