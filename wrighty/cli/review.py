"""`wrighty accept` and `wrighty reject`: a person's word on an item in review
(docs/work-product.md#review)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wrighty.cli.common import ItemId, JsonFlag, app_context, text_or_file
from wrighty.domain.model import MAX_ITEM_ID
from wrighty.operator.actions import NotIntegrated, accept_many_now, ready_ids, reject_now
from wrighty.operator.sentences import (
    accepted_line,
    accepted_lines,
    rejected_line,
    stays_in_review,
    would_accept_line,
)

if TYPE_CHECKING:
    from wrighty.services.review import Accepted
    from wrighty.store.port import Store

# Exit code when the change could not be integrated (the item stays in review; 2 is bad input).
NOT_INTEGRATED_EXIT = 1


WaitOption = Annotated[
    float,
    typer.Option(
        "--wait",
        metavar="SECONDS",
        min=0,
        max=86_400,
        help="How long to land it here, waiting for its turn (0: accept it only; a worker lands "
        "it).",
    ),
]


AcceptIds = Annotated[
    list[int] | None,
    typer.Argument(
        metavar="ID", min=1, max=MAX_ITEM_ID, show_default=False,
        help="The items to accept, in this order (or --all).",
    ),
]  # fmt: skip
AllFlag = Annotated[
    bool,
    typer.Option(
        "--all", help="Accept every item in review whose checks passed, in dependency order."
    ),
]
DryRunFlag = Annotated[
    bool, typer.Option("--dry-run", help="With --all: list what it would accept, and stop.")
]


def accept(
    ctx: typer.Context,
    item_ids: AcceptIds = None,
    every: AllFlag = False,
    dry_run: DryRunFlag = False,
    wait: WaitOption = 3600.0,
    as_json: JsonFlag = False,
) -> None:
    """Accept items in review. With a branch to integrate, each lands (docs/landing.md): its
    branch is brought up to date with the target, checked there and integrated once, here
    while you wait (--wait) or by a worker. It is done once landed; if it cannot land, it
    goes back to review saying why (exit code 1). --all accepts every item in review whose
    checks passed (--dry-run lists them)."""
    from wrighty.errors import WrightyError

    if every == bool(item_ids):
        raise WrightyError("give the ids of the items to accept, or --all (not both)")
    if dry_run and not every:
        raise WrightyError("--dry-run lists what --all would accept: give --all")
    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        if every:
            ids = ready_ids(store)
            if dry_run:
                _print_ready(store, ids, as_json=as_json)
                return
        else:
            ids = list(item_ids or [])
        try:
            accepted = accept_many_now(app_ctx, store, ids, land_for=wait or None)
        except NotIntegrated as failed:  # one with nothing to land, its integration refused
            if failed.accepted:
                _say_accepted(failed.accepted, several=True, as_json=as_json)
            typer.echo(stays_in_review(failed.item_id, failed.error), err=True)
            raise typer.Exit(NOT_INTEGRATED_EXIT) from None
    _say_accepted(accepted, several=every or len(ids) > 1, as_json=as_json)
    if any(_did_not_land(one) for one in accepted):
        raise typer.Exit(NOT_INTEGRATED_EXIT)


def _say_accepted(accepted: list[Accepted], *, several: bool, as_json: bool) -> None:
    if as_json:
        _print_accepted(accepted, several=several)
    elif several:
        for one in accepted:
            typer.echo(accepted_line(one), err=_did_not_land(one))
    else:
        for line in accepted_lines(accepted[0]):
            typer.echo(line, err=_did_not_land(accepted[0]))


def _did_not_land(accepted: Accepted) -> bool:
    """Back with a person (but for a pull request opened: it waits for its merge)."""
    from wrighty.domain.model import PULL_OPEN
    from wrighty.domain.states import ItemState

    item = accepted.item
    if item.state is ItemState.REVIEW and item.reason_code == PULL_OPEN:
        return False
    return accepted.landing and item.state in (ItemState.REVIEW, ItemState.NEEDS_ATTENTION)


def _print_ready(store: Store, ids: list[int], *, as_json: bool) -> None:
    items = [item for item in (store.get_item(item_id) for item_id in ids) if item is not None]
    if as_json:
        from wrighty.cli.documents import print_json
        from wrighty.operator.documents import item_summary_json

        print_json({"dry_run": True, "accepted": [item_summary_json(item) for item in items]})
        return
    for item in items:
        typer.echo(would_accept_line(item))


def _print_accepted(accepted: list[Accepted], *, several: bool) -> None:
    from wrighty.cli.documents import print_json
    from wrighty.operator.documents import item_summary_json

    documents = [
        {
            **item_summary_json(one.item),
            "integrated": one.integrated.words if one.integrated else None,
            "url": one.integrated.url if one.integrated else None,
        }
        for one in accepted
    ]
    print_json({"dry_run": False, "accepted": documents} if several else documents[0])


def land(
    ctx: typer.Context,
    item_id: Annotated[
        int | None, typer.Argument(metavar="[ID]", help="Land this item's line only.", min=1)
    ] = None,
) -> None:
    """Land the accepted items waiting in line on this installation, one after the other, as
    a worker does between its claims (docs/landing.md); with ID, those ahead of it and it."""
    from wrighty.operator.actions import land_now
    from wrighty.operator.sentences import landing_line

    app_ctx = app_context(ctx)
    with app_ctx.store() as store:
        landed = land_now(app_ctx, store, item_id)
    if not landed:
        typer.echo("nothing to land: no line has an item waiting that no lander holds")
    for item in landed:
        typer.echo(landing_line(item))


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
