"""One time for the whole fleet: how far a machine's clock is from the store's (pure: the
readings come in, an offset goes out).

On PostgreSQL the database's clock is the fleet's (docs/fleet.md#one-time-for-the-fleet). A
reading of it is taken between two local readings; the database read its clock somewhere in
between, so the local clock's offset is known to within half the round trip. An offset within
that error is no offset at all: a machine that shares the database's clock (the same host, or
two well-synchronised ones) keeps its own time exactly, and a new reading moves the offset only
when it disagrees with the one in force by more than its error, so the fleet's time does not
jitter with each reading.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

# A reading whose round trip took longer than this says too little: it is left out.
MAX_ROUND_TRIP_SECONDS = 1.0
# What the clocks' resolution adds to a reading's error (microseconds on both sides, and the
# instants between the local readings and the round trip's).
RESOLUTION_SECONDS = 0.001
# A worker whose clock is further than this from the store's says so (an event, `status`,
# `workers`): its own time is corrected, but a clock this far off is out of step with NTP, and
# what the agent itself writes (file times, logs) still uses it.
CLOCK_BOUND_SECONDS = 2.0


@dataclass(frozen=True)
class ClockSample:
    """One reading: how far the local clock is ahead of the store's (negative: behind), and
    how far off that figure may be."""

    offset_seconds: float
    error_seconds: float


def clock_sample(
    local_before: datetime, store_time: datetime, round_trip_seconds: float
) -> ClockSample | None:
    """The local clock's offset from ``store_time``, read by the store during a round trip of
    ``round_trip_seconds`` (a monotonic measure) that began at ``local_before``; None when the
    round trip was too long (or negative) to tell."""
    if not 0.0 <= round_trip_seconds <= MAX_ROUND_TRIP_SECONDS:
        return None
    half = round_trip_seconds / 2
    midpoint_ahead = (local_before - store_time).total_seconds() + half
    return ClockSample(offset_seconds=midpoint_ahead, error_seconds=half + RESOLUTION_SECONDS)


def next_offset(in_force: float, sample: ClockSample) -> float:
    """The offset to apply after ``sample``: the one ``in_force`` while the sample agrees
    with it to within its error (at first 0: a clock the reading cannot tell from the store's
    is left alone), else the sample's."""
    if abs(sample.offset_seconds - in_force) <= sample.error_seconds:
        return in_force
    return sample.offset_seconds


def skewed(offset_seconds: float | None, bound_seconds: float = CLOCK_BOUND_SECONDS) -> bool:
    """Whether a clock ``offset_seconds`` from the store's is off by more than the bound
    (None: not measured, never skewed)."""
    return offset_seconds is not None and abs(offset_seconds) > bound_seconds


def describe_offset(offset_seconds: float) -> str:
    """``600.0 s ahead of the store's`` / ``2.5 s behind the store's``."""
    way = "ahead of" if offset_seconds > 0 else "behind"
    return f"{abs(offset_seconds):.1f} s {way} the store's"
