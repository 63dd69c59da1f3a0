"""What keeps the web console safe to leave running (docs/web.md#the-security-model): the
launch token and its cookie, the login page that asks for the token (a link from a notice,
docs/web.md#links-from-notices), the CSRF token of every POST, the Host check, the security
headers and the body limit.

The decisions are pure functions (`gate`, `csrf_ok`, `host_ok`, ...), tested without a
server; `Guard` is the ASGI middleware that applies them to every request before the app sees
it. Nothing here imports Starlette: a request refused here never reaches a handler, and so
never reads the store.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import os
import secrets
import stat
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode

from wrighty.errors import WrightyError
from wrighty.inputs import InputError, read_text_file

if TYPE_CHECKING:
    from starlette.requests import Request

COOKIE_NAME = "wrighty_token"
TOKEN_PARAM = "token"  # noqa: S105 - the name of the query parameter
# The login page (a page asked for without a session): its form posts the token here, with a
# login-only CSRF value that is also in a short-lived cookie (double submit), and the page
# it was asked for.
LOGIN_PATH = "/login"
LOGIN_COOKIE = "wrighty_login"
LOGIN_CSRF_FIELD = "login_csrf"
LOGIN_TOKEN_FIELD = "token"  # noqa: S105 - the name of the form's field
NEXT_FIELD = "next"
LOGIN_CSRF_SECONDS = 600
MIN_LOGIN_CSRF_CHARS = 16
# The longest page address a login leads back to (a longer one leads to the board).
MAX_NEXT_CHARS = 2048
# What the login page itself uses, served without a session: nothing of the store.
PUBLIC_PATHS = frozenset({"/static/wrighty.css", "/static/favicon.svg"})
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
# Request bodies larger than this are refused (413) before any of them is read further.
MAX_BODY_BYTES = 256 * 1024
# How long a request's body may take to arrive whole (--body-timeout), and the most it may be.
BODY_READ_SECONDS = 30.0
MAX_BODY_READ_SECONDS = 3600.0
# The shortest token a --token-file may hold (secrets.token_urlsafe(32) makes 43 characters).
MIN_TOKEN_CHARS = 32
MAX_TOKEN_CHARS = 512
# The most a --token-file is read of: a token, with room for whitespace around it.
MAX_TOKEN_FILE_BYTES = 4096

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("content-security-policy", CSP),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
    ("x-frame-options", "DENY"),
)
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")

# What a refused request gets: a status and a plain line, nothing of the store.
WRONG_HOST = (400, "wrong Host")
UNAUTHORIZED = (401, "unauthorized: open the URL `wrighty serve` printed (it holds the token)")
FORBIDDEN_CSRF = (403, "forbidden: missing or wrong CSRF token")
READ_ONLY = (403, "read-only: this console does nothing")
FORBIDDEN_LOGIN = (
    403,
    "forbidden: missing or wrong login form token; open the page again and log in from it",
)
LOGIN_FIELDS = (
    400,
    "login: the form needs one `token` and one `next` field, as the login page posts them",
)
WRONG_TOKEN = "wrong token"  # noqa: S105 - what a wrong one is told (never what was typed)
TOO_LARGE = (413, "request body too large")


def _too_slow(seconds: float) -> tuple[int, str]:
    return 408, f"request body not received whole within {seconds:g} s (--body-timeout)"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_from_file(path: Path) -> str:
    """The token kept in ``path``: made (0600) when the file does not exist; refused when
    group or others may read it, or it does not hold a token."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_token(path)
    except OSError as error:
        raise WrightyError(f"--token-file {path}: cannot create it ({error.strerror})") from None
    token = new_token()
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(token + "\n")
    return token


def _read_token(path: Path) -> str:
    try:
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            raise WrightyError(f"--token-file {path}: not a regular file")
        if mode & 0o077:
            raise WrightyError(
                f"--token-file {path}: group or others may read or write it "
                f"(mode {stat.S_IMODE(mode):o}); run `chmod 600 {path}`"
            )
        # Bounded: a runaway file is refused, never read whole.
        text = read_text_file(path, limit=MAX_TOKEN_FILE_BYTES).strip()
    except OSError as error:
        raise WrightyError(f"--token-file {path}: cannot read it ({error.strerror})") from None
    except InputError as error:
        raise WrightyError(f"--token-file {path}: {error}; it holds one token") from None
    if not (MIN_TOKEN_CHARS <= len(text) <= MAX_TOKEN_CHARS) or not _token_chars(text):
        raise WrightyError(
            f"--token-file {path}: does not hold a token ({MIN_TOKEN_CHARS} to "
            f"{MAX_TOKEN_CHARS} letters, digits, '-' or '_'); remove it and one is made"
        )
    return text


def _token_chars(text: str) -> bool:
    return all(c.isascii() and (c.isalnum() or c in "-_") for c in text)


def token_ok(given: str | None, token: str) -> bool:
    """Whether ``given`` is the server's token (compared in constant time)."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


def csrf_token(token: str) -> str:
    """The CSRF token of the pages this server makes: an HMAC of its token."""
    return hmac.new(token.encode(), b"wrighty csrf", hashlib.sha256).hexdigest()


def csrf_ok(given: str | None, token: str) -> bool:
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), csrf_token(token).encode())


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a --bind address) is this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _with_port(host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):  # a bare IPv6 address
        host = f"[{host}]"
    return f"{host}:{port}".lower()


def allowed_hosts(bind: str, port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """The Host headers this server answers: the bind address with the port (for a loopback
    bind, localhost, 127.0.0.1 and [::1] too), and each --allow-host, as given and with the
    port."""
    names = [bind, *(LOOPBACK_NAMES if is_loopback(bind) else ())]
    allowed = {_with_port(name, port) for name in names}
    for host in extra:
        allowed.add(host.lower())
        if not host.endswith("]") and ":" in host and not host.startswith("["):
            continue  # a bare IPv6 address or host:port, taken as given
        allowed.add(_with_port(host, port))
    return frozenset(allowed)


def host_ok(host: str | None, allowed: frozenset[str]) -> bool:
    return host is not None and host.lower() in allowed


@dataclass(frozen=True)
class Decision:
    """What the guard does with a request: let it through (``status`` None), refuse it
    (``status``, ``message``), log in (``redirect`` with ``set_cookie``), ask for the token
    (``ask``: the login page, which leads back to that page), or read the login page's form
    (``login``)."""

    status: int | None = None
    message: str = ""
    redirect: str | None = None
    set_cookie: str | None = None
    ask: str | None = None
    login: bool = False

    @property
    def passes(self) -> bool:
        return self.status is None and self.redirect is None and not self.login


PASS = Decision()


def _refused(refusal: tuple[int, str]) -> Decision:
    return Decision(status=refusal[0], message=refusal[1])


def cookie_header(token: str, *, secure: bool = False) -> str:
    """The session cookie; ``secure`` (--secure-cookie): sent over HTTPS only."""
    return f"{COOKIE_NAME}={token}; HttpOnly; SameSite=Strict; Path=/" + (
        "; Secure" if secure else ""
    )


def gate(
    *,
    method: str,
    path: str,
    query: str,
    host: str | None,
    cookie: str | None,
    token: str,
    allowed: frozenset[str],
    accept: str | None = None,
) -> Decision:
    """The guard's decision before a request's body is read: the Host first (nothing else is
    looked at for a wrong one), then the launch token (a GET with ``?token=`` logs in), the
    login form's POST, then the cookie. Without a valid one, a browser's GET of a page
    (``accept`` names HTML) is asked for the token (the login page, 401); the login page's
    stylesheet and icon are served; anything else is 401 in one line."""
    if not host_ok(host, allowed):
        return _refused(WRONG_HOST)
    params = parse_qsl(query, keep_blank_values=True)
    given = [value for name, value in params if name == TOKEN_PARAM]
    if given:
        if method != "GET" or len(given) != 1 or not token_ok(given[0], token):
            return _refused(UNAUTHORIZED)
        rest = urlencode([(name, value) for name, value in params if name != TOKEN_PARAM])
        return Decision(
            redirect=same_site_path(path) + (f"?{rest}" if rest else ""), set_cookie=token
        )
    if path == LOGIN_PATH and method == "POST":
        return Decision(login=True)
    if token_ok(cookie_token(cookie), token):
        return Decision(redirect="/") if path == LOGIN_PATH and method == "GET" else PASS
    if path in PUBLIC_PATHS and method in SAFE_METHODS:
        return PASS
    if method == "GET" and wants_page(accept):
        here = same_site_path(path)
        return Decision(
            status=UNAUTHORIZED[0],
            message=UNAUTHORIZED[1],
            ask=same_site_next(f"{here}?{query}" if query else here) or next_path(here),
        )
    return _refused(UNAUTHORIZED)


def wants_page(accept: str | None) -> bool:
    """Whether a request asks for a page (a browser's navigation names HTML in its Accept
    header), rather than being a script's (a live update, a fragment, a file)."""
    return accept is not None and "text/html" in accept.lower()


def same_site_next(text: str) -> str | None:
    """``text`` if a browser sent to it stays on this server and out of the login: a path of
    printable ASCII, starting with one "/" (not "//"), without a backslash (which browsers
    read as "/"), at most MAX_NEXT_CHARS long, and not the login itself; else None."""
    if not 0 < len(text) <= MAX_NEXT_CHARS:
        return None
    if not all("!" <= char <= "~" for char in text) or "\\" in text:
        return None
    if not text.startswith("/") or text.startswith("//"):
        return None
    if text.split("?", 1)[0] == LOGIN_PATH:
        return None
    return text


def next_path(text: str) -> str:
    """Where a login leads: ``text`` when it is a page of this server (`same_site_next`),
    else the board."""
    return same_site_next(text) or "/"


def same_site_path(path: str) -> str:
    """``path`` as a Location on this server: quoted (no header can be smuggled in), and with
    one leading slash (``//host`` would leave it)."""
    return "/" + quote(path.lstrip("/\\"), safe="/")


def cookie_token(header: str | None, name: str = COOKIE_NAME) -> str | None:
    """The cookie ``name`` (the session's token) in a Cookie header, if it has one."""
    if not header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def login_cookie_header(value: str, *, secure: bool = False, expire: bool = False) -> str:
    """The login form's CSRF cookie: for the login's POST only, short-lived; ``expire``:
    gone (once logged in)."""
    age = 0 if expire else LOGIN_CSRF_SECONDS
    return (
        f"{LOGIN_COOKIE}={value}; HttpOnly; SameSite=Strict; Path={LOGIN_PATH}; Max-Age={age}"
        + ("; Secure" if secure else "")
    )


@dataclass(frozen=True)
class LoginPage:
    """What the login page holds: the page it leads back to, its form's CSRF value (also in
    the login cookie), and whether the token just given was wrong. Never the token."""

    next: str
    csrf: str
    wrong: bool = False


@dataclass(frozen=True)
class Login:
    """What the login's POST gets: 303 to ``next`` (logged in), 401 (a wrong token: the form
    again), or a refusal in one line (403 CSRF, 400 a form that is not the login page's)."""

    status: int
    message: str = ""
    next: str = "/"


def login_answer(
    body: bytes, content_type: str | None, *, login_cookie: str | None, token: str
) -> Login:
    """The login form's answer: its CSRF value against the login cookie's (both compared in
    constant time), then its fields, then its token."""
    fields = form_fields(body, content_type)
    given_csrf = _one(fields, LOGIN_CSRF_FIELD)
    if (
        login_cookie is None
        or given_csrf is None
        or len(login_cookie) < MIN_LOGIN_CSRF_CHARS
        or not hmac.compare_digest(given_csrf.encode(), login_cookie.encode("utf-8", "replace"))
    ):
        return Login(*FORBIDDEN_LOGIN)
    given, asked = _one(fields, LOGIN_TOKEN_FIELD), _one(fields, NEXT_FIELD)
    if given is None or asked is None:
        return Login(*LOGIN_FIELDS)
    if not token_ok(given, token):
        return Login(401, WRONG_TOKEN, next_path(asked))
    return Login(303, next=next_path(asked))


def _one(fields: list[tuple[str, str]], name: str) -> str | None:
    values = [value for field, value in fields if field == name]
    return values[0] if len(values) == 1 else None


def form_fields(body: bytes, content_type: str | None) -> list[tuple[str, str]]:
    """The fields of a form posted as application/x-www-form-urlencoded (the only kind the
    console's pages post); none for any other body."""
    if not _is_form(content_type):
        return []
    try:
        return _form_pairs(body)
    except ValueError:  # not UTF-8 (the guard refuses it first)
        return []


def _is_form(content_type: str | None) -> bool:
    return content_type is not None and content_type.lower().startswith(
        "application/x-www-form-urlencoded"
    )


def _form_pairs(body: bytes) -> list[tuple[str, str]]:
    """The form's fields, its bytes and their %-escapes strictly UTF-8 (ValueError if not)."""
    return parse_qsl(body.decode("utf-8"), keep_blank_values=True, errors="strict")


def form_problem(body: bytes, content_type: str | None) -> str | None:
    """Why a posted form cannot be read (None: it can, or it is no form): a field that is not
    UTF-8 text, raw or %-escaped, would otherwise arrive as U+FFFD replacement characters."""
    if not _is_form(content_type):
        return None
    try:
        _form_pairs(body)
    except ValueError:
        return "the form is not UTF-8 text: send its fields as UTF-8 (a browser does)"
    return None


async def posted_form(request: Request) -> dict[str, str]:
    """A POST's form, for its handler: the guard has read the body already (within its limit);
    parsed here without python-multipart, as the pages post urlencoded forms only."""
    return dict(form_fields(await request.body(), request.headers.get("content-type")))


def form_csrf(body: bytes, content_type: str | None) -> str | None:
    """The form's one ``csrf`` field."""
    return _one(form_fields(body, content_type), CSRF_FIELD)


def post_ok(*, header: str | None, body: bytes, content_type: str | None, token: str) -> bool:
    """Whether a state-changing request carries this server's CSRF token (the header, or
    the form's field)."""
    if header is not None:
        return csrf_ok(header, token)
    return csrf_ok(form_csrf(body, content_type), token)


def body_too_large(content_length: str | None) -> bool:
    if content_length is None:
        return False
    try:
        return int(content_length) > MAX_BODY_BYTES
    except ValueError:
        return True


# The ASGI types, loosely: the guard needs no framework.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SAFE_METHODS = frozenset({"GET", "HEAD"})


# The login page, as the app draws it (HTML; the guard answers with it).
LoginDrawer = Callable[[LoginPage], str]


class Guard:
    """The ASGI middleware in front of the console: every HTTP request passes `gate` and,
    unless it is a GET or HEAD, the body limit, the CSRF check and, on a read-only console,
    its refusal, before the app sees it; every response gets the security headers. It asks
    for the token (the login page ``login_page`` draws) and logs in, itself: the app never
    sees a request without a session."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        allowed: frozenset[str],
        read_only: bool = False,
        secure_cookie: bool = False,
        body_seconds: float = BODY_READ_SECONDS,
        login_page: LoginDrawer | None = None,
    ) -> None:
        self.app = app
        self.login_page = login_page  # None: a page without a session is 401 in one line
        self.token = token
        self.allowed = allowed
        self.read_only = read_only  # --read-only: every POST refused (403), whatever its path
        self.secure_cookie = secure_cookie  # --secure-cookie: the cookie goes over HTTPS only
        # --body-timeout: a body not whole by then is answered 408 and its connection closed
        self.body_seconds = body_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        decision = gate(
            method=scope["method"],
            path=scope["path"],
            query=scope.get("query_string", b"").decode("latin-1"),
            host=headers.get("host"),
            cookie=headers.get("cookie"),
            token=self.token,
            allowed=self.allowed,
            accept=headers.get("accept"),
        )
        if decision.redirect is not None:
            cookie = decision.set_cookie
            setting = [] if cookie is None else [cookie_header(cookie, secure=self.secure_cookie)]
            await _respond(send, 303, "", [("location", decision.redirect)], setting)
            return
        if decision.ask is not None:
            await self._ask(send, decision.ask)
            return
        if decision.login:
            await self._login(receive, send, headers)
            return
        if not decision.passes:
            await _respond(send, decision.status or 400, decision.message)
            return
        if scope["method"] in SAFE_METHODS:
            await self.app(scope, receive, _secured(send))
            return
        await self._post(scope, receive, send, headers)

    async def _ask(self, send: Send, next_page: str, *, wrong: bool = False) -> None:
        """The login page (401) leading to ``next_page``, with a new CSRF value, which the
        login cookie holds too."""
        if self.login_page is None:
            await _respond(send, *UNAUTHORIZED)
            return
        page = LoginPage(next_page, secrets.token_urlsafe(24), wrong=wrong)
        setting = login_cookie_header(page.csrf, secure=self.secure_cookie)
        await _respond(send, 401, self.login_page(page), [], [setting], content_type=HTML)

    async def _login(self, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        """The login page's POST (a read-only console's too: it changes nothing): the
        session cookie the launch URL sets, and 303 to the page asked for; a wrong token gets
        the form again."""
        body = await self._body(receive, send, headers)
        if body is None:
            return
        answer = login_answer(
            body,
            headers.get("content-type"),
            login_cookie=cookie_token(headers.get("cookie"), LOGIN_COOKIE),
            token=self.token,
        )
        if answer.status == 303:
            settings = [
                cookie_header(self.token, secure=self.secure_cookie),
                login_cookie_header("", secure=self.secure_cookie, expire=True),
            ]
            await _respond(send, 303, "", [("location", answer.next)], settings)
        elif answer.status == 401:
            await self._ask(send, answer.next, wrong=True)
        else:
            await _respond(send, answer.status, answer.message)

    async def _body(self, receive: Receive, send: Send, headers: dict[str, str]) -> bytes | None:
        """A POST's body, read within its limits and checked to be readable; None when it was
        refused (and answered)."""
        if body_too_large(headers.get("content-length")):
            await _respond(send, *TOO_LARGE)
            return None
        try:
            body = await asyncio.wait_for(_read_body(receive), self.body_seconds)
        except TimeoutError:  # and the connection closed: the rest of its body is never read
            await _respond(send, *_too_slow(self.body_seconds), [("connection", "close")])
            return None
        if body is None:
            await _respond(send, *TOO_LARGE)
            return None
        problem = form_problem(body, headers.get("content-type"))
        if problem is not None:
            await _respond(send, 400, problem)
            return None
        return body

    async def _post(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]
    ) -> None:
        body = await self._body(receive, send, headers)
        if body is None:
            return
        if not post_ok(
            header=headers.get(CSRF_HEADER),
            body=body,
            content_type=headers.get("content-type"),
            token=self.token,
        ):
            await _respond(send, *FORBIDDEN_CSRF)
            return
        if self.read_only:
            await _respond(send, *READ_ONLY)
            return
        await self.app(scope, _replay(body), _secured(send))


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (the first of a repeated one; cookies joined)."""
    found: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        if name == "cookie" and name in found:
            found[name] += "; " + value
        else:
            found.setdefault(name, value)
    return found


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body, or None past MAX_BODY_BYTES (the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def _secured(send: Send) -> Send:
    async def secured(message: Message) -> None:
        if message["type"] == "http.response.start":
            names = {name.lower() for name, _ in message.get("headers", [])}
            extra = [
                (name.encode(), value.encode())
                for name, value in SECURITY_HEADERS
                if name.encode() not in names
            ]
            message["headers"] = [*message.get("headers", []), *extra]
        await send(message)

    return secured


PLAIN = "text/plain; charset=utf-8"
HTML = "text/html; charset=utf-8"


async def _respond(
    send: Send,
    status: int,
    text: str,
    headers: list[tuple[str, str]] | None = None,
    set_cookies: list[str] | None = None,
    *,
    content_type: str = PLAIN,
) -> None:
    body = (text + "\n").encode() if text else b""
    raw = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        *((name.encode(), value.encode()) for name, value in headers or []),
        *((name.encode(), value.encode()) for name, value in SECURITY_HEADERS),
    ]
    raw.extend((b"set-cookie", setting.encode()) for setting in set_cookies or [])
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
