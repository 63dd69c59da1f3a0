"""One agent process: launched headless with its task on stdin, watched, stopped as a tree.

- argv only, never a shell; the task goes to stdin, never into argv or the environment;
- the agent leads its own process group and, on Linux, dies with the thread that spawned it;
- stdout and stderr go to size-capped log files, each chunk written before the next read
  (no buffer in between: a reader sees the output live, and a worker killed by SIGKILL
  loses none of what it had read), and a bounded tail is kept for diagnostics;
- the exit is detected by a thread blocked in waitpid, not by polling;
- stopping sends SIGTERM to the group and every known descendant, waits a grace period, then
  SIGKILLs whatever is left, including processes that left the group.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from io import FileIO
from pathlib import Path
from typing import IO

import psutil

from wrighty.domain.machine import StartFailure, Step
from wrighty.domain.model import Stream
from wrighty.domain.redact import redact_bytes_tail
from wrighty.domain.sandbox import Sandbox
from wrighty.files import make_private_dirs
from wrighty.supervisor.linux import with_parent_death_signal
from wrighty.supervisor.owner import owner_marker
from wrighty.supervisor.tree import ProcessTree, ignore_missing, marked, pids_after, wait_gone

DEFAULT_LOG_CAP_BYTES = 10 * 1024 * 1024
DIAGNOSTIC_TAIL_BYTES = 4096
_CHUNK = 64 * 1024
_PIPE_BUFFER_BYTES = 16 * 1024  # well under Linux's default pipe capacity (64 KiB)
MAX_LINE_BYTES = 16 * 1024 * 1024  # a longer output line is skipped, never held whole

# Called from the pump thread with the stream and one complete line, without its "\n".
LineObserver = Callable[[Stream, bytes], None]


class LaunchError(Exception):
    """The agent could not be started: the run's outcome is start-failed. ``failure`` says
    at which step and with which OS error (wrighty/domain/machine.py tells the worker's
    machine's failures from the item's)."""

    def __init__(self, message: str, step: Step, errno: int | None = None) -> None:
        super().__init__(message)
        self.failure = StartFailure(step, message, errno)


@dataclass(frozen=True)
class LaunchSpec:
    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    task: str
    log_dir: Path
    log_cap_bytes: int = DEFAULT_LOG_CAP_BYTES
    # Set when the agent exits, so a supervisor can wait for "exit or anything else" at once.
    wake: threading.Event | None = None
    # An environment variable (name, value) unique to this run, added to ``env``: every
    # descendant inherits it, so the final sweep finds even processes that left the tree
    # before anyone looked.
    marker: tuple[str, str] | None = None
    # It dies, tree and all, with the wrighty process that started it, even one killed with
    # SIGKILL (owner.py): a check's or an integration's command. An agent's processes are
    # stopped by the next run of its item instead (docs/worker.md#stopping-a-process-tree).
    owned: bool = False
    # Sees every complete output line (a vendor adapter's reader), in the pump thread.
    on_line: LineObserver | None = None
    # What the program is, in a LaunchError's words ("agent", "check tests").
    role: str = "agent"
    # How much of the end of each stream is kept in memory, whatever the log's cap dropped
    # (at least): the diagnostic's, or a check's evidence (``output_tails``).
    tail_bytes: int = DIAGNOSTIC_TAIL_BYTES
    # Run under bubblewrap (docs/sandbox.md): its argv before the program's, and only the
    # variables it allows (the marker and the owner's too).
    sandbox: Sandbox | None = None


@dataclass(frozen=True)
class ExitStatus:
    """How the process ended: an exit code, or the signal that killed it."""

    exit_code: int | None
    signal: int | None

    @classmethod
    def from_returncode(cls, returncode: int) -> ExitStatus:
        if returncode < 0:
            return cls(exit_code=None, signal=-returncode)
        return cls(exit_code=returncode, signal=None)


class LineSplitter:
    """Cuts a byte stream into lines for an observer, holding at most ``limit`` bytes: the
    rest of a longer line is dropped and the line is not passed on."""

    def __init__(self, emit: Callable[[bytes], None], limit: int = MAX_LINE_BYTES) -> None:
        self._emit = emit
        self._limit = limit
        self._partial = bytearray()
        self._overlong = False
        self.skipped = 0

    def feed(self, chunk: bytes) -> None:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start:end])
            self._end_line()
            start = end + 1
        self._add(chunk[start:])

    def close(self) -> None:
        """The stream ended: a last line without its newline still counts."""
        if self._partial or self._overlong:
            self._end_line()

    def _add(self, piece: bytes) -> None:
        if self._overlong:
            return
        if len(self._partial) + len(piece) > self._limit:
            self._overlong = True
            self._partial.clear()
            return
        self._partial += piece

    def _end_line(self) -> None:
        if self._overlong:
            self.skipped += 1
        else:
            self._emit(bytes(self._partial))
        self._partial.clear()
        self._overlong = False


def _open_log(path: Path) -> FileIO:
    """A log file written without a buffer: each write is a system call of its own."""
    return os.fdopen(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600), "wb", 0)


class _Capture:
    """Copies one pipe to a capped log file, keeps the last bytes for diagnostics, and hands
    complete lines to an observer if there is one. Each chunk is in the file before ``take``
    returns, so before the pump reads again. A log file that cannot be written (a full disk)
    stops being written; the pipe is still drained, so the agent never blocks."""

    def __init__(
        self,
        source: IO[bytes],
        log: FileIO,
        cap: int,
        lines: LineSplitter | None = None,
        tail_bytes: int = DIAGNOSTIC_TAIL_BYTES,
    ) -> None:
        self.source = source
        self._log = log
        self._cap = cap
        self._lines = lines
        self._tail_bytes = tail_bytes
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self.written = 0
        self.dropped = 0
        self.log_problem: str | None = None  # why the log file stopped being written

    def take(self, chunk: bytes) -> None:
        self._keep(chunk)  # first: the file has it before anything else looks at it
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        while self._tail_size - len(self._tail[0]) >= self._tail_bytes:
            self._tail_size -= len(self._tail.popleft())
        if self._lines is not None:
            self._lines.feed(chunk)

    def _keep(self, chunk: bytes) -> None:
        """Write what the cap leaves room for to the log file, now (a raw write may take only
        part of it: write the rest)."""
        piece = memoryview(chunk)[: max(0, self._cap - self.written)]
        kept = 0
        while kept < len(piece) and self.log_problem is None:
            try:
                written = self._log.write(piece[kept:])
            except OSError as error:
                self.log_problem = _why(error)
                break
            if not written:  # a regular file takes a byte or raises; never spin on it
                self.log_problem = "the file took no more bytes"
                break
            kept += written
        self.written += kept
        self.dropped += len(chunk) - kept

    def finish(self) -> None:
        try:
            if self._lines is not None:
                self._lines.close()
            if self.dropped:
                why = (
                    f"cannot write the log ({self.log_problem})"
                    if self.log_problem
                    else f"output truncated at {self._cap} bytes"
                )
                note = f"\n[wrighty: {why}; {self.dropped} more bytes were not kept]\n"
                with contextlib.suppress(OSError):
                    self._log.write(note.encode())
            with contextlib.suppress(OSError):
                self._log.close()
        finally:
            self.source.close()

    def tail(self) -> bytes:
        return b"".join(self._tail)

    def tail_with_offset(self) -> tuple[int, bytes]:
        """How many bytes the stream wrote before the kept tail, and the tail."""
        tail = self.tail()
        return self.written + self.dropped - len(tail), tail


class _Pump:
    """One thread that drains stdout and stderr into their captures until both close."""

    def __init__(self, *captures: _Capture) -> None:
        self._captures = captures
        self._thread = threading.Thread(target=self._run, name="pump", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with selectors.DefaultSelector() as selector:
            for capture in self._captures:
                selector.register(capture.source.fileno(), selectors.EVENT_READ, capture)
            while selector.get_map():
                for key, _ in selector.select():
                    capture = key.data
                    chunk = os.read(key.fd, _CHUNK)
                    if chunk:
                        capture.take(chunk)
                    else:
                        selector.unregister(key.fd)
                        capture.finish()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


class AgentProcess:
    """A launched agent. Thread-safe to watch; stop() may be called from any thread."""

    def __init__(
        self, popen: subprocess.Popen[bytes], spec: LaunchSpec, logs: tuple[FileIO, FileIO]
    ) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.exited = threading.Event()
        self._tree = ProcessTree(popen.pid, self.exited, spec.marker)
        self.pgid = self._tree.pgid  # start_new_session: the agent leads its own group
        self.started_at = self._tree.started_at
        self._wake = spec.wake
        self._status: ExitStatus | None = None
        assert popen.stdout is not None
        assert popen.stderr is not None
        self._stdout = _Capture(
            popen.stdout, logs[0], spec.log_cap_bytes, _lines(spec, "stdout"), spec.tail_bytes
        )
        self._stderr = _Capture(
            popen.stderr, logs[1], spec.log_cap_bytes, _lines(spec, "stderr"), spec.tail_bytes
        )
        self._pump = _Pump(self._stdout, self._stderr)
        task = spec.task.encode("utf-8")
        if len(task) <= _PIPE_BUFFER_BYTES:
            self._feed(task)  # fits in the pipe: never blocks, even if the agent never reads
        else:
            threading.Thread(target=self._feed, args=(task,), daemon=True).start()
        threading.Thread(target=self._wait, name=f"wait:{self.pid}", daemon=True).start()

    def _feed(self, task: bytes) -> None:
        stdin = self._popen.stdin
        assert stdin is not None
        try:
            stdin.write(task)
            stdin.close()
        except (BrokenPipeError, OSError):
            pass  # the agent exited or closed stdin without reading it all

    def _wait(self) -> None:
        returncode = self._popen.wait()  # blocks in waitpid: wakes exactly at the exit
        self._status = ExitStatus.from_returncode(returncode)
        self.exited.set()
        if self._wake is not None:
            self._wake.set()

    def wait(self, timeout: float | None = None) -> ExitStatus | None:
        """The exit status, waiting up to ``timeout`` seconds; None if still running."""
        self.exited.wait(timeout)
        return self._status

    @property
    def status(self) -> ExitStatus | None:
        return self._status

    def refresh_descendants(self) -> None:
        """Remember the agent's current descendants, so that ones that later leave its group
        or outlive it can still be stopped."""
        self._tree.refresh_descendants()

    def stop(self, grace_seconds: float) -> None:
        """Stop the agent and every descendant: SIGTERM, grace, then SIGKILL."""
        self._tree.stop(grace_seconds)

    def close(self, timeout: float = 5.0) -> None:
        """Wait for the log pumps to drain (after the tree is gone)."""
        self._pump.join(timeout)

    def output_tails(self) -> list[tuple[Stream, int, bytes]]:
        """The end of stdout and of stderr (``LaunchSpec.tail_bytes`` at least), each with how
        many bytes came before it: the end, even of output past the log files' cap."""
        return [
            ("stdout", *self._stdout.tail_with_offset()),
            ("stderr", *self._stderr.tail_with_offset()),
        ]

    def diagnostic_tail(self, secrets: Sequence[str] = ()) -> str:
        """The last bytes of stderr and stdout, decoded and redacted (the known ``secrets``
        too)."""
        parts = []
        for name, pump in (("stderr", self._stderr), ("stdout", self._stdout)):
            if pump.log_problem:
                parts.append(f"[wrighty: {name}.log is incomplete: {pump.log_problem}]")
            data = pump.tail()
            if data:
                text = redact_bytes_tail(data, DIAGNOSTIC_TAIL_BYTES, secrets=secrets)
                parts.append(f"--- {name} ---\n{text}")
        return "\n".join(parts)


def _lines(spec: LaunchSpec, stream: Stream) -> LineSplitter | None:
    observer = spec.on_line
    if observer is None:
        return None

    def emit(line: bytes) -> None:
        # A reader's bug must not stop the pump: the agent would block on a full pipe. The
        # log file still has every byte.
        with contextlib.suppress(Exception):
            observer(stream, line)

    return LineSplitter(emit)


def launch(spec: LaunchSpec) -> AgentProcess:
    """Start the agent; LaunchError (start-failed) when it cannot be started at all."""
    if not spec.argv:
        raise LaunchError("no command to run", Step.ARGV)
    if not spec.cwd.is_dir():
        raise LaunchError(f"workspace {spec.cwd} does not exist", Step.CWD)
    executable = spec.argv[0]
    problem = executable_problem(executable, spec.env.get("PATH"))
    if problem is not None:
        raise LaunchError(f"{spec.role} executable {problem}", Step.PROGRAM)
    command = spec.argv
    if spec.sandbox is not None:
        program = spec.sandbox.prefix[0]
        problem = executable_problem(program, None)
        if problem is not None:
            raise LaunchError(f"sandbox program {problem}", Step.PROGRAM)
        command = spec.sandbox.argv(spec.argv)
    logs = _open_logs(spec.log_dir)
    argv, pre_exec = with_parent_death_signal(list(command), os.getpid())
    try:
        popen = subprocess.Popen(
            argv,
            cwd=spec.cwd,
            env=_environment(spec),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
            preexec_fn=pre_exec,
        )
    except BaseException as error:
        for log in logs:
            log.close()
        if isinstance(error, OSError):
            why = f"cannot start {executable!r}: {_why(error)}"
            raise LaunchError(why, Step.SPAWN, error.errno) from None
        if isinstance(error, ValueError):  # an argument or variable with a NUL byte
            raise LaunchError(f"cannot start {executable!r}: {error}", Step.ARGV) from None
        raise
    return AgentProcess(popen, spec, logs)


def _environment(spec: LaunchSpec) -> dict[str, str]:
    env = dict(spec.env) if spec.sandbox is None else spec.sandbox.environment(spec.env)
    if spec.marker is not None:
        env[spec.marker[0]] = spec.marker[1]
    return {**env, **owner_marker()} if spec.owned else env


def _open_logs(log_dir: Path) -> tuple[FileIO, FileIO]:
    """The run's stdout and stderr log files, made before the agent starts: an agent must not
    run when its output cannot be kept at all (a full disk)."""
    try:
        make_private_dirs(log_dir)  # runs/, runs/<item>/ and the run's own: each 0700
        stdout = _open_log(log_dir / "stdout.log")
    except OSError as error:
        raise _logs_error(log_dir, error) from None
    try:
        return stdout, _open_log(log_dir / "stderr.log")
    except OSError as error:
        stdout.close()
        raise _logs_error(log_dir, error) from None


def _logs_error(log_dir: Path, error: OSError) -> LaunchError:
    why = f"cannot create the run's logs in {log_dir}: {_why(error)}"
    return LaunchError(why, Step.LOGS, error.errno)


def _why(error: OSError) -> str:
    return (error.strerror or str(error)).lower()


def program_from(argv: tuple[str, ...], folder: Path) -> tuple[str, ...]:
    """``argv`` with a relative program path (with a '/', as ``.venv/bin/pytest``) made
    absolute from ``folder``; a bare name is left to be looked up on PATH."""
    program = argv[0]
    if os.sep in program and not os.path.isabs(program):
        program = str(folder / program)
    return (program, *argv[1:])


def executable_problem(executable: str, search_path: str | None) -> str | None:
    """Why ``executable`` cannot be started, as words that follow its name ('./x' is not
    executable...), or None when it can. A name with a slash is a path; a bare name is looked
    up on ``search_path`` (the PATH the program would get)."""
    if shutil.which(executable, path=search_path) is not None:
        return None
    if os.sep in executable:
        candidates = [Path(executable)]
    else:
        if search_path is None:
            search_path = os.environ.get("PATH", os.defpath)
        folders = search_path.split(os.pathsep)
        candidates = [Path(folder or ".") / executable for folder in folders]
    for candidate in candidates:
        if candidate.is_dir() and os.sep in executable:
            return f"{executable!r} is a directory, not a program"
        if candidate.is_file():
            return f"{executable!r} is not executable (chmod +x {candidate})"
    where = "" if os.sep in executable else " on PATH"
    return f"{executable!r} not found{where}"


def stop_earlier_run(
    run_id: str, pid: int | None, started_at: float | None, *, grace_seconds: float
) -> list[int]:
    """Stop whatever is still alive of an earlier run: its recorded process (same pid and
    start time) and every process carrying its WRIGHTY_RUN_ID. The pids it had to stop. It
    takes at most two graces (SIGTERM, grace, SIGKILL, grace); a zombie counts as stopped (its
    parent, not this process, would have to reap it: a stopped parent never does)."""
    candidates = marked(("WRIGHTY_RUN_ID", run_id), pids_after(0))
    if pid is not None and started_at is not None and same_process_running(pid, started_at):
        candidates[pid] = started_at
    targets = []
    for candidate in candidates:
        with ignore_missing():
            process = psutil.Process(candidate)
            process.terminate()
            targets.append(process)
    alive = wait_gone(targets, grace_seconds)
    for process in alive:
        with ignore_missing():
            process.kill()
    wait_gone(alive, grace_seconds)
    return [process.pid for process in targets]


def same_process_running(pid: int, started_at: float) -> bool:
    """Whether ``pid`` is still the process that started at ``started_at`` (not a zombie,
    not a newer process that reuses the pid)."""
    try:
        process = psutil.Process(pid)
        return (
            abs(process.create_time() - started_at) < 0.01
            and process.status() != psutil.STATUS_ZOMBIE
        )
    except psutil.Error:
        return False
