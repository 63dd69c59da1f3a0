"""The conversation side of the local GitHub API (tests/github/fake_api.py serves it with the
issues): issue comments (the repository's since a time, with Link pages and ETags; an issue's;
posted; edited), a person's permission, and pull requests (listed by head, opened, updated,
read with ETags, merged or closed by the test as a person would on GitHub).

``hang_after_post``: the next comment posted is stored, then no answer comes (the client's
deadline ends it), with ``posted`` set, so that a test can kill the worker between "comment
posted" and "recorded"."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Talk:
    """What the repositories' people and wrighty said, and the switches a test turns."""

    comments: dict[int, dict[str, Any]] = field(default_factory=dict)  # by comment id
    permissions: dict[str, str] = field(default_factory=dict)  # login -> admin|write|read
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)  # by number
    next_id: int = 1000
    next_pull: int = 500
    stamp: str | None = None  # the time comments are written at (None: now)
    refuse_pulls: bool = False  # a pull request asked to open is answered 502
    hang_after_post: bool = False
    posted: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def say(self, repo: str, issue: int, login: str, body: str) -> int:
        """A person's comment on the issue (as GitHub's page would post it)."""
        with self.lock:
            return self._add(repo, issue, login, body)

    def _add(self, repo: str, issue: int, login: str, body: str) -> int:
        self.next_id += 1
        stamp = self.stamp or _now()
        self.comments[self.next_id] = {
            "id": self.next_id,
            "body": body,
            "user": {"login": login},
            "issue_url": f"https://api.github.example/repos/{repo}/issues/{issue}",
            "created_at": stamp,
            "updated_at": stamp,
            "repo": repo,
            "issue": issue,
        }
        return self.next_id

    def on_issue(self, repo: str, issue: int) -> list[dict[str, Any]]:
        with self.lock:
            return [
                dict(c) for c in self.comments.values() if c["repo"] == repo and c["issue"] == issue
            ]

    def merge(self, number: int) -> None:
        with self.lock:
            pull = self.pulls[number]
            pull.update(state="closed", merged=True, merged_at=_now(),
                        merge_commit_sha="ab" * 20)  # fmt: skip

    def close(self, number: int) -> None:
        with self.lock:
            self.pulls[number].update(state="closed", merged=False)


def routes(fake: Any) -> list[Route]:
    """The routes of ``fake`` (a FakeGitHub, whose ``talk`` is a Talk)."""
    talk: Talk = fake.talk

    def record(request: Request, status: int) -> None:
        with fake.lock:
            conditional = "if-none-match" in request.headers
            fake.requests.append(
                fake.recorded(
                    request.method,
                    request.url.path,
                    dict(request.query_params),
                    status,
                    conditional,
                )
            )

    def refused(request: Request) -> Response | None:
        if request.headers.get("authorization") != f"Bearer {fake.token}":
            record(request, 401)
            return JSONResponse({"message": "Bad credentials"}, status_code=401)
        if fake._take_fault(0) == "5xx":
            record(request, 502)
            return JSONResponse({"message": "Server Error"}, status_code=502)
        return None

    def answer(request: Request, document: Any, status: int = 200, etag: bool = False) -> Response:
        body = json.dumps(document, sort_keys=True).encode()
        headers = fake._limit_headers()
        if etag:
            tag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
            headers["ETag"] = tag
            if request.headers.get("if-none-match") == tag:
                record(request, 304)
                return Response(status_code=304, headers=headers)
        fake.remaining -= 1
        record(request, status)
        return Response(body, status_code=status, headers=headers, media_type="application/json")

    def repo_of(request: Request) -> str:
        return f"{request.path_params['owner']}/{request.path_params['repo']}"

    def shown(comment: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in comment.items() if k not in ("repo", "issue")}

    async def repo_comments(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        since = request.query_params.get("since", "")
        newest_first = request.query_params.get("direction", "desc") == "desc"
        with talk.lock:
            found = [
                shown(c)
                for c in sorted(talk.comments.values(), key=lambda c: c["id"], reverse=newest_first)
                if c["repo"] == repo_of(request) and c["updated_at"] >= since
            ]
        per_page = min(int(request.query_params.get("per_page", "30")), 100)
        page = max(int(request.query_params.get("page", "1")), 1)
        last = max(1, -(-len(found) // per_page))
        response = answer(request, found[(page - 1) * per_page : page * per_page], etag=True)
        response.headers.update(fake._links(request, page, last))
        return response

    async def issue_comments(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        repo, number = repo_of(request), int(request.path_params["number"])
        if request.method == "GET":
            return answer(request, [shown(c) for c in talk.on_issue(repo, number)])
        body = (await request.json())["body"]
        with talk.lock:
            made = talk._add(repo, number, "wrighty-bot", body)
            document = shown(talk.comments[made])
        if talk.hang_after_post:
            talk.hang_after_post = False
            talk.posted.set()
            await asyncio.Event().wait()  # stored, never answered
        return answer(request, document, 201)

    async def comment(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        comment_id = int(request.path_params["comment_id"])
        with talk.lock:
            found = talk.comments.get(comment_id)
            if found is not None:
                found["body"] = (await request.json())["body"]
                found["updated_at"] = _now()
        if found is None:
            record(request, 404)
            return JSONResponse({"message": "Not Found"}, status_code=404)
        return answer(request, shown(found))

    async def permission(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        said = talk.permissions.get(request.path_params["login"])
        if said is None:
            record(request, 404)
            return JSONResponse({"message": "Not Found"}, status_code=404)
        return answer(request, {"permission": said, "role_name": said})

    async def pulls(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        repo = repo_of(request)
        if request.method == "GET":
            head = request.query_params.get("head", "")
            with talk.lock:
                found = [
                    dict(p) for p in talk.pulls.values()
                    if p["repo"] == repo and p["state"] == "open"
                    and f"{repo.split('/')[0]}:{p['head']['ref']}" == head
                ]  # fmt: skip
            return answer(request, found)
        if talk.refuse_pulls:
            record(request, 502)
            return JSONResponse({"message": "Server Error"}, status_code=502)
        asked = await request.json()
        with talk.lock:
            talk.next_pull += 1
            number = talk.next_pull
            talk.pulls[number] = {
                "number": number, "repo": repo, "state": "open", "merged": False,
                "title": asked["title"], "body": asked["body"], "draft": asked["draft"],
                "head": {"ref": asked["head"]}, "base": {"ref": asked["base"]},
                "html_url": f"https://github.example/{repo}/pull/{number}",
                "merge_commit_sha": None,
            }  # fmt: skip
            document = dict(talk.pulls[number])
        return answer(request, document, 201)

    async def pull(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        number = int(request.path_params["number"])
        with talk.lock:
            found = talk.pulls.get(number)
            if found is not None and request.method == "PATCH":
                found.update(await request.json())
            document = dict(found) if found is not None else None
        if document is None:
            record(request, 404)
            return JSONResponse({"message": "Not Found"}, status_code=404)
        return answer(request, document, etag=request.method == "GET")

    async def user(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        return answer(request, {"login": "wrighty-bot"})

    base = "/repos/{owner}/{repo}"
    return [
        Route("/user", user, methods=["GET"]),
        Route(f"{base}/issues/comments", repo_comments, methods=["GET"]),
        Route(f"{base}/issues/comments/{{comment_id:int}}", comment, methods=["PATCH"]),
        Route(f"{base}/issues/{{number:int}}/comments", issue_comments, methods=["GET", "POST"]),
        Route(f"{base}/collaborators/{{login}}/permission", permission, methods=["GET"]),
        Route(f"{base}/pulls", pulls, methods=["GET", "POST"]),
        Route(f"{base}/pulls/{{number:int}}", pull, methods=["GET", "PATCH"]),
    ]


__all__ = ["Talk", "routes"]
