"""The Operations and Spend pages in a real browser (docs/web.md#operations, #spend):
Chromium against a real `wrighty serve`. A provider circuit's Reset asks first and answers with
`wrighty providers reset`'s line; the Spend page's charts are drawn, coloured by the
stylesheet, with nothing the Content-Security-Policy refuses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.browser.test_console import CONSOLE_PROJECT, console
from tests.integration.worker_process import ProjectOnDisk
from tests.web.fleet_seed import open_circuit, spent
from wrighty.domain.usage import Usage

__all__ = ["console"]
pytestmark = CONSOLE_PROJECT

TEAM = "account:team"
# Each Content-Security-Policy refusal the page meets, kept for the test to read.
CSP_WATCH = (
    "window.__refused = [];"
    "document.addEventListener('securitypolicyviolation',"
    " (e) => window.__refused.push(e.violatedDirective));"
)


def test_a_circuit_is_reset_and_spend_is_charted_in_a_real_browser(
    project: ProjectOnDisk, console: str, page: Any
) -> None:
    now = datetime.now(UTC)
    store = project.store()
    try:
        open_circuit(store, TEAM, at=now, until=now + timedelta(minutes=30), reason="rate-limited")
        spent(store, at=now - timedelta(minutes=5), agent="claude",
              usage=Usage(input_tokens=1200, cost_usd=0.5))  # fmt: skip
    finally:
        store.close()
    page.add_init_script(CSP_WATCH)
    asked: list[str] = []

    def confirm(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.on("dialog", confirm)
    page.goto(console)
    base = console.split("?", 1)[0]

    page.goto(base + "operations")
    row = page.locator("section#circuits tr", has_text=TEAM)
    assert row.locator("td.circuit-state").inner_text() == "open"
    row.get_by_role("button", name="Reset").click()
    page.get_by_text(f"provider circuit {TEAM} closed (it was open until").wait_for(timeout=20_000)
    assert asked == [f"Reset provider circuit {TEAM}? Workers launch its agents again at once."]
    assert (
        page.locator("section#circuits tr", has_text=TEAM).locator("td.circuit-state").inner_text()
        == "closed"
    )
    store = project.store()
    try:
        assert store.get_circuit(TEAM).until is None
    finally:
        store.close()

    page.goto(base + "spend?days=7")
    bars = page.locator("svg.chart rect.tone-0")
    assert bars.count() == 2  # claude's part of today's bar, in each chart
    box = bars.first.bounding_box()
    assert box is not None
    assert box["height"] > 50
    fill = bars.first.evaluate("(rect) => getComputedStyle(rect).fill")
    assert fill == "rgb(78, 121, 167)"  # the stylesheet's colour: no inline style needed
    assert page.evaluate("window.__refused") == []
