"""The actions an operator takes, as every entry point makes them: each calls its service with
what wrighty.json, this installation and the fleet's clock say (`AppContext`), and returns
what the service did; the entry point says it in `sentences.py`'s words."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from wrighty.errors import WrightyError

if TYPE_CHECKING:
    from pathlib import Path

    from wrighty.config import WrightyConfig
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
    notify = (
        Source(installation_id(), public_url=config.serve.public_url)
        if config.notify.enabled
        else None
    )
    return reap_expired(
        store,
        now=app_ctx.now(),
        max_requeues=config.worker.max_requeues,
        limit=limit,
        notify=notify,
    )


class NotIntegrated(Exception):
    """An accepted item with nothing to land whose integration was refused or failed: it
    stays in review (``error`` says why); the items accepted before it in the same call
    (``accepted``) stand."""

    def __init__(self, item_id: int, error: Exception, accepted: list[Accepted]) -> None:
        super().__init__(str(error))
        self.item_id = item_id
        self.error = error
        self.accepted = accepted


def accept_now(
    app_ctx: AppContext, store: Store, item_id: int, *, land_for: float | None = None
) -> Accepted:
    """`wrighty accept`'s service call, as the command, the inbox and the console make it. An
    item with a branch to integrate is accepted into landing (docs/landing.md) and, with
    ``land_for``, landed here while it waits at most that many seconds (a worker lands it
    otherwise); one with nothing to land is done at once, as completion.integrate says."""
    return accept_many_now(app_ctx, store, [item_id], land_for=land_for)[0]


def accept_many_now(
    app_ctx: AppContext, store: Store, item_ids: Sequence[int], *, land_for: float | None = None
) -> list[Accepted]:
    """`wrighty accept ID...` and `accept --all`: each item accepted, in the order given, as
    `accept_now` accepts one. Every refusal wrighty can see before it records anything (an item
    not in review, where one cannot land) comes first: then nothing is accepted. With
    ``land_for``, the accepted items land here, the last one's line landed while it waits."""
    import time

    from wrighty.config.translate import completion_of
    from wrighty.domain.review import check_acceptable
    from wrighty.installation import installation_id
    from wrighty.services.items import OPERATOR, require_item
    from wrighty.services.landing import (
        Place,
        accept_to_land,
        land_while_waiting,
        lander_from,
        landing_place,
    )
    from wrighty.services.review import accept_item, branch_integrator
    from wrighty.workproduct.integrate import IntegrationError

    loaded = app_ctx.config()
    completion = completion_of(loaded.config)
    here = installation_id()
    planned: list[tuple[Item, Place | None]] = []
    for item_id in dict.fromkeys(item_ids):
        item = require_item(store, item_id)
        check_acceptable(item)
        session = store.get_session(item_id)
        nothing_to_land = session is None or session.branch is None
        if completion.integration.kind == "none" or nothing_to_land:
            planned.append((item, None))
            continue
        assert session is not None
        planned.append(
            (item, landing_place(loaded.root, completion, session, installation_id=here))
        )
    accepted: list[Accepted] = []
    for item, place in planned:
        if place is None:
            integrator = branch_integrator(store, loaded.root, completion, installation_id=here)
            try:
                accepted.append(
                    accept_item(store, item.id, now=app_ctx.now(), integrator=integrator)
                )
            except IntegrationError as failed:
                raise NotIntegrated(item.id, failed, accepted) from None
            continue
        moved = accept_to_land(store, item, place, now=app_ctx.now(), actor=OPERATOR)
        accepted.append(landed_as(moved))
    landing = [one.item.id for one in accepted if one.landing]
    if land_for is None or not landing:
        return accepted
    lander = lander_from(
        loaded.config, loaded.root, store, worker_id=f"accept-{os.getpid()}",
        now=app_ctx.now, secrets=app_ctx.secrets(), checks_in=app_ctx.check_sandboxes(),
    )  # fmt: skip
    ends = time.monotonic() + land_for  # one wait for them all
    for item_id in landing:  # in the order accepted: each lands those ahead of it first
        left = max(0.0, ends - time.monotonic())
        land_while_waiting(
            lander, item_id, wait_seconds=left, pause=time.sleep, clock=time.monotonic
        )
    return [_as_it_is_now(store, one) for one in accepted]


def ready_ids(store: Store, confirmed: Sequence[int] | None = None) -> list[int]:
    """The items `accept --all` accepts, in its order (services/review.ready_items).
    WrightyError when none is ready. With ``confirmed`` (the ids a person was shown and said
    yes to, in the inbox or the console): those of them, and a refusal when any has left
    review or is no longer ready, so nothing is accepted that they did not see as it is."""
    from wrighty.operator.sentences import no_longer_ready, nothing_ready
    from wrighty.services.review import ready_items

    ready = ready_items(store)
    if confirmed is None and not ready.ready:
        raise WrightyError(nothing_ready(len(ready.waiting)))
    ids = [item.id for item in ready.ready]
    if confirmed is None:
        return ids
    if not confirmed:
        raise WrightyError(nothing_ready(len(ready.waiting)))
    for item_id in confirmed:
        if item_id not in ids:
            raise WrightyError(no_longer_ready(store.get_item(item_id), item_id))
    wanted = set(confirmed)
    return [item_id for item_id in ids if item_id in wanted]


def _as_it_is_now(store: Store, accepted: Accepted) -> Accepted:
    """An accept into landing, as its landing left the item (re-read)."""
    if not accepted.landing:
        return accepted
    item = store.get_item(accepted.item.id)
    return landed_as(item) if item is not None else accepted


def land_now(app_ctx: AppContext, store: Store, item_id: int | None) -> list[Item]:
    """`wrighty land`: land the heads of this installation's lines here, one after the other
    (with ``item_id``, that item's line until it left landing), as a worker would; the items as
    their landings left them."""
    from wrighty.services.landing import land_next, lander_from

    loaded = app_ctx.config()
    lander = lander_from(
        loaded.config, loaded.root, store, worker_id=f"land-{os.getpid()}", now=app_ctx.now,
        secrets=app_ctx.secrets(), checks_in=app_ctx.check_sandboxes(),
    )  # fmt: skip
    landed: list[Item] = []
    while True:
        item = land_next(lander, item_id=item_id)
        if item is None:
            return landed
        landed.append(item)


def landed_as(item: Item) -> Accepted:
    """What an accept into landing did, once the landing left ``item`` where it is: what was
    integrated (the landed event's words, and the URL a command printed) when it is done."""
    from wrighty.domain.integration import last_url
    from wrighty.domain.states import ItemState
    from wrighty.services.review import Accepted
    from wrighty.workproduct.integrate import Integrated

    if item.state is not ItemState.DONE or not item.reason:
        return Accepted(item, None, landing=True)
    return Accepted(item, Integrated(item.reason, url=last_url(item.reason)), landing=True)


def reject_now(app_ctx: AppContext, store: Store, item_id: int, feedback: str) -> tuple[Item, int]:
    """`wrighty reject`'s service call, as the command and the inbox make it: the item after it,
    and completion.maxRejections."""
    from wrighty.config.translate import completion_of
    from wrighty.installation import installation_id
    from wrighty.services.review import reject_item, reviewed_tip

    loaded = app_ctx.config()
    bound = completion_of(loaded.config).max_rejections
    seen = reviewed_tip(store, item_id, loaded.root, installation_id=installation_id())
    item = reject_item(
        store,
        item_id,
        feedback,
        now=app_ctx.now(),
        max_rejections=bound,
        secrets=app_ctx.secrets(),
        seen_commit=seen,
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
    from wrighty.config.translate import completion_of, tracker_tokens, verify_policy
    from wrighty.domain.sources import withheld
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
        environ=withheld(os.environ, tracker_tokens(config)),
        completion=completion_of(config),
        told=told,
        known=app_ctx.secrets(),
        sandbox=app_ctx.check_sandboxes()(agent),
    )


def handoff_now(
    app_ctx: AppContext, store: Store, item_id: int, to: str, note: str | None
) -> tuple[Item, str]:
    """`wrighty handoff`'s service call: the item after it, and the agent it was handed from."""
    from wrighty.services.review import handoff_item

    loaded = app_ctx.config()
    config = loaded.config
    _check_configured(config, to, project_root=loaded.root)
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


def _check_configured(config: WrightyConfig, to: str, *, project_root: Path) -> None:
    """WrightyError, naming the configured agents, when wrighty.json gives ``to`` no program
    to run (a worker would refuse it: docs/handoff.md)."""
    from wrighty.agents import configured_agents, plan_agent

    configured = configured_agents(config, project_root=project_root)
    if to in configured:
        return
    names = ", ".join(configured)
    if to not in config.agent_names():
        raise WrightyError(f"--to {to}: unknown agent (configured: {names}); see docs/config.md")
    try:
        plan_agent(config, to, project_root=project_root)
    except WrightyError as why:
        raise WrightyError(f"--to {to}: not configured: {why} (configured: {names})") from None


def change_now(
    app_ctx: AppContext, store: Store, item_id: int, *, stat: bool, since: str | None = None
) -> WorkChange:
    """`wrighty diff`'s service call, as the command and the web console make it: the item's
    change in its workspace on this installation (``since``: since that commit)."""
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
        since=since,
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
