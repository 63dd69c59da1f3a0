"""One stalled worker never stops the others (docs/claims.md, "A row held by a stalled
transaction"). Worker A reaches PostgreSQL through a proxy that stops forwarding A's bytes once
its lease renewal's UPDATE went through: the UPDATE reached the server, its COMMIT never does,
and A's session sits idle in transaction holding the item's row. Worker B, direct, keeps
claiming and settling new items meanwhile; `wrighty reap` returns at once; A's lease guard stops
A's agent before its lease ends; and once the server has ended A's session
(idle_in_transaction_session_timeout), B reaps A's item."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.conftest import postgres_schema
from tests.faults.proxy import FaultProxy
from tests.helpers import wait_for
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.store.postgres import PostgresStore

ROOT = Path(__file__).resolve().parents[2]
# Sleeps as long as its task says; on SIGTERM, writes the wall time it got it to a file named
# by its pid in $SIGTERM_RECORDS, then exits.
AGENT = [
    sys.executable,
    "-c",
    (
        "import os, signal, sys, time\n"
        "def stopped(*_):\n"
        "    path = os.path.join(os.environ['SIGTERM_RECORDS'], str(os.getpid()))\n"
        "    with open(path, 'w') as record:\n"
        "        record.write(repr(time.time()))\n"
        "    sys.exit(143)\n"
        "signal.signal(signal.SIGTERM, stopped)\n"
        "time.sleep(float(sys.stdin.read() or 0))\n"
    ),
]
# Bytes only the renewal's UPDATE carries (wrighty/store/sql/postgresql/queries.sql, renew_lease).
RENEWAL = b"greatest(lease_expires_at, least("
GIVE_UP_SECONDS = 60  # only for a broken build: a wait that would otherwise never end


class Worker:
    """`wrighty worker start --json` in a project of its own, its events read as they come."""

    def __init__(self, root: Path, name: str, url: str, *args: str) -> None:
        project = root / name
        project.mkdir()
        document = {
            "store": {"url": url},
            "worker": {"defaultAgent": "example", "workspaceMode": "directory",
                       "leaseSeconds": 2, "heartbeatSeconds": 0.4, "pollSeconds": 0.1},
            "agents": {"example": {"adapter": "command", "command": AGENT}},
        }  # fmt: skip
        (project / "wrighty.json").write_text(json.dumps(document))
        env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
        env["XDG_CONFIG_HOME"] = str(root / f"{name}-config")
        env["SIGTERM_RECORDS"] = str(root)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "wrighty", "worker", "start", "--json", *args],
            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,))
        self._reader.start()

    def _read(self, stdout: IO[str] | None) -> None:
        assert stdout is not None
        for line in stdout:
            if line.startswith("{"):
                self.events.append(json.loads(line))

    def named(self, name: str) -> list[dict[str, Any]]:
        return [event for event in list(self.events) if event["event"] == name]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=GIVE_UP_SECONDS)
        finally:
            self.process.kill()
            self.process.wait()
            self._reader.join()


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    faults = FaultProxy()
    yield faults
    faults.close()


def test_a_worker_stalled_inside_its_renewal_holds_up_no_one(
    tmp_path: Path, proxy: FaultProxy
) -> None:
    with postgres_schema() as url:
        store = PostgresStore.open(url, create=True)
        workers: list[Worker] = []
        fresh: list[int] = []
        try:
            held = store.create_item(
                NewItem("a's", "30", None, None, None, ItemState.QUEUED),
                at=datetime.now(UTC), actor="test",
            )  # fmt: skip
            proxy.hold_after(RENEWAL)
            a = Worker(tmp_path, "a", _through(url, proxy), "--once")
            workers.append(a)
            wait_for(lambda: proxy.held() > 0, timeout=GIVE_UP_SECONDS, what="A's renewal is held")
            b = Worker(tmp_path, "b", url)
            workers.append(b)
            wait_for(
                lambda: held.id in [i.id for i in store.expired_claims(now=_now(), limit=10)],
                timeout=GIVE_UP_SECONDS,
                what="A's lease has ended",
            )
            lease_end = _get(store, held.id).lease_expires_at  # the last that A committed
            [a_agent] = [e["pid"] for e in a.named("spawned")]
            record = tmp_path / str(a_agent)
            wait_for(record.exists, timeout=GIVE_UP_SECONDS, what="A's agent got SIGTERM")

            reap = subprocess.run(
                [sys.executable, "-m", "wrighty", "--store", url, "reap", "--json"],
                capture_output=True, text=True, timeout=GIVE_UP_SECONDS, check=False,
            )  # fmt: skip
            assert (reap.returncode, json.loads(reap.stdout)) == (0, []), reap.stderr
            assert _get(store, held.id).state is ItemState.RUNNING  # skipped, not waited for

            for n in range(2):
                fresh.append(
                    store.create_item(NewItem(f"b's {n}", "", None, None, None, ItemState.QUEUED),
                                      at=_now(), actor="test").id
                )  # fmt: skip
            wait_for(
                lambda: all(_get(store, i).state is ItemState.DONE for i in fresh),
                timeout=GIVE_UP_SECONDS,
                what="B settles the new items",
            )
            wait_for(
                lambda: _get(store, held.id).state is not ItemState.RUNNING,
                timeout=GIVE_UP_SECONDS,
                what="A's item is reaped",
            )
        finally:
            for worker in workers:
                worker.stop()
            after = _get(store, held.id)
            history = {i: store.list_events(i) for i in (held.id, *fresh)}
            store.close()
    # B settled the new items before A's item could be reaped: it never waited on A's row.
    [reaped] = [e for e in history[held.id] if e.actor == "reaper"]
    settled = [e.at for i in fresh for e in history[i] if e.to_state is ItemState.DONE]
    assert len(settled) == 2
    assert max(settled) < reaped.at
    assert after.reason_code == "worker-lost"
    assert {e["item_id"] for e in b.named("settled")} == set(fresh)
    # A's agent was stopped before the lease the store held ended (its own record of SIGTERM),
    # so no other agent ever ran the item while it lived (B may run it once reaped).
    stopped_at = datetime.fromtimestamp(float(record.read_text()), UTC)
    assert lease_end is not None
    assert stopped_at < lease_end
    assert all(stopped_at < _time(e["at"]) for e in b.named("spawned") if e["item_id"] == held.id)


def _through(url: str, proxy: FaultProxy) -> str:
    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    query = f"{parts.query}&application_name=wrighty-held-{uuid.uuid4().hex[:8]}"
    return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{proxy.port}", query=query))


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _now() -> datetime:
    return datetime.now(UTC)


def _get(store: PostgresStore, item_id: int) -> Any:
    item = store.get_item(item_id)
    assert item is not None
    return item
