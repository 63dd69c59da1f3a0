"""A local GitHub REST API for tests: the issues list wrighty's source reads, as GitHub serves it.

`FakeGitHub` holds the repositories' issues and serves
`GET /repos/{owner}/{repo}/issues?labels=..&state=open&per_page=..&page=..` with what wrighty
relies on: Link pagination headers, an ETag per page answered by a 304 to a matching
If-None-Match (a 304 spends no rate limit, as on GitHub), X-RateLimit-Remaining/Reset, pull
requests in the list (a `pull_request` key, which a sync skips), and the faults a test switches
on: a 5xx, a hang (never answers), malformed JSON, a secondary rate limit (403, Retry-After),
a spent primary limit (403, remaining 0). Every request must carry `Authorization: Bearer
<token>` (401 otherwise) and is recorded, so that tests count them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.github.fake_talk import Talk, routes

TOKEN = "ghp_fake-test-token-0123456789abcdef"
RATE_LIMIT = 5000


@dataclass
class Recorded:
    """One request as the fake saw it."""

    method: str
    path: str
    query: dict[str, str]
    status: int
    conditional: bool  # it carried If-None-Match


@dataclass
class FakeGitHub:
    """The repositories' issues and the switches a test turns. ``fault``: None, "5xx", "hang",
    "malformed", "secondary" (403 with Retry-After) or "spent" (primary limit at 0)."""

    token: str = TOKEN
    issues: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    fault: str | None = None
    fault_times: int | None = None  # how many requests the fault answers (None: all)
    fault_pages: frozenset[int] | None = None  # the pages it answers (None: every page)
    hidden: set[int] = field(default_factory=set)  # open issues the list misses (a shift)
    retry_after: int = 1
    remaining: int = RATE_LIMIT
    reset_at: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    talk: Talk = field(default_factory=Talk)  # comments, permissions, pull requests
    recorded = Recorded

    def add_issue(
        self,
        repo: str,
        number: int,
        title: str,
        body: str | None = "",
        *,
        labels: tuple[str, ...] = ("wrighty",),
        state: str = "open",
        pull_request: bool = False,
    ) -> dict[str, Any]:
        issue: dict[str, Any] = {
            "number": number,
            "title": title,
            "body": body,
            "state": state,
            "labels": [{"name": name} for name in labels],
            "html_url": f"https://github.example/{repo}/issues/{number}",
            "updated_at": "2026-12-06T00:00:00Z",
        }
        if pull_request:
            issue["pull_request"] = {"url": f"https://github.example/{repo}/pull/{number}"}
        with self.lock:
            self.issues.setdefault(repo, {})[number] = issue
        return issue

    def edit_issue(self, repo: str, number: int, **changes: Any) -> None:
        with self.lock:
            issue = self.issues[repo][number]
            if "labels" in changes:
                changes["labels"] = [{"name": name} for name in changes["labels"]]
            issue.update(changes)

    def counted(self, status: int | None = None) -> int:
        """The requests recorded (with this status)."""
        with self.lock:
            return sum(1 for r in self.requests if status is None or r.status == status)

    def _listed(self, repo: str, labels: set[str], state: str) -> list[dict[str, Any]]:
        with self.lock:
            found = list(self.issues.get(repo, {}).values())
        chosen = [
            issue
            for issue in found
            if issue["number"] not in self.hidden
            and (state == "all" or issue["state"] == state)
            and labels <= {label["name"] for label in issue["labels"]}
        ]
        return sorted(chosen, key=lambda issue: -int(issue["number"]))

    def _limit_headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(RATE_LIMIT),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset_at or int(time.time()) + 3600),
        }

    async def issues_route(self, request: Request) -> Response:
        owner, name = request.path_params["owner"], request.path_params["repo"]
        query = dict(request.query_params)
        conditional = "if-none-match" in request.headers

        def answer(response: Response) -> Response:
            with self.lock:
                self.requests.append(
                    Recorded(
                        request.method, request.url.path, query, response.status_code, conditional
                    )
                )
            return response

        if request.headers.get("authorization") != f"Bearer {self.token}":
            return answer(JSONResponse({"message": "Bad credentials"}, status_code=401))
        fault = self._take_fault(int(query.get("page", "1") or "1"))
        if fault == "hang":  # never answers: the client's deadline must end it
            await asyncio.Event().wait()
        if fault == "5xx":
            return answer(JSONResponse({"message": "Server Error"}, status_code=502))
        if fault == "secondary":
            return answer(
                JSONResponse(
                    {"message": "You have exceeded a secondary rate limit."},
                    status_code=403,
                    headers={"Retry-After": str(self.retry_after), **self._limit_headers()},
                )
            )
        if fault == "spent" or self.remaining <= 0:
            self.remaining = 0
            return answer(
                JSONResponse(
                    {"message": "API rate limit exceeded"},
                    status_code=403,
                    headers=self._limit_headers(),
                )
            )
        per_page = min(int(query.get("per_page", "30")), 100)
        page = max(int(query.get("page", "1")), 1)
        labels = {part for part in query.get("labels", "").split(",") if part}
        listed = self._listed(f"{owner}/{name}", labels, query.get("state", "open"))
        chunk = listed[(page - 1) * per_page : page * per_page]
        body = json.dumps(chunk, sort_keys=True).encode()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        last = max(1, -(-len(listed) // per_page))
        headers = {"ETag": etag, **self._links(request, page, last)}
        if request.headers.get("if-none-match") == etag:
            # GitHub: a 304 to a conditional request does not count against the rate limit.
            return answer(Response(status_code=304, headers={**headers, **self._limit_headers()}))
        self.remaining -= 1
        headers.update(self._limit_headers())
        if fault == "malformed":
            body = b'[{"number": 1, "title": '
        return answer(Response(body, headers=headers, media_type="application/json"))

    def _take_fault(self, page: int) -> str | None:
        with self.lock:
            if self.fault_pages is not None and page not in self.fault_pages:
                return None
            if self.fault is None or self.fault_times is None:
                return self.fault
            if self.fault_times <= 0:
                return None
            self.fault_times -= 1
            return self.fault

    @staticmethod
    def _links(request: Request, page: int, last: int) -> dict[str, str]:
        def to(number: int) -> str:
            return str(request.url.include_query_params(page=number))

        links = []
        if page < last:
            links += [f'<{to(page + 1)}>; rel="next"', f'<{to(last)}>; rel="last"']
        if page > 1:
            links += [f'<{to(1)}>; rel="first"', f'<{to(page - 1)}>; rel="prev"']
        return {"Link": ", ".join(links)} if links else {}

    async def issue_route(self, request: Request) -> Response:
        """`GET /repos/{owner}/{repo}/issues/{number}`: one issue (or pull request), 404 when
        there is none; faults and the token as the list's."""
        repo = f"{request.path_params['owner']}/{request.path_params['repo']}"
        number = int(request.path_params["number"])
        status = 200
        if request.headers.get("authorization") != f"Bearer {self.token}":
            status = 401
        fault = self._take_fault(0) if status == 200 else None
        with self.lock:
            found = self.issues.get(repo, {}).get(number)
            if status == 200 and fault is None:
                self.remaining -= 1
            if fault == "5xx":
                status = 502
            elif found is None and status == 200:
                status = 404
            self.requests.append(Recorded(request.method, request.url.path, {}, status, False))
        if status != 200:
            return JSONResponse({"message": "no"}, status_code=status,
                                headers=self._limit_headers())  # fmt: skip
        return JSONResponse(found, headers=self._limit_headers())

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/repos/{owner}/{repo}/issues", self.issues_route, methods=["GET"]),
                *routes(self),
                Route(
                    "/repos/{owner}/{repo}/issues/{number:int}", self.issue_route, methods=["GET"]
                ),
            ]
        )


@contextmanager
def serving(fake: FakeGitHub) -> Iterator[str]:
    """``fake`` served on 127.0.0.1 (a free port) in a thread; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        fake.app(),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=0,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the fake GitHub API did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        server.force_exit = True
        thread.join(timeout=5)
        sock.close()
