"""PgBouncer (Debian's package, which .ci/run installs) in front of the tests' PostgreSQL server,
started by a test the way the server itself is there: on a free port of 127.0.0.1, trusting
the user `postgres`, in the pool mode the test asks for. Without the program the test skips,
or fails under WRIGHTY_REQUIRE_PGBOUNCER=1 (CI)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import SplitResult, urlsplit

import pytest

from tests.conftest import postgres_or_skip

PROGRAM = "pgbouncer"


@dataclass(frozen=True)
class Bouncer:
    port: int
    log: Path

    def url(self, direct: str) -> str:
        """``direct`` (a test's store URL) through this PgBouncer."""
        parts = urlsplit(direct)
        host = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        return parts._replace(netloc=f"{host}127.0.0.1:{self.port}").geturl()


def program_or_skip() -> str:
    found = shutil.which(PROGRAM) or (
        f"/usr/sbin/{PROGRAM}" if Path(f"/usr/sbin/{PROGRAM}").exists() else None
    )
    if found is None:
        if os.environ.get("WRIGHTY_REQUIRE_PGBOUNCER") == "1":
            pytest.fail("no pgbouncer, and WRIGHTY_REQUIRE_PGBOUNCER=1 requires it")
        pytest.skip("no pgbouncer: apt-get install pgbouncer")
    return found


def free_port() -> int:
    """A port of 127.0.0.1 nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def pgbouncer(
    *,
    mode: str = "transaction",
    server_pool: int = 2,
    max_clients: int = 200,
    server_url: str | None = None,
) -> Iterator[Bouncer]:
    """PgBouncer in ``mode`` in front of the tests' server (or ``server_url``'s),
    ``server_pool`` server connections per database and user at most, ``max_clients`` clients
    at most; its files in a folder of its own that the user it runs as (postgres, when the
    tests run as root) can reach."""
    program = program_or_skip()
    server = urlsplit(server_url or postgres_or_skip())
    with tempfile.TemporaryDirectory(prefix="wrighty-pgbouncer-") as made:
        yield from _run(program, server, Path(made), mode, server_pool, max_clients)


def _run(
    program: str, server: SplitResult, folder: Path, mode: str, server_pool: int, max_clients: int
) -> Iterator[Bouncer]:
    port = free_port()
    (folder / "users.txt").write_text('"postgres" ""\n')
    config = folder / "pgbouncer.ini"
    config.write_text(
        "[databases]\n"
        f"* = host={server.hostname} port={server.port or 5432} user=postgres\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {folder / 'users.txt'}\npool_mode = {mode}\n"
        f"default_pool_size = {server_pool}\nmax_client_conn = {max_clients}\n"
        f"logfile = {folder / 'pgbouncer.log'}\npidfile = {folder / 'pgbouncer.pid'}\n"
    )
    as_user = ["-u", "postgres"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(folder, "postgres")
        for path in folder.iterdir():
            shutil.chown(path, "postgres")
    process = subprocess.Popen([program, *as_user, str(config)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"pgbouncer did not start: {(folder / 'pgbouncer.log').read_text()}"
                )
            time.sleep(0.02)
        yield Bouncer(port, folder / "pgbouncer.log")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
