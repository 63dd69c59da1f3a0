"""A fake OpenAI Responses API on loopback, so the real Codex CLI can run offline.

Codex reaches it through a custom model provider with no retries (``codex_provider_args``),
with the key in ``CODEX_API_KEY``::

    with OpenAIProvider() as provider:
        provider.mode = "rate"
        ...  # run `codex exec ... -c ...codex_provider_args(provider.url)`; see provider.requests
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

RESPONSES_PATH = "/v1/responses"

RATE_MESSAGE = (
    "Rate limit reached for gpt-5 in organization org-fake on tokens per min (TPM): "
    "Limit 30000, Used 29000, Requested 2000. Please try again in 2s. "
    "Visit https://platform.openai.com/account/rate-limits to learn more."
)
QUOTA_MESSAGE = (
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, read the docs: "
    "https://platform.openai.com/docs/guides/error-codes/api-errors."
)
CONTEXT_MESSAGE = (
    "Your input exceeds the context window of this model. Please adjust your input and try again."
)
AUTH_MESSAGE = (
    "Incorrect API key provided: sk-fake*************************1234. You can find your API "
    "key at https://platform.openai.com/account/api-keys."
)

# mode -> (HTTP status, error type, error code, param, message): OpenAI's error envelope.
ERRORS: dict[str, tuple[int, str, str | None, str | None, str]] = {
    "bad-request": (
        400,
        "invalid_request_error",
        "invalid_value",
        "reasoning.effort",
        "Invalid value: 'extreme'. Supported values are: 'low', 'medium', and 'high'.",
    ),
    "context": (400, "invalid_request_error", "context_length_exceeded", "input", CONTEXT_MESSAGE),
    "auth": (401, "invalid_request_error", "invalid_api_key", None, AUTH_MESSAGE),
    "permission": (
        403,
        "request_forbidden",
        "unsupported_country_region_territory",
        None,
        "Country, region, or territory not supported",
    ),
    "rate": (429, "tokens", "rate_limit_exceeded", None, RATE_MESSAGE),
    "quota": (429, "insufficient_quota", "insufficient_quota", None, QUOTA_MESSAGE),
    "server": (
        500,
        "server_error",
        None,
        None,
        "The server had an error while processing your request. Sorry about that!",
    ),
}

# "slow" starts a streaming answer and adds to it a little at a time until the provider shuts
# down; "hang" accepts the request and never answers until then.
MODES = frozenset({"ok", "hang", "slow", *ERRORS})
SLOW_DELTA_SECONDS = 0.1


def codex_provider_args(url: str) -> list[str]:
    """`codex exec` arguments that send it to ``url`` (the provider's ``url``) with the key
    from ``CODEX_API_KEY``, over HTTP only and without retries."""
    provider = (
        f'{{name="fake",base_url="{url}/v1",env_key="CODEX_API_KEY",wire_api="responses",'
        "request_max_retries=0,stream_max_retries=0}"
    )
    return ["-c", 'model_provider="fake"', "-c", f"model_providers.fake={provider}"]


def _sse(data: dict[str, Any]) -> bytes:
    """One server-sent event, named after its ``type``."""
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def _response(response_id: str, model: str, status: str, output: list[Any]) -> dict[str, Any]:
    response: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": 1700000000,
        "status": status,
        "model": model,
        "output": output,
    }
    if status == "completed":
        response["usage"] = {
            "input_tokens": 11,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 3,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 14,
        }
    return response


def _message(text: str, status: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}] if text else []
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": status,
        "content": content,
    }


def _delta(text: str) -> dict[str, Any]:
    return {
        "type": "response.output_text.delta",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "delta": text,
    }


def opening_events(model: str) -> list[dict[str, Any]]:
    """The start of an answer: the response is created and a message begins."""
    return [
        {"type": "response.created", "response": _response("resp_1", model, "in_progress", [])},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": _message("", "in_progress"),
        },
    ]


def stream_body(reply: str, model: str) -> bytes:
    """The server-sent events of one successful text answer, completing the response."""
    done = _message(reply, "completed")
    events = [
        *opening_events(model),
        _delta(reply),
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": _response("resp_1", model, "completed", [done])},
    ]
    return b"".join(_sse(event) for event in events)


def error_body(kind: str, code: str | None, param: str | None, message: str) -> dict[str, Any]:
    """The OpenAI API error envelope."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


class _QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that keeps a client's dropped connection off stderr."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore a failed request (usually the CLI hanging up mid-answer)."""


class OpenAIProvider:
    """A Responses API server on 127.0.0.1 (random free port) answering as ``mode`` says.

    ``requests`` holds the parsed JSON body of every ``POST /v1/responses`` received, in order,
    and ``headers`` their request headers; ``seen`` holds ``(method, path)`` of every request.
    """

    def __init__(self, mode: str = "ok", reply: str = "done.") -> None:
        self.mode = mode
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.seen: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        # Set once a "slow" answer has begun to stream.
        self.streaming = threading.Event()
        self._server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-openai", daemon=True
        )

    @property
    def mode(self) -> str:
        """How the next ``POST /v1/responses`` is answered: "ok", "hang", "slow" or a key of
        ERRORS."""
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        if value not in MODES:
            raise ValueError(f"unknown mode {value!r}; expected one of {sorted(MODES)}")
        self._mode = value

    @property
    def url(self) -> str:
        """The server's root URL; the API lives under ``/v1``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> OpenAIProvider:
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

    def __enter__(self) -> OpenAIProvider:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _record(
        self, method: str, path: str, body: dict[str, Any] | None, headers: dict[str, str]
    ) -> None:
        with self._lock:
            self.seen.append((method, path))
            if body is not None:
                self.requests.append(body)
                self.headers.append(headers)


def _handler_for(provider: OpenAIProvider) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to ``provider``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Stay quiet: nothing goes to stderr."""

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            raw = self._read_body()
            headers = {key.lower(): value for key, value in self.headers.items()}
            if path != RESPONSES_PATH:
                provider._record("POST", path, None, headers)
                self._send_error(404, "invalid_request_error", None, f"Unknown path {path}")
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                provider._record("POST", path, None, headers)
                self._send_error(400, "invalid_request_error", None, "body is not JSON")
                return
            body = body if isinstance(body, dict) else {"body": body}
            provider._record("POST", path, body, headers)
            self._answer(str(body.get("model") or "gpt-5"))

        def do_GET(self) -> None:
            # Codex's WebSocket upgrade and model list: neither is offered here.
            provider._record("GET", urlsplit(self.path).path, None, {})
            self._send_error(404, "invalid_request_error", None, "Not found")

        def _answer(self, model: str) -> None:
            mode = provider.mode
            if mode == "hang":
                provider._closing.wait()
                self.close_connection = True
                return
            if mode == "slow":
                self._stream_slowly(model)
                return
            if mode in ERRORS:
                status, kind, code, param, message = ERRORS[mode]
                self._send_error(status, kind, code, message, param)
                return
            self._send(200, "text/event-stream", stream_body(provider.reply, model))

        def _stream_slowly(self, model: str) -> None:
            """Begin an answer, then a word every SLOW_DELTA_SECONDS, never ending it."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.close_connection = True
            try:
                self.wfile.write(b"".join(_sse(event) for event in opening_events(model)))
                self.wfile.flush()
                provider.streaming.set()
                while not provider._closing.wait(SLOW_DELTA_SECONDS):
                    self.wfile.write(_sse(_delta("working ")))
                    self.wfile.flush()
            except OSError:
                return  # the client went away

        def _read_body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length > 0 else b""

        def _send_error(
            self,
            status: int,
            kind: str,
            code: str | None,
            message: str,
            param: str | None = None,
        ) -> None:
            data = json.dumps(error_body(kind, code, param, message)).encode()
            self._send(status, "application/json", data)

        def _send(self, status: int, content_type: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", "req_fake")
            self.end_headers()
            self.wfile.write(data)

    return Handler
