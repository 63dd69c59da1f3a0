"""Hostile text from outside (titles, bodies, reasons, diagnostics, feedback, filters): every
page holds it as inert, escaped text: no tag, no template expression evaluated, no raw control
character (wrighty/web/templates, autoescape and the environment's finalize)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import FakeClock
from tests.inbox.seed import claim, settle, start
from tests.web.conftest import Console
from wrighty.domain.model import NewItem
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState

PAYLOADS = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "{{7*7}}{% raw %}",
    "\x1b[2J\x1b]0;pwned\x07\x9b31m",
    "'><svg/onload=alert(3)>",
    "</textarea><script>alert(4)</script>",
    "javascript:alert(5)",
)
HOSTILE = " ".join(PAYLOADS)
OUR_SCRIPT = '<script src="/static/wrighty.js">'
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def hostile_item(console: Console, clock: FakeClock) -> int:
    """An item whose title, body, reason and run diagnostic are all the payloads."""
    with console.app_ctx.store() as store:
        made = store.create_item(
            NewItem(HOSTILE[:200], HOSTILE, None, None, "/srv/work/app", ItemState.QUEUED),
            at=clock(),
            actor="operator",
        )
        claimed = claim(store, made.id, at=clock())
        start(store, claimed, at=clock(), session_id="sess-x", worker="w-live-0001")
        settle(
            store,
            claimed,
            ItemState.NEEDS_ATTENTION,
            at=clock(),
            outcome=OutcomeClass.AGENT_FAILURE,
            reason=HOSTILE,
            diagnostic=HOSTILE,
        )
    return made.id


def inert(page: str) -> None:
    assert page.count("<script") == page.count(OUR_SCRIPT)
    for tag in ("<img", "<svg", "</textarea><"):
        assert tag not in page
    assert "onerror=alert" not in page.replace("onerror=alert(2)&gt;", "")  # only as text
    assert "{{7*7}}{% raw %}" in page  # not evaluated: shown as it was written
    assert RAW_CONTROL.search(page) is None
    assert "\\x1b[2J" in page  # an escape sequence is shown as text, not sent


@pytest.mark.parametrize("where", ["board", "fragment", "item"])
def test_outside_text_stays_inert_text(console: Console, clock: FakeClock, where: str):
    item_id = hostile_item(console, clock)
    client = console.login()
    path = {"board": "/", "fragment": "/board", "item": f"/items/{item_id}"}[where]
    page = client.get(path)
    assert page.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    inert(page.text)


def test_a_hostile_filter_is_shown_escaped(console: Console, clock: FakeClock):
    hostile_item(console, clock)
    page = console.login().get("/", params={"text": PAYLOADS[1], "state": PAYLOADS[0]})
    assert page.status_code == 200
    assert 'value="&#34;&gt;&lt;img src=x onerror=alert(2)&gt;"' in page.text
    assert page.text.count("<script") == 1


def test_hostile_feedback_and_refusals_are_shown_escaped(console: Console, clock: FakeClock):
    from tests.web.test_console import CSRF, in_review

    client = console.login()
    item_id = in_review(console.app_ctx, clock, title=HOSTILE[:200])
    page = client.post(f"/items/{item_id}/reject", data={"csrf": CSRF, "feedback": HOSTILE})
    assert page.status_code == 200
    inert(page.text)
    page = client.post(f"/items/{item_id}/priority", data={"csrf": CSRF, "priority": HOSTILE})
    assert "refused" in page.text
    inert(page.text)


def test_a_hostile_runs_output_streams_as_json_text(console: Console, clock: FakeClock):
    from wrighty.installation import installation_id
    from wrighty.services.runlogs import run_log_dir

    item_id = hostile_item(console, clock)
    with console.app_ctx.store() as store:
        [run] = store.list_runs(item_id)
    log_dir = run_log_dir(console.project / ".wrighty", run)
    log_dir.mkdir(parents=True)
    (log_dir / "stdout.log").write_text(HOSTILE + "\n")
    (log_dir / "stderr.log").write_text("")
    assert run.installation_id == installation_id()
    response = console.login().get(f"/items/{item_id}/log")
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert RAW_CONTROL.search(response.text) is None
    assert "\\\\x1b[2J" in response.text  # JSON of the visible escape: \\x1b
    assert "<script>alert(1)</script>" in response.text  # text in JSON, shown as text
