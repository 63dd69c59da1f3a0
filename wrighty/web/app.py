"""The web console's Starlette app (docs/web.md): the board, an item, the actions, the live
updates, the Operations and Spend pages. One more entry point over the services the commands
and the inbox use: every read and every action goes through the operator's `Desk`
(`operator/desk.py`; `OperatorDesk`, handed over by `wrighty serve`), which calls the
commands' services and says what they did in the commands' words. An item's page is made from
`wrighty show`'s facts (`operator/showing.shown_item`), as the command's text is.

The store: ``open_desk`` hands each request a desk on the store `wrighty serve` keeps open
(`cli/serve.DeskOpener`: SQLite's connection and PostgreSQL's pool are made to be shared by
threads, each call holding its connection alone), so a request opens no connection; each
request runs in a thread of its own, and a slow action (an accept's merge, the checks) holds
up no other request, since none of them runs inside a store call. The live updates' watcher
(`BoardWatch`) reads the board once a second in a thread of its own, whatever number of pages
listen.

What is injected (`create_app`): the desk opener (the store, the clock and wrighty.json come
with it: the desk's `AppContext`), and the settings (token, allowed hosts, read-only).
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from wrighty.domain.scheduling import PRIORITIES, priority_name
from wrighty.domain.states import TERMINAL_STATES
from wrighty.domain.text import printable, printable_line
from wrighty.errors import NotFoundError, WrightyError
from wrighty.operator.desk import Desk
from wrighty.web import security
from wrighty.web.create import NewItemPages
from wrighty.web.live import BoardWatch, event_stream
from wrighty.web.views import (
    BOARD_STATES,
    REVIEWED_STATES,
    Action,
    BoardFilter,
    actions_for,
    board_digest,
    board_sections,
    confirmed_ids,
    diff_view,
    for_a_person,
    latest_checks,
    parse_item_id,
    reason_words,
    shown_text,
)

if TYPE_CHECKING:
    from wrighty.domain.model import Item, Run
    from wrighty.services.show import ShowFacts


HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

# What a POST does through the desk, with the form's fields: the command's line.
Work = Callable[[Desk, dict[str, str]], str]


class OpenDesk(Protocol):
    """The desk for one request (`cli/serve.DeskOpener`), and its store closed at the end."""

    def __call__(self) -> AbstractContextManager[Desk]: ...

    def close(self) -> None: ...


# The most lines of a diff a page shows (`wrighty diff` shows it whole).
MAX_DIFF_LINES = 20_000
# How many flash messages wait to be shown at most (each is shown once).
MAX_FLASHES = 256


@dataclass(frozen=True)
class WebSettings:
    token: str
    allowed_hosts: frozenset[str]
    read_only: bool = False
    # How often the live watcher reads the board (seconds).
    poll_seconds: float = 1.0
    secure_cookie: bool = False  # --secure-cookie: reached over HTTPS (docs/web.md)
    body_seconds: float = security.BODY_READ_SECONDS  # --body-timeout


class Flashes:
    """The message an action left for the page it redirects to, by a random key (so that no
    link can make the page say something): shown once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[bool, str]] = OrderedDict()

    def put(self, ok: bool, message: str) -> str:
        key = secrets.token_urlsafe(12)
        with self._lock:
            self._kept[key] = (ok, message)
            while len(self._kept) > MAX_FLASHES:
                self._kept.popitem(last=False)
        return key

    def take(self, key: str | None) -> tuple[bool, str] | None:
        if not key:
            return None
        with self._lock:
            return self._kept.pop(key, None)


def templates() -> Environment:
    """Jinja2 with autoescape on for every template (outside text is never marked safe)."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # Every value a page shows, with its control characters as visible escapes (a
        # terminal escape in a title is inert text), before autoescape makes it HTML.
        finalize=_neutral,
    )
    from wrighty.domain.budgets import usage_text

    env.globals["usage_text"] = usage_text
    return env


def _neutral(value: object) -> object:
    # Markup is the templates' own HTML (a macro's caller): nothing from outside is ever
    # marked safe, so it has no text of its own to neutralise.
    if isinstance(value, str) and not isinstance(value, Markup):
        return printable(value)
    return value


class Console:
    """The console's handlers, each over the desk ``open_desk`` gives it (on the store
    `wrighty serve` keeps open)."""

    def __init__(self, open_desk: OpenDesk, settings: WebSettings) -> None:
        self.open_desk = open_desk
        self.settings = settings
        self.csrf = security.csrf_token(settings.token)
        self.env = templates()
        self.flashes = Flashes()
        self.watch = BoardWatch(self._digest, settings.poll_seconds)
        self.fleet_watch = BoardWatch(self._fleet_digest, settings.poll_seconds)

    # Pages

    def render(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        values.setdefault("tab", "")
        page = self.env.get_template(name).render(
            csrf=self.csrf, read_only=self.settings.read_only, **values
        )
        return HTMLResponse(page, status_code=status)

    def login_page(self, page: security.LoginPage) -> str:
        """The page that asks for the token (the guard answers with it): nothing of the
        store, no CSRF token of a session, never the token."""
        return self.env.get_template("login.html").render(
            next=page.next, login_csrf=page.csrf, wrong=page.wrong
        )

    def board_values(self, desk: Desk, request: Request) -> dict[str, Any]:
        """The board's values; ``refusal``: why its filter can match nothing (then it is not
        drawn: the page says so instead of showing an empty board)."""
        from wrighty.domain.board import AttentionOrder

        wanted = BoardFilter.of(request.query_params)
        board = desk.board(AttentionOrder.REASON)
        default_agent = desk.settings.default_agent
        agents = {*desk.agent_names(), *(row.item.agent or default_agent for row in board.rows)}
        sections = board_sections(
            board.rows,
            now=board.checked_at,
            default_agent=desk.settings.default_agent,
            wanted=wanted,
        )
        return {
            "board": board,
            "sections": sections,
            "wanted": wanted,
            "refusal": wanted.refusal(agents),
            "states": BOARD_STATES,
            "for_a_person": for_a_person(board.rows),
            "store_label": printable_line(desk.label),
            "verdict": board.report.verdict.value,
            "unreadable": [printable_line(line) for line in board.unreadable],
            "ready": len(desk.ready().ready),
        }

    def board_page(self, request: Request) -> Response:
        flash = self.flashes.take(request.query_params.get("flash"))
        with self.open_desk() as desk:
            values = self.board_values(desk, request)
        status = 400 if values["refusal"] else 200
        return self.render("board.html", status, tab="board", flash=flash, **values)

    def board_fragment(self, request: Request) -> Response:
        with self.open_desk() as desk:
            values = self.board_values(desk, request)
        status = 400 if values["refusal"] else 200
        return self.render("board_table.html", status, **values)

    def item_page(self, request: Request) -> Response:
        """An item; in review, landing or needing attention, a review: what it needs, its
        change's summary and checks, the change itself, and its actions in a bar that stays
        on screen (docs/web.md)."""
        from wrighty.domain.budgets import usage_text
        from wrighty.operator.showing import shown_item

        item_id = self._item_id(request)
        flash = self.flashes.take(request.query_params.get("flash"))
        with self.open_desk() as desk:
            try:
                facts = desk.facts(item_id)
            except NotFoundError as missing:
                return self.not_found(str(missing))
            log = self._log_view(desk, item_id) if facts.detail.runs else None
            bar = self._bar_values(desk, facts)
            changes = self._review_changes(desk, facts)
        item = facts.detail.item
        return self.render(
            "item.html",
            facts=facts,
            item=item,
            body=shown_text(item.body),
            shown=shown_item(facts),
            spent=usage_text(facts.spent),
            reason=reason_words(item.reason_code, item.reason),
            checks=latest_checks(facts.detail.checks),
            review=item.state in REVIEWED_STATES,
            log=log,
            flash=flash,
            final=item.state in TERMINAL_STATES,
            **bar,
            **changes,
        )

    def _bar_values(self, desk: Desk, facts: ShowFacts) -> dict[str, Any]:
        """The actions an item's page and its change's page offer, with what their forms
        choose from."""
        item = facts.detail.item
        can_verify = facts.standing.can_verify
        offered = () if self.settings.read_only else actions_for(item.state, can_verify=can_verify)
        now_agent = item.agent or facts.default_agent
        return {
            "actions": [action.value for action in offered],
            "priority": priority_name(item.priority),
            "priorities": [priority_name(p) for p in PRIORITIES],
            "other_agents": [name for name in desk.handoff_choices() if name != now_agent],
        }

    @staticmethod
    def _review_changes(desk: Desk, facts: ShowFacts) -> dict[str, Any]:
        """A reviewed item's change against its base, and since the commit its last
        rejection saw (each redacted, bounded, file by file), or why it is not shown."""
        from wrighty.services.diff import redacted

        item = facts.detail.item
        values: dict[str, Any] = {
            "change": None, "change_base": "", "change_note": None, "change_problem": None,
            "since": None, "since_commit": None, "since_problem": None,
        }  # fmt: skip
        if item.state not in REVIEWED_STATES or not facts.standing.has_change:
            return values
        secrets = desk.secrets()
        try:
            change = redacted(desk.change(item.id, stat=False), secrets)
        except WrightyError as refused:
            values["change_problem"] = printable_line(f"wrighty: {refused}")
            return values
        values["change"] = diff_view(change.text, limit=MAX_DIFF_LINES)
        values["change_base"] = change.base[:12]
        values["change_note"] = printable_line(change.note) if change.note else None
        if item.reviewed_commit is None:
            return values
        values["since_commit"] = item.reviewed_commit[:12]
        try:
            since = redacted(desk.change(item.id, stat=False, since=item.reviewed_commit), secrets)
        except WrightyError as refused:
            values["since_problem"] = printable_line(f"{refused}; the whole change is below")
            return values
        values["since"] = diff_view(since.text, limit=MAX_DIFF_LINES, anchor="since")
        return values

    @staticmethod
    def _log_view(desk: Desk, item_id: int) -> dict[str, Any]:
        run, _, problem = desk.last_run_logs(item_id)
        return {"attempt": run.attempt, "problem": printable_line(problem) if problem else None}

    def diff_page(self, request: Request) -> Response:
        """An item's change against its base, file by file, with the item's actions."""
        from wrighty.services.diff import redacted

        item_id = self._item_id(request)
        with self.open_desk() as desk:
            try:
                facts = desk.facts(item_id)
                # A page is for eyes: its secrets replaced as `wrighty diff --redact` does.
                change = redacted(desk.change(item_id, stat=False), desk.secrets())
            except NotFoundError as missing:
                return self.not_found(str(missing))
            except WrightyError as refused:
                return self.problem(409, "Refused", f"wrighty: {refused}")
            bar = self._bar_values(desk, facts)
        return self.render(
            "diff.html",
            item=facts.detail.item,
            base=change.base[:12],
            note=printable_line(change.note) if change.note else None,
            change=diff_view(change.text, limit=MAX_DIFF_LINES),
            **bar,
        )

    async def log_stream(self, request: Request) -> Response:
        """The item's last run's output as server-sent events (web/logstream.py); 404 with
        one line when it has no run or no logs here."""
        from wrighty.services.runlogs import LogReader
        from wrighty.web.logstream import log_events

        item_id = self._item_id(request)

        def find() -> tuple[tuple[Run, Path | None, str | None], tuple[str, ...]]:
            with self.open_desk() as desk:
                return desk.last_run_logs(item_id), desk.secrets()

        try:
            (run, log_dir, problem), known = await asyncio.to_thread(find)
        except NotFoundError as missing:
            return _plain(404, str(missing))
        if log_dir is None:
            return _plain(404, problem or "no logs here")

        def run_open() -> str | None:
            with self.open_desk() as desk:
                return desk.run_outcome(run.run_id)

        readers = [
            LogReader(log_dir / f"{name}.log", name, secrets=known) for name in ("stdout", "stderr")
        ]
        return StreamingResponse(
            log_events(run, readers, run_open=run_open, disconnected=request.is_disconnected),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no", "cache-control": "no-store"},
        )

    def operations_page(self, request: Request) -> Response:
        """Workers, provider circuits, budgets, the outbox and the verdict, as the commands
        show them."""
        from wrighty.web.operations import operations_values

        flash = self.flashes.take(request.query_params.get("flash"))
        with self.open_desk() as desk:
            values = operations_values(desk.fleet(), desk.settings)
        return self.render("operations.html", tab="operations", flash=flash, **values)

    def operations_fragment(self, request: Request) -> Response:
        """The Operations page's sections alone, which a live page fetches again when the
        fleet changed (``operations`` on /operations/events)."""
        from wrighty.web.operations import operations_values

        with self.open_desk() as desk:
            values = operations_values(desk.fleet(), desk.settings)
        return self.render("operations_part.html", **values)

    def spend_page(self, request: Request) -> Response:
        """Tokens and cost per budget day and agent, over ``days`` (one line and 400 for a
        bad value)."""
        from wrighty.web.spend import DAY_CHOICES, days_refusal, parse_days, spend_values

        given = request.query_params.get("days")
        days = parse_days(given)
        if days is None:
            refusal = days_refusal(given or "")
            return self.render(
                "spend.html", 400, tab="spend", refusal=refusal, choices=DAY_CHOICES, days=None
            )
        with self.open_desk() as desk:
            values = spend_values(desk.spend(days), desk.settings.budgets, days=days)
        return self.render("spend.html", tab="spend", refusal=None, **values)

    def since_page(self, request: Request) -> Response:
        """Since you last looked: what finished, landed, failed and waits for a person since
        the ``since`` a browser keeps (the last 24 hours without one); one line and 400 for a
        ``since`` that names no moment the page can show."""
        from wrighty.domain.times import local_zone
        from wrighty.web.since import since_moment, since_values

        given = request.query_params.get("since")
        with self.open_desk() as desk:
            now = desk.now()  # before the read: what moves during it is new next time
            try:
                since = since_moment(given, now=now, zone=local_zone(now))
            except ValueError as refused:
                return self.render(
                    "since.html", 400, tab="since", given=given or "", refusal=str(refused)
                )
            values = since_values(desk.morning(since), now=now)
        return self.render("since.html", tab="since", given=given or "", refusal=None, **values)

    def accept_all_page(self, request: Request) -> Response:
        """Accept all ready, asked first: the items `wrighty accept --all` would accept, in
        its order, and why each other item in review waits."""
        from wrighty.operator.sentences import nothing_ready

        with self.open_desk() as desk:
            ready = desk.ready()
            default_agent = desk.settings.default_agent
        return self.render(
            "accept_all.html",
            tab="board",
            ready=[_ready_row(item, default_agent) for item in ready.ready],
            ids=",".join(str(item.id) for item in ready.ready),
            waiting=[(_ready_row(item, default_agent), why) for item, why in ready.waiting],
            nothing=nothing_ready(len(ready.waiting)),
        )

    async def accept_all(self, request: Request) -> Response:
        """Accept all ready, as confirmed: the ids the page showed, or nothing."""

        def work(desk: Desk, fields: dict[str, str]) -> str:
            return desk.accept_ready(confirmed_ids(fields.get("ids", "")))

        return await self.post_then_show(request, work, back="/")

    def not_found(self, message: str) -> HTMLResponse:
        return self.problem(404, "Not found", message)

    def problem(self, status: int, heading: str, message: str) -> HTMLResponse:
        """A page that says, in one line, why there is nothing else to show."""
        return self.render(
            "missing.html", status=status, heading=heading, message=printable_line(message)
        )

    # Actions

    async def act(self, request: Request) -> Response:
        item_id = self._item_id(request)
        try:
            action = Action(request.path_params["action"])
        except ValueError:
            return self.not_found(f"no action {request.path_params['action']!r}")
        return await self.post_then_show(
            request,
            lambda desk, fields: _call(desk, item_id, action, fields),
            back=f"/items/{item_id}",
        )

    async def reset_circuit(self, request: Request) -> Response:
        """`wrighty providers reset NAME` from the Operations page."""
        from wrighty.operator.fleet import parse_circuit_name

        name = parse_circuit_name(request.path_params["name"])
        if name is None:
            raise HTTPException(404, "no such provider circuit")
        return await self.post_then_show(
            request, lambda desk, fields: desk.reset_circuit(name), back="/operations"
        )

    async def post_then_show(self, request: Request, work: Work, *, back: str) -> Response:
        """A POST's work through the desk, in a thread; its line or its refusal is left as a
        flash for the page ``back``, which the browser is sent to (303)."""
        fields = await security.posted_form(request)
        ok, said = await asyncio.to_thread(self._carry_out, work, fields)
        key = self.flashes.put(ok, said)
        return RedirectResponse(f"{back}?flash={key}", status_code=303)

    def _carry_out(self, work: Work, fields: dict[str, str]) -> tuple[bool, str]:
        """The work's service call, as the inbox makes it: its line, or its refusal in the
        command's words (``wrighty: ...``)."""
        with self.open_desk() as desk:
            try:
                said = work(desk, fields)
            except WrightyError as error:
                return False, printable_line(f"wrighty: {error}")
        return True, printable_line(said)

    # Live updates

    def _digest(self) -> str:
        from wrighty.domain.board import AttentionOrder

        with self.open_desk() as desk:
            board = desk.board(AttentionOrder.REASON)
        return board_digest(board.rows, extra=(board.open_total, board.report.verdict.value))

    def _fleet_digest(self) -> str:
        from wrighty.web.operations import fleet_digest

        with self.open_desk() as desk:
            return fleet_digest(desk.fleet())

    async def events(self, request: Request) -> Response:
        return await self._events(self.watch, "board", request)

    async def operations_events(self, request: Request) -> Response:
        return await self._events(self.fleet_watch, "operations", request)

    @staticmethod
    async def _events(watch: BoardWatch, name: str, request: Request) -> Response:
        await asyncio.to_thread(watch.start)
        return StreamingResponse(
            event_stream(watch, request.is_disconnected, name=name),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},
        )

    @staticmethod
    def _item_id(request: Request) -> int:
        item_id = parse_item_id(request.path_params["item_id"])
        if item_id is None:
            raise HTTPException(404, "no such item")
        return item_id


@dataclass(frozen=True)
class _ReadyRow:
    id: int
    title: str
    agent: str


def _ready_row(item: Item, default_agent: str) -> _ReadyRow:
    return _ReadyRow(item.id, item.title, item.agent or default_agent)


def _plain(status: int, line: str) -> Response:
    return Response(printable_line(line) + "\n", status, media_type="text/plain")


def _call(desk: Desk, item_id: int, action: Action, fields: dict[str, str]) -> str:
    """One action through the desk (the command's service, the command's line)."""
    if action is Action.QUEUE:
        return desk.queue(item_id)
    if action is Action.REQUEUE:
        how = fields.get("how", "")
        if how not in ("resume", "fresh"):
            raise WrightyError("requeue: choose resume or fresh")
        return desk.requeue(item_id, resume=how == "resume")
    if action is Action.CANCEL:
        return desk.cancel(item_id)
    if action is Action.RELEASE:
        return desk.release(item_id)
    if action is Action.PRIORITY:
        from wrighty.domain.scheduling import parse_priority

        return desk.set_priority(item_id, parse_priority(fields.get("priority", "")))
    if action is Action.ACCEPT:
        return desk.accept(item_id)
    if action is Action.VERIFY:
        return desk.verify(item_id)
    if action is Action.HANDOFF:
        note = fields.get("note", "")
        return desk.handoff(item_id, fields.get("to", ""), note if note.strip() else None)
    return desk.reject(item_id, fields.get("feedback", ""))


def create_app(open_desk: OpenDesk, settings: WebSettings) -> security.ASGIApp:
    """The console: its routes behind the guard (security.Guard), which answers every
    request without the token, with a wrong Host, or a POST without the CSRF token, before
    any handler runs."""
    console = Console(open_desk, settings)
    new_item = NewItemPages(
        console.open_desk, console.render, console.flashes.put, read_only=settings.read_only
    )

    async def page_missing(request: Request, exc: Exception) -> Response:
        detail = exc.detail if isinstance(exc, HTTPException) else "not found"
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        if status == 405:
            return Response("method not allowed\n", 405, media_type="text/plain")
        return console.not_found(detail)

    async def store_trouble(request: Request, exc: Exception) -> Response:
        # A read the store could not answer (it is gone, locked, unreachable; wrighty.json
        # went bad): the command's line, 503; the next request tries again.
        return console.problem(503, "Not available", f"wrighty: {exc}")

    async def server_error(request: Request, exc: Exception) -> Response:
        return Response("internal error: see the server's output\n", 500, media_type="text/plain")

    def sync(handler: Callable[[Request], Response]) -> Callable[[Request], Awaitable[Response]]:
        """A page's handler, run in a thread of its own (it reads the store)."""

        async def endpoint(request: Request) -> Response:
            return await asyncio.to_thread(handler, request)

        return endpoint

    routes = [
        Route("/", sync(console.board_page), methods=["GET"]),
        Route("/board", sync(console.board_fragment), methods=["GET"]),
        Route("/items/{item_id}", sync(console.item_page), methods=["GET"]),
        Route("/items/{item_id}/diff", sync(console.diff_page), methods=["GET"]),
        Route("/items/{item_id}/log", console.log_stream, methods=["GET"]),
        Route("/items/{item_id}/{action}", console.act, methods=["POST"]),
        Route("/events", console.events, methods=["GET"]),
        Route("/new", sync(new_item.page), methods=["GET"]),
        Route("/new", new_item.create, methods=["POST"]),
        Route("/import", new_item.import_markdown, methods=["POST"]),
        Route("/accept-all", sync(console.accept_all_page), methods=["GET"]),
        Route("/accept-all", console.accept_all, methods=["POST"]),
        Route("/operations", sync(console.operations_page), methods=["GET"]),
        Route("/operations/part", sync(console.operations_fragment), methods=["GET"]),
        Route("/operations/events", console.operations_events, methods=["GET"]),
        Route("/providers/{name:path}/reset", console.reset_circuit, methods=["POST"]),
        Route("/spend", sync(console.spend_page), methods=["GET"]),
        Route("/since", sync(console.since_page), methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await asyncio.to_thread(console.watch.stop)
        await asyncio.to_thread(console.fleet_watch.stop)
        await asyncio.to_thread(open_desk.close)

    app = Starlette(
        routes=routes,
        exception_handlers={
            HTTPException: page_missing,
            WrightyError: store_trouble,
            Exception: server_error,
        },
        lifespan=lifespan,
    )
    app.state.console = console
    return security.Guard(
        app,
        token=settings.token,
        allowed=settings.allowed_hosts,
        read_only=settings.read_only,
        secure_cookie=settings.secure_cookie,
        body_seconds=settings.body_seconds,
        login_page=console.login_page,
    )
