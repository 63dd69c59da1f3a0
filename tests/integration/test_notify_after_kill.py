"""A notice outlives the worker that wrote it (docs/notifications.md, the outbox): a worker
SIGKILLed after its settle committed and before delivering leaves the notice in the store, and
the workers started next deliver it exactly once, racing on one store (a SQLite file, or one
PostgreSQL database). Real `wrighty worker start` processes, a real agent process, an Apprise
json:// sink on a local HTTP server and a command sink appending to a file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import postgres_schema
from tests.unit.test_notify_sinks import Receiver
from wrighty.store.port import Store

WORKERS_RACING = 3


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        from wrighty.store.sqlite import SqliteStore

        path = tmp_path / "project" / ".wrighty" / "wrighty.db"
        SqliteStore.open(path).close()  # as `wrighty init` would
        yield f"sqlite:///{path}"
        return
    with postgres_schema() as url:
        from wrighty.store.postgres import PostgresStore

        PostgresStore.open(url, create=True).close()  # as `wrighty init --store URL` would
        yield url


def _project(root: Path, store_url: str, receiver: Receiver) -> Path:
    root.mkdir(exist_ok=True)
    sink = root / "sink.jsonl"
    appender = "import sys; open(sys.argv[1], 'a').write(sys.stdin.read() + '\\n')"
    document = {
        "store": {"url": store_url},
        "worker": {"defaultAgent": "failing", "pollSeconds": 0.05, "heartbeatSeconds": 0.2,
                   "leaseSeconds": 2, "workspaceMode": "directory"},
        "agents": {"failing": {"adapter": "command",
                               "command": [sys.executable, "-c", "import sys; sys.exit(4)"]}},
        "notify": {"urls": [receiver.url()],
                   "command": [sys.executable, "-c", appender, str(sink)]},
    }  # fmt: skip
    (root / "wrighty.json").write_text(json.dumps(document))
    return sink


def _wrighty(root: Path, *args: str, pause: bool = False) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    env["XDG_CONFIG_HOME"] = str(root / "config-home")
    if pause:
        env["WRIGHTY_NOTIFY_PAUSE"] = "1"
    return subprocess.Popen(
        [sys.executable, "-m", "wrighty", "--config", str(root / "wrighty.json"), *args],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _until_event(worker: subprocess.Popen[str], name: str) -> dict[str, Any]:
    assert worker.stdout is not None
    for line in worker.stdout:
        event = json.loads(line)
        if event["event"] == name:
            return event
    raise AssertionError(f"the worker ended before {name}: {worker.wait()} {worker.stderr}")


def _open(store_url: str) -> Store:
    if store_url.startswith("sqlite:///"):
        from wrighty.store.sqlite import SqliteStore

        return SqliteStore.open(Path(store_url.removeprefix("sqlite:///")))
    from wrighty.store.postgres import PostgresStore

    return PostgresStore.open(store_url)


@pytest.mark.slow
def test_a_notice_written_before_a_sigkill_is_delivered_once_by_the_racing_next_workers(
    tmp_path: Path, store_url: str, receiver: Receiver
) -> None:
    root = tmp_path / "project"
    sink = _project(root, store_url, receiver)
    created = _wrighty(root, "create", "--title", "Fix the flaky test", "--body", "go", "--queue")
    assert created.wait(30) == 0, created.stderr.read() if created.stderr else ""
    # A worker whose delivery is held back settles the item, and is killed right after.
    first = _wrighty(root, "worker", "start", "--json", pause=True)
    try:
        settled = _until_event(first, "settled")
        assert settled["state"] == "needs-attention"
        first.send_signal(signal.SIGKILL)
        assert first.wait(10) == -signal.SIGKILL
    finally:
        first.kill()
        first.wait()
    assert receiver.posts == []
    assert not sink.exists()
    store = _open(store_url)
    try:
        [pending] = store.list_notices(["pending"])
    finally:
        store.close()
    assert pending.notice.event == "needs-attention"
    # The next workers race for it, on the same store: one of them delivers it, once.
    racers = [
        _wrighty(root, "worker", "start", "--json", "--idle-timeout", "2s")
        for _ in range(WORKERS_RACING)
    ]
    for racer in racers:
        assert racer.wait(60) == 0, racer.stderr.read() if racer.stderr else ""
        for stream in (racer.stdout, racer.stderr):
            if stream:
                stream.close()
    posted = [json.loads(body["message"]) for body in receiver.bodies()]
    commanded = [json.loads(line) for line in sink.read_text().splitlines() if line.strip()]
    assert [p["id"] for p in posted] == [pending.notice.id]
    assert [c["id"] for c in commanded] == [pending.notice.id]
    [event] = commanded
    assert (event["event"], event["reason_code"]) == ("needs-attention", "agent-failure")
    assert event["next_action"] == f"wrighty requeue {event['item']['id']} --fresh"
    assert event["item"]["title"] == "Fix the flaky test"
    store = _open(store_url)
    try:
        assert store.list_notices(["pending", "given-up"]) == []
        [delivered] = store.list_notices(["delivered"])
        assert len(delivered.delivered_to) == 2  # both sinks
    finally:
        store.close()
