"""The Operations page, live (docs/web.md#what-it-shows), on both stores: its sections alone at
/operations/part (what a live page fetches again), and /operations/events, a stream of
server-sent events that says `operations` when what the page shows changed (a worker came or
went stale, a circuit opened, a notification waits), not when only an age moved."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from tests.conftest import FakeClock
from tests.web.conftest import Console, make_console
from tests.web.fleet_seed import give_up_notice, open_circuit, register
from tests.web.test_operations import TEAM, row_of
from wrighty.operator.context import AppContext
from wrighty.web.security import CSP

SECTIONS = ["health", "workers", "circuits", "budgets", "notifications"]


def section_ids(page: str) -> list[str]:
    return re.findall(r'<section id="([^"]+)"', page)


def live_part(page: str) -> str:
    """What the Operations page holds in its live part (between its opening and the end of
    the main block)."""
    start = page.index('<div id="operations"')
    opened = page.index(">", start) + 1
    return page[opened : page.rindex("</div>")]


def test_the_part_is_the_pages_sections_alone(console: Console, clock: FakeClock):
    with console.store() as store:
        register(store, "w-live-0001", at=clock(), label="laptop")
        open_circuit(store, TEAM, at=clock(), until=clock() + timedelta(minutes=5), reason="r")
    client = console.login()
    page = client.get("/operations")
    part = client.get("/operations/part")
    assert part.status_code == 200
    assert part.headers["content-type"].startswith("text/html")
    assert part.headers["content-security-policy"] == CSP
    assert section_ids(part.text) == SECTIONS
    assert section_ids(page.text) == SECTIONS
    # the same sections, word for word, and nothing of the page around them
    assert part.text.strip() == live_part(page.text).strip()
    for around in ("<html", "<head", "<title", "<nav", "<h1", "<script"):
        assert around not in part.text, around
    assert 'data-live="/operations/part"' in page.text
    assert 'data-events="/operations/events" data-event="operations"' in page.text


def test_the_part_shows_what_changed_since_the_page_was_drawn(console: Console, clock: FakeClock):
    client = console.login()
    before = client.get("/operations/part").text
    for empty in ("no registered workers", "no provider circuits", "no notifications waiting"):
        assert f'<p class="empty">{empty}</p>' in before

    with console.store() as store:
        register(store, "w-live-0001", at=clock(), label="laptop")
    now = client.get("/operations/part").text
    assert row_of(now, ">w-live-0001<").startswith('<tr class="liveness-live">')
    assert "1 live workers of 1" in now

    clock.advance(600)  # no heartbeat for ten minutes: stale
    now = client.get("/operations/part").text
    assert row_of(now, ">w-live-0001<").startswith('<tr class="liveness-stale">')

    with console.store() as store:
        open_circuit(
            store, TEAM, at=clock(), until=clock() + timedelta(minutes=5), reason="rate-limited",
            notice_reason="rate-limited",
        )  # fmt: skip
    now = client.get("/operations/part").text
    circuit = row_of(now, f">{TEAM}<")
    assert '<td class="circuit-state" data-label="state">open</td>' in circuit
    assert "1 pending, 0 given up" in now
    assert '<td class="notice-state" data-label="state">pending</td>' in now

    with console.store() as store:
        give_up_notice(store, now=clock(), error="HTTP 503")
    now = client.get("/operations/part").text
    assert "0 pending, 1 given up" in now
    assert "ntfy: HTTP 503" in now


def test_without_the_cookie_the_part_and_the_events_are_401_with_no_data(
    console: Console, clock: FakeClock
):
    with console.store() as store:
        register(store, "w-live-0001", at=clock(), label="laptop")
        open_circuit(store, TEAM, at=clock(), until=clock() + timedelta(minutes=5), reason="r")
    for path in ("/operations/part", "/operations/events"):
        response = console.client.get(path)
        assert response.status_code == 401, path
        for data in ("w-live-0001", "laptop", TEAM, "<section", "event:"):
            assert data not in response.text, (path, data)
    handlers = console.client.app.app.state.console  # type: ignore[attr-defined]
    assert handlers.fleet_watch._thread is None  # no watcher started for a stranger


def test_a_read_only_console_serves_the_part_without_a_reset(
    project_ctx: AppContext, clock: FakeClock
):
    made = make_console(project_ctx, project_ctx.cwd, read_only=True)
    with made.client:
        with made.store() as store:
            open_circuit(store, TEAM, at=clock(), until=clock() + timedelta(minutes=5), reason="r")
        part = made.login().get("/operations/part")
    assert part.status_code == 200
    assert '<td class="circuit-state" data-label="state">open</td>' in row_of(part.text, TEAM)
    assert "/reset" not in part.text
    assert "<form" not in part.text


class Stream:
    """/operations/events, read chunk by chunk (each chunk one event or comment)."""

    def __init__(self, chunks: Iterator[str]) -> None:
        self._chunks = chunks

    def next_event(self) -> str:
        """The next event (comments skipped); none before the stream's second keep-alive (it
        writes one after 15 quiet seconds) fails the test, which would otherwise wait on."""
        quiet = 0
        for chunk in self._chunks:
            if chunk.startswith("event:"):
                return chunk
            quiet += chunk == ": alive\n\n"
            if quiet == 2:
                raise AssertionError("no event: the stream stayed quiet")
        raise AssertionError("the stream ended")


def test_events_say_operations_when_what_the_page_shows_changes(console: Console, clock: FakeClock):
    handlers: Any = console.client.app.app.state.console  # type: ignore[attr-defined]
    watch = handlers.fleet_watch
    # The watcher's own thread waits an hour between reads: the test makes each read itself
    # (what the thread does once a second), and the stream says what that read found.
    watch._interval = 3600
    client = console.login()
    with client.stream("GET", "/operations/events") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        chunks = response.iter_text()
        assert next(chunks).startswith("retry: 3000\n")
        stream = Stream(chunks)
        assert watch.version == 0  # the first read, when the page began to listen

        clock.advance(30)  # every age on the page moves; nothing else does
        assert watch.check() == 0

        with console.store() as store:
            register(store, "w-live-0001", at=clock())
        assert watch.check() == 1
        assert stream.next_event() == "event: operations\ndata: 1\n\n"

        clock.advance(20)  # its heartbeat's age moves (it is still live)
        assert watch.check() == 1
        with console.store() as store:
            register(store, "w-live-0001", at=clock())  # a heartbeat: its age moves back
        assert watch.check() == 1  # an age: no event

        clock.advance(600)  # the worker went stale
        assert watch.check() == 2
        assert stream.next_event() == "event: operations\ndata: 2\n\n"

        with console.store() as store:
            open_circuit(
                store, TEAM, at=clock(), until=clock() + timedelta(minutes=5), reason="quota",
                notice_reason="quota",
            )  # fmt: skip
        assert watch.check() == 3
        assert stream.next_event() == "event: operations\ndata: 3\n\n"

        with console.store() as store:
            give_up_notice(store, now=clock(), error="HTTP 503")
        assert watch.check() == 4
        assert stream.next_event() == "event: operations\ndata: 4\n\n"
    watch.stop()


def test_the_board_and_operations_streams_follow_their_own_watchers(
    console: Console, clock: FakeClock
):
    handlers: Any = console.client.app.app.state.console  # type: ignore[attr-defined]
    handlers.watch._interval = 3600
    handlers.fleet_watch._interval = 3600
    client = console.login()
    with client.stream("GET", "/events") as response:
        chunks = response.iter_text()
        next(chunks)
        assert handlers.watch._thread is not None
        assert handlers.fleet_watch._thread is None  # a board page reads no fleet
    with console.store() as store:
        register(store, "w-live-0001", at=clock())
    assert handlers.watch.check() == 0  # a worker is not on the board
    handlers.watch.stop()
