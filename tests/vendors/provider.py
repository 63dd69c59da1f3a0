"""A fake Anthropic Messages API on loopback, so the real Claude Code CLI can run offline.

Point the CLI at it with ``ANTHROPIC_BASE_URL=provider.url``::

    with Provider() as provider:
        provider.mode = "rate"
        ...  # run claude; then inspect provider.requests
"""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

MESSAGES_PATH = "/v1/messages"

BILLING_MESSAGE = (
    "Your credit balance is too low to access the Anthropic API. "
    "Please go to Plans & Billing to upgrade or purchase credits."
)

# mode -> (HTTP status, error type, error message)
ERRORS: dict[str, tuple[int, str, str]] = {
    "auth": (401, "authentication_error", "invalid x-api-key"),
    "permission": (403, "permission_error", "no permission"),
    "billing": (400, "invalid_request_error", BILLING_MESSAGE),
    "context": (400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"),
    "rate": (429, "rate_limit_error", "rate limited"),
    "overloaded": (529, "overloaded_error", "Overloaded"),
    "server": (500, "api_error", "Internal server error"),
}

# "hang" accepts the request and never answers until the provider shuts down; "slow" starts
# a streaming answer and adds to it a little at a time until the provider shuts down.
MODES = frozenset({"ok", "hang", "slow", *ERRORS})
SLOW_DELTA_SECONDS = 0.1


def _sse(data: dict[str, Any]) -> str:
    """One server-sent event, named after its ``type``."""
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


def stream_body(reply: str, model: str) -> bytes:
    """The server-sent events of one successful text answer, ending the turn."""
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    text_block = {"type": "text", "text": ""}
    text_delta = {"type": "text_delta", "text": reply}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": text_block},
        {"type": "content_block_delta", "index": 0, "delta": text_delta},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 2},
        },
        {"type": "message_stop"},
    ]
    return "".join(_sse(event) for event in events).encode()


def message_body(reply: str, model: str) -> dict[str, Any]:
    """The JSON of one successful text answer, for a request that did not ask to stream."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": reply}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 2},
    }


def error_body(kind: str, message: str) -> dict[str, Any]:
    """The Messages API error envelope."""
    return {"type": "error", "error": {"type": kind, "message": message}}


class _QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that keeps a client's dropped connection off stderr."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore a failed request (usually the CLI hanging up mid-answer)."""


class Provider:
    """A Messages API server on 127.0.0.1 (random free port) answering as ``mode`` says.

    ``requests`` holds the parsed JSON body of every ``POST /v1/messages`` received, in order;
    ``seen`` holds ``(method, path)`` of every request, side requests included.
    """

    def __init__(self, mode: str = "ok", reply: str = "done.") -> None:
        self.mode = mode
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.seen: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-anthropic", daemon=True
        )

    @property
    def mode(self) -> str:
        """How the next ``POST /v1/messages`` is answered: "ok", "hang" or a key of ERRORS."""
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        if value not in MODES:
            raise ValueError(f"unknown mode {value!r}; expected one of {sorted(MODES)}")
        self._mode = value

    @property
    def url(self) -> str:
        """The base URL to put in ``ANTHROPIC_BASE_URL``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Provider:
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

    def __enter__(self) -> Provider:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _record(self, method: str, path: str, body: dict[str, Any] | None) -> None:
        with self._lock:
            self.seen.append((method, path))
            if body is not None:
                self.requests.append(body)


def _handler_for(provider: Provider) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to ``provider``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Stay quiet: nothing goes to stderr."""

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            raw = self._read_body()
            if path != MESSAGES_PATH:
                provider._record("POST", path, None)
                self._send_json(HTTPStatus.OK, {})
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                provider._record("POST", path, None)
                self._send_json(400, error_body("invalid_request_error", "body is not JSON"))
                return
            provider._record("POST", path, body if isinstance(body, dict) else {"body": body})
            self._answer_messages(body if isinstance(body, dict) else {})

        def do_GET(self) -> None:
            provider._record("GET", urlsplit(self.path).path, None)
            self._send_json(HTTPStatus.OK, {})

        def do_HEAD(self) -> None:
            provider._record("HEAD", urlsplit(self.path).path, None)
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()

        do_PUT = do_POST
        do_PATCH = do_POST

        def do_DELETE(self) -> None:
            provider._record("DELETE", urlsplit(self.path).path, None)
            self._send_json(HTTPStatus.OK, {})

        def do_OPTIONS(self) -> None:
            self.do_DELETE()

        def _answer_messages(self, body: dict[str, Any]) -> None:
            mode = provider.mode
            if mode == "hang":
                provider._closing.wait()
                self.close_connection = True
                return
            if mode == "slow":
                self._stream_slowly(str(body.get("model") or "claude-x"))
                return
            if mode in ERRORS:
                status, kind, message = ERRORS[mode]
                self._send_json(status, error_body(kind, message))
                return
            model = str(body.get("model") or "claude-x")
            if body.get("stream"):
                self._send(200, "text/event-stream", stream_body(provider.reply, model))
            else:
                self._send_json(200, message_body(provider.reply, model))

        def _stream_slowly(self, model: str) -> None:
            """Begin an answer, then a word every SLOW_DELTA_SECONDS, never ending it."""
            events = stream_body("", model).split(b"\n\n")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.close_connection = True
            try:
                self.wfile.write(b"\n\n".join(events[:2]) + b"\n\n")  # message + block start
                while not provider._closing.wait(SLOW_DELTA_SECONDS):
                    delta = {"type": "text_delta", "text": "working "}
                    event = {"type": "content_block_delta", "index": 0, "delta": delta}
                    self.wfile.write(_sse(event).encode())
                    self.wfile.flush()
            except OSError:
                return  # the client went away

        def _read_body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length > 0 else b""

        def _send_json(self, status: int, payload: dict[str, Any]) -> None:
            self._send(status, "application/json", json.dumps(payload).encode())

        def _send(self, status: int, content_type: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", "req_fake")
            self.end_headers()
            self.wfile.write(data)

    return Handler
