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


@pytest.mark.parametrize("where", ["board", "fragment", "item", "since"])
def test_outside_text_stays_inert_text(console: Console, clock: FakeClock, where: str):
    item_id = hostile_item(console, clock)
    client = console.login()
    paths = {"board": "/", "fragment": "/board", "item": f"/items/{item_id}", "since": "/since"}
    path = paths[where]
    page = client.get(path)
    assert page.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    inert(page.text)


def test_a_hostile_filter_is_shown_escaped(console: Console, clock: FakeClock):
    hostile_item(console, clock)
    page = console.login().get("/", params={"text": PAYLOADS[1], "state": PAYLOADS[0]})
    assert page.status_code == 400  # no such state: the page says so, escaped
    assert "no state &lt;script&gt;alert(1)&lt;/script&gt;: the board&#39;s states are" in page.text
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


# The Operations and Spend pages: worker, circuit and agent names, reasons, notifications.

OUR_SVG = ('<svg class="chart"', '<svg class="swatch"')
INERT_NAME = "".join(payload for payload in PAYLOADS if "\x1b" not in payload)[:200]


def inert_with_charts(page: str) -> None:
    """`inert`, our own charts and legend swatches aside."""
    for ours in OUR_SVG:
        page = page.replace(ours, "")
    inert(page)


@pytest.mark.parametrize("path", ["/operations", "/operations/part"])
def test_hostile_fleet_text_on_the_operations_page_stays_inert(
    console: Console, clock: FakeClock, path: str
):
    from datetime import timedelta

    from tests.web.fleet_seed import give_up_notice, open_circuit, register

    with console.app_ctx.store() as store:
        register(store, HOSTILE[:100], at=clock(), label=HOSTILE, agent=HOSTILE,
                 held_reason=HOSTILE, waiting_for=HOSTILE)  # fmt: skip
        until = clock() + timedelta(minutes=5)
        open_circuit(store, "account:x" + HOSTILE[:100], at=clock(), until=until,
                     reason=HOSTILE, notice_reason=HOSTILE)  # fmt: skip
        give_up_notice(store, now=clock(), error=HOSTILE)
        open_circuit(store, INERT_NAME, at=clock(), until=clock() + timedelta(minutes=5),
                     reason=HOSTILE)  # fmt: skip
    page = console.login().get(path)  # the page, and its live part a page fetches again
    assert page.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    inert(page.text)


def test_a_hostile_circuit_name_is_reset_through_its_own_button(console: Console, clock: FakeClock):
    import html
    from datetime import timedelta

    from tests.web.fleet_seed import open_circuit
    from tests.web.test_console import CSRF, flash

    with console.app_ctx.store() as store:
        open_circuit(store, INERT_NAME, at=clock(), until=clock() + timedelta(minutes=5),
                     reason=HOSTILE)  # fmt: skip
    client = console.login()
    page = client.get("/operations").text
    actions = re.findall(r'<form method="post" action="([^"]+)"', page)
    assert len(actions) == 1
    done = client.post(html.unescape(actions[0]), data={"csrf": CSRF})
    assert flash(done.text).startswith(f"ok: provider circuit {INERT_NAME} closed")
    assert done.text.count("<script") == done.text.count(OUR_SCRIPT)
    for tag in ("<img", "<svg"):
        assert tag not in done.text
    assert "{{7*7}}{% raw %}" in done.text  # the name in the flash and the table, as text
    with console.app_ctx.store() as store:
        assert store.get_circuit(INERT_NAME).until is None


def test_hostile_agent_names_on_the_spend_page_stay_inert(console: Console, clock: FakeClock):
    from datetime import timedelta

    from tests.web.fleet_seed import spent
    from wrighty.domain.usage import Usage

    with console.app_ctx.store() as store:
        for hours, agent in enumerate((HOSTILE[:120], PAYLOADS[0], PAYLOADS[3])):
            spent(store, at=clock() - timedelta(hours=hours + 1), agent=agent,
                  usage=Usage(input_tokens=100, cost_usd=0.01))  # fmt: skip
    page = console.login().get("/spend")
    assert page.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    inert_with_charts(page.text)


def test_no_template_or_handler_marks_text_safe() -> None:
    """Escaping rests on autoescape: a macro's own HTML passes as Markup (app._neutral), so a
    `|safe` or a Markup() of outside text would reach a page raw. None may exist."""
    from pathlib import Path

    import wrighty.web

    web = Path(wrighty.web.__file__).parent
    for path in [*web.glob("templates/*.html"), *web.glob("*.py")]:
        text = path.read_text()
        assert re.search(r"\|\s*safe\b", text) is None, path
        assert "Markup(" not in text, path
        assert "autoescape false" not in text, path
