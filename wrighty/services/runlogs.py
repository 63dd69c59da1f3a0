"""A run's captured output read back for `wrighty logs` and the inbox: where it is, and as
redacted text.

The worker writes each run's standard output and error, raw and size-capped, to
``.wrighty/runs/<item>/<run_id>/stdout.log`` and ``stderr.log`` on the machine that ran it
(`logs_of` is that layout, for both sides; the writing is supervisor/process.py's).
Reading them back replaces secrets (the files keep them) and hands out whole lines while the run
goes on, so a secret is never printed in two halves that the redaction could not see whole.
The text handed out keeps bytes that are not UTF-8 (as "surrogateescape" surrogates): a
terminal gets `printable_output`, a pipe that asked for the raw bytes `output_bytes`
(domain/output.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from wrighty.config_file import STATE_DIRNAME
from wrighty.domain.model import Run, Stream
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.output import tails_text
from wrighty.domain.redact import redact_bytes_tail, tail_window_bytes
from wrighty.errors import WrightyError

# Receives each piece of output and the stream it came from.
Write = Callable[[Stream, str], None]


def run_logs_of(state_dir: Path, item_id: int) -> Path:
    """Where the worker keeps the log files of item ``item_id``'s runs, a folder per run."""
    return state_dir / "runs" / str(item_id)


def logs_of(state_dir: Path, item_id: int, run_id: str) -> Path:
    """Where the worker keeps the log files of item ``item_id``'s run ``run_id``."""
    return run_logs_of(state_dir, item_id) / run_id


def run_log_dir(state_dir: Path, run: Run) -> Path:
    """Where the worker kept ``run``'s log files."""
    return logs_of(state_dir, run.item_id, run.run_id)


def check_logs_here(run: Run, log_dir: Path, *, installation_id: str) -> None:
    """WrightyError saying why this machine has no logs of ``run``, if it has none."""
    problem = logs_problem(run, log_dir, installation_id=installation_id)
    if problem is not None:
        raise WrightyError(problem)


def logs_problem(run: Run, log_dir: Path, *, installation_id: str) -> str | None:
    """Why `wrighty logs` cannot print ``run`` here; None when it can.

    An open run may not have them yet: the worker records the run before it starts the agent.
    """
    if log_dir.is_dir():
        return None
    which = f"run {run.attempt} of item {run.item_id}"
    where = logs_of(Path(STATE_DIRNAME), run.item_id, run.run_id)
    if run.installation_id != installation_id:
        return (
            f"{which} ran on installation {run.installation_id}, not on this one "
            f"({installation_id}); its logs are in {where} on that machine"
        )
    if run.ended_at is None:
        return None
    if run.outcome_class is OutcomeClass.START_FAILED:
        return (
            f"{which} has no output: its agent never started (start-failed); "
            f"`wrighty show {run.item_id}` says why"
        )
    return f"the logs of {which} are gone from this machine: no directory {log_dir}"


class LogReader:
    """One log file, read on from where the previous read stopped."""

    def __init__(self, path: Path, stream: Stream, *, secrets: Sequence[str] = ()) -> None:
        """``secrets``: values known to be secret (config.known_secrets), never handed out."""
        self.path = path
        self.stream = stream
        self.secrets = secrets
        self._data = bytearray()
        self._shown = 0  # bytes of _data already handed out

    def skip_to_tail(self, size: int) -> int:
        """Leave all but about the last ``size`` bytes the file holds now unread, from the
        start of a line (a page that follows a long run starts near its end); how many bytes
        are skipped. What is skipped is still the context of the redaction."""
        self._load()
        start = max(0, len(self._data) - size)
        if start:
            newline = self._data.find(b"\n", start - 1)
            start = len(self._data) if newline == -1 else newline + 1
        self._shown = max(self._shown, start)
        return self._shown

    def read_new(self, *, final: bool) -> str:
        """The output written since the last call, redacted, undecodable bytes kept; only whole
        lines unless ``final`` (the run has ended, so a last line without its newline is
        complete too)."""
        self._load()
        end = len(self._data) if final else self._data.rfind(b"\n") + 1
        if end <= self._shown:
            return ""
        new = bytes(self._data[self._shown : end])
        # Redacting the new part with the earlier output as context finds a secret that began
        # before it; the text then starts with one line that counts the bytes left out.
        text = redact_bytes_tail(
            bytes(self._data[:end]),
            len(new.decode("utf-8", errors="surrogateescape")),
            keep_undecodable=True,
            secrets=self.secrets,
        )
        if self._shown:
            text = text.split("\n", 1)[1]
        self._shown = end
        return text

    def _load(self) -> None:
        try:
            with self.path.open("rb") as handle:
                handle.seek(len(self._data))
                self._data += handle.read()
        except FileNotFoundError:
            pass  # not started yet, or nothing to show


def print_output(readers: Sequence[LogReader], *, final: bool, write: Write) -> None:
    """Hand each reader's new output to ``write``, stream by stream."""
    for reader in readers:
        text = reader.read_new(final=final)
        if text:
            write(reader.stream, text)


def follow_output(
    readers: Sequence[LogReader],
    *,
    run_open: Callable[[], bool],
    write: Write,
    sleep: Callable[[float], None],
    interval: float,
) -> None:
    """Print new output every ``interval`` seconds until the run has ended and the files are
    drained."""
    while True:
        # Asked before reading, so everything written before the end is read after it.
        still_open = run_open()
        print_output(readers, final=not still_open, write=write)
        if not still_open:
            return
        sleep(interval)


def tail_output(log_dir: Path, *, chars: int, final: bool, secrets: Sequence[str] = ()) -> str:
    """The last ``chars`` characters of a run's output as a terminal may show them (secrets
    redacted, the known ``secrets`` too; control characters escaped), stdout's and then
    stderr's under a line that names it; while the run goes on (not ``final``), a last line
    without its newline is left for the next read, as `wrighty logs --follow` leaves it."""
    tails: list[tuple[Stream, int, bytes]] = []
    for stream in ("stdout", "stderr"):
        skipped, data = _tail_bytes(log_dir / f"{stream}.log", tail_window_bytes(chars))
        if not final:
            data = data[: data.rfind(b"\n") + 1]
        tails.append((stream, skipped, data))
    return tails_text(tails, chars=chars, secrets=secrets)


def _tail_bytes(path: Path, size: int) -> tuple[int, bytes]:
    """How many bytes of the file come before its last ``size``, and those."""
    try:
        with path.open("rb") as handle:
            start = max(0, handle.seek(0, 2) - size)
            handle.seek(start)
            return start, handle.read()
    except FileNotFoundError:
        return 0, b""
