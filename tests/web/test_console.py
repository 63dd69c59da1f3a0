"""The web console's handlers, in process, on both stores: the token and its cookie, the
Host check, CSRF, read-only, every action landing as its command's does, refusals word for
word, bad ids (wrighty/web/)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.conftest import FakeClock
from tests.inbox.seed import claim, start
from tests.web.conftest import TOKEN, Console, history, make_console, seeded
from wrighty.domain.claims import Settlement, settle
from wrighty.domain.model import NewItem, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.operator.context import AppContext
from wrighty.web.security import CSP, csrf_token

CSRF = csrf_token(TOKEN)
SEEN_TITLE = "Fix the flaky login test"


def cli(app_ctx: AppContext, *args: str) -> str:
    """A command on the console's store, as a person would run it beside the console."""
    store = ("--store", app_ctx.store_option) if app_ctx.store_option else ()
    result = wrighty(*store, *args)
    assert result.exit_code == 0, result.output
    return result.output.strip()


def last_event(app_ctx: AppContext, item_id: int) -> tuple[object, ...]:
    """The latest event, without its time and item: what a command writes."""
    _, actor, _, from_state, to_state, code, reason = history(app_ctx, item_id)[-1]
    return (actor, from_state, to_state, code, reason)


def in_review(app_ctx: AppContext, clock: FakeClock, title: str = "Review me") -> int:
    with app_ctx.store() as store:
        made = store.create_item(
            NewItem(title, "b", None, None, "/srv/work/app", ItemState.QUEUED),
            at=clock(),
            actor="operator",
        )
        claimed = claim(store, made.id, at=clock())
        start(store, claimed, at=clock(), session_id=f"sess-r{made.id}", worker="w-live-0001")
        end = RunEnd(clock(), OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, exit_code=0)
        plan = Settlement(ItemState.REVIEW, process_started=True, run_end=end)
        assert store.write_transition(settle(claimed, plan, at=clock()))
    return made.id


def post(console: Console, path: str, **fields: str):  # type: ignore[no-untyped-def]
    if "wrighty_token" not in console.client.cookies:
        console.login()
    return console.client.post(path, data={"csrf": CSRF, **fields}, follow_redirects=True)


def flash(page: str) -> str:
    """The page's message, as the browser shows it."""
    found = re.search(r'<p class="flash (ok|refused)" role="status">(.*?)</p>', page, re.S)
    assert found is not None, page
    return f"{found.group(1)}: {html.unescape(found.group(2))}"


# Auth


def test_without_the_cookie_every_path_is_401_with_no_data(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    paths = ["/", "/board", f"/items/{made.attention}", "/events", "/static/wrighty.js", "/nope"]
    for path in paths:
        response = console.client.get(path)
        assert response.status_code == 401, path
        assert SEEN_TITLE not in response.text
        assert "flaky" not in response.text
        assert response.headers["content-security-policy"] == CSP
    before = history(console.app_ctx, made.attention)
    response = console.client.post(
        f"/items/{made.attention}/cancel", data={"csrf": CSRF}, follow_redirects=False
    )
    assert response.status_code == 401
    assert history(console.app_ctx, made.attention) == before


def test_a_wrong_cookie_or_token_is_401(console: Console, clock: FakeClock):
    seeded(console.app_ctx, clock)
    console.client.cookies.set("wrighty_token", TOKEN[:-1] + "x")
    assert console.client.get("/").status_code == 401
    assert console.client.get(f"/?token={TOKEN[:-1]}").status_code == 401
    assert console.client.get("/?token=").status_code == 401


def test_the_token_becomes_a_strict_httponly_cookie_and_leaves_the_address(
    console: Console, clock: FakeClock
):
    made = seeded(console.app_ctx, clock)
    response = console.client.get(f"/items/{made.attention}?token={TOKEN}", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == f"/items/{made.attention}"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"wrighty_token={TOKEN};")
    for part in ("HttpOnly", "SameSite=Strict", "Path=/"):
        assert part in cookie
    page = console.client.get(response.headers["location"])
    assert page.status_code == 200
    assert SEEN_TITLE in page.text
    assert TOKEN not in page.text  # the page holds the CSRF token, never the token itself


def test_a_wrong_host_is_400_and_nothing_is_read(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    client = console.login()
    for host in ("evil.example", "evil.example:8765", "127.0.0.1:9999", "localhost"):
        response = client.get(f"/items/{made.attention}", headers={"host": host})
        assert (response.status_code, response.text.strip()) == (400, "wrong Host"), host
    before = history(console.app_ctx, made.attention)
    response = client.post(
        f"/items/{made.attention}/cancel", data={"csrf": CSRF}, headers={"host": "evil.example"}
    )
    assert response.status_code == 400
    assert history(console.app_ctx, made.attention) == before


def test_pages_carry_the_security_headers(console: Console, clock: FakeClock):
    seeded(console.app_ctx, clock)
    response = console.login().get("/")
    assert response.headers["content-security-policy"] == CSP
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "no-store"
    assert "<script>" not in response.text  # no inline script: only src=/static/...
    assert re.findall(r"<script[^>]*>", response.text) == ['<script src="/static/wrighty.js">']


# CSRF


@pytest.mark.parametrize(
    ("data", "headers"),
    [
        ({}, {}),
        ({"csrf": "forged"}, {}),
        ({"csrf": csrf_token("another-server-token-of-43-characters-xxxxx")}, {}),
        ({"csrf": TOKEN}, {}),  # the token itself is not the CSRF token
        ({}, {"x-csrf-token": "forged"}),
        ({"csrf": CSRF}, {"x-csrf-token": "forged"}),  # a header that is wrong wins
    ],
)
def test_a_post_without_the_csrf_token_is_403_and_nothing_written(
    console: Console, clock: FakeClock, data: dict[str, str], headers: dict[str, str]
):
    made = seeded(console.app_ctx, clock)
    client = console.login()
    before = history(console.app_ctx, made.attention)
    response = client.post(
        f"/items/{made.attention}/cancel", data=data, headers=headers, follow_redirects=False
    )
    assert response.status_code == 403
    assert "CSRF" in response.text
    assert history(console.app_ctx, made.attention) == before


def test_the_csrf_header_is_taken_too(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    client = console.login()
    response = client.post(f"/items/{made.queued}/cancel", headers={"x-csrf-token": CSRF})
    assert response.status_code == 200
    assert last_event(console.app_ctx, made.queued)[2] is ItemState.CANCELLED


def test_a_body_over_256_kib_is_413_and_nothing_written(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    client = console.login()
    before = history(console.app_ctx, made.attention)
    big = {"csrf": CSRF, "feedback": "x" * (256 * 1024)}
    response = client.post(f"/items/{made.attention}/reject", data=big, follow_redirects=False)
    assert response.status_code == 413
    assert history(console.app_ctx, made.attention) == before


def test_get_never_changes_anything(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    client = console.login()
    before = history(console.app_ctx, made.queued)
    for path in (f"/items/{made.queued}/cancel", f"/items/{made.queued}?action=cancel"):
        assert client.get(path).status_code in (404, 405, 200)
    assert history(console.app_ctx, made.queued) == before


# Read-only


def test_read_only_shows_no_action_and_refuses_every_post(
    project_ctx: AppContext, clock: FakeClock
):
    made = seeded(project_ctx, clock)
    console = make_console(project_ctx, project_ctx.cwd, read_only=True)
    with console.client:
        client = console.login()
        page = client.get(f"/items/{made.attention}")
        assert page.status_code == 200
        assert "read-only" in page.text
        assert '<form method="post"' not in page.text
        before = history(project_ctx, made.attention)
        for action in ("cancel", "queue", "requeue", "release", "priority", "accept", "reject"):
            response = client.post(
                f"/items/{made.attention}/{action}",
                data={"csrf": CSRF, "how": "fresh", "priority": "P0", "feedback": "x"},
                follow_redirects=False,
            )
            assert response.status_code == 403, action
        assert history(project_ctx, made.attention) == before


# The actions: the command's service, the command's words


def test_requeue_fresh_lands_as_the_command_does(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    said = flash(post(console, f"/items/{made.attention}/requeue", how="fresh").text)
    assert said == f"ok: item {made.attention} is queued"
    printed = cli(console.app_ctx, "requeue", str(made.auth), "--fresh")
    assert printed == f"item {made.auth} is queued"
    assert last_event(console.app_ctx, made.attention) == last_event(console.app_ctx, made.auth)
    assert last_event(console.app_ctx, made.attention)[0] == "operator"


def test_requeue_resume_and_its_refusal_word_for_word(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    said = flash(post(console, f"/items/{made.auth}/requeue", how="resume").text)
    refusal = wrighty(
        *(("--store", console.app_ctx.store_option) if console.app_ctx.store_option else ()),
        "requeue", str(made.auth), "--resume",
    )  # fmt: skip
    assert refusal.exit_code == 2
    assert said == f"refused: {refusal.output.strip()}"
    assert "has no recorded session to resume" in said
    said = flash(post(console, f"/items/{made.attention}/requeue", how="resume").text)
    assert said == f"ok: item {made.attention} is retry-scheduled"
    event = last_event(console.app_ctx, made.attention)
    assert event[2:4] == (ItemState.RETRY_SCHEDULED, "operator-resume")


def test_cancel_and_priority_land_as_the_commands_do(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    other = cli(
        console.app_ctx,
        "create",
        "--title",
        "Another",
        "--body",
        "b",
        "--queue",
        "--priority",
        "P1",
    )
    other_id = int(re.search(r"\d+", other).group(0))  # type: ignore[union-attr]
    said = flash(post(console, f"/items/{made.queued}/priority", priority="P0").text)
    printed = cli(console.app_ctx, "edit", str(other_id), "--priority", "P0")
    assert said == f"ok: {printed.replace(f'item {other_id}', f'item {made.queued}', 1)}"
    web_event, cli_event = (
        last_event(console.app_ctx, made.queued),
        last_event(console.app_ctx, other_id),
    )
    assert web_event[0] == cli_event[0] == "operator"
    assert web_event[3:] == cli_event[3:]
    said = flash(post(console, f"/items/{made.queued}/cancel").text)
    assert said == f"ok: item {made.queued} is cancelled"
    cli(console.app_ctx, "cancel", str(other_id))
    assert last_event(console.app_ctx, made.queued) == last_event(console.app_ctx, other_id)


def test_a_bad_priority_is_refused_in_the_commands_words(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    before = history(console.app_ctx, made.queued)
    said = flash(post(console, f"/items/{made.queued}/priority", priority="P9").text)
    assert said.startswith("refused: wrighty: --priority P9: give 0 to 3 or P0 to P3")
    assert history(console.app_ctx, made.queued) == before


def test_release_lands_as_the_command_does(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    said = flash(post(console, f"/items/{made.gone}/release").text)
    assert said == f"ok: item {made.gone} is needs-attention"
    event = last_event(console.app_ctx, made.gone)
    assert event[0] == "operator"
    assert event[3] == "operator-released"
    said = flash(post(console, f"/items/{made.queued}/release").text)
    refusal = wrighty(
        *(("--store", console.app_ctx.store_option) if console.app_ctx.store_option else ()),
        "release", str(made.queued), "--force",  # the page's confirmation stands for --force
    )  # fmt: skip
    assert said == f"refused: {refusal.output.strip()}"


def test_accept_and_reject_land_as_the_commands_do(console: Console, clock: FakeClock):
    seeded(console.app_ctx, clock)
    by_web, by_cli = in_review(console.app_ctx, clock), in_review(console.app_ctx, clock)
    said = flash(post(console, f"/items/{by_web}/reject", feedback="<b>use</b> the fixture").text)
    printed = cli(console.app_ctx, "reject", str(by_cli), "--feedback", "<b>use</b> the fixture")
    assert said == "ok: " + printed.replace(str(by_cli), str(by_web), 1)
    assert last_event(console.app_ctx, by_web) == last_event(console.app_ctx, by_cli)
    with console.app_ctx.store() as store:
        assert store.get_item(by_web).feedback == "<b>use</b> the fixture"  # type: ignore[union-attr]
    by_web, by_cli = in_review(console.app_ctx, clock), in_review(console.app_ctx, clock)
    said = flash(post(console, f"/items/{by_web}/accept").text)
    printed = cli(console.app_ctx, "accept", str(by_cli))
    assert said == "ok: " + printed.replace(str(by_cli), str(by_web), 1)
    assert last_event(console.app_ctx, by_web) == last_event(console.app_ctx, by_cli)
    said = flash(post(console, f"/items/{by_web}/accept").text)
    assert said.startswith(f"refused: wrighty: item {by_web} is done")


def test_an_empty_rejection_is_refused_as_the_command_refuses_it(
    console: Console, clock: FakeClock
):
    seeded(console.app_ctx, clock)
    item_id = in_review(console.app_ctx, clock)
    before = history(console.app_ctx, item_id)
    said = flash(post(console, f"/items/{item_id}/reject", feedback="  ").text)
    assert said.startswith("refused: wrighty: ")
    assert history(console.app_ctx, item_id) == before


def test_an_item_page_offers_the_actions_of_its_state(
    console: Console, clock: FakeClock, vendor_clis: Path
):
    made = seeded(console.app_ctx, clock)
    client = console.login()

    def offered(item_id: int) -> set[str]:
        page = client.get(f"/items/{item_id}").text
        return set(re.findall(rf'action="/items/{item_id}/(\w+)"', page))

    assert offered(made.attention) == {"requeue", "handoff", "priority", "cancel"}
    assert offered(made.running) == {"release", "cancel"}
    assert offered(made.todo) == {"queue", "priority", "cancel"}
    assert offered(made.done) == set()
    review = in_review(console.app_ctx, clock)
    assert offered(review) == {"accept", "reject", "handoff", "priority", "cancel"}


# The pages


def board_rows(page: str) -> list[list[str]]:
    """The board's rows in a page, each a list of its cells' text (id, state, P, title, why,
    agent, age, and spent on a running row): a row is a line, its cells without end tags."""
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in line.removesuffix("</tr>").split("<td>")[1:]
        ]
        for line in page.splitlines()
        if line.startswith("<tr><td>")
    ]


def test_the_board_shows_the_sections_rows_and_counts(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    page = console.login().get("/").text
    for section in ("needs-attention", "retry-scheduled", "running", "held", "waiting"):
        assert f'id="{section}"' in page
    assert f'href="/items/{made.attention}"' in page
    assert f'href="/items/{made.done}"' not in page  # finished items are not on the board
    assert "agent-failure: the agent said it cannot finish" in page
    assert "Needs attention <b>2</b>" in page
    assert "Held <b>1</b>" in page
    spent = [row[7] for row in board_rows(page) if len(row) == 8]
    assert "15,400 tokens" in spent  # the running item's run so far
    assert len(spent) == 2  # the running rows alone (one spent nothing)
    fragment = console.client.get("/board")
    assert fragment.status_code == 200
    assert "<html" not in fragment.text
    assert f'href="/items/{made.attention}"' in fragment.text


def test_the_board_filters_by_state_agent_label_and_text(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    client = console.login()

    def ids(query: str) -> set[int]:
        page = client.get(f"/board?{query}").text
        return {int(row[0]) for row in board_rows(page)}

    every = ids("")
    assert made.attention in every
    assert ids("state=needs-attention") == {made.attention, made.auth}
    assert ids("text=flaky") == {made.attention}
    assert ids("text=FLAKY") == {made.attention}
    agent = board_rows(client.get("/board").text)[0][5]
    assert ids(f"agent={agent}") == every
    assert ids("agent=codex") == set()
    assert ids("label=nothing") == set()
    labelled = cli(console.app_ctx, "create", "--title", "Docs", "--body", "b", "--label", "docs")
    labelled_id = int(re.search(r"\d+", labelled).group(0))  # type: ignore[union-attr]
    assert ids("label=docs") == {labelled_id}
    assert ids("label=docs&text=nothing-matches") == set()


def test_the_item_page_says_what_show_says(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    page = console.login().get(f"/items/{made.attention}").text
    shown = cli(console.app_ctx, "show", str(made.attention))
    # The page's text, its markup left out: the same words as the command's first lines.
    words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
    for line in shown.splitlines()[:3]:
        assert " ".join(line.split()) in words
    assert 'class="outcome outcome-agent-failure"' in page
    assert "sess-" in page
    assert "operator" in page  # the history's actor
    running = console.client.get(f"/items/{made.running}").text
    assert "<td>15,400 tokens</td>" in running  # the open run's usage so far, in its row


@pytest.mark.parametrize("bad", ["0", "-1", "99999999999999999999", "abc", "1e3", "%C2%B9"])
def test_a_bad_id_is_404_without_a_traceback(console: Console, clock: FakeClock, bad: str):
    seeded(console.app_ctx, clock)
    client = console.login()
    for path in (f"/items/{bad}", f"/items/{bad}/diff", f"/items/{bad}/log"):
        page = client.get(path)
        assert page.status_code == 404, path
        assert "Traceback" not in page.text
    for action in ("cancel", "verify"):
        response = client.post(
            f"/items/{bad}/{action}", data={"csrf": CSRF}, follow_redirects=False
        )
        assert response.status_code == 404
        assert "Traceback" not in response.text


def test_an_unknown_item_or_action_is_404(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    client = console.login()
    page = client.get("/items/123456")
    assert page.status_code == 404
    assert "item 123456" in page.text
    before = history(console.app_ctx, made.queued)
    for action in ("explode", "diff", "log"):
        response = client.post(f"/items/{made.queued}/{action}", data={"csrf": CSRF})
        assert response.status_code == 404
    assert history(console.app_ctx, made.queued) == before
    for path in ("/items/123456/diff", "/items/123456/log"):
        missing = client.get(path)
        assert missing.status_code == 404
        assert "item 123456" in missing.text
