"""Store URLs that cannot be used: one line, exit 2, and never the password, whichever way the URL
came (--store, WRIGHTY_STORE, wrighty.json) and wherever it failed (reading it, connecting)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.cli.test_executable import run
from tests.conftest import POSTGRES_URL

SECRET = "Hunter2Secret"
SERVER = POSTGRES_URL.removeprefix("postgresql://").split("/", 1)[0].split("@")[-1]

# (URL, what the line says); the server is the suite's PostgreSQL where one is needed, and a
# failure to reach it is a failure just as good for this test.
BAD_URLS = [
    (f"postgresql://u:{SECRET}@[::1", "postgresql://u@[::1: cannot read the URL (end of string"),
    (f"postgresql://u:{SECRET}%zz@{SERVER}/test", "invalid percent-encoded token"),
    (f"postgresql://u@{SERVER}/test?password={SECRET}%zz", "invalid percent-encoded token"),
    (f"postgresql://u:{SECRET}@{SERVER}/test?bogus=1", 'invalid URI query parameter: "bogus"'),
    (f"postgresql://u:{SECRET}/x@{SERVER}/test", f"u@{SERVER}/test: cannot read the URL: it has"),
    (f"postgresql://u:p@{SECRET}@{SERVER}/test", "percent-encode them (%40, %2F)"),
    (f"postgresql://u:{SECRET}@127.0.0.1:99999/test", 'invalid port number: "99999"'),
    (f"postgresql://u:{SECRET}@127.0.0.1:1/test", "postgresql://u@127.0.0.1:1/test: "),
    (f"postgresql://u:{SECRET}@no-such-host.invalid/test", "no-such-host.invalid"),
    (f"postgresql://u:{SECRET}@{SERVER}/test?sslmode=bogus", 'invalid sslmode value: "bogus"'),
    (f"postgres://u:{SECRET}@127.0.0.1:1/test", "postgresql://u@127.0.0.1:1/test: "),
    (f"postgresql://postgres:{SECRET}@{SERVER}/no_such_db", "no_such_db"),
    (f"host=127.0.0.1 dbname=test password={SECRET}", "write it as a URL"),
    (f"dbname=test user=postgres password = {SECRET}", "key=value settings"),
    (f"postgresql:/u:{SECRET}@{SERVER}/test", "starts with postgresql:// (two slashes)"),
    (f"mysql://u:{SECRET}@{SERVER}/test", "unsupported store URL scheme in 'mysql:'"),
]


def refused_without_secret(result_stdout: str, result_stderr: str, exit_code: int) -> str:
    assert exit_code == 2, result_stdout + result_stderr
    assert SECRET not in result_stdout + result_stderr
    lines = result_stderr.splitlines()
    assert len(lines) == 1, result_stderr
    assert lines[0].startswith("wrighty: ")
    return lines[0]


@pytest.mark.parametrize(("url", "message"), BAD_URLS)
@pytest.mark.parametrize("command", [["list"], ["init"]])
def test_a_bad_store_url_is_one_line_without_its_password(
    project: Path, url: str, message: str, command: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    result = wrighty("--store", url, *command)
    line = refused_without_secret(result.stdout, result.stderr, result.exit_code)
    assert message in line
    assert all(SECRET not in record.getMessage() for record in caplog.records)
    assert list(project.iterdir()) == [project / ".git"]  # init made nothing


def test_a_password_from_the_environment_is_never_shown(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGPASSWORD", SECRET)
    monkeypatch.setenv("WRIGHTY_STORE", f"postgresql://postgres@{SERVER}/no_such_db")
    result = wrighty("list")
    assert "no_such_db" in refused_without_secret(result.stdout, result.stderr, result.exit_code)


def test_the_installed_command_shows_no_traceback_for_a_malformed_url(project: Path) -> None:
    result = run(project, "--store", f"postgresql://u:{SECRET}@[::1", "list")
    line = refused_without_secret(result.stdout, result.stderr, result.returncode)
    assert "end of string reached when looking for matching" in line


@pytest.mark.parametrize(("url", "message"), [BAD_URLS[0], BAD_URLS[-1], BAD_URLS[-3]])
def test_config_validate_checks_the_store_url_as_every_command_does(
    project: Path, url: str, message: str
) -> None:
    (project / "wrighty.json").write_text(json.dumps({"store": {"url": url}}))
    validated = wrighty("config", "validate")
    assert validated.exit_code == 2
    assert validated.stdout.startswith("store.url: ")
    assert message in validated.stdout
    assert SECRET not in validated.stdout + validated.stderr
    listed = wrighty("list")
    line = refused_without_secret(listed.stdout, listed.stderr, listed.exit_code)
    assert line.startswith(f"wrighty: {project / 'wrighty.json'}: store.url: ")


@pytest.mark.parametrize("url", ["mysql://u@db/test", "redis://cache/0", "sqlserver:x"])
def test_an_unknown_scheme_names_both_stores_url_forms(project: Path, url: str) -> None:
    result = wrighty("--store", url, "list")
    line = refused_without_secret(result.stdout, result.stderr, result.exit_code)
    assert "sqlite:///path/to/wrighty.db" in line
    assert "postgresql://USER@HOST:PORT/DBNAME" in line
