"""Gemini CLI (`gemini --output-format stream-json`), task on stdin.

- The session id is learned from the `init` event's `session_id` (also on the JSON error object
  that a failed start prints).
- A resume is `--resume <id>`.
- The terminal record is the `result` event (`status` "success" or "error"); Gemini's exit codes
  are structured facts of their own: 41 authentication, 42 bad input, 44 sandbox, 52 config,
  53 turn limit, 54 tool execution, 130 interrupted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from wrighty.domain.classify import Classification
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.supervisor.process import Stream
from wrighty.vendors.base import (
    PermissionFlags,
    Reader,
    Vendor,
    checked_session_id,
    failed_with_text,
    home_dir,
    inside,
    json_record,
    no_terminal_record,
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
}
_SESSION_ID_TEXT = re.compile(rb'"session_id"\s*:\s*"([^"]{1,128})"')


class GeminiReader(Reader):
    def __init__(self) -> None:
        self.session_id: str | None = None
        self.status: str | None = None  # the result event's status
        self.error: str | None = None  # the last error message seen (result or error event)

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
            self.error = text_of(error.get("message")) or self.error
        if kind == "result":
            self.status = text_of(record.get("status")) or "unknown"
        elif kind == "error":
            self.error = text_of(record.get("message")) or self.error

    def classify(self, exit_code: int | None) -> Classification:
        if exit_code in _EXIT_CODES:
            outcome_class, what = _EXIT_CODES[exit_code]
            detail = f": {self.error}" if self.error else ""
            return verdict(outcome_class, Confidence.AUTHORITATIVE, f"gemini: {what}{detail}")
        if exit_code == 130:
            return verdict(
                OutcomeClass.PROCESS_CRASH,
                Confidence.INFERRED,
                "gemini was interrupted (exit 130) by something other than wrighty",
            )
        if self.status == "success":
            confidence = Confidence.AUTHORITATIVE if exit_code == 0 else Confidence.INFERRED
            return verdict(OutcomeClass.SUCCEEDED, confidence, "gemini: success")
        if self.status is not None or (exit_code != 0 and self.error):
            return failed_with_text(
                "gemini", self.error or "error", exit_code, otherwise=OutcomeClass.AGENT_FAILURE
            )
        return no_terminal_record("gemini", "result event", exit_code)


class Gemini(Vendor):
    name = "gemini"
    default_executable = "gemini"
    permission_flags = PermissionFlags(
        workspace=("--approval-mode", "auto_edit"),
        full=("--approval-mode", "yolo"),
    )
    _headless = ("--output-format", "stream-json")

    def start_argv(
        self, executable: str, session_id: str | None, extra: Sequence[str]
    ) -> list[str]:
        return [executable, *self._headless, *extra]

    def resume_argv(self, executable: str, session_id: str, extra: Sequence[str]) -> list[str]:
        return [executable, *self._headless, "--resume", checked_session_id(session_id), *extra]

    def transcript(self, session_id: str, workspace: Path, env: Mapping[str, str]) -> Path | None:
        checked_session_id(session_id)
        root = home_dir(env) / ".gemini" / "tmp"
        for candidate in sorted(root.glob("*/chats/session-*.json")):
            path = inside(candidate, root)
            if _mentions(path, session_id):
                return path
        return None

    def reader(self) -> Reader:
        return GeminiReader()


def _mentions(path: Path, session_id: str) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return f'"sessionId": "{session_id}"'.encode() in head or session_id.encode() in head
