"""A fake OpenAI Responses API on loopback, so the real Codex CLI can run offline.

Codex reaches it through a custom model provider with no retries (``codex_provider_args``),
with the key in ``CODEX_API_KEY``::

    with OpenAIProvider() as provider:
        provider.mode = "rate"
        ...  # run `codex exec ... -c ...codex_provider_args(provider.url)`; see provider.requests
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

from tests.vendors.fakeserver import FakeHandler, FakeProvider

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
# down; "hang" accepts the request and never answers until then; "stream-rate" accepts it
# (200) and then fails the response with a rate limit, as OpenAI does mid-stream.
# "usage" answers as "ok" does, reporting the token counts of USAGE.
# "script" answers the n-th request with the provider's ``script[n]`` (a text, or a Call of one
# of the CLI's tools), and with a 500 once the script is used up.
MODES = frozenset({"ok", "hang", "slow", "stream-rate", "usage", "script", *ERRORS})
USAGE = {
    "input_tokens": 2400,
    "input_tokens_details": {"cached_tokens": 1800},
    "output_tokens": 350,
    "output_tokens_details": {"reasoning_tokens": 120},
    "total_tokens": 2750,
}


@dataclass(frozen=True)
class Call:
    """A scripted answer that calls the CLI's tool ``name`` with ``arguments``."""

    name: str
    arguments: Mapping[str, Any]


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


def _response(
    response_id: str,
    model: str,
    status: str,
    output: list[Any],
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": 1700000000,
        "status": status,
        "model": model,
        "output": output,
    }
    if status == "completed" and usage is not None:
        response["usage"] = usage
    elif status == "completed":
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


def stream_body(reply: str, model: str, usage: dict[str, Any] | None = None) -> bytes:
    """The server-sent events of one successful text answer, completing the response (with
    ``usage``, or 11 input and 3 output tokens)."""
    done = _message(reply, "completed")
    completed = _response("resp_1", model, "completed", [done], usage)
    events = [
        *opening_events(model),
        _delta(reply),
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": completed},
    ]
    return b"".join(_sse(event) for event in events)


def call_stream_body(call: Call, call_id: str, model: str) -> bytes:
    """The server-sent events of an answer that is one function call, completing the
    response."""
    item = {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": call.name,
        "arguments": json.dumps(dict(call.arguments)),
        "status": "completed",
    }
    events = [
        {"type": "response.created", "response": _response("resp_1", model, "in_progress", [])},
        {"type": "response.output_item.added", "output_index": 0,
         "item": {**item, "arguments": "", "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed",
         "response": _response("resp_1", model, "completed", [item])},
    ]  # fmt: skip
    return b"".join(_sse(event) for event in events)


def failed_stream_body(model: str, code: str, message: str) -> bytes:
    """The server-sent events of a response that fails before any output."""
    failed = _response("resp_1", model, "failed", [])
    failed["error"] = {"code": code, "message": message}
    events = [opening_events(model)[0], {"type": "response.failed", "response": failed}]
    return b"".join(_sse(event) for event in events)


def error_body(kind: str, code: str | None, param: str | None, message: str) -> dict[str, Any]:
    """The OpenAI API error envelope."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


class _Handler(FakeHandler):
    request_id_header = "x-request-id"
    provider: ClassVar[OpenAIProvider]

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        raw = self._read_body()
        headers = self._request_headers()
        if path != RESPONSES_PATH:
            self.provider._record("POST", path, None, headers)
            self._send_error(404, "invalid_request_error", None, f"Unknown path {path}")
            return
        body = self._parse_json(raw)
        self.provider._record("POST", path, body, headers)
        if body is None:
            self._send_error(400, "invalid_request_error", None, "body is not JSON")
            return
        self._answer(str(body.get("model") or "gpt-5"))

    def do_GET(self) -> None:
        # Codex's WebSocket upgrade and model list: neither is offered here.
        self.provider._record("GET", urlsplit(self.path).path, None, {})
        self._send_error(404, "invalid_request_error", None, "Not found")

    def _answer(self, model: str) -> None:
        mode = self.provider.mode
        if mode == "hang":
            self._hang()
        elif mode == "slow":
            opening = b"".join(_sse(event) for event in opening_events(model))
            self._stream_slowly(opening, _sse(_delta("working ")))
        elif mode == "stream-rate":
            body = failed_stream_body(model, "rate_limit_exceeded", RATE_MESSAGE)
            self._send(200, "text/event-stream", body)
        elif mode in ERRORS:
            status, kind, code, param, message = ERRORS[mode]
            self._send_error(status, kind, code, message, param)
        elif mode == "script":
            self._answer_script(model)
        else:
            usage = USAGE if mode == "usage" else None
            self._send(200, "text/event-stream", stream_body(self.provider.reply, model, usage))

    def _answer_script(self, model: str) -> None:
        answer, number = self.provider._next_answer()
        if answer is None:
            self._send_error(500, "server_error", None, "the provider's script is used up")
        elif isinstance(answer, Call):
            self._send(200, "text/event-stream", call_stream_body(answer, f"call_{number}", model))
        else:
            self._send(200, "text/event-stream", stream_body(answer, model))

    def _send_error(
        self,
        status: int,
        kind: str,
        code: str | None,
        message: str,
        param: str | None = None,
    ) -> None:
        self._send_json(status, error_body(kind, code, param, message))


class OpenAIProvider(FakeProvider):
    """A Responses API server on 127.0.0.1 (random free port) answering as ``mode`` says:
    "ok", "hang", "slow", "script" or a key of ERRORS.

    ``requests`` holds the parsed JSON body of every ``POST /v1/responses`` received, in order,
    and ``headers`` their request headers; ``seen`` holds ``(method, path)`` of every request.
    Its ``url`` is the server's root URL; the API lives under ``/v1``. In "script" mode,
    ``script`` holds the answers still to give, in order, and ``scripted`` counts those given.
    """

    modes = MODES
    thread_name = "fake-openai"
    handler_class = _Handler
    requests: list[dict[str, Any]]

    def __init__(self, mode: str = "ok", reply: str = "done.") -> None:
        super().__init__(mode, reply)
        self.headers: list[dict[str, str]] = []
        self.script: list[str | Call] = []
        self.scripted = 0

    def _next_answer(self) -> tuple[str | Call | None, int]:
        """The next scripted answer (None once the script is used up), and its number."""
        with self._lock:
            if not self.script:
                return None, self.scripted
            self.scripted += 1
            return self.script.pop(0), self.scripted

    def _accepted(self, headers: dict[str, str]) -> None:
        self.headers.append(headers)
