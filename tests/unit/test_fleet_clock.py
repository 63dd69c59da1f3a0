"""One time for the fleet: a machine's offset from the store's clock, measured from injected
readings (wrighty/domain/clocks.py, wrighty/services/clock.py), and the worker's registry row
and events about it (wrighty/worker/registry.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from wrighty.domain.clocks import (
    CLOCK_BOUND_SECONDS,
    MAX_ROUND_TRIP_SECONDS,
    ClockSample,
    clock_sample,
    next_offset,
    skewed,
)
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.errors import StoreError
from wrighty.services.clock import StoreClock
from wrighty.worker.registry import Presence

T0 = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)


class Readings:
    """A machine whose clock is ``ahead`` seconds ahead of the store's, and round trips that
    take the given seconds (the store reads its clock at the round trip's middle, or where
    ``at`` says)."""

    def __init__(self, ahead: float, trips: list[float], *, at: float = 0.5) -> None:
        self.ahead = ahead
        self.trips = iter(trips)
        self.at = at
        self.true = T0  # the store's time
        self.mono = 100.0
        self.trip = 0.0

    def local(self) -> datetime:
        return self.true + timedelta(seconds=self.ahead)

    def monotonic(self) -> float:
        return self.mono

    def store_time(self) -> datetime:
        self.trip = next(self.trips)
        reading = self.true + timedelta(seconds=self.trip * self.at)
        self.true += timedelta(seconds=self.trip)
        self.mono += self.trip
        return reading

    def clock(self, base: datetime | None = None) -> StoreClock:
        """Applied to ``base`` (a command's fixed clock), or else to the machine's own."""
        return StoreClock(
            self.store_time,
            base=self.local if base is None else lambda: base,
            local=self.local,
            monotonic=self.monotonic,
        )


def test_a_clock_the_reading_cannot_tell_from_the_stores_keeps_its_own_time_exactly() -> None:
    """The same machine as the database (or a synchronised one): the database read its clock
    somewhere inside the round trip, never outside it; whatever the asymmetry, no offset is
    applied, so commands stay exact (tests replace their clock with fixed times)."""
    for at in (0.0, 0.3, 1.0):
        clock = Readings(0.0, [0.004, 0.004, 0.2], at=at).clock(base=T0)
        for _ in range(3):
            clock.measure()
            assert clock.offset_seconds == 0.0
            assert clock.now() == T0


@pytest.mark.parametrize("ahead", [600.0, -600.0, 2.5])
def test_a_skewed_clock_is_corrected_to_the_stores_time(ahead: float) -> None:
    readings = Readings(ahead, [0.002])
    clock = readings.clock(base=T0 + timedelta(seconds=ahead))
    sample = clock.measure()
    assert sample is not None
    assert sample.offset_seconds == pytest.approx(ahead)
    assert clock.offset_seconds == pytest.approx(ahead)
    assert abs((clock.now() - T0).total_seconds()) <= sample.error_seconds


def test_a_new_reading_within_its_error_keeps_the_offset_in_force() -> None:
    """No jitter: the fleet's time moves only when a reading disagrees with it."""
    readings = Readings(600.0, [0.002, 0.010, 0.010], at=0.5)
    clock = readings.clock()
    clock.measure()
    first = clock.offset_seconds
    readings.at = 0.9  # an asymmetric round trip: the midpoint is 4 ms off, within 5 ms
    clock.measure()
    assert clock.offset_seconds == first
    readings.ahead = 603.0  # the machine's clock was stepped: the next reading moves it
    clock.measure()
    assert clock.offset_seconds == pytest.approx(603.0, abs=0.006)


def test_a_reading_with_a_long_round_trip_is_left_out_and_read_again() -> None:
    readings = Readings(600.0, [MAX_ROUND_TRIP_SECONDS + 0.5, 0.002])
    clock = readings.clock(base=T0)
    assert clock.measure(attempts=1) is None
    assert clock.offset_seconds is None  # not measured: the local clock as it is
    assert clock.now() == T0
    assert clock.measure(attempts=1) is not None
    assert clock.offset_seconds == pytest.approx(600.0)


def test_readings_that_all_take_too_long_leave_the_offset_in_force() -> None:
    readings = Readings(600.0, [0.002] + [5.0] * 3)
    clock = readings.clock()
    clock.measure()
    readings.ahead = 0.0
    assert clock.measure(attempts=3) is None
    assert clock.offset_seconds == pytest.approx(600.0)


def test_a_store_without_a_clock_of_its_own_leaves_the_local_clock_alone() -> None:
    """SQLite: every worker shares one machine's clock; nothing is read, nothing measured."""
    clock = StoreClock(lambda: None, base=lambda: T0)
    assert clock.measure(attempts=3) is None
    assert clock.offset_seconds is None
    assert clock.now() == T0


def test_the_sample_is_the_midpoint_of_the_round_trip() -> None:
    sample = clock_sample(T0, T0 - timedelta(seconds=10), 0.4)
    assert sample is not None
    assert sample.offset_seconds == pytest.approx(10.2)
    assert sample.error_seconds == pytest.approx(0.201)
    assert clock_sample(T0, T0, -0.1) is None  # a monotonic clock never runs back: not a reading
    assert next_offset(0.0, ClockSample(0.15, 0.2)) == 0.0
    assert next_offset(0.0, ClockSample(0.25, 0.2)) == 0.25


def test_the_bound_is_exclusive_and_an_unmeasured_clock_is_never_skewed() -> None:
    assert not skewed(CLOCK_BOUND_SECONDS)
    assert skewed(CLOCK_BOUND_SECONDS + 0.001)
    assert skewed(-CLOCK_BOUND_SECONDS - 0.001)
    assert not skewed(None)


# -- the worker's registry row and events ------------------------------------------------------


class RegistryStore:
    def __init__(self) -> None:
        self.rows: list[WorkerRow] = []

    def upsert_worker(self, row: WorkerRow) -> None:
        self.rows.append(row)

    def prune_workers(self, *, older_than: datetime) -> int:
        return 0


def _identity() -> WorkerRow:
    return WorkerRow("w-000000000001", None, "inst-a", 1, 0.0, "0", WorkerState.IDLE, (), T0, T0)


class Ticks:
    def __init__(self) -> None:
        self.at = 0.0

    def __call__(self) -> float:
        return self.at


def _presence(
    clock: StoreClock, events: list[dict[str, Any]]
) -> tuple[Presence, RegistryStore, Ticks]:
    store = RegistryStore()
    ticks = Ticks()
    presence = Presence(
        store,  # type: ignore[arg-type]
        _identity(),
        interval_seconds=5,
        retention_seconds=3600,
        now=clock.now,
        monotonic=ticks,
        clock=clock,
        emit=lambda event, **fields: events.append({"event": event, **fields}),
    )
    return presence, store, ticks


def _beats(presence: Presence, ticks: Ticks, count: int) -> Iterator[None]:
    for _ in range(count):
        presence.beat(WorkerState.IDLE, ())
        yield
        ticks.at += 5


def test_a_worker_says_once_when_its_clock_is_off_and_once_when_it_is_back() -> None:
    readings = Readings(600.0, [0.002] * 10)
    clock = readings.clock()
    events: list[dict[str, Any]] = []
    presence, store, ticks = _presence(clock, events)
    for _ in _beats(presence, ticks, 3):
        pass
    readings.ahead = 0.5  # fixed: within the bound
    for _ in _beats(presence, ticks, 3):
        pass
    assert [event["event"] for event in events] == ["clock-skewed", "clock-in-step"]
    assert events[0]["offset_seconds"] == pytest.approx(600.0)
    assert events[0]["bound_seconds"] == CLOCK_BOUND_SECONDS
    assert "600.0 s ahead of the store's" in events[0]["message"]
    offsets = [row.clock_offset_seconds for row in store.rows]
    assert offsets[:3] == [pytest.approx(600.0)] * 3  # each heartbeat writes the offset in force
    assert offsets[3:] == [pytest.approx(0.5)] * 3
    # the heartbeat's time is the store's, not the machine's
    assert abs(store.rows[0].last_heartbeat_at - T0) < timedelta(seconds=0.01)


def test_a_heartbeat_whose_clock_reading_fails_still_beats_with_the_offset_in_force() -> None:
    readings = Readings(-600.0, [0.002])
    clock = readings.clock()
    events: list[dict[str, Any]] = []
    presence, store, ticks = _presence(clock, events)
    presence.beat(WorkerState.IDLE, ())

    def unreachable() -> datetime:
        raise StoreError("postgresql://db: Connection refused")

    clock._store_time = unreachable  # type: ignore[method-assign]
    ticks.at += 5
    presence.beat(WorkerState.IDLE, ())
    assert [row.clock_offset_seconds for row in store.rows] == [pytest.approx(-600.0)] * 2
    assert [event["event"] for event in events] == ["clock-skewed"]
