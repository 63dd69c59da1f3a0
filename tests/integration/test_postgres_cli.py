"""wrighty on a PostgreSQL store, end to end through the real command: init, a worker run,
status; the URL's password never shows, and a store that is not there is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import postgres_or_skip, postgres_schema

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "hunter2-not-a-real-password"


def run(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    return subprocess.run(
        [sys.executable, "-m", "wrighty", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def with_password(url: str) -> str:
    # trust authentication ignores it; wrighty must still never print or store it
    return url.replace("postgres@", f"postgres:{PASSWORD}@", 1)


@pytest.mark.slow
def test_a_project_on_postgresql_runs_an_item_and_reports_status(tmp_path: Path) -> None:
    with postgres_schema() as url:
        secret_url = with_password(url)
        initialised = run(tmp_path, "init", "--store", secret_url)
        assert initialised.returncode == 0, initialised.stderr
        config = json.loads((tmp_path / "wrighty.json").read_text())
        assert config["store"]["url"].startswith("postgresql://postgres@127.0.0.1:5432/test?")
        assert PASSWORD not in (tmp_path / "wrighty.json").read_text()
        agent = [sys.executable, str(ROOT / "examples" / "agent.py")]
        config["agents"] = {"example": {"adapter": "command", "command": agent}}
        config["worker"]["defaultAgent"] = "example"
        config["worker"]["workspaceMode"] = "directory"
        (tmp_path / "wrighty.json").write_text(json.dumps(config))
        created = run(tmp_path, "create", "--title", "t", "--queue", "--json",
                      stdin="wrighty-example: succeed")  # fmt: skip
        assert created.returncode == 0, created.stderr
        worked = run(tmp_path, "worker", "start", "--once", "--json")
        assert worked.returncode == 0, worked.stderr
        shown = json.loads(run(tmp_path, "show", "1", "--json").stdout)
        assert shown["state"] == "done"
        assert shown["runs"][0]["outcome_class"] == "succeeded"
        status = run(tmp_path, "--store", secret_url, "status", "--json")
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["counts"]["done"] == 1
        outputs = [initialised, created, worked, status]
        assert all(PASSWORD not in p.stdout + p.stderr for p in outputs)


def test_a_postgresql_store_that_is_not_there_is_refused_without_secrets(tmp_path: Path) -> None:
    with postgres_schema() as url:
        missing = run(tmp_path, "--store", with_password(url), "list")
        assert missing.returncode == 2
        assert "no wrighty store in this database; run `wrighty init" in missing.stderr
        assert PASSWORD not in missing.stderr
    refused = run(tmp_path, "--store", f"postgresql://postgres:{PASSWORD}@127.0.0.1:1/x", "list")
    assert refused.returncode == 2
    assert refused.stderr.startswith("wrighty: postgresql://postgres@127.0.0.1:1/x: ")
    assert PASSWORD not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


@contextmanager
def _absent_schema() -> Iterator[tuple[str, str]]:
    """A schema name nobody has made yet, and the server's URL; dropped afterwards if made."""
    import psycopg

    server = postgres_or_skip()
    schema = f"wrighty_fresh_{uuid.uuid4().hex[:12]}"
    try:
        yield server, schema
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _schema_exists(server: str, schema: str) -> bool:
    import psycopg

    with psycopg.connect(server) as connection:
        found = connection.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)
        ).fetchone()
    return found is not None


def test_init_creates_the_schema_the_url_names(tmp_path: Path) -> None:
    with _absent_schema() as (server, schema):
        url = f"{server}?options=-csearch_path%3D{schema}"
        listed = run(tmp_path, "--store", url, "list")
        assert listed.returncode == 2
        assert "no wrighty store in this database; run `wrighty init" in listed.stderr
        assert not _schema_exists(server, schema)  # only init creates it
        initialised = run(tmp_path, "init", "--store", url)
        assert initialised.returncode == 0, initialised.stderr
        assert _schema_exists(server, schema)
        created = run(tmp_path, "create", "--title", "t", "--body", "b")
        assert created.returncode == 0, created.stderr
        again = run(tmp_path, "init")
        assert again.returncode == 0, again.stderr
        assert json.loads(run(tmp_path, "list", "--json").stdout)[0]["title"] == "t"


def test_init_by_a_user_who_may_not_create_the_schema_says_how_in_one_line(
    tmp_path: Path,
) -> None:
    import psycopg

    with _absent_schema() as (server, schema):
        role = f"wrighty_nocreate_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"CREATE ROLE {role} LOGIN")
        try:
            url = server.replace("postgres@", f"{role}@", 1)
            refused = run(tmp_path, "init", "--store", f"{url}?options=-csearch_path%3D{schema}")
        finally:
            with psycopg.connect(server, autocommit=True) as admin:
                admin.execute(f"DROP ROLE {role}")
        assert refused.returncode == 2
        assert refused.stderr.splitlines() == [
            f"wrighty: postgresql://{role}@127.0.0.1:5432/test: schema '{schema}' does not "
            f'exist and this user may not create it; have its owner run CREATE SCHEMA "{schema}" '
            "(and grant this user CREATE on it), then `wrighty init` again"
        ]
        assert not _schema_exists(server, schema)
        assert not (tmp_path / "wrighty.json").exists()
