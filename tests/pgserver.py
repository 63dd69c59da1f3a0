"""A PostgreSQL server of a test's own, made with the Debian packages' initdb and started with
the settings the test gives (say a `max_connections` lowered to 20), on a free port of
127.0.0.1, trusting every local user; stopped and removed afterwards. Without the programs the
test skips, or fails under WRIGHTY_REQUIRE_POSTGRES=1 (CI, where the packages are there)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.pgbouncer import free_port

BIN = sorted(Path("/usr/lib/postgresql").glob("*/bin"))


def _binaries_or_skip() -> Path:
    for folder in reversed(BIN):
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    if os.environ.get("WRIGHTY_REQUIRE_POSTGRES") == "1":
        pytest.fail("no initdb/pg_ctl under /usr/lib/postgresql, and CI requires them")
    pytest.skip("no initdb/pg_ctl under /usr/lib/postgresql")


@contextmanager
def own_server(**settings: str) -> Iterator[str]:
    """A new server with ``settings`` (``max_connections="20"``); yields the URL of its
    database `test` for the user `postgres`."""
    binaries = _binaries_or_skip()
    as_root = os.geteuid() == 0
    run_as = ["runuser", "-u", "postgres", "--"] if as_root else []
    with tempfile.TemporaryDirectory(prefix="wrighty-pg-") as made:
        folder = Path(made)
        if as_root:
            shutil.chown(folder, "postgres")
        data = folder / "data"
        subprocess.run(
            [*run_as, str(binaries / "initdb"), "-D", str(data), "-U", "postgres",
             "--auth=trust", "-E", "UTF8", "--no-sync"],
            check=True, capture_output=True,
        )  # fmt: skip
        port = free_port()
        options = " ".join(
            [f"-p {port}", "-c listen_addresses=127.0.0.1", f"-k {folder}", "-c fsync=off"]
            + [f"-c {name}={value}" for name, value in settings.items()]
        )
        subprocess.run(
            [*run_as, str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-l",
             str(folder / "log"), "-w", "-t", "60", "start"],
            check=True, capture_output=True,
        )  # fmt: skip
        try:
            url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
            import psycopg

            deadline = time.monotonic() + 30
            while True:
                try:
                    with psycopg.connect(url, autocommit=True) as admin:
                        admin.execute("CREATE DATABASE test")
                    break
                except psycopg.OperationalError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            yield f"postgresql://postgres@127.0.0.1:{port}/test"
        finally:
            subprocess.run(
                [*run_as, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                 "stop"],
                check=False, capture_output=True,
            )  # fmt: skip
