"""GitHub's REST API, as much as talking on an issue and a pull request need
(docs/sources.md#talking-on-the-issue): an issue's comments and the repository's new ones, a
comment posted or edited, a person's permission on the repository, a pull request found,
opened, updated or read.

Every request goes through `GitHubClient.ask` (github.py): the same deadline, rate-limit
handling, token header and words; what GitHub answers is checked here before anyone reads it
(a comment's id is a positive integer, a login a GitHub login, a URL an https or loopback URL).
"""

from __future__ import annotations

import json
import re
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from wrighty.domain.conversation import LOGIN as LOGIN_RULE
from wrighty.sources.github import GitHubClient, GitHubError, Listing

MAX_COMMENT_PAGES = 10  # 1,000 comments in one read: more waits for the next
PER_PAGE = 100
LOGIN = re.compile(LOGIN_RULE)
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
MAX_URL_CHARS = 2000


@dataclass(frozen=True)
class Comment:
    """A comment as wrighty reads it: its id, its issue's number, who wrote it and what."""

    id: int
    issue: int
    author: str
    body: str
    updated: datetime | None = None  # when it was last written (GitHub's updated_at)


@dataclass(frozen=True)
class PullRequest:
    """A pull request as wrighty reads it: its number, page, and where it stands."""

    number: int
    url: str
    state: str  # open | closed
    merged: bool
    merge_commit: str | None = None


@dataclass
class GitHubTalk:
    """Comments, permissions and pull requests of ``client``'s repository; ``listing``
    counts the requests and keeps the rate limit's last word."""

    client: GitHubClient
    listing: Listing = field(default_factory=Listing)

    @property
    def repo(self) -> str:
        return self.client.place.repo

    @property
    def requests(self) -> int:
        """The requests made so far."""
        return self.listing.requests

    def _url(self, path: str, query: dict[str, str] | None = None) -> str:
        base = self.client.place.api_url.rstrip("/")
        tail = f"?{urllib.parse.urlencode(query)}" if query else ""
        return f"{base}/repos/{self.repo}/{path}{tail}"

    def _json(self, body: bytes, what: str) -> Any:
        try:
            return json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise GitHubError(
                f"GitHub's answer for {what} of {self.repo} is not the JSON it documents; "
                "wrighty tries again later"
            ) from None

    def new_comments(self, since: datetime | None, etag: str | None) -> tuple[list[Comment], str]:
        """The repository's issue comments updated since ``since``, newest first, and the
        first page's ETag: asked with ``etag``, an unchanged first page (304) is no comment
        and no rate limit (a new comment is always on the first page)."""
        query = {"sort": "created", "direction": "desc", "per_page": str(PER_PAGE)}
        if since is not None:
            query["since"] = since.strftime("%Y-%m-%dT%H:%M:%SZ")
        url: str | None = self._url("issues/comments", query)
        found: list[Comment] = []
        first_etag = etag or ""
        for page in range(MAX_COMMENT_PAGES):
            assert url is not None
            status, headers, body = self.client.ask(
                self.listing, url, etag if page == 0 else None, doing=f"read {self.repo}'s comments"
            )  # fmt: skip
            if status == 304:
                return [], first_etag
            if page == 0:
                first_etag = headers.get("ETag", "") or ""
            found += _comments(self._json(body, "the comments"))
            url = _next_url(headers, self.client.place.api_url)
            if url is None:
                break
        return found, first_etag

    def issue_comments(self, number: int) -> list[Comment]:
        """Issue ``number``'s comments, oldest first (at most MAX_COMMENT_PAGES pages)."""
        url: str | None = self._url(f"issues/{number}/comments", {"per_page": str(PER_PAGE)})
        found: list[Comment] = []
        for _ in range(MAX_COMMENT_PAGES):
            assert url is not None
            status, headers, body = self.client.ask(
                self.listing, url, None, missing_ok=True,
                doing=f"read issue #{number}'s comments",
            )  # fmt: skip
            if status in (404, 410):
                return found
            found += _comments(self._json(body, f"issue #{number}'s comments"), issue=number)
            url = _next_url(headers, self.client.place.api_url)
            if url is None:
                break
        return found

    def post_comment(self, number: int, body: str) -> int | None:
        """Post ``body`` on issue ``number``; the comment's id (None: the issue is gone)."""
        status, _, answer = self.client.ask(
            self.listing, self._url(f"issues/{number}/comments"), None, method="POST",
            payload={"body": body}, missing_ok=True, doing=f"comment on issue #{number}",
        )  # fmt: skip
        if status in (404, 410):
            return None
        return _positive(_field(self._json(answer, "a comment"), "id"), "a comment's id")

    def edit_comment(self, comment_id: int, body: str) -> bool:
        """Make comment ``comment_id`` say ``body``; False when it is gone (deleted)."""
        status, _, _ = self.client.ask(
            self.listing, self._url(f"issues/comments/{comment_id}"), None, method="PATCH",
            payload={"body": body}, missing_ok=True, doing="edit wrighty's comment",
        )  # fmt: skip
        return status not in (404, 410)

    def whoami(self) -> str | None:
        """The login the token speaks as (None: GitHub does not say, as for an app's token)."""
        url = f"{self.client.place.api_url.rstrip('/')}/user"
        status, _, body = self.client.ask(
            self.listing, url, None, missing_ok=True, doing="say whose token it is"
        )  # fmt: skip
        login = _field(self._json(body, "the token's user"), "login") if status == 200 else None
        return login if isinstance(login, str) and LOGIN.fullmatch(login) else None

    def permission(self, login: str) -> str:
        """What ``login`` may do in the repository: admin, maintain, write, triage, read or
        none (GitHub answers 404 for someone who is not a collaborator)."""
        if LOGIN.fullmatch(login) is None:
            return "none"
        status, _, body = self.client.ask(
            self.listing, self._url(f"collaborators/{login}/permission"), None, missing_ok=True,
            doing=f"ask {login}'s permission",
        )  # fmt: skip
        if status in (404, 410):
            return "none"
        document = self._json(body, "a permission")
        role = document.get("role_name") if isinstance(document, dict) else None
        permission = document.get("permission") if isinstance(document, dict) else None
        for said in (role, permission):
            if said in ("admin", "maintain", "write", "triage", "read", "none"):
                return str(said)
        return "none"

    def find_pull(self, owner: str, branch: str) -> PullRequest | None:
        """The open pull request from ``owner``:``branch``, or None."""
        url = self._url("pulls", {"head": f"{owner}:{branch}", "state": "open"})
        _, _, body = self.client.ask(self.listing, url, None, doing="list pull requests")
        documents = self._json(body, "the pull requests")
        if not isinstance(documents, list):
            raise GitHubError(f"GitHub's list of {self.repo}'s pull requests is not a list")
        pulls = [self._pull(document) for document in documents]
        return pulls[0] if pulls else None

    def open_pull(self, *, title: str, head: str, base: str, body: str, draft: bool) -> PullRequest:
        """Open a pull request from ``head`` into ``base``."""
        payload = {"title": title, "head": head, "base": base, "body": body, "draft": draft}
        _, _, answer = self.client.ask(
            self.listing, self._url("pulls"), None, method="POST", payload=payload,
            doing="open a pull request",
        )  # fmt: skip
        return self._pull(self._json(answer, "a pull request"))

    def update_pull(self, number: int, *, title: str, body: str) -> PullRequest:
        """Give pull request ``number`` this title and body."""
        _, _, answer = self.client.ask(
            self.listing, self._url(f"pulls/{number}"), None, method="PATCH",
            payload={"title": title, "body": body}, doing=f"update pull request #{number}",
        )  # fmt: skip
        return self._pull(self._json(answer, "a pull request"))

    def pull(self, number: int, etag: str | None) -> tuple[PullRequest | None, str]:
        """Pull request ``number`` as it stands, and its ETag; (None, etag) when unchanged
        since ``etag`` (304: no rate limit spent)."""
        status, headers, body = self.client.ask(
            self.listing, self._url(f"pulls/{number}"), etag,
            doing=f"read pull request #{number}",
        )  # fmt: skip
        if status == 304:
            return None, etag or ""
        return self._pull(self._json(body, "a pull request")), headers.get("ETag", "") or ""

    def _pull(self, document: Any) -> PullRequest:
        if not isinstance(document, dict):
            raise GitHubError(f"GitHub's pull request of {self.repo} is not the JSON it documents")
        number = _positive(document.get("number"), "a pull request's number")
        url = document.get("html_url")
        if not isinstance(url, str) or not _web_url(url):
            raise GitHubError(f"GitHub's pull request #{number} of {self.repo} has no usable URL")
        state = document.get("state")
        merged = document.get("merged") is True or bool(document.get("merged_at"))
        sha = document.get("merge_commit_sha")
        commit = sha if isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{40,64}", sha) else None
        return PullRequest(number, url, "open" if state == "open" else "closed", merged, commit)


def _web_url(url: str) -> bool:
    """An https URL, or http to this machine (a test's, a local proxy's), of bounded length
    and without spaces or control characters."""
    if len(url) > MAX_URL_CHARS or any(ch.isspace() or ord(ch) < 32 for ch in url):
        return False
    parsed = urllib.parse.urlsplit(url)
    local = parsed.hostname in ("127.0.0.1", "localhost", "::1")
    return parsed.scheme == "https" or (parsed.scheme == "http" and local)


def _next_url(headers: Any, api_url: str) -> str | None:
    """The Link header's next page, when it is on the API's own host (never elsewhere)."""
    found = _NEXT.search(headers.get("Link", "") or "")
    if found is None:
        return None
    url = found.group(1)
    same = urllib.parse.urlsplit(url).netloc == urllib.parse.urlsplit(api_url).netloc
    return url if same else None


def _field(document: Any, key: str) -> Any:
    return document.get(key) if isinstance(document, dict) else None


def _positive(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        raise GitHubError(f"GitHub's answer has no usable {what}")
    return value


def _comments(documents: Any, *, issue: int | None = None) -> list[Comment]:
    """The comments of a page GitHub answered, those that read as comments (others skipped)."""
    if not isinstance(documents, list):
        raise GitHubError("GitHub's list of comments is not a list")
    found = []
    for document in documents:
        if not isinstance(document, dict):
            continue
        comment_id, body = document.get("id"), document.get("body")
        user = document.get("user")
        login = user.get("login") if isinstance(user, dict) else None
        number = issue if issue is not None else _issue_number(document.get("issue_url"))
        if (
            isinstance(comment_id, int) and not isinstance(comment_id, bool) and comment_id > 0
            and isinstance(body, str) and isinstance(login, str)
            and LOGIN.fullmatch(login) and number is not None
        ):  # fmt: skip
            found.append(
                Comment(comment_id, number, login, body, _time(document.get("updated_at")))
            )
    return found


def _issue_number(url: Any) -> int | None:
    """The issue's number at the end of a comment's issue_url."""
    if not isinstance(url, str):
        return None
    found = re.search(r"/issues/([1-9][0-9]{0,9})$", url)
    return int(found.group(1)) if found else None


def _time(text: Any) -> datetime | None:
    """GitHub's time (2026-12-07T01:02:03Z), or None when it is not one."""
    if not isinstance(text, str) or not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", text):
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
