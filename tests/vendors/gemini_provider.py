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
from typing import Any, ClassVar
from urllib.parse import urlsplit

from tests.vendors.fakeserver import FakeHandler, FakeProvider

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
# "tool-then-rate" answers a turn with a call of TOOL_CALL (a read-only tool the headless CLI
# runs without asking), and refuses the turn that carries the tool's result with the "rate"
# error: a provider that answered once, then hit its limit.
# "usage" answers a turn with a call of TOOL_CALL and the turn that carries its result with
# text, each reporting the token counts of USAGE_TURNS (first, second).
# "script" answers the n-th streamed call with the provider's ``script[n]`` (a text, or a
# ``functionCall``: ``{"name": ..., "args": {...}}``), and with a 500 once it is used up.
MODES = frozenset({"ok", "hang", "slow", "tool-then-rate", "usage", "script", *ERRORS})
TOOL_CALL = {"name": "list_directory", "args": {"dir_path": "."}}
USAGE = {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10}
USAGE_TURNS: tuple[dict[str, int], ...] = (
    {
        "promptTokenCount": 2000,
        "cachedContentTokenCount": 500,
        "candidatesTokenCount": 60,
        "thoughtsTokenCount": 90,
        "toolUsePromptTokenCount": 0,
        "totalTokenCount": 2150,
    },
    {
        "promptTokenCount": 2300,
        "cachedContentTokenCount": 1500,
        "candidatesTokenCount": 40,
        "thoughtsTokenCount": 30,
        "toolUsePromptTokenCount": 0,
        "totalTokenCount": 2370,
    },
)


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


def tool_call_chunk(model: str, call: dict[str, Any] = TOOL_CALL) -> dict[str, Any]:
    """One GenerateContentResponse that ends the answer with a call of ``call``."""
    candidate = {
        "content": {"role": "model", "parts": [{"functionCall": call}]},
        "finishReason": "STOP",
        "index": 0,
    }
    return {"candidates": [candidate], "usageMetadata": USAGE, "modelVersion": model}


def carries_tool_result(body: dict[str, Any]) -> bool:
    """Whether the request's last turn holds a tool's result (a ``functionResponse``)."""
    contents = body.get("contents") or [{}]
    return any("functionResponse" in part for part in contents[-1].get("parts", []))


def _sse(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\r\n\r\n"


def error_body(status: int, name: str, message: str, details: list[Any]) -> dict[str, Any]:
    """The Google API error envelope."""
    error: dict[str, Any] = {"code": status, "message": message, "status": name}
    if details:
        error["details"] = details
    return {"error": error}


class _Handler(FakeHandler):
    provider: ClassVar[GeminiProvider]

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        raw = self._read_body()
        headers = self._request_headers()
        call = _MODEL_CALL.fullmatch(path)
        if call is None:
            self.provider._record("POST", path, None, headers)
            self._send_error(404, "NOT_FOUND", f"Unknown path {path}", [])
            return
        body = self._parse_json(raw)
        if body is None:
            self.provider._record("POST", path, None, headers)
            self._send_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.", [])
            return
        method, model = call.group("method"), call.group("model")
        self.provider._record("POST", path, (method, body), headers)
        if self.provider.mode == "tool-then-rate" and method == STREAM_METHOD:
            self._answer_with_a_tool_call(model, body)
            return
        if self.provider.mode == "usage" and method == STREAM_METHOD:
            self._answer_with_usage(model, body)
            return
        if self.provider.mode == "script" and method == STREAM_METHOD:
            self._answer_script(model)
            return
        self._answer(method, model)

    def do_GET(self) -> None:
        self.provider._record("GET", urlsplit(self.path).path, None, {})
        self._send_error(404, "NOT_FOUND", "Not found", [])

    def _answer(self, method: str, model: str) -> None:
        mode, reply = self.provider.mode, self.provider.reply
        if mode in ERRORS:
            self._send_error(*ERRORS[mode])
        elif method == "countTokens":
            self._send_json(200, {"totalTokens": USAGE["totalTokenCount"]})
        elif method != STREAM_METHOD:
            self._send_json(200, chunk(reply, model, final=True))
        elif mode == "hang":
            self._hang()
        elif mode == "slow":
            # A word every SLOW_DELTA_SECONDS, never ending the answer.
            word = _sse(chunk("working ", model, final=False))
            self._stream_slowly(word, word)
        else:
            self._send(200, "text/event-stream", _sse(chunk(reply, model, final=True)))

    def _answer_with_a_tool_call(self, model: str, body: dict[str, Any]) -> None:
        if carries_tool_result(body):
            self._send_error(*ERRORS["rate"])
        else:
            self._send(200, "text/event-stream", _sse(tool_call_chunk(model)))

    def _answer_with_usage(self, model: str, body: dict[str, Any]) -> None:
        if carries_tool_result(body):
            answer = {**chunk(self.provider.reply, model, final=True)}
            answer["usageMetadata"] = USAGE_TURNS[1]
        else:
            answer = {**tool_call_chunk(model), "usageMetadata": USAGE_TURNS[0]}
        self._send(200, "text/event-stream", _sse(answer))

    def _answer_script(self, model: str) -> None:
        answer = self.provider._next_answer()
        if answer is None:
            self._send_error(*ERRORS["server"])
        elif isinstance(answer, str):
            self._send(200, "text/event-stream", _sse(chunk(answer, model, final=True)))
        else:
            self._send(200, "text/event-stream", _sse(tool_call_chunk(model, answer)))

    def _send_error(self, status: int, name: str, message: str, details: list[Any]) -> None:
        self._send_json(status, error_body(status, name, message, details))


class GeminiProvider(FakeProvider):
    """A Gemini API server on 127.0.0.1 (random free port) answering as ``mode`` says:
    "ok", "hang", "slow", "tool-then-rate", "usage", "script" or a key of ERRORS.

    ``requests`` holds ``(method, body)`` for every model call received, in order ("method" is
    the API method: streamGenerateContent, generateContent, countTokens), and ``headers`` their
    request headers; ``seen`` holds ``(http method, path)`` of every request. Its ``url`` is the
    base URL to put in ``GOOGLE_GEMINI_BASE_URL``. In "script" mode, ``script`` holds the
    answers still to give, in order.
    """

    modes = MODES
    thread_name = "fake-gemini"
    handler_class = _Handler
    requests: list[tuple[str, dict[str, Any]]]

    def __init__(self, mode: str = "ok", reply: str = "done.") -> None:
        super().__init__(mode, reply)
        self.headers: list[dict[str, str]] = []
        self.script: list[str | dict[str, Any]] = []

    def _next_answer(self) -> str | dict[str, Any] | None:
        """The next scripted answer (None once the script is used up)."""
        with self._lock:
            return self.script.pop(0) if self.script else None

    @property
    def streamed(self) -> list[dict[str, Any]]:
        """The bodies of the streamGenerateContent calls: the conversation turns."""
        with self._lock:
            return [body for method, body in self.requests if method == STREAM_METHOD]

    def _accepted(self, headers: dict[str, str]) -> None:
        self.headers.append(headers)
