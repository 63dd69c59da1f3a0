"""Gemini CLI (`gemini --output-format stream-json --skip-trust`), task on stdin.

- Headless because stdin is not a terminal; `--skip-trust` keeps it from refusing a workspace
  it has not seen (exit 55).
- The session id is chosen by wrighty (`--session-id <uuid>`); a resume is `--resume <id>`.
- The terminal record is the `result` event (`status` "success" or "error"). Exit 0 without it
  (the CLI exits 0 on SIGTERM) is no success.
- Its exit codes are structured facts: 41 authentication, 42 bad input, 44 sandbox, 52 config,
  53 turn limit, 54 tool execution, 55 untrusted workspace, 130 cancelled; an API error exits
  with its HTTP status modulo 256 (401 -> 145, 429 -> 173), with the status in the message.
- Reset signals: the error message, which carries Google's own text ("Please retry in 23.5s",
  "Your quota will reset after 8h44m7s") and the CLI's "Suggested retry after 23s" (from the
  error's `RetryInfo.retryDelay`, or 60s for a per-minute quota). A daily quota names none.
- Usage: the `result` event's `stats`, summed over the CLI's API calls: `input_tokens` (the
  prompt, cached part included), `cached`, `input` (the prompt less the cached part),
  `output_tokens` (the candidates), `total_tokens`, and the same per model under `models`.
  wrighty reads `input` (or `input_tokens` less `cached`), `cached` as cache reads,
  `output_tokens`, and the model names. Thought and tool-use prompt tokens are printed only
  inside `total_tokens` and are not read; no cost, turn count or API time is printed. Nothing
  before the result reports usage, so a run killed early has none.
- The provider answered once an assistant `message` with text, or a `tool_use`, was printed.
- The transcript is `<$GEMINI_CLI_HOME or ~>/.gemini/tmp/<project>/chats/session-<time>-<first
  8 characters of the id>.jsonl`, whose first record names the session and the workspace's
  sha256 (`projectHash`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wrighty.domain.classify import Classification
from wrighty.domain.model import Stream
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.retry import ResetHint
from wrighty.domain.usage import Usage
from wrighty.vendors.base import (
    PermissionFlags,
    Reader,
    StatePath,
    Vendor,
    VendorError,
    checked_session_id,
    count_of,
    failed_with_text,
    hint_in_text,
    home_dir,
    inside,
    json_record,
    model_names,
    no_terminal_record,
    status_class,
    text_of,
    verdict,
)

# Exit codes that are the CLI's own statement of how the run ended.
_EXIT_CODES = {
    41: (OutcomeClass.AUTH, "no usable credentials (exit 41)"),
    42: (OutcomeClass.AGENT_FAILURE, "the CLI refused its input (exit 42)"),
    44: (OutcomeClass.AGENT_FAILURE, "sandbox error (exit 44)"),
    52: (OutcomeClass.AGENT_FAILURE, "configuration error (exit 52)"),
    53: (OutcomeClass.AGENT_FAILURE, "the session reached its turn limit (exit 53)"),
    54: (OutcomeClass.AGENT_FAILURE, "a tool failed (exit 54)"),
    55: (OutcomeClass.AGENT_FAILURE, "the workspace is not trusted (exit 55)"),
}
_SESSION_ID_TEXT = re.compile(rb'"session_id"\s*:\s*"([^"]{1,128})"')
_FIRST_LINE_LIMIT = 64 * 1024


class GeminiReader(Reader):
    def __init__(self) -> None:
        self.session_id: str | None = None
        self.status: str | None = None  # the result event's status
        self.error: str | None = None  # the last error message seen (result or error event)
        self.hint: ResetHint | None = None  # the last reset an error message named
        self.answered = False  # model text or a tool call was printed
        self.final_usage: Usage | None = None  # from the result event's stats
        self._saying = False  # the last record was a piece of the model's message (a delta)

    def usage(self) -> Usage | None:
        return self.final_usage

    def feed(self, stream: Stream, line: bytes) -> None:
        record = json_record(line)
        if record is None:
            # The JSON error object of a failed start is pretty-printed over many lines.
            found = _SESSION_ID_TEXT.search(line)
            if found and self.session_id is None:
                self.session_id = found.group(1).decode(errors="replace")
            return
        if self.session_id is None:
            self.session_id = text_of(record.get("session_id"))
        kind = record.get("type")
        error = record.get("error")
        if isinstance(error, dict):
            message = text_of(error.get("message"))
            self.error = message or self.error
            where = "result error" if kind == "result" else "error field"
            self.hint = hint_in_text(message, where) or self.hint
        if kind == "result":
            self.status = text_of(record.get("status")) or "unknown"
            self.final_usage = _stats_usage(record.get("stats")) or self.final_usage
        elif kind == "error":
            message = text_of(record.get("message"))
            self.error = message or self.error
            self.hint = hint_in_text(message, "error event") or self.hint
        self.answered = self.answered or _model_output(record)
        said = kind == "message" and record.get("role") == "assistant"
        if said:
            self._said(text_of(record.get("content")), more=self._saying)
        self._saying = said and record.get("delta") is True

    def classify(self, exit_code: int | None) -> Classification:
        if exit_code in _EXIT_CODES:
            outcome_class, what = _EXIT_CODES[exit_code]
            detail = f": {self.error}" if self.error else ""
            return verdict(outcome_class, Confidence.AUTHORITATIVE, f"gemini: {what}{detail}")
        if exit_code == 130:
            return verdict(
                OutcomeClass.PROCESS_CRASH,
                Confidence.INFERRED,
                "gemini was cancelled (exit 130) by something other than wrighty",
            )
        if self.status == "success":
            confidence = Confidence.AUTHORITATIVE if exit_code == 0 else Confidence.INFERRED
            return verdict(OutcomeClass.SUCCEEDED, confidence, "gemini: success")
        api_class = self._api_status_class(exit_code)
        if api_class is not None:
            return verdict(api_class, Confidence.AUTHORITATIVE, f"gemini: {self.error}")
        if self.status is not None or (exit_code != 0 and self.error):
            return failed_with_text(
                "gemini", self.error or "error", exit_code, otherwise=OutcomeClass.AGENT_FAILURE
            )
        return no_terminal_record("gemini", "result event", exit_code)

    def _api_status_class(self, exit_code: int | None) -> OutcomeClass | None:
        """The class of an API error: the CLI exits with the HTTP status modulo 256 (400-511
        become 144-255) and says "[API Error" in its result."""
        if (
            exit_code is None
            or not 144 <= exit_code <= 255
            or "[API Error" not in (self.error or "")
        ):
            return None
        return status_class(exit_code + 256)


def _stats_usage(stats: Any) -> Usage | None:
    """The usage in a result event's ``stats``; None when it holds no token counts."""
    if not isinstance(stats, dict):
        return None
    prompt = count_of(stats.get("input_tokens"))
    cached = count_of(stats.get("cached"))
    uncached = count_of(stats.get("input"))
    output = count_of(stats.get("output_tokens"))
    if prompt is None and uncached is None and output is None:
        return None
    if uncached is None:
        uncached = max(0, (prompt or 0) - (cached or 0))
    models = stats.get("models")
    return Usage(
        input_tokens=uncached,
        output_tokens=output or 0,
        cache_read_tokens=cached or 0,
        models=model_names(*models) if isinstance(models, dict) else (),
        final=True,
    )


def _model_output(record: dict[str, Any]) -> bool:
    """A tool call, or assistant text: what only the model's answer prints."""
    if record.get("type") == "tool_use":
        return True
    content = text_of(record.get("content"))
    return record.get("type") == "message" and record.get("role") == "assistant" and bool(content)


class Gemini(Vendor):
    name = "gemini"
    default_executable = "gemini"
    preassigns_session = True
    permission_flags = PermissionFlags(
        workspace=("--approval-mode", "auto_edit"),
        full=("--approval-mode", "yolo"),
    )
    _headless = ("--output-format", "stream-json", "--skip-trust")
    sandbox_variables = (
        # the Gemini API: a key and its endpoint
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "GEMINI_API_KEY_AUTH_MECHANISM",
        "GEMINI_CLI_CUSTOM_HEADERS",
        "GEMINI_DEFAULT_AUTH_TYPE",
        # Vertex AI, or Gemini Code Assist with an access token
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_VERTEX_BASE_URL",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_GENAI_USE_GCA",
        "GOOGLE_CLOUD_ACCESS_TOKEN",
        "GEMINI_CLI_HOME",  # its state
    )

    def start_argv(
        self, executable: str, session_id: str | None, extra: Sequence[str]
    ) -> list[str]:
        fixed = ["--session-id", checked_session_id(session_id)] if session_id else []
        return [executable, *self._headless, *fixed, *extra]

    def resume_argv(self, executable: str, session_id: str, extra: Sequence[str]) -> list[str]:
        return [executable, *self._headless, "--resume", checked_session_id(session_id), *extra]

    def transcript(self, session_id: str, workspace: Path, env: Mapping[str, str]) -> Path | None:
        checked_session_id(session_id)
        root = _gemini_dir(env) / "tmp"
        project_hash = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()
        for candidate in sorted(root.glob(f"*/chats/session-*-{session_id[:8]}.jsonl")):
            path = inside(candidate, root)
            first = _first_record(path)
            if first.get("sessionId") == session_id and first.get("projectHash") == project_hash:
                if not _holds_a_turn(path):
                    raise VendorError(
                        f"the Gemini CLI chat of session {session_id} holds no turn to resume "
                        "(the provider refused its first request, and `gemini --resume` finds "
                        "no session)"
                    )
                return path
        return None

    def reader(self) -> Reader:
        return GeminiReader()

    def state_paths(self, env: Mapping[str, str]) -> tuple[StatePath, ...]:
        """GEMINI/.gemini: settings.json, projects.json, installation_id, history/, and the
        chats under tmp/PROJECT/chats."""
        return (StatePath(_gemini_dir(env)),)


def _gemini_dir(env: Mapping[str, str]) -> Path:
    """Gemini CLI's folder: $GEMINI_CLI_HOME/.gemini, else ~/.gemini."""
    given = env.get("GEMINI_CLI_HOME")
    return (Path(given) if given else home_dir(env)) / ".gemini"


# A chat file larger than this surely holds a turn; it is not read to the end.
_CHAT_READ_LIMIT = 16 * 1024 * 1024
_SESSION_CONTEXT = "<session_context>"


def _holds_a_turn(path: Path) -> bool:
    """Whether the chat holds a message besides Gemini CLI's own session context: a refusal
    of the first request takes the task back out, and `gemini --resume` then finds nothing.
    Its records after the first add or replace a message by id, or reset them all
    (``{"$set": {"messages": [...]}}``)."""
    turns: dict[object, bool] = {}
    read = 0
    try:
        with path.open("rb") as handle:
            handle.readline(_FIRST_LINE_LIMIT)
            for line in handle:
                read += len(line)
                if read > _CHAT_READ_LIMIT:
                    return True
                record = json_record(line) or {}
                reset = record.get("$set")
                if isinstance(reset, dict) and isinstance(reset.get("messages"), list):
                    turns = {
                        m.get("id"): _is_turn(m) for m in reset["messages"] if isinstance(m, dict)
                    }
                elif "id" in record:
                    turns[record["id"]] = _is_turn(record)
    except OSError:
        return False
    return any(turns.values())


def _is_turn(message: dict[str, Any]) -> bool:
    if message.get("type") != "user":
        return message.get("type") is not None
    content = message.get("content")
    first = content[0] if isinstance(content, list) and content else None
    text = first.get("text") if isinstance(first, dict) else None
    return not (isinstance(text, str) and text.startswith(_SESSION_CONTEXT))


def _first_record(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as handle:
            return json_record(handle.readline(_FIRST_LINE_LIMIT)) or {}
    except OSError:
        return {}
