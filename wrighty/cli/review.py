"""`wrighty accept` and `wrighty reject`: a person's word on an item in review
(docs/work-product.md#review)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wrighty.cli.common import ItemId, JsonFlag, app_context, text_or_file
from wrighty.operator.actions import accept_now, reject_now
from wrighty.operator.sentences import accepted_lines, rejected_line, stays_in_review

if TYPE_CHECKING:
    pass

# Exit code when the change could not be integrated (the item stays in review; 2 is bad input).
NOT_INTEGRATED_EXIT = 1


def accept(ctx: typer.Context, item_id: ItemId, as_json: JsonFlag = False) -> None:
    """Accept an item in review: its change is integrated as completion.integrate says, and it
    is done. If the integration fails, it stays in review (exit code 1)."""
    from wrighty.workproduct.integrate import IntegrationError

    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        try:
            accepted = accept_now(app_ctx, store, item_id)
        except IntegrationError as failed:
            typer.echo(stays_in_review(item_id, failed), err=True)
            raise typer.Exit(NOT_INTEGRATED_EXIT) from None
    if as_json:
        from wrighty.cli.documents import print_json
        from wrighty.operator.documents import item_summary_json

        integrated = accepted.integrated
        print_json(
            {
                **item_summary_json(accepted.item),
                "integrated": integrated.words if integrated else None,
                "url": integrated.url if integrated else None,
            }
        )
        return
    for line in accepted_lines(accepted):
        typer.echo(line)


FeedbackOption = Annotated[
    str | None,
    typer.Option("--feedback", metavar="TEXT", help="What the agent is to change."),
]
FeedbackFileOption = Annotated[
    Path | None,
    typer.Option(
        "--feedback-file",
        metavar="PATH",
        help="Read the feedback from a file ('-': standard input).",
        dir_okay=True,
    ),
]


def reject(
    ctx: typer.Context,
    item_id: ItemId,
    feedback: FeedbackOption = None,
    feedback_file: FeedbackFileOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Send an item in review back to its agent: its session resumes now, in the same
    workspace, with your feedback as the prompt (checked again, then back in review)."""
    text = _feedback(feedback, feedback_file)
    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        item, bound = reject_now(app_ctx, store, item_id, text)
    if as_json:
        from wrighty.cli.documents import print_json
        from wrighty.operator.documents import item_summary_json

        print_json({**item_summary_json(item), "rejections": item.rejections})
        return
    typer.echo(rejected_line(item, bound))


def _feedback(feedback: str | None, feedback_file: Path | None) -> str:
    from wrighty.domain.review import MAX_FEEDBACK_BYTES

    text = text_or_file(
        "feedback", "--feedback", feedback, "--feedback-file", feedback_file,
        limit=MAX_FEEDBACK_BYTES, required=True,
    )  # fmt: skip
    assert text is not None  # required
    return text
