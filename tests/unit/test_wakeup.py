"""The worker's wake-ups (wrighty/worker/wakeup.py) on a store double: the idle wait's length,
hearing a line, and a line that cannot be opened or breaks (the worker polls meanwhile)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.conftest import FakeClock
from wrighty.errors import StoreError
from wrighty.worker import wakeup
from wrighty.worker.wakeup import WakeUps

HEARD_WITHIN_SECONDS = 10.0


class Line:
    """A line on a socket pair: the test speaks into ``mouth``."""

    via = "test"

    def __init__(self) -> None:
        self.ear, self.mouth = socket.socketpair()
        self.ear.setblocking(False)
        self.broken = False
        self.gone = False
        self.closed = threading.Event()

    def fileno(self) -> int:
        return self.ear.fileno()

    def drain(self) -> bool:
        if self.broken:
            raise StoreError("the line broke")
        heard = False
        while True:
            try:
                heard = bool(self.ear.recv(64)) or heard
            except BlockingIOError:
                return heard

    def intact(self) -> bool:
        return not self.gone

    def close(self) -> None:
        self.ear.close()
        self.mouth.close()
        self.closed.set()


class Store:
    """What WakeUps asks of a store: the next retry, and lines (each open fails while
    ``refusals`` lasts)."""

    def __init__(self, *, refusals: int = 0) -> None:
        self.due: datetime | None = None
        self.refusals = refusals
        self.lines: list[Line] = []
        self.opened = threading.Condition()
        self.failing_read = False

    def next_retry_due(self, *, after: datetime) -> datetime | None:
        if self.failing_read:
            raise StoreError("cannot read")
        return self.due if self.due is not None and self.due > after else None

    def listen_for_work(self, name: str) -> Line:
        with self.opened:
            if self.refusals:
                self.refusals -= 1
                raise StoreError("cannot listen")
            line = Line()
            self.lines.append(line)
            self.opened.notify_all()
            return line

    def wait_for_lines(self, count: int) -> Line:
        with self.opened:
            assert self.opened.wait_for(lambda: len(self.lines) >= count, HEARD_WITHIN_SECONDS)
            return self.lines[count - 1]


@pytest.fixture(autouse=True)
def _quick_reopening(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wakeup, "REOPEN_FIRST_SECONDS", 0.01)
    monkeypatch.setattr(wakeup, "REOPEN_MAX_SECONDS", 0.05)


@pytest.fixture
def events() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def woken() -> threading.Event:
    return threading.Event()


def ears(
    store: Store, clock: FakeClock, events: list[dict[str, Any]], woken: threading.Event
) -> WakeUps:
    def emit(event: str, **fields: Any) -> None:
        events.append({"event": event, **fields})

    return WakeUps(store, name="w-1", wake=woken.set, emit=emit, now=clock)  # type: ignore[arg-type]


@pytest.fixture
def store() -> Store:
    return Store()


@pytest.fixture
def started(
    store: Store, clock: FakeClock, events: list[dict[str, Any]], woken: threading.Event
) -> Iterator[WakeUps]:
    wake_ups = ears(store, clock, events, woken)
    wake_ups.start()
    yield wake_ups
    wake_ups.stop()


def test_the_idle_wait_is_the_poll_or_until_the_next_retry_if_sooner(
    clock: FakeClock, events: list[dict[str, Any]], woken: threading.Event
) -> None:
    store = Store()
    wake_ups = ears(store, clock, events, woken)
    looked_at = clock()
    assert wake_ups.idle_seconds(5, looked_at=looked_at) == 5
    store.due = clock() + timedelta(seconds=2)
    assert wake_ups.idle_seconds(5, looked_at=looked_at) == pytest.approx(2.005)
    store.due = clock() + timedelta(seconds=60)
    assert wake_ups.idle_seconds(5, looked_at=looked_at) == 5
    # Due since the claim looked: look again at once (it is not counted again after that).
    store.due = clock() + timedelta(seconds=1)
    clock.advance(3)
    assert wake_ups.idle_seconds(5, looked_at=looked_at) == 0.0
    assert wake_ups.idle_seconds(5, looked_at=clock()) == 5
    store.failing_read = True
    assert wake_ups.idle_seconds(5, looked_at=clock()) == 5


def test_a_word_on_the_line_wakes_the_claim_loop(
    store: Store, started: WakeUps, events: list[dict[str, Any]], woken: threading.Event
) -> None:
    line = store.wait_for_lines(1)
    assert events == [{"event": "wake-ups-on", "via": "test"}]
    assert not woken.is_set()
    line.mouth.send(b"work")
    assert woken.wait(HEARD_WITHIN_SECONDS)


def test_a_line_that_breaks_is_opened_again_and_the_loop_looks_once_it_is(
    store: Store, started: WakeUps, events: list[dict[str, Any]], woken: threading.Event
) -> None:
    first = store.wait_for_lines(1)
    first.broken = True
    first.mouth.send(b"x")
    second = store.wait_for_lines(2)
    assert first.closed.wait(HEARD_WITHIN_SECONDS)
    assert woken.wait(HEARD_WITHIN_SECONDS)  # what was told meanwhile is in the store
    assert [e["event"] for e in events] == ["wake-ups-on", "wake-ups-lost", "wake-ups-on"]
    assert events[1]["cause"] == "the line broke"
    woken.clear()
    second.mouth.send(b"work")
    assert woken.wait(HEARD_WITHIN_SECONDS)


def test_a_line_that_went_away_silently_is_opened_again(
    store: Store, events: list[dict[str, Any]], woken: threading.Event, clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setattr(wakeup, "CHECK_SECONDS", 0.05)
    wake_ups = ears(store, clock, events, woken)
    wake_ups.start()
    try:
        store.wait_for_lines(1).gone = True
        store.wait_for_lines(2)
    finally:
        wake_ups.stop()
    assert [e["event"] for e in events][:3] == ["wake-ups-on", "wake-ups-lost", "wake-ups-on"]


def test_a_line_that_cannot_be_opened_is_said_once_and_tried_again(
    clock: FakeClock, events: list[dict[str, Any]], woken: threading.Event
) -> None:
    store = Store(refusals=3)
    wake_ups = ears(store, clock, events, woken)
    wake_ups.start()  # the first try is made at once, in the caller's thread
    try:
        assert [e["event"] for e in events] == ["wake-ups-lost"]
        store.wait_for_lines(1)
        assert woken.wait(HEARD_WITHIN_SECONDS)
    finally:
        wake_ups.stop()
    assert [e["event"] for e in events] == ["wake-ups-lost", "wake-ups-on"]
    assert events[0] == {"event": "wake-ups-lost", "error": "StoreError", "cause": "cannot listen"}


def test_stopping_closes_the_line(store: Store, started: WakeUps) -> None:
    line = store.wait_for_lines(1)
    started.stop()
    assert line.closed.is_set()
