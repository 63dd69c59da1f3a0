"""OpenAI Codex CLI (`codex exec --json`), task on stdin.

- The session id is learned from the first event, `thread.started.thread_id`.
- A resume is `codex exec resume <id>`.
- The terminal records are `turn.completed` and `turn.failed`. Codex puts only a message on
  `turn.failed` and `error`, so its text patterns apply only inside a failed run. While it
  retries a connection it prints `error` events and goes on: those alone end nothing.
- Reset signals: `codex exec --json` prints no rate-limit fields (no `resets_in_seconds`, no
  `rate_limits`, no retry-after); only the text of `error` and `turn.failed` is read for one,
  such as OpenAI's "Please try again in 11.054s". Its usage-limit text "Try again at 2:47 PM."
  is in the CLI's local time without a date or a zone, and is not read.
- Usage: each `turn.completed` carries its turn's `usage`: `input_tokens` (which includes the
  cached ones, as OpenAI counts), `cached_input_tokens`, `cache_write_input_tokens`,
  `output_tokens` (which includes `reasoning_output_tokens`). They are summed over the run's
  turns; input is read as `input_tokens` less `cached_input_tokens`. No cost, models, turn count
  or API time are printed. Final means the run's last turn event is a `turn.completed` (a `codex
  exec` runs one turn); a turn started or failed after it leaves the usage partial.
- The provider answered once an `item.*` event carries an item other than an `error` item.
- The transcript is a rollout file under `<$CODEX_HOME or ~/.codex>/sessions/`, whose name ends
  in the session id and whose first record (`session_meta`) carries the same id.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from wrighty.domain.classify import Classification
from wrighty.domain.model import Stream
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.retry import ResetHint
from wrighty.domain.usage import Usage
from wrighty.vendors.base import (
    Permission,
    PermissionFlags,
    Reader,
    StatePath,
    Vendor,
    checked_session_id,
    count_of,
    failed_with_text,
    hint_in_text,
    home_dir,
    inside,
    json_record,
    no_terminal_record,
    stdout_record,
    text_of,
    verdict,
)

_FIRST_LINE_LIMIT = 64 * 1024
_ITEM_EVENTS = ("item.started", "item.updated", "item.completed")


class CodexReader(Reader):
    def __init__(self) -> None:
        self.session_id: str | None = None
        self.completed = False
        self.failure: str | None = None  # turn.failed's message
        self.last_error: str | None = None  # the last `error` event's message
        self.hint: ResetHint | None = None  # the last reset an error message named
        self.answered = False  # an item of model output was seen
        self.summed: Usage | None = None  # the usage of the completed turns
        self.last_turn_completed = False

    def usage(self) -> Usage | None:
        if self.summed is None:
            return None
        return Usage(
            input_tokens=self.summed.input_tokens,
            output_tokens=self.summed.output_tokens,
            cache_read_tokens=self.summed.cache_read_tokens,
            cache_write_tokens=self.summed.cache_write_tokens,
            final=self.last_turn_completed,
        )

    def feed(self, stream: Stream, line: bytes) -> None:
        record = stdout_record(stream, line)
        if record is None:
            return
        kind = record.get("type")
        if kind == "thread.started" and self.session_id is None:
            self.session_id = text_of(record.get("thread_id"))
        elif kind == "turn.completed":
            self.completed = True
            self.last_turn_completed = True
            self._turn_usage(record.get("usage"))
        elif kind == "turn.started":
            self.last_turn_completed = False
        elif kind == "turn.failed":
            self.last_turn_completed = False
            error = record.get("error")
            message = text_of(error.get("message")) if isinstance(error, dict) else None
            self.failure = message or "turn failed"
            self.hint = hint_in_text(message, "turn.failed") or self.hint
        elif kind == "error":
            message = text_of(record.get("message"))
            self.last_error = message or self.last_error
            self.hint = hint_in_text(message, "error event") or self.hint
        elif kind in _ITEM_EVENTS:
            self._item(kind, record.get("item"))

    def _item(self, kind: str, item: object) -> None:
        """An item event: whether the model answered, and its message once completed."""
        if not isinstance(item, dict):
            return
        self.answered = self.answered or item.get("type") not in (None, "error")
        if kind == "item.completed" and item.get("type") == "agent_message":
            self._said(text_of(item.get("text")))

    def _turn_usage(self, usage: object) -> None:
        if not isinstance(usage, dict):
            return
        total_input = count_of(usage.get("input_tokens")) or 0
        cached = count_of(usage.get("cached_input_tokens")) or 0
        turn = Usage(
            input_tokens=max(0, total_input - cached),
            output_tokens=count_of(usage.get("output_tokens")) or 0,
            cache_read_tokens=cached,
            cache_write_tokens=count_of(usage.get("cache_write_input_tokens")) or 0,
        )
        self.summed = turn if self.summed is None else self.summed + turn

    def classify(self, exit_code: int | None) -> Classification:
        if self.failure is not None:
            return failed_with_text(
                "codex", self.failure, exit_code, otherwise=OutcomeClass.UNKNOWN
            )
        if self.completed:
            confidence = Confidence.AUTHORITATIVE if exit_code == 0 else Confidence.INFERRED
            return verdict(OutcomeClass.SUCCEEDED, confidence, "codex: turn completed")
        if exit_code != 0 and self.last_error:
            # A failed run (nonzero exit) whose last words were an error event.
            return failed_with_text(
                "codex", self.last_error, exit_code, otherwise=OutcomeClass.PROCESS_CRASH
            )
        return no_terminal_record("codex", "turn.completed or turn.failed event", exit_code)


class Codex(Vendor):
    name = "codex"
    default_executable = "codex"
    permission_flags = PermissionFlags(
        workspace=("--sandbox", "workspace-write"),
        full=("--dangerously-bypass-approvals-and-sandbox",),
        # Inside wrighty's sandbox, Codex's own (bubblewrap on Linux) is off: wrighty's encloses it.
        enclosed_workspace=("--sandbox", "danger-full-access"),
    )
    _headless = ("exec", "--json", "--skip-git-repo-check")
    sandbox_variables = (
        # OpenAI's API (its built-in provider): a key or an access token, and its endpoint
        "OPENAI_API_KEY",
        "CODEX_API_KEY",
        "CODEX_ACCESS_TOKEN",
        "OPENAI_BASE_URL",
        "OPENAI_ORGANIZATION",
        "CODEX_CA_CERTIFICATE",  # the certificate authority its provider's TLS is checked with
        "CODEX_HOME",  # its state
    )

    def start_argv(
        self, executable: str, session_id: str | None, extra: Sequence[str]
    ) -> list[str]:
        return [executable, *self._headless, *extra, "-"]

    def resume_argv(self, executable: str, session_id: str, extra: Sequence[str]) -> list[str]:
        return [executable, *self._headless, *extra, "resume", checked_session_id(session_id), "-"]

    def transcript(self, session_id: str, workspace: Path, env: Mapping[str, str]) -> Path | None:
        checked_session_id(session_id)
        sessions = _codex_home(env) / "sessions"
        for candidate in sorted(sessions.glob(f"*/*/*/rollout-*-{session_id}.jsonl")):
            path = inside(candidate, sessions)
            if _meta_id(path) == session_id:
                return path
        return None

    def reader(self) -> Reader:
        return CodexReader()

    def sandbox_problem(
        self, permission: Permission, env: Mapping[str, str], *, enclosed: bool = False
    ) -> str | None:
        """Why Codex's own sandbox cannot run a shell command under ``env``, or None.

        With a system bubblewrap, Codex 0.169.0 runs every shell command as `bwrap … --
        CODEX/tmp/arg0-linux/…/codex-linux-sandbox …`, a helper it makes at start, but not
        when CODEX lies inside the temporary folder ($TMPDIR, else /tmp): then bwrap is
        given the bare name, finds nothing ("bwrap: execvp codex-linux-sandbox: No such file
        or directory"), and every command fails while the run goes on. Its bundled bubblewrap,
        used when no `bwrap` is on PATH outside the folders its sandbox lets commands write,
        does not need the helper."""
        if permission == "full" or enclosed:
            return None
        home = _codex_home(env).resolve()
        temp = Path(env.get("TMPDIR") or SLASH_TMP).resolve()
        if not home.is_relative_to(temp):
            return None
        bwrap = _system_bwrap(env.get("PATH"), (temp, SLASH_TMP.resolve()))
        if bwrap is None:
            return None
        return (
            f"Codex's own sandbox cannot run commands here: its folder {home} is inside the "
            f"temporary folder {temp}, where Codex makes no helper programs, and with the "
            f"system bubblewrap {bwrap} each shell command fails; move CODEX_HOME (or HOME) "
            "out of it, or set TMPDIR in the agent's env to a folder that does not hold it"
        )

    def state_paths(self, env: Mapping[str, str]) -> tuple[StatePath, ...]:
        """CODEX: rollouts under sessions/, its SQLite databases, shell snapshots, the helper
        programs of its own sandbox under tmp/arg0-linux."""
        return (StatePath(_codex_home(env)),)


# The temporary folder Codex's sandbox always lets commands write (besides $TMPDIR).
SLASH_TMP = Path("/tmp")  # noqa: S108 (a name Codex uses, not a file wrighty makes)


def _system_bwrap(search_path: str | None, writable: tuple[Path, ...]) -> Path | None:
    """The `bwrap` Codex takes from PATH: the first one outside the folders its sandbox lets
    commands write (it takes none from those, and uses the one it bundles instead)."""
    for folder in (search_path if search_path is not None else os.defpath).split(os.pathsep):
        candidate = Path(folder or ".") / "bwrap"
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        found = candidate.resolve()
        if not any(found.is_relative_to(root) for root in writable):
            return found
    return None


def _codex_home(env: Mapping[str, str]) -> Path:
    """Codex's folder: $CODEX_HOME, else ~/.codex."""
    given = env.get("CODEX_HOME")
    return Path(given) if given else home_dir(env) / ".codex"


def _meta_id(path: Path) -> str | None:
    """The session id in a rollout file's first record."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(_FIRST_LINE_LIMIT)
    except OSError:
        return None
    record = json_record(first)
    payload = record.get("payload") if record else None
    if not isinstance(payload, dict):
        return None
    found = payload.get("id")
    return found if isinstance(found, str) else None
