"""A fake Anthropic Messages API on loopback, so the real Claude Code CLI can run offline.

Point the CLI at it with ``ANTHROPIC_BASE_URL=provider.url``::

    with Provider() as provider:
        provider.mode = "rate"
        ...  # run claude; then inspect provider.requests
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, ClassVar
from urllib.parse import urlsplit

from tests.vendors.fakeserver import FakeHandler, FakeProvider

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
    # A 429 with a subscription's usage-limit headers (see ``usage_limit_headers``).
    "usage-limit": (429, "rate_limit_error", "rate limited"),
    "overloaded": (529, "overloaded_error", "Overloaded"),
    "server": (500, "api_error", "Internal server error"),
}

# "hang" accepts the request and never answers until the provider shuts down; "slow" starts
# a streaming answer and adds to it a little at a time until the provider shuts down.
# "usage" answers a turn with a text block and a call of TOOL_CALL (a read-only tool the
# headless CLI runs without asking), and the turn that carries the tool's result with text,
# each reporting the token counts of USAGE_TURNS (first, second).
# "script" answers the n-th streamed request with the provider's ``script[n]`` (a Turn), and
# with a 500 once the script is used up.
MODES = frozenset({"ok", "hang", "slow", "usage", "script", *ERRORS})
TOOL_CALL = {"type": "tool_use", "id": "toolu_1", "name": "Glob", "input": {"pattern": "*.md"}}
# The usage of each answer of the "usage" mode, as the Messages API reports it: the input
# counts in `message_start`, the final output count in `message_delta`.
USAGE_TURNS: tuple[dict[str, int], ...] = (
    {
        "input_tokens": 1200,
        "cache_read_input_tokens": 4000,
        "cache_creation_input_tokens": 500,
        "output_tokens": 300,
    },
    {
        "input_tokens": 150,
        "cache_read_input_tokens": 4600,
        "cache_creation_input_tokens": 120,
        "output_tokens": 40,
    },
)


def _sse(data: dict[str, Any]) -> str:
    """One server-sent event, named after its ``type``."""
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


def _message(message_id: str, model: str, usage: dict[str, Any]) -> dict[str, Any]:
    """A streamed answer's opening message, before any content."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }


def stream_body(reply: str, model: str) -> bytes:
    """The server-sent events of one successful text answer, ending the turn."""
    message = _message("msg_1", model, {"input_tokens": 5, "output_tokens": 1})
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


def usage_stream_body(model: str, *, second: bool) -> bytes:
    """The server-sent events of one answer of the "usage" mode: with ``second`` False, text
    and a call of TOOL_CALL (two content blocks of one message), else text ending the turn."""
    counts = USAGE_TURNS[1 if second else 0]
    message = _message(
        "msg_usage_2" if second else "msg_usage_1", model, {**counts, "output_tokens": 1}
    )
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "done." if second else "Looking."},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    if not second:
        block = {**TOOL_CALL, "input": {}}
        arguments = {"type": "input_json_delta", "partial_json": json.dumps(TOOL_CALL["input"])}
        events += [
            {"type": "content_block_start", "index": 1, "content_block": block},
            {"type": "content_block_delta", "index": 1, "delta": arguments},
            {"type": "content_block_stop", "index": 1},
        ]
    stop = {"stop_reason": "end_turn" if second else "tool_use", "stop_sequence": None}
    events += [
        {
            "type": "message_delta",
            "delta": stop,
            "usage": {"output_tokens": counts["output_tokens"]},
        },
        {"type": "message_stop"},
    ]
    return "".join(_sse(event) for event in events).encode()


@dataclass(frozen=True)
class Turn:
    """One answer of the "script" mode: a text block, then a call of TOOL_CALL (``tool``), or
    of the tool ``call`` names (``{"name": ..., "input": {...}}``), or, with ``slow``, a second
    text block that grows a word at a time and never ends.

    ``usage`` holds the four counts of USAGE_TURNS' entries: the input ones go in
    `message_start` (with an output count of 1, as the API does), ``output_tokens`` in the
    closing `message_delta` (which a slow answer never reaches).
    """

    usage: Mapping[str, int]
    text: str = "done."
    tool: bool = False
    slow: bool = False
    call: Mapping[str, Any] | None = None

    def tokens(self) -> int:
        return sum(self.usage.values())


def script_stream(turn: Turn, message_id: str, model: str) -> tuple[bytes, bytes]:
    """A scripted answer's server-sent events: the whole answer and no delta, or (``slow``)
    its opening and the delta to repeat after it."""
    counts = dict(turn.usage)
    message = _message(message_id, model, {**counts, "output_tokens": 1})
    text = {"type": "text_delta", "text": turn.text}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": text},
        {"type": "content_block_stop", "index": 0},
    ]
    if turn.slow:
        events.append(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            }
        )
        more = {"type": "content_block_delta", "index": 1,
                "delta": {"type": "text_delta", "text": "and more "}}  # fmt: skip
        return "".join(_sse(event) for event in events).encode(), _sse(more).encode()
    if turn.tool or turn.call is not None:
        call = {**(turn.call or TOOL_CALL), "type": "tool_use", "id": f"toolu_{message_id}"}
        arguments = {"type": "input_json_delta", "partial_json": json.dumps(call["input"])}
        events += [
            {"type": "content_block_start", "index": 1, "content_block": {**call, "input": {}}},
            {"type": "content_block_delta", "index": 1, "delta": arguments},
            {"type": "content_block_stop", "index": 1},
        ]
    calls = turn.tool or turn.call is not None
    stop = {"stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None}
    events += [
        {
            "type": "message_delta",
            "delta": stop,
            "usage": {"output_tokens": counts["output_tokens"]},
        },
        {"type": "message_stop"},
    ]
    return "".join(_sse(event) for event in events).encode(), b""


def carries_tool_result(body: dict[str, Any]) -> bool:
    """Whether the request's last message holds a tool's result."""
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content") if isinstance(messages[-1], dict) else None
    blocks = content if isinstance(content, list) else []
    return any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)


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


def usage_limit_headers(reset_at: int) -> dict[str, str]:
    """The headers of a 429 that refuses a request because the 5-hour usage limit is spent
    until ``reset_at`` (epoch seconds), as Claude Code reads them."""
    return {
        "retry-after": str(max(1, reset_at - int(time.time()))),
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": str(reset_at),
        "anthropic-ratelimit-unified-representative-claim": "five_hour",
        "anthropic-ratelimit-unified-5h-utilization": "1.0",
        "anthropic-ratelimit-unified-5h-reset": str(reset_at),
    }


def error_body(kind: str, message: str) -> dict[str, Any]:
    """The Messages API error envelope."""
    return {"type": "error", "error": {"type": kind, "message": message}}


class _Handler(FakeHandler):
    request_id_header = "request-id"
    provider: ClassVar[Provider]

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        raw = self._read_body()
        if path != MESSAGES_PATH:
            self.provider._record("POST", path)
            self._send_json(HTTPStatus.OK, {})
            return
        body = self._parse_json(raw)
        self.provider._record("POST", path, body)
        if body is None:
            self._send_json(400, error_body("invalid_request_error", "body is not JSON"))
            return
        self._answer_messages(body)

    def do_GET(self) -> None:
        self.provider._record("GET", urlsplit(self.path).path)
        self._send_json(HTTPStatus.OK, {})

    def do_HEAD(self) -> None:
        self.provider._record("HEAD", urlsplit(self.path).path)
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()

    do_PUT = do_POST
    do_PATCH = do_POST

    def do_DELETE(self) -> None:
        self.provider._record("DELETE", urlsplit(self.path).path)
        self._send_json(HTTPStatus.OK, {})

    def do_OPTIONS(self) -> None:
        self.do_DELETE()

    def _answer_messages(self, body: dict[str, Any]) -> None:
        mode = self.provider.mode
        model = str(body.get("model") or "claude-x")
        if mode == "hang":
            self._hang()
        elif mode == "slow":
            # Begin an answer (message + block start), then a word at a time, never ending it.
            opening = b"\n\n".join(stream_body("", model).split(b"\n\n")[:2]) + b"\n\n"
            delta = {"type": "text_delta", "text": "working "}
            event = {"type": "content_block_delta", "index": 0, "delta": delta}
            self._stream_slowly(opening, _sse(event).encode())
        elif mode in ERRORS:
            self._refuse(mode)
        elif mode == "script" and body.get("stream"):
            self._answer_script(model)
        elif mode == "usage" and body.get("stream"):
            second = carries_tool_result(body)
            self._send(200, "text/event-stream", usage_stream_body(model, second=second))
        elif body.get("stream"):
            self._send(200, "text/event-stream", stream_body(self.provider.reply, model))
        else:
            self._send_json(200, message_body(self.provider.reply, model))

    def _refuse(self, mode: str) -> None:
        status, kind, message = ERRORS[mode]
        limited = mode == "usage-limit"
        headers = usage_limit_headers(self.provider.reset_at) if limited else None
        self._send_json(status, error_body(kind, message), headers)

    def _answer_script(self, model: str) -> None:
        turn, number = self.provider._next_turn()
        if turn is None and self.provider.after_script is not None:
            self._refuse(self.provider.after_script)
            return
        if turn is None:
            self._send_json(500, error_body("api_error", "the provider's script is used up"))
            return
        data, delta = script_stream(turn, f"msg_script_{number}", model)
        if turn.slow:
            self._stream_slowly(data, delta)
        else:
            self._send(200, "text/event-stream", data)


class Provider(FakeProvider):
    """A Messages API server on 127.0.0.1 (random free port) answering as ``mode`` says:
    "ok", "hang", "slow", "usage" or a key of ERRORS ("usage-limit" resets at ``reset_at``, epoch
    seconds, three hours after the provider was made unless set).

    ``requests`` holds the parsed JSON body of every ``POST /v1/messages`` received, in order;
    ``seen`` holds ``(method, path)`` of every request, side requests included. Its ``url`` is
    the base URL to put in ``ANTHROPIC_BASE_URL``. In "script" mode, ``script`` holds the
    answers still to give, in order, and ``scripted`` counts those given.
    """

    modes = MODES
    thread_name = "fake-anthropic"
    handler_class = _Handler
    requests: list[dict[str, Any]]

    def __init__(self, mode: str = "ok", reply: str = "done.") -> None:
        super().__init__(mode, reply)
        self.reset_at = int(time.time()) + 3 * 3600
        self.script: list[Turn] = []
        # How the "script" mode answers once its script is used up: a key of ERRORS (a
        # refusal after some work), or None (a 500).
        self.after_script: str | None = None
        self.scripted = 0

    def _next_turn(self) -> tuple[Turn | None, int]:
        """The next scripted answer (None once the script is used up), and its number."""
        with self._lock:
            if not self.script:
                return None, self.scripted
            self.scripted += 1
            return self.script.pop(0), self.scripted
