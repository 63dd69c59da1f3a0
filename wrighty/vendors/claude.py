"""Claude Code (`claude`): `-p --output-format stream-json --verbose`, task on stdin.

- The session id is chosen by wrighty and passed as `--session-id <uuid>`; a resume passes
  `--resume=<id>` (the `=` keeps an id from ever being read as a flag).
- The terminal record is the last `{"type": "result"}`. Every API failure arrives with
  `subtype: "success"` and `is_error: true`: the outcome is read from `is_error`, the assistant
  message's `error` code, `api_error_status` and `terminal_reason`, never from the subtype.
- Reset signals: a `rate_limit_event` whose `rate_limit_info.status` is "rejected" carries the
  limit's reset as `resetsAt` (epoch seconds). Claude Code prints it only when logged in to a
  claude.ai subscription (OAuth); with an API key a 429's reset headers reach no output. The
  failed result's text is read for a reset too (an epoch after "usage limit reached|" from
  Claude Code 1.0.x, a dated time with a zone, a wait in words); "resets 3:46pm (UTC)" has no
  date and is not read. `api_retry` delays are the CLI's own waits between its retries.
- Usage: the `result` record's `usage` (`input_tokens`, `output_tokens`,
  `cache_read_input_tokens`, `cache_creation_input_tokens`), `total_cost_usd`, the names in
  `modelUsage`, `num_turns` and `duration_api_ms` are the run's totals (final); where the counts
  `modelUsage` holds (summed over its models) are larger, those are taken (the result of its
  `--max-budget-usd` stop, `error_max_budget_usd`, has zeros in `usage`). Before it, each
  assistant record carries its message's `message.usage` as `message_start` reported it: every
  content block of one message repeats it (same `message.id`), and its `output_tokens` is the
  start's count (usually 1), not the final one. So the partial usage counts each message id
  once, taking the largest count seen per field.
- The transcript is `<$CLAUDE_CONFIG_DIR or ~/.claude>/projects/<folder>/<session id>.jsonl`,
  where the folder is the workspace's real path with every character other than an ASCII letter
  or digit replaced by '-' (one per UTF-16 unit, as the CLI is JavaScript), cut to 200
  characters plus '-' and a base-36 hash when longer (`project_folder`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wrighty.domain.classify import Classification
from wrighty.domain.model import Stream
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.retry import ResetHint
from wrighty.domain.usage import Usage
from wrighty.vendors.base import (
    MAX_COUNT,
    MAX_MODELS,
    PermissionFlags,
    Reader,
    StatePath,
    Vendor,
    checked_session_id,
    cost_of,
    count_of,
    failed_with_text,
    hint_in_text,
    home_dir,
    inside,
    int_of,
    model_names,
    moment_of_epoch,
    no_terminal_record,
    status_class,
    stdout_record,
    text_of,
    verdict,
)

# The assistant message's `error` codes that name a class on their own.
_ERROR_CODES = {
    "billing_error": OutcomeClass.BILLING,
    "rate_limit": OutcomeClass.RATE_LIMITED,
    "server_error": OutcomeClass.PROVIDER_UNAVAILABLE,
    "overloaded": OutcomeClass.PROVIDER_UNAVAILABLE,
}
# Subtypes of a result that the agent itself ended in failure.
_FOLDER_LIMIT = 200
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def project_folder(workspace: str) -> str:
    """The name Claude Code gives the folder of a working directory's transcripts."""
    units = workspace.encode("utf-16-le")
    codes = [int.from_bytes(units[i : i + 2], "little") for i in range(0, len(units), 2)]
    name = "".join(chr(c) if c < 128 and chr(c).isalnum() else "-" for c in codes)
    if len(name) <= _FOLDER_LIMIT:
        return name
    return f"{name[:_FOLDER_LIMIT]}-{_base36(abs(_java_hash(codes)))}"


def _java_hash(codes: list[int]) -> int:
    """Java's String.hashCode over UTF-16 units, as a signed 32-bit integer."""
    value = 0
    for code in codes:
        value = (value * 31 + code) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = _BASE36[digit] + digits
        if number == 0:
            return digits


# The partial usage keeps the counts of this many recent message ids (their records may
# interleave, a subagent's with its parent's); older ones are folded into a sum.
_OPEN_MESSAGES = 32
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
_Counts = tuple[int, int, int, int]


def _counts(usage: Any) -> _Counts | None:
    """A Messages API `usage` object's four token counts (0 for one absent or odd)."""
    if not isinstance(usage, dict):
        return None
    found = [count_of(usage.get(name)) for name in _USAGE_FIELDS]
    return (found[0] or 0, found[1] or 0, found[2] or 0, found[3] or 0)


# `modelUsage`'s names of the four counts, in _USAGE_FIELDS' order.
_MODEL_USAGE_FIELDS = (
    "inputTokens",
    "outputTokens",
    "cacheReadInputTokens",
    "cacheCreationInputTokens",
)


def _model_counts(model_usage: Any) -> _Counts | None:
    """The four counts summed over a result's `modelUsage` (None when no model has any)."""
    if not isinstance(model_usage, dict):
        return None
    total: _Counts | None = None
    for entry in list(model_usage.values())[:MAX_MODELS]:
        if not isinstance(entry, dict):
            continue
        found = [count_of(entry.get(name)) for name in _MODEL_USAGE_FIELDS]
        if all(count is None for count in found):
            continue
        counts = (found[0] or 0, found[1] or 0, found[2] or 0, found[3] or 0)
        total = counts if total is None else _add(total, counts)
    if total is None:
        return None
    return (
        min(total[0], MAX_COUNT),
        min(total[1], MAX_COUNT),
        min(total[2], MAX_COUNT),
        min(total[3], MAX_COUNT),
    )


def _add(first: _Counts, second: _Counts) -> _Counts:
    return (
        first[0] + second[0],
        first[1] + second[1],
        first[2] + second[2],
        first[3] + second[3],
    )


_AGENT_FAILURES = ("error_max_turns", "error_max_structured_output_retries")
# Its own stop at `--max-budget-usd` (wrighty passes the item's remaining budget).
_BUDGET_STOP = "error_max_budget_usd"


class ClaudeReader(Reader):
    def __init__(self) -> None:
        self.session_id: str | None = None
        self.error_code: str | None = None  # the last assistant message's `error`
        self.has_result = False
        self.subtype: str | None = None
        self.is_error = False
        self.api_status: int | None = None
        self.terminal_reason: str | None = None
        self.text = ""  # the result text, or its `errors`
        self.hint: ResetHint | None = None  # the last reset reported
        self.answered = False  # an assistant message that is model output
        # Partial usage: the counts of recent message ids, the sum of older ones, the models.
        self.open_messages: dict[str, _Counts] = {}
        self.closed_counts: _Counts = (0, 0, 0, 0)
        self.models: tuple[str, ...] = ()
        self.final_usage: Usage | None = None  # from the result record

    def usage(self) -> Usage | None:
        if self.final_usage is not None:
            return self.final_usage
        if not self.open_messages and self.closed_counts == (0, 0, 0, 0) and not self.models:
            return None
        total = self.closed_counts
        for counts in self.open_messages.values():
            total = _add(total, counts)
        return Usage(
            input_tokens=total[0],
            output_tokens=total[1],
            cache_read_tokens=total[2],
            cache_write_tokens=total[3],
            models=self.models,
        )

    def feed(self, stream: Stream, line: bytes) -> None:
        record = stdout_record(stream, line)
        if record is None:
            return
        session_id = text_of(record.get("session_id"))
        if session_id and self.session_id is None:
            self.session_id = session_id
        kind = record.get("type")
        if kind == "assistant":
            self.error_code = text_of(record.get("error")) or self.error_code
            self.answered = self.answered or _model_output(record)
            self._message_usage(record.get("message"))
            if record.get("error") is None:  # an API error's text is the CLI's, not the model's
                self._said(_message_text(record.get("message")))
        elif kind == "rate_limit_event":
            self._rate_limit(record.get("rate_limit_info"))
        elif kind == "result":
            self.has_result = True
            self.subtype = text_of(record.get("subtype"))
            self.is_error = record.get("is_error") is True
            self.api_status = int_of(record.get("api_error_status"))
            self.terminal_reason = text_of(record.get("terminal_reason"))
            errors = record.get("errors")
            listed = (
                "; ".join(e for e in errors if isinstance(e, str))
                if isinstance(errors, list)
                else ""
            )
            self.text = text_of(record.get("result")) or listed[:2000]
            if not self.is_error:
                self._said(text_of(record.get("result")))
            if self.is_error:
                self.hint = hint_in_text(self.text, "result text") or self.hint
            self._result_usage(record)

    def _message_usage(self, message: Any) -> None:
        """An assistant record's message: its usage, counted once per message id."""
        if not isinstance(message, dict):
            return
        model = message.get("model")
        if model != "<synthetic>":
            self.models = model_names(*self.models, model)
        counts = _counts(message.get("usage"))
        message_id = message.get("id")
        if counts is None or not isinstance(message_id, str) or not message_id:
            return
        message_id = message_id[:200]
        seen = self.open_messages.pop(message_id, None)
        if seen is not None:
            counts = (
                max(seen[0], counts[0]),
                max(seen[1], counts[1]),
                max(seen[2], counts[2]),
                max(seen[3], counts[3]),
            )
        self.open_messages[message_id] = counts  # now the most recent
        if len(self.open_messages) > _OPEN_MESSAGES:
            oldest = next(iter(self.open_messages))
            self.closed_counts = _add(self.closed_counts, self.open_messages.pop(oldest))

    def _result_usage(self, record: dict[str, Any]) -> None:
        """The result's totals, which replace the partial usage: its `usage`, or, where
        `modelUsage` counts more, the sum of that (an `error_max_budget_usd` result reports
        zeros in `usage`, the counts in `modelUsage` only)."""
        counts = _counts(record.get("usage"))
        by_model = _model_counts(record.get("modelUsage"))
        if counts is None:
            counts = by_model
        elif by_model is not None:
            counts = (
                max(counts[0], by_model[0]),
                max(counts[1], by_model[1]),
                max(counts[2], by_model[2]),
                max(counts[3], by_model[3]),
            )
        if counts is None:
            return
        model_usage = record.get("modelUsage")
        models = model_names(*model_usage) if isinstance(model_usage, dict) else ()
        self.final_usage = Usage(
            input_tokens=counts[0],
            output_tokens=counts[1],
            cache_read_tokens=counts[2],
            cache_write_tokens=counts[3],
            cost_usd=cost_of(record.get("total_cost_usd")),
            models=models or self.models,
            turns=count_of(record.get("num_turns")),
            api_ms=count_of(record.get("duration_api_ms")),
            final=True,
        )

    def _rate_limit(self, info: Any) -> None:
        """A `rate_limit_event`: a rejected limit that is not covered by overage names its
        reset; a limit in force again (allowed, or overage in use) ends the last one."""
        if not isinstance(info, dict):
            return
        status = info.get("status")
        if status in ("allowed", "allowed_warning") or info.get("isUsingOverage") is True:
            self.hint = None
        elif status == "rejected":
            resets_at = moment_of_epoch(info.get("resetsAt"))
            if resets_at is None and info.get("overageStatus") == "rejected":
                resets_at = moment_of_epoch(info.get("overageResetsAt"))
            if resets_at is not None:
                self.hint = ResetHint("rate_limit_event", resets_at=resets_at)

    def classify(self, exit_code: int | None) -> Classification:
        if not self.has_result:
            return no_terminal_record("claude", "result record", exit_code)
        if not self.is_error and self.subtype == "success":
            confidence = Confidence.AUTHORITATIVE if exit_code == 0 else Confidence.INFERRED
            return verdict(OutcomeClass.SUCCEEDED, confidence, f"claude: {self.text or 'done'}")
        found = self._structured_class()
        if found is not None:
            return verdict(found, Confidence.AUTHORITATIVE, f"claude: {self.text}")
        if self.subtype == _BUDGET_STOP:
            return verdict(
                OutcomeClass.BUDGET_EXCEEDED, Confidence.AUTHORITATIVE, f"claude: {self.subtype}"
            )
        if self.subtype in _AGENT_FAILURES:
            return verdict(
                OutcomeClass.AGENT_FAILURE, Confidence.AUTHORITATIVE, f"claude: {self.subtype}"
            )
        return failed_with_text(
            "claude", self.text, exit_code, otherwise=OutcomeClass.AGENT_FAILURE
        )

    def _structured_class(self) -> OutcomeClass | None:
        if self.terminal_reason == "prompt_too_long":
            return OutcomeClass.CONTEXT_LIMIT
        if self.error_code == "authentication_failed":
            # Claude Code reports a 403 with the same code as a 401.
            return OutcomeClass.PERMISSION if self.api_status == 403 else OutcomeClass.AUTH
        return _ERROR_CODES.get(self.error_code or "") or status_class(self.api_status)


def _message_text(message: Any) -> str | None:
    """An assistant message's text blocks, joined (None: it has none)."""
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return None
    texts = [
        block["text"]
        for block in message["content"]
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(texts) or None


def _model_output(record: dict[str, Any]) -> bool:
    """An assistant message the provider produced: no `error`, not a "<synthetic>" model."""
    if record.get("error") is not None:
        return False
    message = record.get("message")
    return isinstance(message, dict) and message.get("model") != "<synthetic>"


class Claude(Vendor):
    name = "claude"
    default_executable = "claude"
    preassigns_session = True
    permission_flags = PermissionFlags(
        workspace=("--permission-mode", "acceptEdits"),
        full=("--dangerously-skip-permissions",),
    )
    _headless = ("-p", "--output-format", "stream-json", "--verbose")
    sandbox_variables = (
        # Anthropic's API: a key, a bearer token or a subscription's token, and its endpoint
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_CUSTOM_HEADERS",
        # the model through Amazon Bedrock, Google Vertex AI or Microsoft Foundry
        "CLAUDE_CODE_USE_BEDROCK",
        "ANTHROPIC_BEDROCK_BASE_URL",
        "AWS_BEARER_TOKEN_BEDROCK",
        "CLAUDE_CODE_USE_VERTEX",
        "ANTHROPIC_VERTEX_BASE_URL",
        "ANTHROPIC_VERTEX_PROJECT_ID",
        "CLOUD_ML_REGION",
        "CLAUDE_CODE_USE_FOUNDRY",
        "ANTHROPIC_FOUNDRY_API_KEY",
        "ANTHROPIC_FOUNDRY_BASE_URL",
        "ANTHROPIC_FOUNDRY_RESOURCE",
        "CLAUDE_CONFIG_DIR",  # its state
    )

    def start_argv(
        self, executable: str, session_id: str | None, extra: Sequence[str]
    ) -> list[str]:
        fixed = [f"--session-id={checked_session_id(session_id)}"] if session_id else []
        return [executable, *self._headless, *fixed, *extra]

    def resume_argv(self, executable: str, session_id: str, extra: Sequence[str]) -> list[str]:
        return [executable, *self._headless, f"--resume={checked_session_id(session_id)}", *extra]

    def transcript(self, session_id: str, workspace: Path, env: Mapping[str, str]) -> Path | None:
        projects = _config_dir(env) / "projects"
        folder = project_folder(str(workspace.resolve()))
        path = inside(projects / folder / f"{checked_session_id(session_id)}.jsonl", projects)
        return path if path.is_file() else None

    def reader(self) -> Reader:
        return ClaudeReader()

    def state_paths(self, env: Mapping[str, str]) -> tuple[StatePath, ...]:
        """CONFIG (transcripts under projects/, sessions/, backups/) and its settings file:
        CONFIG/.claude.json with CLAUDE_CONFIG_DIR, else ~/.claude.json beside ~/.claude."""
        config = _config_dir(env)
        if env.get("CLAUDE_CONFIG_DIR"):
            return (StatePath(config),)
        return (StatePath(config), StatePath(home_dir(env) / ".claude.json", folder=False))

    def budget_flags(self, max_cost_usd: float) -> tuple[str, ...]:
        # Claude Code stops itself, with an error_max_budget_usd result, once a turn's cost
        # passes it (`--max-budget-usd`, print mode only: wrighty's is).
        amount = f"{max(max_cost_usd, 0.000001):.6f}".rstrip("0").rstrip(".")
        return (f"--max-budget-usd={amount}",)


def _config_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's folder: $CLAUDE_CONFIG_DIR, else ~/.claude."""
    given = env.get("CLAUDE_CONFIG_DIR")
    return Path(given) if given else home_dir(env) / ".claude"
