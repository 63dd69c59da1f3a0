"""The fleet's time on this machine: the local clock, corrected by its measured offset from the
store's (docs/fleet.md#one-time-for-the-fleet).

A command measures once, when it opens the store; a worker again at each heartbeat (its
registry row records the offset in force). Each reading of the store's clock is one round
trip; on SQLite (the store's clock is the machine's) there is nothing to read, and the local
clock is the fleet's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta

from wrighty.domain.clocks import ClockSample, clock_sample, next_offset
from wrighty.domain.times import system_now

# How many readings of the store's clock a command takes at most, when a round trip is too long.
MEASURE_ATTEMPTS = 3


class StoreClock:
    """``now()``: the time every comparison across workers uses. ``store_time`` reads the
    store's clock (None: the store has no clock of its own); ``local`` is the machine's clock
    the offset is measured against, and ``base`` the clock it is applied to (the same in
    production; tests replace the command's clock with fixed times, which stay exact)."""

    def __init__(
        self,
        store_time: Callable[[], datetime | None],
        *,
        base: Callable[[], datetime] = system_now,
        local: Callable[[], datetime] = system_now,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store_time = store_time
        self._base = base
        self._local = local
        self._monotonic = monotonic
        self._in_force = 0.0  # seconds the local clock is ahead of the store's, as applied
        self._measured = False

    def measure(self, *, attempts: int = 1) -> ClockSample | None:
        """Read the store's clock (up to ``attempts`` times, until a round trip is short
        enough) and update the offset in force; the sample kept, or None (the store has no
        clock of its own, or every round trip was too long). StoreError when the store
        cannot be reached: the offset in force stays."""
        for _ in range(attempts):
            before = self._local()
            started = self._monotonic()
            store_time = self._store_time()
            round_trip = self._monotonic() - started
            if store_time is None:
                return None
            sample = clock_sample(before, store_time, round_trip)
            if sample is not None:
                self._in_force = next_offset(self._in_force, sample)
                self._measured = True
                return sample
        return None

    @property
    def offset_seconds(self) -> float | None:
        """How far the local clock is ahead of the store's, as applied (negative: behind);
        None until measured (and always on a store without a clock of its own)."""
        return self._in_force if self._measured else None

    def now(self) -> datetime:
        return self._base() - timedelta(seconds=self._in_force)
