"""A worker's SIGINT and SIGTERM: the handler only records the signal, a thread does the rest.

Python runs a signal handler in the main thread, between two of its bytecodes, wherever that
thread is: possibly inside `threading.Event.wait` or `clear`, holding the event's lock. A
handler that took such a lock (`Event.set` takes it) would wait for its own thread forever; one
that printed while the main thread printed to the same stream would fail (a reentrant call).
So the handler takes no lock and prints nothing: it
appends the signal to a list and writes its number to a pipe (a system call, no lock). A thread
of its own waits on that pipe and, at the first SIGINT or SIGTERM, says so and asks the worker
to stop. A second one raises KeyboardInterrupt in the main thread: the worker stops at once
(docs/worker.md#stopping-a-worker). A second that comes less than FORCE_AFTER_SECONDS after
the first is the same request told twice, not a person asking again: `timeout` and a service
manager signal the worker and then its whole process group, which reaches the worker twice.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# A second SIGINT or SIGTERM forces the stop only this long after the first, or later.
FORCE_AFTER_SECONDS = 1.0
_QUIT = 0  # no signal has number 0: the byte that ends the thread
# How long leaving waits for the thread to end (it only ever waits on the pipe).
_JOIN_SECONDS = 5.0


class StopOnSignals:
    """While entered: the first SIGINT or SIGTERM calls ``say`` and then ``stop``, from a
    thread; a second, FORCE_AFTER_SECONDS or more after it (on ``clock``), raises
    KeyboardInterrupt. Must be entered in the main thread (Python
    installs signal handlers there only). Leaving puts the earlier handlers back."""

    def __init__(
        self,
        stop: Callable[[], None],
        say: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stop = stop
        self._say = say
        self._clock = clock
        self._first_at: float | None = None
        self.received: list[int] = []  # the signals received, in order
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # the handler must never wait on a full pipe
        self._thread = threading.Thread(target=self._listen, name="stop-signals", daemon=True)
        self._earlier: dict[int, Any] = {}

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        """The signal handler: records the signal and takes no lock (see the module's doc)."""
        self.received.append(signum)
        now = self._clock()
        if self._first_at is not None:
            if now - self._first_at >= FORCE_AFTER_SECONDS:
                raise KeyboardInterrupt
            return  # the first one again (a signal to the worker, then to its group)
        self._first_at = now
        with contextlib.suppress(OSError):  # a full pipe: a byte is already waiting
            os.write(self._write, bytes([signum]))

    def _listen(self) -> None:
        while True:
            try:
                data = os.read(self._read, 64)
            except OSError:
                return
            if not data or _QUIT in data:
                return
            if any(byte in STOP_SIGNALS for byte in data):
                self._say()
                self._stop()
                return

    def __enter__(self) -> StopOnSignals:
        self._thread.start()
        for number in STOP_SIGNALS:
            self._earlier[number] = signal.signal(number, self.handle)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for number, earlier in self._earlier.items():
            signal.signal(number, earlier)
        with contextlib.suppress(OSError):
            os.write(self._write, bytes([_QUIT]))
        self._thread.join(_JOIN_SECONDS)
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)
