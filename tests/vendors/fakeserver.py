"""The plumbing shared by the fake provider servers: a loopback HTTP server answering as its
``mode`` says, recording what it receives, and able to hang or stream until it shuts down.

A provider subclasses ``FakeProvider`` (setting ``modes``, ``thread_name`` and ``handler_class``)
and answers through a ``FakeHandler`` subclass, which reaches its provider as ``self.provider``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self

SLOW_DELTA_SECONDS = 0.1


class _QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that keeps a client's dropped connection off stderr."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore a failed request (usually the CLI hanging up mid-answer)."""


class FakeProvider:
    """An API server on 127.0.0.1 (random free port) answering as ``mode`` says.

    ``requests`` holds what the provider's handler accepted as a request, in order; ``seen``
    holds ``(method, path)`` of every request, side requests included; ``streaming`` is set
    once a "slow" answer has begun to stream.
    """

    modes: ClassVar[frozenset[str]]
    thread_name: ClassVar[str]
    handler_class: ClassVar[type[FakeHandler]]

    def __init__(self, mode: str = "ok", reply: str = "done.") -> None:
        self.mode = mode
        self.reply = reply
        self.requests: list[Any] = []
        self.seen: list[tuple[str, str]] = []
        self.streaming = threading.Event()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        handler = type(self.handler_class.__name__, (self.handler_class,), {"provider": self})
        self._server = _QuietServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name=self.thread_name, daemon=True
        )

    @property
    def mode(self) -> str:
        """How the next request is answered: "ok", "hang", "slow" or another of ``modes``."""
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        if value not in self.modes:
            raise ValueError(f"unknown mode {value!r}; expected one of {sorted(self.modes)}")
        self._mode = value

    @property
    def url(self) -> str:
        """The server's root URL, to point the CLI at."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release hanging requests, stop serving and close the listening socket."""
        self._closing.set()
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _record(
        self,
        method: str,
        path: str,
        request: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Note a request as seen and, unless ``request`` is None, as accepted."""
        with self._lock:
            self.seen.append((method, path))
            if request is not None:
                self.requests.append(request)
                self._accepted(headers or {})

    def _accepted(self, headers: dict[str, str]) -> None:
        """Keep more of an accepted request (called under the lock); nothing by default."""


class FakeHandler(BaseHTTPRequestHandler):
    """The shared helpers of a provider's request handler, bound to ``provider``."""

    protocol_version = "HTTP/1.1"
    provider: ClassVar[FakeProvider]
    # The response header carrying a request id in non-streamed answers, if any.
    request_id_header: ClassVar[str | None] = None

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: nothing goes to stderr."""

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _request_headers(self) -> dict[str, str]:
        return {key.lower(): value for key, value in self.headers.items()}

    @staticmethod
    def _parse_json(raw: bytes) -> dict[str, Any] | None:
        """``raw`` as a JSON object (anything else wrapped as ``{"body": ...}``), or None if it
        is not JSON at all."""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return None
        return body if isinstance(body, dict) else {"body": body}

    def _hang(self) -> None:
        """Answer nothing until the provider shuts down, then drop the connection."""
        self.provider._closing.wait()
        self.close_connection = True

    def _stream_slowly(self, opening: bytes, delta: bytes) -> None:
        """Begin a streamed answer with ``opening``, then send ``delta`` every
        SLOW_DELTA_SECONDS until the provider shuts down, never ending it."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.write(opening)
            self.wfile.flush()
            self.provider.streaming.set()
            while not self.provider._closing.wait(SLOW_DELTA_SECONDS):
                self.wfile.write(delta)
                self.wfile.flush()
        except OSError:
            return  # the client went away

    def _send_json(
        self, status: int, payload: dict[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        self._send(status, "application/json", json.dumps(payload).encode(), headers)

    def _send(
        self,
        status: int,
        content_type: str,
        data: bytes,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if self.request_id_header is not None:
            self.send_header(self.request_id_header, "req_fake")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
