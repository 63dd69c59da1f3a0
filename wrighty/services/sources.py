"""`wrighty sources sync`: each tracker's open, labelled issues as items, idempotently
(docs/sources.md).

A sync of one source reads every page of its open issues with the labels (a page unchanged
since the last sync is answered 304 and costs no rate limit), reads each issue into what its
item says (`domain/sources.issue_item`), and plans against the source's items
(`domain/sources.plan_sync`). Everything is read and checked before anything is written: a
fault of the tracker (a 5xx, no answer, malformed JSON, a spent rate limit) writes no item,
only the source's state with the error in wrighty's words, once. Then new issues' items are
created (each with its import key `github:owner/name#N`, which the store holds unique, so a
second sync, or a racing one, never makes a second item), edited issues rewrite the items that
have not started, closed or unlabelled issues cancel them, and "Depends on #N" becomes a
dependency on #N's item. The source's state (its pages' ETags, the rate limit, the time) is
written last: a sync that stopped midway is read again whole by the next one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from wrighty.domain.model import Change, Item, NewItem
from wrighty.domain.sources import (
    BadIssue,
    IssueItem,
    Pages,
    SourceIssue,
    SourceSettings,
    SourceState,
    SyncPlan,
    close,
    issue_item,
    issue_key,
    issue_number,
    issue_of,
    plan_sync,
    rewrite,
)
from wrighty.domain.states import ItemState
from wrighty.errors import AlreadyImported, WrightyError
from wrighty.services.items import apply_change, create_item, edit_item
from wrighty.sources.github import GitHubClient, GitHubError, GitHubPlace, Listing, rate_spent
from wrighty.store.port import Store

MakeClient = Callable[[SourceSettings, str], GitHubClient]


def github_client(settings: SourceSettings, token: str) -> GitHubClient:
    place = GitHubPlace(settings.api_url, settings.repo, settings.labels)
    return GitHubClient(place, token, settings.token_env, timeout=settings.timeout_seconds)


@dataclass
class SyncReport:
    """What one sync of one source did (or, dry, would do)."""

    source: str
    dry_run: bool
    created: list[tuple[int, int | None]] = field(default_factory=list)  # (issue, item)
    updated: list[tuple[int, int]] = field(default_factory=list)
    cancelled: list[tuple[int, int]] = field(default_factory=list)
    unchanged: int = 0
    left_alone: int = 0  # changed or closed issues whose items had started
    requests: int = 0
    not_modified: int = 0  # pages answered 304
    rate_remaining: int | None = None
    notes: list[str] = field(default_factory=list)


def sync_source(
    store: Store,
    settings: SourceSettings,
    *,
    environ: Mapping[str, str],
    now: datetime,
    dry_run: bool = False,
    make_client: MakeClient = github_client,
    default_agent: str | None = None,
) -> SyncReport:
    """Sync ``settings``' source into ``store`` (module docstring). WrightyError, having
    written no item, when its token is missing or the tracker cannot be read; then (unless
    ``dry_run``) the source's state records the error."""
    state, listing, plan, existing, pages = _read(
        store, settings, environ=environ, now=now, dry_run=dry_run, make_client=make_client
    )
    report = SyncReport(settings.name, dry_run, requests=listing.requests)
    report.rate_remaining = listing.rate_remaining
    report.not_modified = sum(1 for page in listing.pages if page.documents is None)
    report.unchanged, report.left_alone = plan.unchanged, plan.started_changed
    if dry_run:
        report.created = [(issue.number, None) for issue in plan.create]
        report.updated = [(issue_number(u.item), u.item.id) for u in plan.update]
        report.cancelled = [(issue_number(item), item.id) for item in plan.cancel]
        return report
    _write(store, settings, plan, existing, report, agent=settings.agent or default_agent,
           now=now)  # fmt: skip
    store.write_source(
        dataclasses.replace(
            state,
            synced_at=now,
            attempted_at=now,
            rate_remaining=listing.rate_remaining,
            rate_reset=listing.rate_reset,
            last_error=None,
            failures=0,
            settings=settings.fingerprint,
            pages=pages,
        )
    )
    return report


def _read(
    store: Store,
    settings: SourceSettings,
    *,
    environ: Mapping[str, str],
    now: datetime,
    dry_run: bool,
    make_client: MakeClient,
) -> tuple[SourceState, Listing, SyncPlan, list[Item], Pages]:
    """The source's state, every page of its issues, the plan, the source's items and the
    pages to keep; WrightyError (recorded unless dry) when they cannot be read."""
    token = environ.get(settings.token_env, "")
    if not token.strip():
        raise WrightyError(
            f"source {settings.name}: ${settings.token_env} is not set: put a GitHub token "
            "that can read the repository's issues in it (docs/sources.md)"
        )
    state = store.get_source(settings.name) or SourceState(settings.name)
    if state.rate_remaining == 0 and state.rate_reset is not None and state.rate_reset > now:
        raise WrightyError(f"source {settings.name}: {rate_spent(state.rate_reset)}")
    pages = state.pages if state.settings == settings.fingerprint else ()
    client = make_client(settings, token)
    try:
        listing = client.open_issues([etag for etag, _ in pages])
        issues, kept, stored = _issues(listing, pages)
        prefix = settings.prefix
        wanted = [issue_item(prefix, issue, settings.priority_labels) for issue in issues]
        existing = list(store.list_imported(prefix + "#"))
        plan = plan_sync(wanted, existing, unchanged_keys=[issue_key(prefix, n) for n in kept])
        plan = _still_open(client, listing, settings, plan)
    except GitHubError as error:
        if not dry_run:
            store.write_source(failed_state(state, error, now))
        raise WrightyError(f"source {settings.name}: {error}") from None
    return state, listing, plan, existing, stored


def _still_open(
    client: GitHubClient, listing: Listing, settings: SourceSettings, plan: SyncPlan
) -> SyncPlan:
    """``plan`` without the cancels of issues that, asked alone, are open with the labels:
    the pages shifted while they were read (an issue closed or opened meanwhile) and missed
    them. One request per item to cancel, before anything is written."""
    cancel = []
    for item in plan.cancel:
        document = client.issue(issue_number(item), listing)
        try:
            issue = issue_of(document) if isinstance(document, dict) else None
        except BadIssue:
            issue = None
        state = document.get("state") if isinstance(document, dict) else None
        if issue is None or state != "open" or not set(settings.labels) <= set(issue.labels):
            cancel.append(item)
    kept = len(plan.cancel) - len(cancel)
    return dataclasses.replace(plan, cancel=tuple(cancel), unchanged=plan.unchanged + kept)


def _write(
    store: Store,
    settings: SourceSettings,
    plan: SyncPlan,
    existing: list[Item],
    report: SyncReport,
    *,
    agent: str | None,
    now: datetime,
) -> None:
    """Create, rewrite and cancel as ``plan`` says, then the dependencies; into ``report``."""
    actor = f"source:{settings.name}"
    made = {item.import_key or "": item.id for item in existing}
    for issue in plan.create:
        item_id = _create(store, settings, issue, made, agent=agent, now=now, actor=actor)
        made[issue.key] = item_id
        report.created.append((issue.number, item_id))
    for update in plan.update:
        edited = partial(rewrite, wanted=update.wanted, at=now, actor=actor)
        if _apply(store, update.item, edited):
            report.updated.append((update.wanted.number, update.item.id))
        else:
            report.left_alone += 1
    for item in plan.cancel:
        if _apply(store, item, partial(close, at=now, actor=actor)):
            report.cancelled.append((issue_number(item), item.id))
        else:
            report.left_alone += 1
    for issue in (*plan.create, *(u.wanted for u in plan.update)):
        report.notes += _depend(store, settings.prefix, issue, made, now=now, actor=actor)


def _issues(listing: Listing, pages: Pages) -> tuple[list[SourceIssue], list[int], Pages]:
    """The issues of the pages read, the numbers of those on pages answered 304, and each
    page's ETag with the issue numbers it holds, for the next sync."""
    issues: list[SourceIssue] = []
    kept: list[int] = []
    stored: list[tuple[str, tuple[int, ...]]] = []
    for index, page in enumerate(listing.pages):
        if page.documents is None:
            kept += pages[index][1]
            stored.append(pages[index])
            continue
        found = []
        for document in page.documents:
            try:
                issue = issue_of(document)
            except BadIssue as error:
                raise GitHubError(
                    f"GitHub's answer for page {index + 1} is not what it documents: {error}"
                ) from None
            if issue is not None:
                found.append(issue)
        issues += found
        stored.append((page.etag, tuple(issue.number for issue in found)))
    return issues, kept, tuple(stored)


def failed_state(state: SourceState, error: GitHubError, now: datetime) -> SourceState:
    """The state after a failed sync: its error, one more failure in a row (the back-off),
    and a spent rate limit's reset, before which no sync asks again."""
    failed = dataclasses.replace(
        state, attempted_at=now, last_error=str(error), failures=state.failures + 1
    )
    if error.until is None:
        return failed
    return dataclasses.replace(failed, rate_remaining=0, rate_reset=error.until)


def _create(
    store: Store,
    settings: SourceSettings,
    issue: IssueItem,
    made: dict[str, int],
    *,
    agent: str | None,
    now: datetime,
    actor: str,
) -> int:
    after = [made[issue_key(settings.prefix, n)] for n in issue.depends_on
             if issue_key(settings.prefix, n) in made]  # fmt: skip
    new = NewItem(
        title=issue.title,
        body=issue.body,
        agent=agent,
        timeout_seconds=None,
        workspace=None,
        initial_state=ItemState.QUEUED if settings.queue else ItemState.TODO,
        priority=issue.priority,
        after=tuple(after),
        labels=issue.labels,
        import_key=issue.key,
        import_fingerprint=issue.fingerprint,
    )
    try:
        return create_item(store, new, now=now, actor=actor).id
    except AlreadyImported:
        # A racing sync made it since the items were read: the store kept one.
        return store.find_imported([issue.key])[issue.key].id


def _apply(store: Store, item: Item, plan: Callable[[Item], Change]) -> bool:
    """The change ``plan`` makes, written compare-and-set; False when the item started (or
    finished) in the meantime, which leaves it alone."""
    try:
        apply_change(store, item.id, plan)
    except (ValueError, WrightyError):
        return False
    return True


def _depend(
    store: Store, prefix: str, issue: IssueItem, made: dict[str, int], *, now: datetime, actor: str
) -> list[str]:
    """Make ``issue``'s item come after the items of the issues it depends on that it does not
    come after yet; a dependency the store refuses (a cycle, a started item) is a note."""
    item_id = made.get(issue.key)
    if item_id is None or not issue.depends_on:
        return []
    already = {edge.depends_on for edge in store.list_dependencies(item_id)}
    notes = []
    for number in issue.depends_on:
        other = made.get(issue_key(prefix, number))
        if other is None or other in already:
            continue
        try:
            edit_item(store, item_id, now=now, after=[other], actor=actor)
        except WrightyError as error:
            notes.append(f"issue #{issue.number}: depends on #{number}, not recorded: {error}")
    return notes
