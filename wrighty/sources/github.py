"""GitHub's REST API, as much as a source's sync needs: the open issues with a repository's
labels, page by page (docs/sources.md).

Plain HTTP through the standard library (`urllib.request`): the sync asks one endpoint with
GET, and what it must get right (a deadline on every request, conditional requests, the rate
limit's headers, a token kept out of every message) is a few lines over it, where a client
library would add a runtime dependency and its own retries and logging that would have to be
turned off to keep those promises (docs/sources.md#why-plain-http).

Each page is asked with the ETag it had at the last sync (If-None-Match): GitHub answers an
unchanged page with 304, which costs no rate limit. A spent rate limit (X-RateLimit-Remaining
0) or a secondary limit (403 or 429 with Retry-After) is waited out when the wait is short
(``max_wait``) and stops the sync otherwise; a 5xx, a malformed answer or no answer within
the deadline stops it: `GitHubError` says so in wrighty's words, and the caller backs off
before the next sync. The token goes only into the Authorization header: no message, log or
stored value carries it.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import Message

from wrighty.errors import WrightyError

PER_PAGE = 100  # GitHub's largest page: 1,000 issues are 10 requests
MAX_PAGES = 100  # 10,000 open issues with the labels: more is refused, not walked
MAX_PAGE_BYTES = 16 * 1024 * 1024
MAX_SECONDARY_WAITS = 2
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
USER_AGENT = "wrighty-source"


class GitHubError(WrightyError):
    """A sync that could not read the repository's issues, in wrighty's words (never the
    token). ``rate_limited``: GitHub's rate limit stopped it (``until``: the primary limit's
    reset, when it was that one)."""

    def __init__(
        self, message: str, *, rate_limited: bool = False, until: datetime | None = None
    ) -> None:
        super().__init__(message)
        self.rate_limited = rate_limited
        self.until = until  # a spent rate limit's reset


@dataclass(frozen=True)
class GitHubPlace:
    """Where a source's issues are: the API's base URL, owner/name, the labels."""

    api_url: str
    repo: str
    labels: tuple[str, ...]

    def page_url(self, page: int) -> str:
        query = urllib.parse.urlencode(
            {
                "labels": ",".join(self.labels),
                "state": "open",
                "per_page": PER_PAGE,
                "page": page,
            }
        )
        return f"{self.api_url.rstrip('/')}/repos/{self.repo}/issues?{query}"


@dataclass(frozen=True)
class Page:
    """One page as listed: its ETag, and its issues' JSON (None: 304, unchanged since its
    ETag, its issues those the caller kept)."""

    etag: str
    documents: list[object] | None


@dataclass
class Listing:
    """What one walk of the pages read, and the rate limit as the last answer said it."""

    pages: list[Page] = field(default_factory=list)
    requests: int = 0
    rate_remaining: int | None = None
    rate_reset: datetime | None = None


Sleep = Callable[[float], None]


@dataclass(frozen=True)
class GitHubClient:
    """Reads the open issues of ``place`` with ``token``. ``timeout``: seconds every request
    has to answer (connecting, and each read); ``max_wait``: the longest rate-limit wait the
    walk sits through before it stops instead."""

    place: GitHubPlace
    token: str
    token_env: str
    timeout: float = 30.0
    max_wait: float = 60.0
    sleep: Sleep = time.sleep
    clock: Callable[[], float] = time.time

    def open_issues(self, known: Sequence[str]) -> Listing:
        """Every page of open issues with the labels. ``known``: each page's ETag from the last
        sync, sent as If-None-Match; a page answered 304 comes back without documents, and is
        followed by the next page as long as the last sync had one."""
        listing = Listing()
        page = 1
        while True:
            if page > MAX_PAGES:
                raise GitHubError(
                    f"{self.place.repo} has more than {MAX_PAGES * PER_PAGE} open issues with "
                    f"the labels {', '.join(self.place.labels)}: give the source a narrower label"
                )
            etag = known[page - 1] if page <= len(known) else None
            answer, has_next = self._page(listing, page, etag)
            listing.pages.append(answer)
            if answer.documents is None:
                has_next = page < len(known)
            if not has_next:
                return listing
            page += 1

    def issue(self, number: int, listing: Listing) -> object | None:
        """Issue ``number``'s JSON, asked alone (one request, counted in ``listing``), or
        None when GitHub has none (404, 410: deleted or moved). A sync asks it before it
        cancels the issue's item: an issue the pages missed (they shifted while they were
        read) is not taken for closed."""
        url = f"{self.place.api_url.rstrip('/')}/repos/{self.place.repo}/issues/{number}"
        status, _, body = self.ask(listing, url, None, missing_ok=True)
        if status in (404, 410):
            return None
        try:
            document: object = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise GitHubError(
                f"GitHub's answer for issue #{number} of {self.place.repo} is not the JSON it "
                "documents; wrighty tries again later"
            ) from None
        return document

    def _page(self, listing: Listing, page: int, etag: str | None) -> tuple[Page, bool]:
        status, headers, body = self.ask(listing, self.place.page_url(page), etag)
        if status == 304:
            return Page(etag or "", None), False
        documents = self._documents(body, page)
        found = _NEXT.search(headers.get("Link", "") or "")
        self._wait_if_spent(listing, more=found is not None)
        return Page(headers.get("ETag", "") or "", documents), found is not None

    def ask(
        self,
        listing: Listing,
        url: str,
        etag: str | None,
        *,
        missing_ok: bool = False,
        method: str = "GET",
        payload: object = None,
        doing: str | None = None,
    ) -> tuple[int, Message, bytes]:
        """``method`` ``url`` (``payload`` as its JSON body): its answer when it is 2xx, 304
        (to ``etag``) or, ``missing_ok``, 404 or 410; a secondary rate limit waited out when
        short; GitHubError otherwise, ``doing`` naming what was asked (listing the issues)."""
        waits = 0
        while True:
            status, headers, body = self._send(method, url, etag, payload)
            listing.requests += 1
            self._note_limit(listing, headers)
            if 200 <= status < 300 or (status == 304 and etag is not None):
                return status, headers, body
            if missing_ok and status in (404, 410):
                return status, headers, body
            retry_after = _seconds(headers.get("Retry-After"))
            if status in (403, 429) and retry_after is not None:
                if retry_after > self.max_wait or waits >= MAX_SECONDARY_WAITS:
                    raise GitHubError(
                        f"GitHub's secondary rate limit: it asks wrighty to wait "
                        f"{retry_after:g}s before asking {self.place.repo} again",
                        rate_limited=True,
                    )
                waits += 1
                self.sleep(retry_after)
                continue
            raise self._refusal(status, listing, doing or f"list {self.place.repo}'s issues")

    def _send(
        self, method: str, url: str, etag: str | None, payload: object
    ) -> tuple[int, Message, bytes]:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - config
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/vnd.github+json")
        request.add_header("X-GitHub-Api-Version", "2022-11-28")
        request.add_header("User-Agent", USER_AGENT)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if etag:
            request.add_header("If-None-Match", etag)
        where = f"GitHub ({self.place.api_url})"
        try:
            with _OPENER.open(request, timeout=self.timeout) as response:
                return response.status, response.headers, _bounded(response)
        except urllib.error.HTTPError as error:
            with error:
                try:
                    body = error.read(64 * 1024)
                except (OSError, TimeoutError):
                    body = b""
                return error.code, error.headers, body
        except TimeoutError:
            raise GitHubError(
                f"{where} did not answer within {self.timeout:g}s; wrighty tries again later"
            ) from None
        except urllib.error.URLError as error:
            reason = error.reason
            if isinstance(reason, TimeoutError):
                raise GitHubError(
                    f"{where} did not answer within {self.timeout:g}s; wrighty tries again later"
                ) from None
            raise GitHubError(
                f"{where} cannot be reached ({_words(reason)}); wrighty tries again later"
            ) from None
        except (OSError, ValueError) as error:
            raise GitHubError(
                f"{where} cannot be reached ({_words(error)}); wrighty tries again later"
            ) from None

    def _documents(self, body: bytes, page: int) -> list[object]:
        try:
            documents = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            documents = None
        if not isinstance(documents, list):
            raise GitHubError(
                f"GitHub's answer for page {page} of {self.place.repo}'s issues is not the JSON "
                "list it documents; wrighty tries again later"
            )
        return documents

    def _note_limit(self, listing: Listing, headers: Message) -> None:
        remaining = _seconds(headers.get("X-RateLimit-Remaining"))
        reset = _seconds(headers.get("X-RateLimit-Reset"))
        if remaining is not None:
            listing.rate_remaining = int(remaining)
        if reset is not None:
            listing.rate_reset = datetime.fromtimestamp(reset, UTC)

    def _wait_if_spent(self, listing: Listing, *, more: bool) -> None:
        if not more or listing.rate_remaining != 0 or listing.rate_reset is None:
            return
        wait = listing.rate_reset.timestamp() - self.clock()
        if wait > self.max_wait:
            raise GitHubError(
                rate_spent(listing.rate_reset), rate_limited=True, until=listing.rate_reset
            )
        self.sleep(max(wait, 0.0))

    def _refusal(self, status: int, listing: Listing, doing: str) -> GitHubError:
        repo = self.place.repo
        if status == 401:
            return GitHubError(
                f"GitHub refused the token in ${self.token_env} (401): set a valid token there"
            )
        if status in (403, 429) and listing.rate_remaining == 0 and listing.rate_reset:
            return GitHubError(
                rate_spent(listing.rate_reset), rate_limited=True, until=listing.rate_reset
            )
        if status == 403:
            return GitHubError(
                f"GitHub refused to {doing} (403): the token in ${self.token_env} may lack "
                "access to it"
            )
        if status == 404:
            return GitHubError(
                f"GitHub has no repository {repo} the token in ${self.token_env} can see (404)"
            )
        if status >= 500:
            return GitHubError(
                f"GitHub answered {status} (a server error) when asked to {doing}; "
                "wrighty tries again later"
            )
        return GitHubError(f"GitHub answered {status} when asked to {doing}")


def rate_spent(reset: datetime) -> str:
    """The words of a spent rate limit."""
    return (
        f"GitHub's rate limit is spent until {reset:%Y-%m-%d %H:%M:%S} UTC; the sync goes on "
        "after it"
    )


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is not followed: the Authorization header would go with it elsewhere."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


def _bounded(response: object) -> bytes:
    read = getattr(response, "read")  # noqa: B009 - an http.client response
    body: bytes = read(MAX_PAGE_BYTES + 1)
    if len(body) > MAX_PAGE_BYTES:
        raise GitHubError(f"GitHub's answer is larger than {MAX_PAGE_BYTES} bytes")
    return body


def _seconds(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and value >= 0 else None


def _words(reason: object) -> str:
    """A network error's reason, short and without anything but its words."""
    text = getattr(reason, "strerror", None) or str(reason)
    return str(text)[:120]
