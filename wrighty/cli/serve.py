"""`wrighty serve`: the web console (docs/web.md), on the store and config of the command
line. Starlette, uvicorn and Jinja2 are imported when it runs, and by no other command."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wrighty.cli.common import app_context
from wrighty.domain.text import printable_line
from wrighty.errors import WrightyError
from wrighty.operator.forms import seconds_option

if TYPE_CHECKING:
    from wrighty.operator.context import AppContext
    from wrighty.operator.desk import OperatorDesk
    from wrighty.services.inbox import BoardSettings
    from wrighty.store.port import Store

WEB_LIBRARIES = ("starlette", "uvicorn", "jinja2")
DEFAULT_BIND = "127.0.0.1"
DEFAULT_PORT = 8765
MAX_PORT = 65535
MAX_HOST_CHARS = 260  # a DNS name (253) with a port
# How long a stop waits for open pages (their live updates) before it closes them.
SHUTDOWN_GRACE_SECONDS = 2
LISTEN_BACKLOG = 2048  # uvicorn's own
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def serve(
    ctx: typer.Context,
    bind: Annotated[
        str,
        typer.Option(
            "--bind",
            metavar="HOST",
            help="The address to listen on. Anything but this machine needs --allow-remote.",
        ),
    ] = DEFAULT_BIND,
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=MAX_PORT, help="The port (0: any free one)."),
    ] = DEFAULT_PORT,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            metavar="HOST",
            help="Also answer requests for this Host (a name in front of it; repeatable).",
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            metavar="PATH",
            help="Keep the token in this file across restarts (made 0600 if missing).",
            dir_okay=False,
        ),
    ] = None,
    read_only: Annotated[
        bool,
        typer.Option("--read-only", help="Look, do not act: no action shown, every POST refused."),
    ] = False,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="Allow a --bind that others can reach (put TLS and a firewall in front).",
        ),
    ] = False,
    secure_cookie: Annotated[
        bool,
        typer.Option(
            "--secure-cookie",
            help="Mark the session cookie Secure: for a console reached over HTTPS (a TLS "
            "proxy in front).",
        ),
    ] = False,
    body_timeout: Annotated[
        str | None,
        typer.Option(
            "--body-timeout",
            metavar="DURATION",
            help="How long a request's body may take to arrive whole (default 30s).",
        ),
    ] = None,
) -> None:
    """The web console: the board, items and their actions, live, behind a token."""
    _web_libraries()
    from wrighty.web.security import (
        BODY_READ_SECONDS,
        MAX_BODY_READ_SECONDS,
        allowed_hosts,
        is_loopback,
        new_token,
        token_from_file,
    )

    body_seconds = seconds_option("--body-timeout", body_timeout, MAX_BODY_READ_SECONDS)
    address = _bind_address(bind)
    if not is_loopback(address) and not allow_remote:
        raise WrightyError(
            f"--bind {bind} can be reached from other machines; pass --allow-remote too, with "
            "TLS and a firewall in front (docs/web.md)"
        )
    extra = [_host_option(host) for host in allow_host or []]
    app_ctx = app_context(ctx)
    from wrighty.operator.desk import board_settings

    settings = board_settings(app_ctx)  # wrighty.json read now: a bad one stops here
    extra += _public_hosts(app_ctx)
    desks = DeskOpener(app_ctx, settings)
    desks.open()  # and the store, which the requests keep using: a wrong URL says so now
    try:
        token = token_from_file(token_file) if token_file is not None else new_token()
        listening = _listen(address, port)
    except BaseException:
        desks.close()  # a refusal leaves nothing behind (SQLite's -wal and -shm files)
        raise
    port = listening.getsockname()[1]
    from wrighty.web.app import WebSettings, create_app

    web = WebSettings(
        token,
        allowed_hosts(address, port, extra),
        read_only=read_only,
        secure_cookie=secure_cookie,
        body_seconds=body_seconds or BODY_READ_SECONDS,
    )
    app = create_app(desks, web)
    typer.echo(f"http://{_url_host(address)}:{port}/?token={token}")
    typer.echo(
        f"wrighty serve: {'read-only, ' if read_only else ''}listening on "
        f"{_url_host(address)}:{port}; open the URL above (it holds the token); Ctrl-C stops"
    )
    _run(app, listening)


def _web_libraries() -> None:
    """The optional extra `web` (Starlette, uvicorn, Jinja2), or one line saying how to get
    it."""
    import importlib

    missing = []
    for name in WEB_LIBRARIES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise WrightyError(
            f"wrighty serve needs {', '.join(missing)}: {web_install_command(_direct_url())} "
            "(docs/web.md)"
        )


def web_install_command(direct_url: str | None) -> str:
    """The pip command that adds the extra `web` to this wrighty, as it was installed:
    ``direct_url``, pip's record of where it came from (PEP 610's direct_url.json; None for an
    install from an index). One installed from a folder (a clone) gets it from that folder,
    editable if it was: `pip install 'wrighty[web]'` would look for wrighty on the index."""
    import json
    import shlex
    from urllib.parse import unquote, urlparse

    try:
        record = json.loads(direct_url) if direct_url else None
    except ValueError:
        record = None
    if isinstance(record, dict) and isinstance(record.get("dir_info"), dict):
        url = urlparse(str(record.get("url", "")))
        if url.scheme == "file" and url.path:
            editable = "-e " if record["dir_info"].get("editable") is True else ""
            return f"pip install {editable}{shlex.quote(unquote(url.path) + '[web]')}"
    return "pip install 'wrighty[web]'"


def _direct_url() -> str | None:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        return distribution("wrighty").read_text("direct_url.json")
    except PackageNotFoundError:
        return None


class DeskOpener:
    """The console's desk for one request: the inbox's, on the store wrighty.json (or --store)
    names, opened once and kept open for the requests (SQLite's connection and PostgreSQL's
    pool are made to be shared by threads: a request opens no connection), the fleet's clock
    measured against it at each request. A store that fails is retired: the next request
    opens another, and the failed one is closed once no request uses it any more (never
    under a request of another thread). Each request's measurement replaces the context's:
    any of them is a valid reading."""

    def __init__(self, app_ctx: AppContext, settings: BoardSettings) -> None:
        self.app_ctx = app_ctx
        self.settings = settings
        self._lock = threading.Lock()
        self._store: Store | None = None
        self._users: dict[int, int] = {}  # requests under way, by id() of their store

    @contextmanager
    def __call__(self) -> Iterator[OperatorDesk]:
        from wrighty.errors import StoreError
        from wrighty.operator.desk import OperatorDesk

        store = self._take()
        failed = False
        try:
            self.app_ctx.measure_clock(store)
            yield OperatorDesk(self.app_ctx, store, self.settings)
        except StoreError:
            failed = True
            raise
        finally:
            self._give_back(store, retire=failed)

    def open(self) -> None:
        """Open the store now (`wrighty serve` does before it listens: a wrong URL is told
        at once, in one line)."""
        self._give_back(self._take(), retire=False)

    def _take(self) -> Store:
        from wrighty.store import open_store

        with self._lock:
            if self._store is None:
                self._store = open_store(self.app_ctx.store_target())
            store = self._store
            self._users[id(store)] = self._users.get(id(store), 0) + 1
            return store

    def _give_back(self, store: Store, *, retire: bool) -> None:
        with self._lock:
            if retire and self._store is store:
                self._store = None
            left = self._users[id(store)] - 1
            self._users[id(store)] = left
            done = left == 0 and self._store is not store
            if left == 0:
                del self._users[id(store)]
        if done:
            store.close()

    def close(self) -> None:
        """Close the kept store (the server stops: no request is under way)."""
        with self._lock:
            store, self._store = self._store, None
        if store is not None:
            store.close()


def _bind_address(bind: str) -> str:
    """--bind as an address to listen on: an IP address or localhost."""
    import ipaddress

    if bind == "localhost":
        return "127.0.0.1"
    try:
        return str(ipaddress.ip_address(bind.strip("[]")))
    except ValueError:
        raise WrightyError(
            f"--bind {printable_line(bind)}: give an IP address (127.0.0.1, ::1, 0.0.0.0) or "
            "localhost"
        ) from None


def _host_option(host: str) -> str:
    """An --allow-host: a host name or address, with a port or without."""
    if (
        not host
        or len(host) > MAX_HOST_CHARS
        or not all(c.isascii() and (c.isalnum() or c in ".-_:[]") for c in host)
    ):
        raise WrightyError(
            f"--allow-host {printable_line(host)}: give a host name or address, as a browser "
            "sends it in the Host header (console.example, console.example:8443)"
        )
    return host


def _public_hosts(app_ctx: AppContext) -> list[str]:
    """serve.publicUrl's host (docs/web.md#links-from-notices): the Host a notice's link is
    followed with, answered as an --allow-host is."""
    from wrighty.domain.links import public_host

    public_url = app_ctx.config().config.serve.public_url
    return [] if public_url is None else [public_host(public_url)]


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _listen(address: str, port: int) -> socket.socket:
    """A socket bound to ``address:port``, or one line saying why it cannot be."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((address, port))
        # Listening now: the URL printed next is answered at once (what connects before
        # uvicorn has started waits in the backlog instead of being refused).
        listening.listen(LISTEN_BACKLOG)
    except OSError as error:
        listening.close()
        raise WrightyError(
            f"--port {port}: cannot listen on {_url_host(address)}:{port} "
            f"({(error.strerror or type(error).__name__).lower()})"
        ) from None
    return listening


def _run(app: object, listening: socket.socket) -> None:
    """uvicorn on the bound socket, with no access log: a login's URL holds the token, and
    no line the server prints may. Ctrl-C or SIGTERM stop it (open pages are given a moment),
    and the command ends with 0: a stop is how a server ends."""
    import uvicorn

    config = uvicorn.Config(
        app,  # type: ignore[arg-type]
        access_log=False,
        log_level="warning",
        server_header=False,
        proxy_headers=False,
        lifespan="on",
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
    )
    try:
        _server_class()(config).run(sockets=[listening])
    finally:
        listening.close()
    typer.echo("wrighty serve: stopped")


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, but a stop signal ends the command instead of being raised again
        once the server has shut down (uvicorn hands it back to the previous handler)."""

        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server
