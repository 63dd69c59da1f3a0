"""completion.integrate github-pr (docs/sources.md#a-pull-request-as-the-integration): an
accepted item's branch, brought up to date and checked by its landing, pushed to
completion.remote, and a pull request opened against its target (or the open one updated),
its body the item, the checks with their evidence and, for an item of a GitHub issue of the
same repository, "Closes #N". The item then waits in review for the pull request; the sync
sees its merge (done) or close (back to review: services/conversation.py).

The pull request is recorded (`tracker_items`) before the item moves: a lander that dies in
between lands the item again, which pushes the same commit and finds the pull request open."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from wrighty.domain.conversation import TrackerItem, quoted
from wrighty.domain.model import Item
from wrighty.domain.sources import PullRequestPlace, SourceSettings, issue_number
from wrighty.domain.text import clip, printable_line
from wrighty.errors import WrightyError
from wrighty.sources.github import GitHubClient, GitHubPlace
from wrighty.sources.github_talk import GitHubTalk, PullRequest
from wrighty.store.port import Store

MAX_TITLE_CHARS = 200
MAX_BODY_CHARS = 60_000


@dataclass(frozen=True)
class PullOpener:
    """Opens (or updates) an item's pull request at ``place``, with the token from
    ``environ``."""

    place: PullRequestPlace
    store: Store
    environ: Mapping[str, str]

    def __call__(self, item: Item, *, branch: str, target: str, summary: str) -> PullRequest:
        talk = GitHubTalk(pull_client(self.place, self.environ))
        title = clip(printable_line(item.title), MAX_TITLE_CHARS)
        body = pull_body(item, summary, repo=self.place.repo)
        owner = self.place.repo.split("/", 1)[0]
        found = talk.find_pull(owner, branch)
        if found is not None:
            pull = talk.update_pull(found.number, title=title, body=body)
        else:
            pull = talk.open_pull(
                title=title, head=branch, base=target, body=body, draft=self.place.draft
            )
        record = self.store.get_tracker_item(item.id) or TrackerItem(item.id)
        opened = dataclasses.replace(
            record, pull_repo=self.place.repo, pull_number=pull.number, pull_url=pull.url,
            pull_state="open", pull_etag=None,
        )  # fmt: skip
        self.store.write_tracker_item(opened)
        return pull


def pull_client(place: PullRequestPlace, environ: Mapping[str, str]) -> GitHubClient:
    """A client of ``place``'s repository with its token (WrightyError when it is unset)."""
    token = environ.get(place.token_env, "")
    if not token:
        raise WrightyError(
            f"${place.token_env} is not set: completion.integrate github-pr needs a token that "
            f"may push to and open pull requests in {place.repo} there"
        )
    return GitHubClient(
        GitHubPlace(place.api_url, place.repo, ()), token, place.token_env,
        timeout=place.timeout_seconds,
    )  # fmt: skip


def pull_body(item: Item, summary: str, *, repo: str) -> str:
    """A pull request's body: the item, its change and checks (in a block shown as text), and
    "Closes #N" when the item is a GitHub issue of ``repo``."""
    lines = [
        f"wrighty item {item.id}, accepted after review; its branch was brought up to date with "
        "the target and its checks ran there:",
        "",
        quoted(summary, MAX_BODY_CHARS),
    ]
    if (item.import_key or "").startswith(f"github:{repo}#"):
        lines += ["", f"Closes #{issue_number(item)}"]
    return "\n".join(lines) + "\n"


def pull_watch(place: PullRequestPlace) -> SourceSettings:
    """Settings under which a conversation only follows the pull requests at ``place``
    (a repository that is not a source's)."""
    return SourceSettings(
        name=f"pull-requests:{place.repo}", repo=place.repo, labels=(), token_env=place.token_env,
        api_url=place.api_url, timeout_seconds=place.timeout_seconds, status_comments=False,
        answers=False,
    )  # fmt: skip
