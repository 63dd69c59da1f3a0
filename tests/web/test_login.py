"""The login page (docs/web.md#links-from-notices): a page asked for without a session gets a
form that asks for the token once, and leads back to that page; its POST sets the cookie the
launch URL sets, refuses a forged or malformed form in one line, and never shows, echoes or
redirects with the token (wrighty/web/security.py). On both stores."""

from __future__ import annotations

import html
import re

import pytest

from tests.conftest import FakeClock
from tests.web.conftest import TOKEN, Console, make_console
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.operator.context import AppContext
from wrighty.web.security import CSP, MAX_BODY_BYTES, cookie_header, csrf_token

PAGE = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
TITLE = "Rotate the <b>signing</b> keys"
FORM = "application/x-www-form-urlencoded"
TYPED = "typed-" + "q" * 40  # a wrong token someone typed: never shown again


def an_item(app_ctx: AppContext, clock: FakeClock) -> int:
    with app_ctx.store() as store:
        made = store.create_item(
            NewItem(TITLE, "the body", None, None, "/srv/work/app", ItemState.QUEUED),
            at=clock(),
            actor="operator",
        )
    return made.id


def asked(console: Console, path: str) -> tuple[str, str]:
    """The login page a browser gets for ``path`` without a session: its form's login CSRF
    value (checked to be the login cookie's too) and its ``next``."""
    response = console.client.get(path, headers=PAGE)
    assert response.status_code == 401, response.text
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    csrf = hidden(page, "login_csrf")
    assert console.client.cookies.get("wrighty_login") == csrf
    assert "wrighty_token" not in console.client.cookies
    return csrf, hidden(page, "next")


def hidden(page: str, name: str) -> str:
    found = re.search(rf'<input type="hidden" name="{name}" value="([^"]*)">', page)
    assert found is not None, page
    return html.unescape(found.group(1))


def log_in(console: Console, body: dict[str, str] | bytes, **headers: str):  # type: ignore[no-untyped-def]
    if isinstance(body, bytes):
        return console.client.post(
            "/login",
            content=body,
            headers={"content-type": FORM, **headers},
            follow_redirects=False,
        )
    return console.client.post("/login", data=body, headers=headers, follow_redirects=False)


def logged_out(console: Console, item_id: int) -> None:
    """Nothing changed: no session cookie, and the item's page still asks for the token."""
    assert "wrighty_token" not in console.client.cookies
    again = console.client.get(f"/items/{item_id}", headers=PAGE)
    assert again.status_code == 401
    assert "signing" not in again.text


def test_a_page_without_a_session_asks_for_the_token_and_shows_nothing_else(
    console: Console, clock: FakeClock
):
    item_id = an_item(console.app_ctx, clock)
    response = console.client.get(f"/items/{item_id}?flash=x", headers=PAGE)
    assert response.status_code == 401
    page = response.text
    assert '<form method="post" action="/login"' in page
    assert '<input type="password" name="token"' in page
    assert '<button type="submit">Log in</button>' in page
    assert '<link rel="stylesheet" href="/static/wrighty.css">' in page
    assert "<script" not in page
    assert "signing" not in page  # nothing of the store: no title
    assert TOKEN not in page
    assert csrf_token(TOKEN) not in page  # nor a session's CSRF token
    assert hidden(page, "next") == f"/items/{item_id}?flash=x"
    assert response.headers["content-security-policy"] == CSP
    assert response.headers["cache-control"] == "no-store"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"wrighty_login={hidden(page, 'login_csrf')};")
    for part in ("HttpOnly", "SameSite=Strict", "Path=/login", "Max-Age=600"):
        assert part in cookie
    # what the page needs comes without a session; nothing else does
    assert console.client.get("/static/wrighty.css").status_code == 200
    assert console.client.get("/static/favicon.svg").status_code == 200
    assert console.client.get("/static/wrighty.js").status_code == 401


def test_a_script_s_request_keeps_its_plain_401(console: Console, clock: FakeClock):
    item_id = an_item(console.app_ctx, clock)
    for path, accept in (
        ("/events", "text/event-stream"),
        ("/operations/events", "text/event-stream"),
        (f"/items/{item_id}/log", "text/event-stream"),
        ("/board", "*/*"),
        ("/operations/part", "*/*"),
        (f"/items/{item_id}", "*/*"),
    ):
        response = console.client.get(path, headers={"accept": accept})
        assert response.status_code == 401, path
        assert response.headers["content-type"].startswith("text/plain"), path
        assert response.text.startswith("unauthorized:"), path
        assert "wrighty_login" not in response.headers.get("set-cookie", ""), path
    # a form posted without a session is refused as before, and the login page is no way in
    response = console.client.post(
        f"/items/{item_id}/cancel", data={"csrf": csrf_token(TOKEN)}, headers=PAGE
    )
    assert (response.status_code, response.headers["content-type"][:10]) == (401, "text/plain")


def test_the_token_logs_in_with_the_launch_url_s_cookie_and_leads_to_the_page(
    console: Console, clock: FakeClock
):
    item_id = an_item(console.app_ctx, clock)
    csrf, asked_for = asked(console, f"/items/{item_id}")
    assert asked_for == f"/items/{item_id}"
    response = log_in(console, {"token": TOKEN, "next": asked_for, "login_csrf": csrf})
    assert response.status_code == 303
    assert response.headers["location"] == f"/items/{item_id}"
    settings = response.headers.get_list("set-cookie")
    assert settings[0] == cookie_header(TOKEN)  # the launch URL's, as it sets it
    assert settings[1].startswith("wrighty_login=;")
    assert "Max-Age=0" in settings[1]
    assert TOKEN not in response.text
    page = console.client.get(response.headers["location"])
    assert page.status_code == 200
    assert html.escape(TITLE, quote=False) in page.text
    assert TOKEN not in page.text
    # logged in, the login page is not shown again
    assert (
        console.client.get("/login", headers=PAGE, follow_redirects=False).headers["location"]
        == "/"
    )


def test_a_secure_console_logs_in_with_a_secure_cookie(project_ctx: AppContext, clock: FakeClock):
    from starlette.testclient import TestClient

    from wrighty.cli.serve import DeskOpener
    from wrighty.operator.desk import board_settings
    from wrighty.web.app import WebSettings, create_app
    from wrighty.web.security import allowed_hosts

    settings = WebSettings(TOKEN, allowed_hosts("127.0.0.1", 8765), secure_cookie=True)
    app = create_app(DeskOpener(project_ctx, board_settings(project_ctx)), settings)
    with TestClient(app, base_url="https://127.0.0.1:8765") as client:
        page = client.get("/", headers=PAGE)
        assert page.headers["set-cookie"].endswith("; Secure")
        response = client.post(
            "/login",
            data={"token": TOKEN, "next": "/", "login_csrf": hidden(page.text, "login_csrf")},
            follow_redirects=False,
        )
        assert response.status_code == 303
        assert response.headers.get_list("set-cookie")[0] == cookie_header(TOKEN, secure=True)


def test_a_wrong_token_gets_the_form_again_and_never_what_was_typed(
    console: Console, clock: FakeClock
):
    item_id = an_item(console.app_ctx, clock)
    csrf, asked_for = asked(console, f"/items/{item_id}")
    response = log_in(console, {"token": TYPED, "next": asked_for, "login_csrf": csrf})
    assert response.status_code == 401
    page = response.text
    assert '<p class="flash refused" role="alert">wrong token</p>' in page
    assert TYPED not in page
    assert TYPED not in str(response.headers)
    assert TOKEN not in page
    assert hidden(page, "next") == f"/items/{item_id}"
    assert hidden(page, "login_csrf") != csrf  # a new one, in the cookie too
    assert console.client.cookies.get("wrighty_login") == hidden(page, "login_csrf")
    logged_out(console, item_id)


def test_a_read_only_console_still_logs_in(project_ctx: AppContext, clock: FakeClock):
    item_id = an_item(project_ctx, clock)
    console = make_console(project_ctx, project_ctx.cwd, read_only=True)
    with console.client:
        csrf, asked_for = asked(console, f"/items/{item_id}")
        response = log_in(console, {"token": TOKEN, "next": asked_for, "login_csrf": csrf})
        assert (response.status_code, response.headers["location"]) == (303, asked_for)
        assert console.client.get(asked_for).status_code == 200
        acted = console.client.post(
            f"/items/{item_id}/cancel", data={"csrf": csrf_token(TOKEN)}, follow_redirects=False
        )
        assert acted.status_code == 403  # still nothing else: logging in is no action


NOT_HERE = [
    "//evil.example",
    "//evil.example/items/1",
    "https://evil.example",
    "http:/evil.example",
    "/\\evil.example",
    "\\\\evil.example",
    "/\t/evil.example",
    "javascript:alert(1)",
    "evil.example",
    "items/1",
    "/items/1\r\nSet-Cookie: wrighty_token=x",
    "/items/1\x00",
    "/items/é",
    "/items/1 x",
    "/" + "a" * 5000,
    "",
    "/login",
    "/login?next=//evil.example",
]


@pytest.mark.parametrize("given", NOT_HERE, ids=range(len(NOT_HERE)))
def test_a_login_leads_only_to_a_page_of_this_console(
    console: Console, clock: FakeClock, given: str
):
    csrf, _ = asked(console, "/")
    response = log_in(console, {"token": TOKEN, "next": given, "login_csrf": csrf})
    assert response.status_code == 303
    assert response.headers["location"] == "/"


def test_a_page_with_a_query_is_led_back_to_whole(console: Console, clock: FakeClock):
    csrf, asked_for = asked(console, "/?state=review&agent=maker")
    assert asked_for == "/?state=review&agent=maker"
    response = log_in(console, {"token": TOKEN, "next": asked_for, "login_csrf": csrf})
    assert response.headers["location"] == "/?state=review&agent=maker"


def test_a_forged_login_form_is_403_and_logs_nobody_in(console: Console, clock: FakeClock):
    item_id = an_item(console.app_ctx, clock)
    csrf, _ = asked(console, f"/items/{item_id}")
    right = {"token": TOKEN, "next": "/"}
    for fields, cookie in (
        (right, csrf),  # no field
        ({**right, "login_csrf": csrf[:-1] + "x"}, csrf),  # another value
        ({**right, "login_csrf": csrf}, None),  # no cookie
        ({**right, "login_csrf": "short"}, "short"),  # too short to be one of ours
        ({**right, "login_csrf": ""}, ""),
    ):
        console.client.cookies.delete("wrighty_login", path="/login")
        console.client.cookies.delete("wrighty_login")
        if cookie is not None:
            console.client.cookies.set("wrighty_login", cookie, path="/login")
        response = log_in(console, fields)
        assert response.status_code == 403, fields
        assert response.text == (
            "forbidden: missing or wrong login form token; open the page again and log in from it\n"
        )
        assert "set-cookie" not in response.headers
        logged_out(console, item_id)
    # the session's CSRF token is not a login's
    response = log_in(console, {**right, "csrf": csrf_token(TOKEN)})
    assert response.status_code == 403


def test_a_wrong_host_is_400_for_the_login_page_and_its_post(console: Console, clock: FakeClock):
    item_id = an_item(console.app_ctx, clock)
    csrf, _ = asked(console, f"/items/{item_id}")
    page = console.client.get(f"/items/{item_id}", headers={**PAGE, "host": "evil.example"})
    assert (page.status_code, page.text) == (400, "wrong Host\n")
    assert "set-cookie" not in page.headers
    response = log_in(
        console, {"token": TOKEN, "next": "/", "login_csrf": csrf}, host="evil.example:8765"
    )
    assert (response.status_code, response.text) == (400, "wrong Host\n")
    assert "set-cookie" not in response.headers
    logged_out(console, item_id)


def test_a_malformed_login_form_is_one_line_and_changes_nothing(console: Console, clock: FakeClock):
    item_id = an_item(console.app_ctx, clock)
    fields_line = (
        "login: the form needs one `token` and one `next` field, as the login page posts them\n"
    )
    not_utf8 = "the form is not UTF-8 text: send its fields as UTF-8 (a browser does)\n"
    for rest, status, line in (
        (b"next=/", 400, fields_line),
        (f"token={TOKEN}".encode(), 400, fields_line),
        (f"token={TOKEN}&token=x&next=/".encode(), 400, fields_line),
        (f"token={TOKEN}&next=/&next=/x".encode(), 400, fields_line),
        (b"token=%FF&next=/", 400, not_utf8),
        (b"next=/&token=\xff", 400, not_utf8),
        (b"next=/&token=" + b"x" * MAX_BODY_BYTES, 413, "request body too large\n"),
    ):
        csrf, _ = asked(console, f"/items/{item_id}")
        response = log_in(console, f"login_csrf={csrf}&".encode() + rest)
        assert (response.status_code, response.text) == (status, line), rest[:80]
        assert "set-cookie" not in response.headers
        assert TOKEN not in response.text
        logged_out(console, item_id)
