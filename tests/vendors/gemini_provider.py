"""A fake Gemini API (generativelanguage v1beta) on loopback, so the real Gemini CLI can run
offline.

Point the CLI at it with ``GOOGLE_GEMINI_BASE_URL=provider.url`` and ``GEMINI_API_KEY``, with
``gemini_settings()`` in ``$HOME/.gemini/settings.json`` (API-key auth, one attempt per request)
and ``-m <model>`` among its arguments (no model router)::

    with GeminiProvider() as provider:
        provider.mode = "rate"
        ...  # run gemini; then inspect provider.requests
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

# POST /v1beta/models/<model>:<method>
_MODEL_CALL = re.compile(r"/v1beta/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)")
STREAM_METHOD = "streamGenerateContent"

_API_KEY_INVALID = {
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    "reason": "API_KEY_INVALID",
    "domain": "googleapis.com",
    "metadata": {"service": "generativelanguage.googleapis.com"},
}
_FREE_TIER_METRIC = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
_PER_MINUTE_QUOTA: list[dict[str, Any]] = [
    {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
            {
                "quotaMetric": _FREE_TIER_METRIC,
                "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
                "quotaValue": "10",
            }
        ],
    },
    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"},
]
QUOTA_MESSAGE = (
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
)

# mode -> (HTTP status, status name, message, details): Google's error envelope.
ERRORS: dict[str, tuple[int, str, str, list[dict[str, Any]]]] = {
    "bad-request": (400, "INVALID_ARGUMENT", "Request contains an invalid argument.", []),
    "bad-key": (
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
        [_API_KEY_INVALID],
    ),
    "auth": (
        401,
        "UNAUTHENTICATED",
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
        "cookie or other valid authentication credential. See "
        "https://developers.google.com/identity/sign-in/web/devconsole-project.",
        [],
    ),
    "permission": (403, "PERMISSION_DENIED", "The caller does not have permission", []),
    "rate": (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", []),
    "quota": (429, "RESOURCE_EXHAUSTED", QUOTA_MESSAGE, _PER_MINUTE_QUOTA),
    "server": (
        500,
        "INTERNAL",
        "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting",
        [],
    ),
    "unavailable": (503, "UNAVAILABLE", "The model is overloaded. Please try again later.", []),
}

# "slow" starts a streaming answer and adds to it a little at a time until the provider shuts
# down; "hang" accepts the request and never answers until then. Both apply to streamed calls
# only: the CLI's side calls (generateContent, countTokens) are answered at once.
MODES = frozenset({"ok", "hang", "slow", *ERRORS})
SLOW_DELTA_SECONDS = 0.1
USAGE = {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10}


def gemini_settings() -> dict[str, Any]:
    """The CLI's settings.json: API-key auth (so the base URL is honoured), one attempt."""
    return {"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"maxAttempts": 1}}


def chunk(text: str, model: str, *, final: bool) -> dict[str, Any]:
    """One GenerateContentResponse carrying ``text``; the ``final`` one ends the answer."""
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [{"text": text}]},
        "index": 0,
    }
    if final:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate], "usageMetadata": USAGE, "modelVersion": model}


def _sse(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\r\n\r\n"


def error_body(status: int, name: str, message: str, details: list[Any]) -> dict[str, Any]:
    """The Google API error envelope."""
    error: dict[str, Any] = {"code": status, "message": message, "status": name}
    if details:
        error["details"] = details
    return {"error": error}


class _QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that keeps a client's dropped connection off stderr."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore a failed request (usually the CLI hanging up mid-answer)."""


class GeminiProvider:
    """A Gemini API server on 127.0.0.1 (random free port) answering as ``mode`` says.

    ``requests`` holds ``(method, body)`` for every model call received, in order ("method" is
    the API method: streamGenerateContent, generateContent, countTokens); ``seen`` holds
    ``(http method, path)`` of every request.
    """

    def __init__(self, mode: str = "ok", reply: str = "done.") -> None:
        self.mode = mode
        self.reply = reply
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.headers: list[dict[str, str]] = []
        self.seen: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        # Set once a "slow" answer has begun to stream.
        self.streaming = threading.Event()
        self._server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-gemini", daemon=True
        )

    @property
    def mode(self) -> str:
        """How the next model call is answered: "ok", "hang", "slow" or a key of ERRORS."""
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        if value not in MODES:
            raise ValueError(f"unknown mode {value!r}; expected one of {sorted(MODES)}")
        self._mode = value

    @property
    def url(self) -> str:
        """The base URL to put in ``GOOGLE_GEMINI_BASE_URL``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def streamed(self) -> list[dict[str, Any]]:
        """The bodies of the streamGenerateContent calls: the conversation turns."""
        with self._lock:
            return [body for method, body in self.requests if method == STREAM_METHOD]

    def start(self) -> GeminiProvider:
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

    def __enter__(self) -> GeminiProvider:
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
        call: tuple[str, dict[str, Any]] | None,
        headers: dict[str, str],
    ) -> None:
        with self._lock:
            self.seen.append((method, path))
            if call is not None:
                self.requests.append(call)
                self.headers.append(headers)


def _handler_for(provider: GeminiProvider) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to ``provider``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Stay quiet: nothing goes to stderr."""

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            raw = self._read_body()
            headers = {key.lower(): value for key, value in self.headers.items()}
            call = _MODEL_CALL.fullmatch(path)
            if call is None:
                provider._record("POST", path, None, headers)
                self._send_error(404, "NOT_FOUND", f"Unknown path {path}", [])
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                provider._record("POST", path, None, headers)
                self._send_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.", [])
                return
            body = body if isinstance(body, dict) else {"body": body}
            method, model = call.group("method"), call.group("model")
            provider._record("POST", path, (method, body), headers)
            self._answer(method, model)

        def do_GET(self) -> None:
            provider._record("GET", urlsplit(self.path).path, None, {})
            self._send_error(404, "NOT_FOUND", "Not found", [])

        def _answer(self, method: str, model: str) -> None:
            mode = provider.mode
            if mode in ERRORS:
                self._send_error(*ERRORS[mode])
                return
            if method == "countTokens":
                self._send_json(200, {"totalTokens": USAGE["totalTokenCount"]})
                return
            if method != STREAM_METHOD:
                self._send_json(200, chunk(provider.reply, model, final=True))
                return
            if mode == "hang":
                provider._closing.wait()
                self.close_connection = True
                return
            if mode == "slow":
                self._stream_slowly(model)
                return
            self._send(200, "text/event-stream", _sse(chunk(provider.reply, model, final=True)))

        def _stream_slowly(self, model: str) -> None:
            """A word every SLOW_DELTA_SECONDS, never ending the answer."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.close_connection = True
            try:
                while True:
                    self.wfile.write(_sse(chunk("working ", model, final=False)))
                    self.wfile.flush()
                    provider.streaming.set()
                    if provider._closing.wait(SLOW_DELTA_SECONDS):
                        return
            except OSError:
                return  # the client went away

        def _read_body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length > 0 else b""

        def _send_error(self, status: int, name: str, message: str, details: list[Any]) -> None:
            self._send_json(status, error_body(status, name, message, details))

        def _send_json(self, status: int, payload: dict[str, Any]) -> None:
            self._send(status, "application/json", json.dumps(payload).encode())

        def _send(self, status: int, content_type: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
