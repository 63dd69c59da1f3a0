"""The console's live updates (docs/web.md): a watcher that reads a digest of the board (or
the fleet) in a thread of its own and counts its changes, and the server-sent events an open
page listens to. Neither reads the store itself: the watcher is given its read."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable

from wrighty.errors import WrightyError

# How often an open /events stream looks whether the board changed, and says it is alive.
EVENTS_TICK_SECONDS = 0.25
EVENTS_KEEPALIVE_SECONDS = 15.0


class BoardWatch:
    """Whether the board (or the fleet, for the Operations page) changed: its digest read
    every ``interval`` seconds in a thread of its own (started by the first page that
    listens), and a version that counts changes."""

    def __init__(self, read_digest: Callable[[], str], interval: float) -> None:
        self._read = read_digest
        self._interval = interval
        self._lock = threading.Lock()
        self._digest: str | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.version = 0

    def check(self) -> int:
        """One read: the version, one more when the board changed since the last read. A
        read that fails changes nothing (the next one tries again)."""
        try:
            digest = self._read()
        except WrightyError:
            return self.version
        with self._lock:
            if digest != self._digest:
                if self._digest is not None:
                    self.version += 1
                self._digest = digest
            return self.version

    def start(self) -> None:
        """The watcher, once: a first read now, then one every interval."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="wrighty-board-watch")
            self._thread.daemon = True
        self.check()
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.check()

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join(timeout=self._interval * 2 + 1)


async def event_stream(
    watch: BoardWatch,
    disconnected: Callable[[], Awaitable[bool]],
    *,
    name: str = "board",
    tick: float = EVENTS_TICK_SECONDS,
    keepalive: float = EVENTS_KEEPALIVE_SECONDS,
) -> AsyncIterator[str]:
    """Server-sent events: ``name`` (``board``, ``operations``) when what the watcher reads
    changed, a comment now and then so that a gone browser is noticed. It only looks at the
    watcher's version: no store, no lock."""
    yield "retry: 3000\n: connected\n\n"
    seen = watch.version
    quiet = 0.0
    while not await disconnected():
        await asyncio.sleep(tick)
        quiet += tick
        if watch.version != seen:
            seen = watch.version
            quiet = 0.0
            yield f"event: {name}\ndata: {seen}\n\n"
        elif quiet >= keepalive:
            quiet = 0.0
            yield ": alive\n\n"
