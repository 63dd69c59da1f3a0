"""Live updates: the watcher that reads the board's digest, and the event stream a page
listens to (wrighty/web/app.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from tests.conftest import FakeClock
from tests.web.conftest import Console, seeded
from tests.web.test_console import cli
from wrighty.errors import StoreError
from wrighty.web.live import BoardWatch, event_stream


def watch_of(digests: Iterator[str]) -> BoardWatch:
    def read() -> str:
        found = next(digests)
        if found == "fail":
            raise StoreError("the store does not answer")
        return found

    return BoardWatch(read, interval=3600)


def test_the_version_counts_changes_only():
    watch = watch_of(iter(["a", "a", "b", "fail", "b", "c"]))
    assert [watch.check() for _ in range(6)] == [0, 0, 1, 1, 1, 2]


def test_the_stream_says_board_when_the_version_moves_and_ends_when_the_page_goes():
    watch = watch_of(iter(["a"]))
    watch.check()
    looks = 0

    async def disconnected() -> bool:
        nonlocal looks
        looks += 1
        if looks == 3:
            watch.version += 1  # the watcher saw a change
        return looks > 10

    async def collect() -> list[str]:
        return [
            chunk async for chunk in event_stream(watch, disconnected, tick=0.001, keepalive=0.0025)
        ]

    chunks = asyncio.run(collect())
    assert chunks[0].startswith("retry: 3000\n")
    assert chunks.count("event: board\ndata: 1\n\n") == 1
    assert ": alive\n\n" in chunks  # a quiet stream still writes now and then
    assert looks == 11


def test_the_digest_moves_with_the_board_not_with_the_clock(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    handlers = console.client.app.app.state.console  # type: ignore[attr-defined]
    first = handlers._digest()
    clock.advance(7)  # every age on the board changes (no lease expires yet)
    assert handlers._digest() == first
    cli(console.app_ctx, "cancel", str(made.queued))
    assert handlers._digest() != first


def test_events_is_a_stream_of_server_sent_events(console: Console, clock: FakeClock):
    seeded(console.app_ctx, clock)
    handlers = console.client.app.app.state.console  # type: ignore[attr-defined]
    handlers.watch._interval = 3600  # one read, at the start: the test does not wait
    client = console.login()
    with client.stream("GET", "/events") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-store"
        first = next(response.iter_text())
        assert first.startswith("retry: 3000")
    handlers.watch.stop()
