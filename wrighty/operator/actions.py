"""The actions an operator takes, as every entry point makes them: each calls its service with
what wrighty.json, this installation and the fleet's clock say (`AppContext`), and returns
what the service did; the entry point says it in `sentences.py`'s words."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from wrighty.errors import WrightyError

if TYPE_CHECKING:
    from wrighty.domain.check_evidence import CheckEvidence
    from wrighty.domain.model import Change, Item
    from wrighty.operator.context import AppContext
    from wrighty.services.diff import Change as WorkChange
    from wrighty.services.importing import Imported, Source
    from wrighty.services.review import Accepted
    from wrighty.services.verify import ByHand
    from wrighty.store.port import Store


def reap_now(app_ctx: AppContext, store: Store, *, limit: int) -> list[Change]:
    """One reaper pass, as `wrighty reap` makes it (wrighty.json's worker.maxRequeues; each
    settlement's notice to the outbox when notifications are on)."""
    from wrighty.domain.notices import Source
    from wrighty.installation import installation_id
    from wrighty.services.reaper import reap_expired

    config = app_ctx.config().config
    notify = Source(installation_id()) if config.notify.enabled else None
    return reap_expired(
        store,
        now=app_ctx.now(),
        max_requeues=config.worker.max_requeues,
        limit=limit,
        notify=notify,
    )


def accept_now(app_ctx: AppContext, store: Store, item_id: int) -> Accepted:
    """`wrighty accept`'s service call, as the command and the inbox make it: the integration
    completion.integrate asks for, in the project's repository on this installation."""
    from wrighty.config.translate import completion_of
    from wrighty.installation import installation_id
    from wrighty.services.review import accept_item, branch_integrator

    loaded = app_ctx.config()
    integrator = branch_integrator(
        store, loaded.root, completion_of(loaded.config), installation_id=installation_id()
    )
    return accept_item(store, item_id, now=app_ctx.now(), integrator=integrator)


def reject_now(app_ctx: AppContext, store: Store, item_id: int, feedback: str) -> tuple[Item, int]:
    """`wrighty reject`'s service call, as the command and the inbox make it: the item after it,
    and completion.maxRejections."""
    from wrighty.config.translate import completion_of
    from wrighty.services.review import reject_item

    bound = completion_of(app_ctx.config().config).max_rejections
    item = reject_item(
        store,
        item_id,
        feedback,
        now=app_ctx.now(),
        max_rejections=bound,
        secrets=app_ctx.secrets(),
    )
    return item, bound


def verify_now(
    app_ctx: AppContext,
    store: Store,
    item_id: int,
    *,
    told: Callable[[CheckEvidence], None] = lambda _: None,
) -> ByHand:
    """`wrighty verify`'s service call, as the command and the web console make it: the
    item's checks by its agent's policy in wrighty.json, in its workspace on this
    installation, with this process's environment."""
    from wrighty.config import STATE_DIRNAME
    from wrighty.config.translate import completion_of, verify_policy
    from wrighty.installation import installation_id
    from wrighty.services.verify import verify_by_hand

    loaded = app_ctx.config()
    config = loaded.config
    item = store.get_item(item_id)
    agent = (item.agent if item is not None else None) or config.worker.default_agent
    return verify_by_hand(
        store,
        item_id,
        policy=verify_policy(config, agent),
        agent=agent,
        installation_id=installation_id(),
        state_dir=loaded.root / STATE_DIRNAME,
        now=app_ctx.now,
        environ=os.environ,
        completion=completion_of(config),
        told=told,
        known=app_ctx.secrets(),
    )


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


def change_now(app_ctx: AppContext, store: Store, item_id: int, *, stat: bool) -> WorkChange:
    """`wrighty diff`'s service call, as the command and the web console make it: the item's
    change in its workspace on this installation."""
    from wrighty.config import STATE_DIRNAME
    from wrighty.installation import installation_id
    from wrighty.services.diff import item_change

    root = app_ctx.config().root
    return item_change(
        store,
        item_id,
        project_root=root,
        state_dir=root / STATE_DIRNAME,
        installation_id=installation_id(),
        stat=stat,
    )


def import_now(
    app_ctx: AppContext, store: Store, source: Source, *, queue: bool, dry_run: bool
) -> list[Imported]:
    """`wrighty import`'s service call on wrighty.json's agents and checks: each of
    ``source``'s sections' outcome."""
    from wrighty.operator.forms import check_names_of
    from wrighty.services.importing import import_sections

    config = app_ctx.config().config
    return import_sections(
        store, source, agents=config.agent_names(), queue=queue,
        dry_run=dry_run, now=app_ctx.now(), check_names=check_names_of(config),
    )  # fmt: skip
