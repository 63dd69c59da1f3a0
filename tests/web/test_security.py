"""The console's guard, decision by decision, without a server (wrighty/web/security.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wrighty.errors import WrightyError
from wrighty.web import security
from wrighty.web.security import (
    allowed_hosts,
    cookie_token,
    csrf_ok,
    csrf_token,
    gate,
    post_ok,
    token_from_file,
    token_ok,
)

TOKEN = "t" * 43
ALLOWED = allowed_hosts("127.0.0.1", 8765, ["console.example"])


def decide(**overrides: object):
    request: dict[str, object] = {
        "method": "GET",
        "path": "/",
        "query": "",
        "host": "127.0.0.1:8765",
        "cookie": f"wrighty_token={TOKEN}",
        "token": TOKEN,
        "allowed": ALLOWED,
    }
    request.update(overrides)
    return gate(**request)  # type: ignore[arg-type]


def test_a_valid_cookie_passes_and_anything_else_is_401():
    assert decide().passes
    for cookie in (None, "", "wrighty_token=", f"wrighty_token={TOKEN}x", "other=1", "=;;="):
        refused = decide(cookie=cookie)
        assert (refused.status, refused.passes) == (401, False), cookie


def test_the_token_in_the_query_logs_in_and_leaves_the_address():
    login = decide(cookie=None, path="/items/3", query=f"token={TOKEN}&state=queued")
    assert login.redirect == "/items/3?state=queued"
    assert login.set_cookie == TOKEN
    assert (
        security.cookie_header(TOKEN) == f"wrighty_token={TOKEN}; HttpOnly; SameSite=Strict; Path=/"
    )
    for query in (f"token={TOKEN}x", "token=", f"token={TOKEN}&token={TOKEN}"):
        assert decide(cookie=None, query=query).status == 401, query
    assert decide(method="POST", cookie=None, query=f"token={TOKEN}").status == 401


def test_a_login_redirect_stays_on_this_server():
    for path, expected in (
        ("//evil.example/x", "/evil.example/x"),
        ("/a\r\nSet-Cookie: x", "/a%0D%0ASet-Cookie%3A%20x"),
    ):
        login = decide(cookie=None, path=path, query=f"token={TOKEN}")
        assert login.redirect == expected


def test_a_page_without_a_session_is_asked_for_and_led_back_to():
    html = "text/html,application/xhtml+xml,*/*;q=0.8"
    for path, query, expected in (
        ("/items/3", "", "/items/3"),
        ("/", "state=review", "/?state=review"),
        ("//evil.example/\r\nSet-Cookie: x", "", "/evil.example/%0D%0ASet-Cookie%3A%20x"),
        ("/\\evil.example", "", "/evil.example"),
        ("/items/3", "q=\u00e9", "/items/3"),  # a query that is not one: the page alone
        ("/login", "", "/"),
    ):
        asked = decide(cookie=None, path=path, query=query, accept=html)
        assert (asked.status, asked.ask, asked.passes) == (401, expected, False), path
    for accept in (None, "*/*", "text/event-stream", "application/json"):
        refused = decide(cookie=None, path="/items/3", accept=accept)
        assert (refused.status, refused.ask) == (401, None), accept
    assert decide(cookie=None, method="HEAD", accept=html).ask is None
    assert decide(cookie=None, method="POST", path="/login").login
    assert decide(cookie=None, method="POST", path="/login", host="evil.example").status == 400
    assert decide(path="/login").redirect == "/"  # logged in already


def test_the_host_is_checked_before_anything_else():
    for host in (
        "127.0.0.1:8765",
        "localhost:8765",
        "[::1]:8765",
        "console.example",
        "console.example:8765",
    ):
        assert decide(host=host).passes, host
    for host in (None, "evil.example", "127.0.0.1:8766", "127.0.0.1", "evil.example:8765"):
        refused = decide(host=host, cookie=None)
        assert (refused.status, refused.message) == (400, "wrong Host"), host


def test_a_remote_bind_answers_its_own_address_only():
    assert allowed_hosts("192.0.2.7", 80) == frozenset({"192.0.2.7:80"})
    assert "[::1]:9000" in allowed_hosts("::1", 9000)


def test_csrf_is_an_hmac_of_the_token_compared_whole():
    good = csrf_token(TOKEN)
    assert good != TOKEN
    assert TOKEN not in good
    assert csrf_ok(good, TOKEN)
    assert not csrf_ok(good[:-1], TOKEN)
    assert not csrf_ok(csrf_token("u" * 43), TOKEN)
    assert not csrf_ok(None, TOKEN)
    form = "application/x-www-form-urlencoded"
    assert post_ok(header=None, body=f"csrf={good}&x=1".encode(), content_type=form, token=TOKEN)
    assert post_ok(header=good, body=b"", content_type=None, token=TOKEN)
    assert not post_ok(
        header=None, body=f"csrf={good}".encode(), content_type="text/plain", token=TOKEN
    )
    assert not post_ok(
        header="forged", body=f"csrf={good}".encode(), content_type=form, token=TOKEN
    )
    assert not post_ok(header=None, body=b"\xff\xfe", content_type=form, token=TOKEN)
    assert not post_ok(header=None, body=b"csrf=forged", content_type=form, token=TOKEN)


def test_token_compare_takes_any_text():
    assert token_ok(TOKEN, TOKEN)
    assert not token_ok("\udcff", TOKEN)
    assert cookie_token('wrighty_token="unterminated') is None


def test_a_token_file_is_made_private_and_kept(tmp_path: Path):
    path = tmp_path / "token"
    made = token_from_file(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert token_from_file(path) == made
    assert len(made) >= 32


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644])
def test_a_token_file_others_may_read_is_refused(tmp_path: Path, mode: int):
    path = tmp_path / "token"
    token_from_file(path)
    os.chmod(path, mode)
    with pytest.raises(WrightyError, match="group or others"):
        token_from_file(path)


def test_a_token_file_without_a_token_is_refused(tmp_path: Path):
    path = tmp_path / "token"
    path.write_text("short\n")
    os.chmod(path, 0o600)
    with pytest.raises(WrightyError, match="does not hold a token"):
        token_from_file(path)
    with pytest.raises(WrightyError, match="cannot create"):
        token_from_file(tmp_path / "missing" / "token")


def test_the_cookie_is_marked_secure_when_asked():
    """--secure-cookie: a browser sends the session cookie over HTTPS only (docs/web.md)."""
    assert security.cookie_header(TOKEN, secure=True) == (
        f"wrighty_token={TOKEN}; HttpOnly; SameSite=Strict; Path=/; Secure"
    )
