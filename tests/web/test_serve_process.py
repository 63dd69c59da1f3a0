"""`wrighty serve` as a real process: the URL it prints, a login with it, the board, a stop;
and its output never holds the token after the first line (no access log of the login)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.cli.conftest import wrighty
from tests.helpers import installed_wrighty
from tests.inbox.conftest import make_project
from wrighty.cli.serve import web_install_command

pytestmark = pytest.mark.slow


def test_serve_prints_the_url_once_and_never_logs_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    project = make_project(tmp_path / "project", monkeypatch)
    assert (
        wrighty("create", "--title", "Seen on the board", "--body", "b", "--queue").exit_code == 0
    )
    process = subprocess.Popen(
        [installed_wrighty(), "serve", "--port", "0"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        base, token = url.split("/?token=")
        said = process.stdout.readline()
        assert "listening on 127.0.0.1:" in said
        assert len(token) >= 43
        with httpx.Client(base_url=base, timeout=10) as client:
            login = client.get(f"/?token={token}", follow_redirects=False)
            assert login.status_code == 303
            assert login.headers["location"] == "/"
            board = client.get("/")
            assert board.status_code == 200
            assert "Seen on the board" in board.text
            client.get(f"/items/1?token={token}")  # a second login, and a bad one
            client.get("/?token=wrong")
            client.cookies.clear()
            assert client.get("/").status_code == 401
    finally:
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=20)
    assert process.returncode == 0, rest
    rest = said + rest  # everything after the URL's line
    assert token not in rest
    assert rest.endswith("wrighty serve: stopped\n")
    assert "Traceback" not in rest


def test_serve_answers_the_public_url_s_host_with_the_login_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    project = make_project(tmp_path / "project", monkeypatch)
    config = json.loads((project / "wrighty.json").read_text())
    config["serve"] = {"publicUrl": "https://Phone.example:8443/"}
    (project / "wrighty.json").write_text(json.dumps(config))
    process = subprocess.Popen(
        [installed_wrighty(), "serve", "--port", "0"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        base = process.stdout.readline().strip().split("/?token=")[0]
        page = {"accept": "text/html"}
        with httpx.Client(base_url=base, timeout=10) as client:
            asked = client.get("/items/1", headers={**page, "host": "phone.example:8443"})
            assert asked.status_code == 401
            assert 'action="/login"' in asked.text
            other = client.get("/items/1", headers={**page, "host": "phone.example"})
            assert (other.status_code, other.text) == (400, "wrong Host\n")
    finally:
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=20)
    assert process.returncode == 0, rest


def test_serve_refuses_a_remote_bind_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    project = make_project(tmp_path / "project", monkeypatch)
    done = subprocess.run(
        [installed_wrighty(), "serve", "--bind", "0.0.0.0", "--port", "0"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ},
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "--allow-remote" in done.stderr


def test_serve_without_its_libraries_says_how_to_get_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import sys

    make_project(tmp_path / "project", monkeypatch)
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # an import of it fails
    result = wrighty("serve", "--port", "0")
    assert result.exit_code == 2
    # This wrighty is the clone's, installed editable (`pip install -e '.[test]'`): the command
    # adds the extra from the clone, where `pip install 'wrighty[web]'` would look on PyPI.
    clone = Path(__file__).resolve().parents[2]
    assert result.output == (
        f"wrighty: wrighty serve needs uvicorn: pip install -e '{clone}[web]' (docs/web.md)\n"
    )


def test_a_request_that_sends_half_its_body_is_answered_408_and_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A client that sends its headers and half the body it announced, then waits: the
    server answers 408 once --body-timeout has passed and closes the connection, rather than
    keep it open for ever. The test waits for the close, with a generous deadline."""
    import socket

    project = make_project(tmp_path / "project", monkeypatch)
    process = subprocess.Popen(
        [installed_wrighty(), "serve", "--port", "0", "--body-timeout", "1s", "--secure-cookie"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        base, token = url.split("/?token=")
        process.stdout.readline()
        with httpx.Client(base_url=base, timeout=10) as client:
            login = client.get(f"/?token={token}", follow_redirects=False)
        assert login.headers["set-cookie"].endswith("; Secure")
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=60) as raw:
            raw.sendall(
                f"POST /items/1/cancel HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"Cookie: wrighty_token={token}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                "Content-Length: 1000\r\n\r\ncsrf=".encode()
            )
            answer = b""
            while chunk := raw.recv(65536):  # until the server closes (60 s at most)
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert b"request body not received whole within 1 s" in answer
    finally:
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=20)
    assert process.returncode == 0, rest


@pytest.mark.parametrize(
    ("direct_url", "command"),
    [
        (None, "pip install 'wrighty[web]'"),  # from an index
        ('{"url": "file:///src/wrighty", "dir_info": {}}', "pip install '/src/wrighty[web]'"),
        ('{"url": "file:///src/my%20clone", "dir_info": {"editable": true}}',
         "pip install -e '/src/my clone[web]'"),
        ('{"url": "https://example.com/w.whl", "archive_info": {}}', "pip install 'wrighty[web]'"),
        ("not json", "pip install 'wrighty[web]'"),
    ],
)  # fmt: skip
def test_the_web_extra_is_installed_the_way_wrighty_was(direct_url: str | None, command: str):
    assert web_install_command(direct_url) == command
