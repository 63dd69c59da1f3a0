"""A real browser for the web console's tests (docs/web.md): Chromium from the Debian packages
(`/usr/bin/chromium`, or WRIGHTY_CHROMIUM), driven by Playwright from PyPI, which downloads no
browser here. Without either, the browser tests skip, saying why; with WRIGHTY_REQUIRE_BROWSER=1
(.ci/run sets it, after installing Chromium) they fail instead."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = os.environ.get("WRIGHTY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def _missing(reason: str) -> None:
    if os.environ.get("WRIGHTY_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}, and WRIGHTY_REQUIRE_BROWSER=1 requires it")
    pytest.skip(reason)


@pytest.fixture
def chromium() -> Iterator[Any]:
    """A headless Chromium for one test. Not one for the session: while Playwright's sync API
    runs, its event loop is this thread's running loop, and the tests that run an app with
    asyncio.run (the inbox's) would find it there."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("Playwright is not installed (pip install -e '.[test]')")
    if not os.access(CHROMIUM, os.X_OK):
        _missing(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A page in a context of its own, closed after the test."""
    context = chromium.new_context()
    try:
        yield context.new_page()
    finally:
        context.close()
