"""The Operations page updates by itself in a real browser (docs/web.md#what-it-shows): Chromium,
at a phone's size and a desktop's, against a real `wrighty serve`. A real `wrighty worker start`
that starts puts its row on the open page; stopped, its row goes; killed, its row stays and
says it is dead; all without a reload."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from tests.browser.test_console import CONSOLE_PROJECT, console
from tests.integration.worker_process import LiveWorker, ProjectOnDisk

__all__ = ["console"]
pytestmark = CONSOLE_PROJECT

NAVIGATIONS = "() => performance.getEntriesByType('navigation').length"


def started(project: ProjectOnDisk) -> tuple[LiveWorker, str]:
    """A worker running in the background, idle; its id."""
    worker = LiveWorker(project)
    return worker, str(worker.until("started")["worker_id"])


@pytest.mark.parametrize("size", [(390, 844), (1440, 900)], ids=["phone", "desktop"])
def test_the_operations_page_follows_real_workers_without_a_reload(
    project: ProjectOnDisk, console: str, page: Any, size: tuple[int, int]
) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(console)
    page.goto(console.split("?", 1)[0] + "operations")
    workers = page.locator("section#workers")
    assert workers.locator("p.empty").inner_text() == "no registered workers"
    loaded = page.evaluate(NAVIGATIONS)

    worker, worker_id = started(project)
    try:
        row = workers.locator("tr", has_text=worker_id)
        row.locator("td.liveness", has_text="live").wait_for(timeout=20_000)
        assert workers.locator("h2 .n").inner_text() == "1 live of 1"
        assert page.evaluate(NAVIGATIONS) == loaded

        worker.process.send_signal(signal.SIGTERM)  # a clean stop: its row is removed
        code, err = worker.finish()
        assert code == 130, err  # stopped cleanly by a signal (docs/cli.md)
        workers.locator("p.empty", has_text="no registered workers").wait_for(timeout=20_000)
        assert row.count() == 0
        assert page.evaluate(NAVIGATIONS) == loaded
    finally:
        if worker.process.poll() is None:
            worker.process.kill()
            worker.process.wait()

    killed, killed_id = started(project)
    try:
        row = workers.locator("tr", has_text=killed_id)
        row.locator("td.liveness", has_text="live").wait_for(timeout=20_000)
    finally:
        killed.process.kill()  # no clean stop: its row stays, its process is gone
        killed.process.wait()
    row.locator("td.liveness", has_text="dead").wait_for(timeout=20_000)
    assert row.get_attribute("class") == "liveness-dead"
    assert workers.locator("h2 .n").inner_text() == "0 live of 1"
    assert page.evaluate(NAVIGATIONS) == loaded
