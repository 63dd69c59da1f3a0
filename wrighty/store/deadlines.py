"""How long a store call may take: a deadline on the caller's monotonic clock.

A claim's run may not wait on the store past the moment its lease must be given up
(docs/claims.md, the lease guard), so it sets a deadline around each call it makes; every other
caller (the claim loop, a command) gets the store's default. The stores read the deadline of
the calling thread: PostgreSQL gives up on a connection, a pool wait or an answer that has not
come by then; SQLite waits for a busy file at most until then. Either raises StoreError.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# The longest any one store call waits, when its caller sets no nearer deadline.
DEFAULT_CALL_SECONDS = 10.0

_local = threading.local()


@contextmanager
def call_deadline(at: float) -> Iterator[None]:
    """Store calls made by this thread inside the block give up at ``at`` (time.monotonic),
    or earlier if an enclosing block says so."""
    outer: float | None = getattr(_local, "at", None)
    _local.at = at if outer is None else min(outer, at)
    try:
        yield
    finally:
        _local.at = outer


def current_deadline() -> float | None:
    """The calling thread's deadline (time.monotonic), if it set one: for a call it hands to
    another thread."""
    at: float | None = getattr(_local, "at", None)
    return at


def seconds_left(default: float = DEFAULT_CALL_SECONDS) -> float:
    """How long the calling thread's store call may still take: what its deadline leaves, at
    most ``default``; never below zero."""
    at: float | None = getattr(_local, "at", None)
    if at is None:
        return default
    return max(0.0, min(default, at - time.monotonic()))
