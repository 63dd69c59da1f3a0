"""Review's two actions (docs/work-product.md#review), for every entry point: `accept` (the
change integrated as completion.integrate says, then review -> done) and `reject` (back to work
with a person's feedback); and the integration of an accepted item's branch on this
installation (`branch_integrator`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from wrighty.config import STATE_DIRNAME
from wrighty.domain import review
from wrighty.domain.integration import summary
from wrighty.domain.model import Change, Item, Session
from wrighty.domain.states import ItemState
from wrighty.domain.verify import latest_verification
from wrighty.domain.work_product import Completion
from wrighty.domain.workspaces import Mode, workspace_mode
from wrighty.errors import WrightyError
from wrighty.services.items import OPERATOR, apply_change, require_item
from wrighty.store.port import Store
from wrighty.workproduct.diff import branch_stat
from wrighty.workproduct.integrate import Integrated, IntegrationError, IntegrationTarget, integrate
from wrighty.workproduct.reads import toplevel, uncommitted

# Integrates an item's change (its session: where its branch is); IntegrationError if it
# cannot. None: nothing to integrate.
Integrator = Callable[[Item, Session | None], Integrated | None]


@dataclass(frozen=True)
class Accepted:
    item: Item
    integrated: Integrated | None
    landing: bool = False  # it was accepted into landing (docs/landing.md)


def accept_item(
    store: Store,
    item_id: int,
    *,
    now: datetime,
    actor: str = OPERATOR,
    integrator: Integrator | None = None,
) -> Accepted:
    """review -> done, once ``integrator`` has integrated its change. A failed integration
    leaves the item in review with the failure as its reason, and raises IntegrationError."""
    item = require_item(store, item_id)
    review.check_acceptable(item)
    integrated = None
    if integrator is not None:
        try:
            integrated = integrator(item, store.get_session(item.id))
        except IntegrationError as failed:
            why = str(failed)
            apply_change(
                store,
                item_id,
                lambda current: review.integration_failed(current, why, at=now, actor=actor),
            )
            raise
    words = integrated.words if integrated is not None else None
    try:
        change = apply_change(
            store,
            item_id,
            lambda current: review.accept(current, at=now, actor=actor, integrated=words),
        )
    except WrightyError as moved:
        if words is None:
            raise
        # Integrated, but the item moved meanwhile (cancelled, say): say both.
        raise WrightyError(f"{moved}; its change was integrated already: {words}") from moved
    return Accepted(change.after, integrated)


def reject_item(
    store: Store,
    item_id: int,
    feedback: str,
    *,
    now: datetime,
    max_rejections: int,
    actor: str = OPERATOR,
    secrets: Sequence[str] = (),
    seen_commit: str | None = None,
) -> Item:
    """review -> retry-scheduled, due now: the next claim resumes the item's session with
    ``feedback`` as its prompt (docs/work-product.md#review), stored with ``secrets`` (and
    what looks like one) replaced; ``seen_commit`` (`reviewed_tip`) recorded with the move."""
    return apply_change(
        store,
        item_id,
        lambda current: review.reject(
            current,
            feedback,
            at=now,
            actor=actor,
            max_rejections=max_rejections,
            secrets=secrets,
            seen_commit=seen_commit,
        ),
    ).after


def reviewed_tip(
    store: Store, item_id: int, project_root: Path, *, installation_id: str
) -> str | None:
    """The commit a person reviewing the item sees: its branch's tip in the project's
    repository (in review every change of the agent's is committed on it). None when it has
    no branch, the branch is another installation's, or git cannot tell."""
    from wrighty.workproduct.landing import branch_tip
    from wrighty.workproduct.runner import GitError

    session = store.get_session(item_id)
    if session is None or session.branch is None or session.installation_id != installation_id:
        return None
    try:
        return branch_tip(project_root, session.branch)
    except (GitError, WrightyError):
        return None


def handoff_item(
    store: Store,
    item_id: int,
    to_agent: str,
    *,
    note: str | None,
    default_agent: str,
    now: datetime,
    actor: str = OPERATOR,
    secrets: Sequence[str] = (),
) -> Change:
    """needs-attention, retry-scheduled or review -> retry-scheduled, due now, under
    ``to_agent``: its next run is a new session of that agent in the item's workspace, told
    what the agent before it left (docs/handoff.md), and the note stored with ``secrets``
    (and what looks like one) replaced. The change: the item before and after."""
    from wrighty.domain.handoff import hand_off

    def plan(current: Item) -> Change:
        before = current.agent or default_agent
        return hand_off(
            current, to_agent, from_agent=before, note=note, at=now, actor=actor, secrets=secrets
        )

    return apply_change(store, item_id, plan)


def branch_integrator(
    store: Store, project_root: Path, completion: Completion, *, installation_id: str
) -> Integrator:
    """Integrates an item's branch as ``completion.integration`` says, in the project's
    repository on this installation (docs/work-product.md#integration). An item with no branch
    has nothing to integrate; one whose branch is on another installation is refused here
    (WrightyError: nothing changed)."""

    def run(item: Item, session: Session | None) -> Integrated | None:
        if completion.integration.kind == "none":
            return None
        if session is None or session.branch is None:
            _refuse_unheld_changes(item, session, project_root)
            return Integrated(f"nothing integrated: item {item.id} has no branch")
        if session.installation_id != installation_id:
            raise WrightyError(
                f"item {item.id}'s branch is in the repository of installation "
                f"{session.installation_id}, not this one: accept it there"
            )
        checks = latest_verification(store.list_checks(item.id))
        told = summary(
            item_id=item.id,
            title=item.title,
            branch=session.branch,
            base=session.base_commit,
            diff_stat=branch_stat(project_root, session.base_commit, session.branch),
            checks=[record.evidence for record in checks],
        )
        target = IntegrationTarget(
            item.id, item.title, session.branch, session.base_commit, Path(session.workspace),
            told,
        )  # fmt: skip
        return integrate(
            project_root, completion.integration, target,
            author_name=completion.author_name, author_email=completion.author_email,
            hooks=completion.hooks == "run",
        )  # fmt: skip

    return run


def _refuse_unheld_changes(item: Item, session: Session | None, project_root: Path) -> None:
    """An item with no branch whose worktree (workspaceMode worktree) has uncommitted changes
    is refused: saying it is done with nothing integrated would leave its change behind."""
    if session is None:
        return
    path = Path(session.workspace)
    mode = workspace_mode(
        path, item_id=item.id, pinned=None, project_root=project_root,
        state_dir=project_root / STATE_DIRNAME,
    )  # fmt: skip
    if mode is not Mode.WORKTREE or not path.is_dir() or toplevel(path) != path.resolve():
        return
    dirty, _ = uncommitted(path)
    if dirty is not False:
        raise IntegrationError(
            f"item {item.id} has no branch, and its worktree {path} has changes no branch holds "
            "(or git cannot tell): commit them on a branch and integrate it yourself, or remove "
            "them, then accept again"
        )


def ready_items(store: Store) -> review.Readiness:
    """The items in review `wrighty accept --all` would accept, in its order, and the others
    with why each waits (domain/review.ready_to_accept): three reads, however many items."""
    in_review = list(store.list_items([ItemState.REVIEW]))
    ids = [item.id for item in in_review]
    verified = store.verified_items(ids) if ids else {}
    after: dict[int, list[tuple[int, ItemState | None]]] = {}
    wanted = set(ids)
    for dependency in store.list_dependencies() if ids else ():
        if dependency.item_id in wanted:
            after.setdefault(dependency.item_id, []).append(
                (dependency.depends_on, dependency.state)
            )
    return review.ready_to_accept(in_review, verified, after)
