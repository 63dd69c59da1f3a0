"""The Operations page (/operations), on both stores: the workers with their liveness, the
provider circuits and their Reset (the same service call as `wrighty providers reset`, its
line as a flash; CSRF and read-only refused), each agent's budget and hold, the notifications
not delivered, and the health verdict with its thresholds, as the commands give them."""

from __future__ import annotations

import dataclasses
import html
import json
import re
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest
from markupsafe import escape

from tests.cli.conftest import wrighty
from tests.conftest import FakeClock
from tests.web.conftest import Console, make_console
from tests.web.fleet_seed import configure, give_up_notice, open_circuit, register, spent
from tests.web.test_console import CSRF, flash, post
from wrighty.domain.times import rfc3339
from wrighty.domain.usage import Usage
from wrighty.operator.context import AppContext
from wrighty.richtext import local_time

TEAM = "account:team"
SECRET = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdEfGh"


def cli_json(app_ctx: AppContext, *args: str) -> Any:
    """A command's --json on the console's store."""
    store = ("--store", app_ctx.store_option) if app_ctx.store_option else ()
    result = wrighty(*store, *args, "--json")
    assert result.exit_code in (0, 1), result.output  # status: 1 when unhealthy
    return json.loads(result.stdout)


def row_of(page: str, cell: str) -> str:
    """The table row that holds ``cell`` (as HTML)."""
    for row in re.findall(r"<tr[^>]*>.*?</tr>", page, re.S):
        if cell in row:
            return str(row)
    raise AssertionError(f"no row with {cell!r}")


def circuit_fields(app_ctx: AppContext, name: str) -> dict[str, object]:
    """The stored circuit as a reset leaves it, but for its name."""
    with app_ctx.store() as store:
        found = dataclasses.asdict(store.get_circuit(name))
    found.pop("name")
    return found


def test_workers_show_their_liveness_as_wrighty_workers_does(console: Console, clock: FakeClock):
    with console.store() as store:
        register(store, "w-live-0001", at=clock(), label="laptop", agent="claude")
        register(store, "w-quiet-0002", at=clock() - timedelta(minutes=10))
        register(store, "w-dead-0003", at=clock(), here=True)
    page = console.login().get("/operations")
    assert page.status_code == 200
    assert 'href="/operations" aria-current="page"' in page.text
    workers = cli_json(console.app_ctx, "workers")
    listed = {worker["worker_id"]: worker["liveness"] for worker in workers}
    assert listed == {"w-live-0001": "live", "w-quiet-0002": "stale", "w-dead-0003": "dead"}
    for worker, liveness in listed.items():
        row = row_of(page.text, f">{worker}<")
        assert row.startswith(f'<tr class="liveness-{liveness}">')
        assert f'<td class="liveness" data-label="liveness">{liveness}</td>' in row
    assert "laptop" in row_of(page.text, ">w-live-0001<")
    assert "1 live workers of 3" in page.text


def test_no_workers_no_circuits_no_notifications(console: Console):
    page = console.login().get("/operations").text
    for empty in ("no registered workers", "no provider circuits", "no notifications waiting"):
        assert f'<p class="empty">{empty}</p>' in page
    assert "no thresholds set" in page  # the verdict of a project that sets none


def test_an_open_circuit_shows_until_when_and_its_reset_closes_it_as_the_cli_does(
    console: Console, clock: FakeClock
):
    until = clock() + timedelta(minutes=30)
    with console.store() as store:
        for name in (TEAM, "account:twin"):
            open_circuit(store, name, at=clock(), until=until, reason="rate-limited (item 4)")
    client = console.login()
    page = client.get("/operations").text
    row = row_of(page, f">{TEAM}<")
    assert '<td class="circuit-state" data-label="state">open</td>' in row
    assert f'<td class="when" data-label="until">{rfc3339(until)}</td>' in row
    assert "rate-limited (item 4)" in row
    assert f'action="/providers/{quote(TEAM, safe="/")}/reset"' in row
    assert f'name="csrf" value="{CSRF}"' in row
    assert "data-confirm=" in row

    done = post(console, f"/providers/{quote(TEAM)}/reset")
    assert done.url.path == "/operations"
    assert flash(done.text) == (
        f"ok: provider circuit {TEAM} closed (it was open until {local_time(until)}); "
        "workers launch its agents again"
    )
    closed = '<td class="circuit-state" data-label="state">closed</td>'
    assert closed in row_of(done.text, f">{TEAM}<")
    assert "Reset" not in row_of(done.text, f">{TEAM}<")  # a closed circuit offers none
    # Recorded as `wrighty providers reset` records it: the twin, reset by the command, is
    # stored the same.
    store = ("--store", console.app_ctx.store_option) if console.app_ctx.store_option else ()
    result = wrighty(*store, "providers", "reset", "account:twin")
    assert result.exit_code == 0, result.output
    assert circuit_fields(console.app_ctx, TEAM) == circuit_fields(console.app_ctx, "account:twin")
    states = {c["name"]: c["state"] for c in cli_json(console.app_ctx, "providers")}
    assert states == {TEAM: "closed", "account:twin": "closed"}
    # Once more: the command's answer for a closed circuit.
    again = post(console, f"/providers/{quote(TEAM)}/reset")
    assert flash(again.text) == f"ok: provider circuit {TEAM} was closed already"


def test_a_half_open_circuit_can_be_reset_too(console: Console, clock: FakeClock):
    with console.store() as store:
        open_circuit(
            store, TEAM, at=clock() - timedelta(hours=1), until=clock() - timedelta(minutes=5),
            reason="r",
        )  # fmt: skip
    page = console.login().get("/operations").text
    half_open = '<td class="circuit-state" data-label="state">half-open</td>'
    assert half_open in row_of(page, f">{TEAM}<")
    done = post(console, f"/providers/{quote(TEAM)}/reset")
    said = flash(done.text)
    assert said.startswith(f"ok: provider circuit {TEAM} closed (it was half-open since "), said


def test_an_unknown_circuit_is_refused_in_the_commands_words_and_nothing_is_written(
    console: Console, clock: FakeClock
):
    with console.store() as store:
        open_circuit(store, TEAM, at=clock(), until=clock() + timedelta(minutes=5), reason="r")
    before = circuit_fields(console.app_ctx, TEAM)
    for name in ("account:nobody", "account:team/x", "a" * 300, "<b>x</b>"):
        done = post(console, f"/providers/{quote(name, safe='')}/reset")
        assert done.status_code == 200
        assert flash(done.text) == (
            f"refused: wrighty: no provider circuit '{name}'; `wrighty providers` lists the "
            "circuits there are"
        )
    # No name the commands could write: not looked up.
    for name in ("\x00", "team\nx", "\x1b[2J", "a" * 513):
        response = post(console, f"/providers/{quote(name, safe='')}/reset")
        assert response.status_code == 404, repr(name)
        assert "<h1>Not found</h1>" in response.text
    response = post(console, "/providers//reset")
    assert response.status_code == 404
    assert circuit_fields(console.app_ctx, TEAM) == before
    with console.store() as store:
        assert [c.name for c in store.list_circuits()] == [TEAM]


def test_a_reset_without_csrf_or_with_a_forged_one_is_403_and_the_circuit_stays_open(
    console: Console, clock: FakeClock
):
    with console.store() as store:
        open_circuit(store, TEAM, at=clock(), until=clock() + timedelta(minutes=5), reason="r")
    before = circuit_fields(console.app_ctx, TEAM)
    client = console.login()
    path = f"/providers/{quote(TEAM)}/reset"
    for data in ({}, {"csrf": "0" * 64}, {"csrf": CSRF[:-1]}):
        response = client.post(path, data=data, follow_redirects=False)
        assert response.status_code == 403, data
    assert client.get(path).status_code == 405  # a GET never resets
    assert circuit_fields(console.app_ctx, TEAM) == before


def test_read_only_offers_no_reset_and_refuses_it(project_ctx: AppContext, clock: FakeClock):
    made = make_console(project_ctx, project_ctx.cwd, read_only=True)
    with made.client:
        with made.store() as store:
            open_circuit(store, TEAM, at=clock(), until=clock() + timedelta(minutes=5), reason="r")
        before = circuit_fields(project_ctx, TEAM)
        page = made.login().get("/operations").text
        assert '<td class="circuit-state" data-label="state">open</td>' in row_of(page, f">{TEAM}<")
        assert "/reset" not in page
        assert '<form method="post"' not in page
        response = made.client.post(
            f"/providers/{quote(TEAM)}/reset", data={"csrf": CSRF}, follow_redirects=False
        )
        assert response.status_code == 403
        assert circuit_fields(project_ctx, TEAM) == before


def test_pending_and_given_up_notifications_as_notify_pending_lists_them(
    console: Console, clock: FakeClock
):
    with console.store() as store:
        open_circuit(
            store, "account:first", at=clock(), until=clock() + timedelta(minutes=5),
            reason="rate-limited", notice_reason=f"rate-limited, key {SECRET}",
        )  # fmt: skip
        clock.advance(1)
        give_up_notice(store, now=clock(), error="HTTP 503")
        open_circuit(
            store, TEAM, at=clock(), until=clock() + timedelta(minutes=5), reason="quota",
            notice_reason="quota",
        )  # fmt: skip
    listed = cli_json(console.app_ctx, "notify", "pending")
    assert [n["state"] for n in listed] == ["given-up", "pending"]
    page = console.login().get("/operations").text
    assert "1 pending, 1 given up" in page
    for notice in listed:
        row = row_of(page, f">{notice['id']}<")
        assert f'<td class="notice-state" data-label="state">{notice["state"]}</td>' in row
        assert "circuit-open" in row
    given_up = row_of(page, f">{listed[0]['id']}<")
    assert "ntfy: HTTP 503" in given_up
    assert "wrighty: circuit-open: account:first until" in given_up
    assert "[REDACTED]" in given_up  # as the outbox holds it, and as the sinks got it
    assert SECRET not in page
    assert SECRET[:20] not in page


def test_the_verdict_with_its_thresholds_as_wrighty_status_gives_them(
    project_ctx: AppContext, clock: FakeClock
):
    configure(project_ctx.cwd, status={"minWorkers": 2, "maxExpiredLeases": 0})
    made = make_console(project_ctx, project_ctx.cwd)
    with made.client:
        with made.store() as store:
            register(store, "w-live-0001", at=clock())
        status = cli_json(project_ctx, "status")
        assert status["healthy"] is False
        page = made.login().get("/operations").text
    assert '<span class="verdict verdict-unhealthy">unhealthy</span>' in page
    for problem in status["problems"]:
        assert f'<p class="problem">problem: {html.escape(problem["message"])}</p>' in page
    assert "<tr><td><code>min_workers</code></td><td>2</td></tr>" in page
    assert "<tr><td><code>max_expired_leases</code></td><td>0</td></tr>" in page
    assert '<td class="empty">not set</td>' in row_of(page, "<code>max_queue_wait_seconds</code>")


def test_budgets_show_each_agents_spend_and_the_hold_a_spent_one_puts(
    project_ctx: AppContext, clock: FakeClock
):
    configure(
        project_ctx.cwd,
        budgets={"perDay": {"claude": {"maxTokens": 1000}}, "perItem": {"maxCostUsd": 5}},
    )
    made = make_console(project_ctx, project_ctx.cwd)
    with made.client:
        with made.store() as store:
            spent(store, at=clock() - timedelta(hours=1), agent="claude",
                  usage=Usage(input_tokens=4000, output_tokens=1000, cost_usd=0.5))  # fmt: skip
            spent(store, at=clock() - timedelta(hours=2), agent="codex",
                  usage=Usage(input_tokens=10))  # fmt: skip
        status = cli_json(project_ctx, "status")
        page = made.login().get("/operations").text
    spend = status["spend"]
    held = {row["agent"]: row["hold_reason"] for row in spend["agents"]}
    assert held["codex"] is None
    assert held["claude"] is not None
    assert f"budget day {spend['period_start']} to {spend['period_end']}" in page
    assert "1 agents held" in page
    assert "per item: $5" in page
    row = row_of(page, 'href="/?agent=claude"')
    assert row.startswith('<tr class="held">')
    assert str(escape(held["claude"])) in row
    assert "1 run, $0.5000, 5,000 tokens" in row  # as `wrighty status` writes it
    assert "1,000 tokens" in row  # the budget
    codex = row_of(page, 'href="/?agent=codex"')
    assert "1 run, 10 tokens" in codex
    assert '<td class="why" data-label="held">-</td>' in codex


@pytest.mark.parametrize("path", ["/operations", "/operations?flash=forged"])
def test_a_flash_is_only_what_an_action_left(console: Console, path: str):
    page = console.login().get(path).text
    assert 'class="flash' not in page


def test_without_the_cookie_the_pages_and_the_reset_are_401_with_no_data(
    console: Console, clock: FakeClock
):
    from wrighty.web.security import CSP

    with console.store() as store:
        open_circuit(store, TEAM, at=clock(), until=clock() + timedelta(minutes=5), reason="r")
        register(store, "w-live-0001", at=clock())
    before = circuit_fields(console.app_ctx, TEAM)
    for path in ("/operations", "/spend", "/spend?days=3"):
        response = console.client.get(path)
        assert response.status_code == 401, path
        assert TEAM not in response.text
        assert "w-live-0001" not in response.text
        assert response.headers["content-security-policy"] == CSP
    response = console.client.post(
        f"/providers/{quote(TEAM)}/reset", data={"csrf": CSRF}, follow_redirects=False
    )
    assert response.status_code == 401
    assert circuit_fields(console.app_ctx, TEAM) == before
    client = console.login()
    for path in ("/operations", "/spend"):
        assert client.get(path).headers["content-security-policy"] == CSP
