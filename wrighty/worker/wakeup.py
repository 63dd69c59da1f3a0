"""An idle worker's wake-ups (``worker.wakeUps``): new or newly due work starts at once, not at
the next poll.

- Work that becomes claimable anywhere on the store (an item created queued, `queue`,
  `requeue`, a settlement or a reap to queued or retry-scheduled) is told by the store once it
  has committed (``Store.listen_for_work``: PostgreSQL LISTEN/NOTIFY, SQLite datagrams). A
  thread of its own hears it and wakes the claim loop.
- A retry ends the idle wait when it is due: the wait is the poll, or the time until the
  earliest retry still to come if that is sooner.
- Polling every ``worker.pollSeconds`` stays, for whatever is not heard: a line that broke
  (opened again with a growing delay, and looked at once it is back), a full or removed
  socket, a write made by an older wrighty.

Nothing here stops the worker: a line that cannot be opened leaves the worker polling.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from collections.abc import Callable
from datetime import datetime

from wrighty.domain.decisions import describe_error
from wrighty.domain.worker_events import Emit, WorkerEvent
from wrighty.errors import NoListening, StoreError
from wrighty.store.port import Store, WorkListener

# A line that broke is opened again after this long, doubling up to the most.
REOPEN_FIRST_SECONDS = 0.5
REOPEN_MAX_SECONDS = 10.0
# A line that heard nothing for this long is checked (SQLite: is its socket still there?).
CHECK_SECONDS = 5.0
# A due retry is looked at this long after its due time, so that the claim sees it due.
DUE_MARGIN_SECONDS = 0.005
# How long stopping waits for the listening thread to close its line.
STOP_SECONDS = 2.0


class WakeUps:
    """The claim loop's ear: ``wake`` is called whenever work may have become claimable."""

    def __init__(
        self,
        store: Store,
        *,
        name: str,
        wake: Callable[[], None],
        emit: Emit,
        now: Callable[[], datetime],
        waiting: Callable[[str | None], None] = lambda said: None,
    ) -> None:
        """``waiting``: told what the worker waits for while its line is lost (the registry's
        ``waiting_for``), and None once it is open again."""
        self._store = store
        self._waiting = waiting
        self._name = name
        self._wake = wake
        self._emit = emit
        self._now = now
        self._line: WorkListener | None = None  # the listening thread's, once it runs
        self._said_lost = False
        self._stopping = threading.Event()
        self._off = False  # the store cannot tell of work here at all (NoListening)
        self._stop_read, self._stop_write = os.pipe()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Open the line now, so that anything committed after this call is heard (the claim
        loop looks once more before it waits), then hear it from a thread of its own."""
        self._open()
        self._thread = threading.Thread(target=self._hear, name="wake-ups", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop hearing and close the line (SQLite: remove the worker's socket)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        with contextlib.suppress(OSError):
            os.write(self._stop_write, b".")
        if self._thread is not None:
            self._thread.join(STOP_SECONDS)
            if self._thread.is_alive():
                return  # a daemon: it ends with the worker, the pipe with it
        for fd in (self._stop_read, self._stop_write):
            with contextlib.suppress(OSError):
                os.close(fd)

    def idle_seconds(self, poll_seconds: float, *, looked_at: datetime) -> float:
        """How long the claim loop may wait after a claim at ``looked_at`` found nothing:
        ``poll_seconds``, or until the next retry is due if that is sooner. A read that fails
        leaves the poll (the next claim says what is wrong with the store)."""
        try:
            due = self._store.next_retry_due(after=looked_at)
            if due is None:
                return poll_seconds
            until = (due - self._now()).total_seconds() + DUE_MARGIN_SECONDS
        except Exception:  # a store that cannot answer, or a value it cannot read
            return poll_seconds
        return min(poll_seconds, max(until, 0.0))

    # -- the listening thread ----------------------------------------------------------------

    def _open(self) -> bool:
        try:
            line = self._store.listen_for_work(self._name)
        except NoListening as error:  # never here: polling it is, said once
            self._emit(WorkerEvent.WAKE_UPS_OFF, cause=str(error))
            self._off = True
            return False
        except Exception as error:  # the worker polls meanwhile
            self._lost(error)
            return False
        self._line = line
        self._said_lost = False
        self._waiting(None)
        self._emit(WorkerEvent.WAKE_UPS_ON, via=line.via)
        return True

    def _hear(self) -> None:
        delay = REOPEN_FIRST_SECONDS
        while not self._stopping.is_set() and not self._off:
            line = self._line
            if line is not None:
                self._listen(line)
                continue
            if self._stopping.wait(delay):
                break
            if self._open():
                delay = REOPEN_FIRST_SECONDS
                self._wake()  # what was told while it could not hear is in the store
            else:
                delay = min(delay * 2, REOPEN_MAX_SECONDS)
        if self._line is not None:
            self._close(self._line)
            self._line = None

    def _listen(self, line: WorkListener) -> None:
        """Wait until the line says something, or the worker stops; wake the claim loop for
        work. A line that broke is closed, to be opened again."""
        try:
            ready = select.select([line.fileno(), self._stop_read], [], [], CHECK_SECONDS)[0]
            if self._stop_read in ready:
                return
            if ready:
                if line.drain():
                    self._wake()
            elif not line.intact():
                raise StoreError(f"the wake-up {line.via} went away")
        except Exception as error:  # the worker polls until it is open again
            self._line = None
            self._close(line)
            self._lost(error)

    def _lost(self, error: Exception) -> None:
        if self._said_lost:
            return
        self._said_lost = True
        cause = str(error) if isinstance(error, StoreError) else describe_error(error)
        self._emit(WorkerEvent.WAKE_UPS_LOST, error=type(error).__name__, cause=cause)
        self._waiting(f"its wake-up line ({cause}): it polls meanwhile, and opens it again")

    @staticmethod
    def _close(line: WorkListener) -> None:
        with contextlib.suppress(Exception):
            line.close()
