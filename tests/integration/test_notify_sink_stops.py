"""A notify command never outlives its worker (docs/notifications.md#the-outbox): a real worker
process, a real sink that hangs with children of its own (one in its process group, one that
left it with setsid). When the worker exits, by --once or by SIGTERM, every process of the sink
is gone and the notice it held is let go, so that `notify flush` delivers it at once; when the
worker is SIGKILLed, the sink's program dies with it (a parent-death signal)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest

from tests.helpers import process_ended

HANG = """#!/bin/sh
echo $$ >> "{pids}"
sleep 600 &
echo $! >> "{pids}"
setsid sleep 601 &
echo $! >> "{pids}"
wait
"""
DELIVER = """#!/bin/sh
cat >> "{out}"
"""


def _project(root: Path, sink: str) -> tuple[Path, Path]:
    root.mkdir()
    script, pids = root / "notify-sink.sh", root / "sink.pids"
    script.write_text(sink.format(pids=pids, out=root / "delivered.jsonl"))
    script.chmod(0o755)
    document = {
        "worker": {"defaultAgent": "failing", "pollSeconds": 0.05, "heartbeatSeconds": 0.2,
                   "leaseSeconds": 5, "workspaceMode": "directory"},
        "agents": {"failing": {"adapter": "command",
                               "command": [sys.executable, "-c", "import sys; sys.exit(4)"]}},
        "notify": {"command": {"argv": [str(script)], "timeoutSeconds": 600}},
    }  # fmt: skip
    (root / "wrighty.json").write_text(json.dumps(document))
    return script, pids


def _env(root: Path, mark: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    env["XDG_CONFIG_HOME"] = str(root / "config-home")
    env["WR_SINK_MARK"] = mark  # every process the worker starts inherits it
    return env


def _wrighty(root: Path, mark: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "wrighty", "--config", str(root / "wrighty.json"), *args],
        cwd=root, env=_env(root, mark), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _run(root: Path, mark: str, *args: str) -> tuple[int, str, str]:
    process = _wrighty(root, mark, *args)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def _marked(mark: str) -> list[int]:
    """The live processes that carry the mark in their environment."""
    needle = f"WR_SINK_MARK={mark}".encode()
    found = []
    for pid in psutil.pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                marked = needle in handle.read().split(b"\0")
            if marked and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                found.append(pid)
        except (OSError, psutil.Error):
            continue
    return found


def _sink_started(pids: Path, count: int) -> bool:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if pids.exists() and len(pids.read_text().split()) >= count:
            return True
        time.sleep(0.05)
    return False


def _notice(root: Path) -> tuple[str, str, int, str | None]:
    with sqlite3.connect(root / ".wrighty" / "wrighty.db") as db:
        [row] = db.execute("SELECT id, state, attempts, claimed_by FROM notices").fetchall()
    return row


def _queue_a_failing_item(root: Path, mark: str) -> None:
    assert _run(root, mark, "init")[0] == 0
    code, _, err = _run(root, mark, "create", "--title", "Fix it", "--body", "go", "--queue")
    assert code == 0, err


def _flush_delivers_it(root: Path, mark: str, script: Path, notice_id: str) -> None:
    script.write_text(DELIVER.format(out=root / "delivered.jsonl"))  # the sink is fixed
    code, out, err = _run(root, mark, "notify", "flush")
    assert (code, out) == (
        0,
        "delivered 1 notifications, 0 failed (retried later), 0 given up\n",
    ), err
    [delivered] = [json.loads(line) for line in (root / "delivered.jsonl").read_text().splitlines()]
    assert delivered["id"] == notice_id


def _all_gone(pids: Path, mark: str) -> None:
    for pid in map(int, pids.read_text().split()):
        assert process_ended(pid), pid
    assert _marked(mark) == []


@pytest.mark.slow
def test_a_once_worker_leaves_no_sink_process_and_lets_the_notice_go(tmp_path: Path) -> None:
    root, mark = tmp_path / "project", uuid.uuid4().hex
    script, pids = _project(root, HANG)
    _queue_a_failing_item(root, mark)
    code, out, err = _run(root, mark, "worker", "start", "--once", "--json")
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    [released] = [e for e in events if e["event"] == "notify-released"]
    assert (released["attempts"], released["recorded"]) == (0, True)
    assert len(pids.read_text().split()) == 3  # the sink and its two children had started
    _all_gone(pids, mark)
    notice_id, state, attempts, claimed_by = _notice(root)
    assert (notice_id, state, attempts, claimed_by) == (released["notice_id"], "pending", 0, None)
    _flush_delivers_it(root, mark, script, notice_id)


@pytest.mark.slow
def test_a_worker_stopped_by_sigterm_leaves_no_sink_process(tmp_path: Path) -> None:
    root, mark = tmp_path / "project", uuid.uuid4().hex
    script, pids = _project(root, HANG)
    _queue_a_failing_item(root, mark)
    worker = _wrighty(root, mark, "worker", "start", "--json")
    try:
        assert _sink_started(pids, 3)
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    finally:
        worker.kill()
        worker.wait()
    assert worker.returncode == 130, err  # stopped cleanly by a signal (docs/cli.md)
    assert "notify-released" in out
    _all_gone(pids, mark)
    notice_id, state, attempts, claimed_by = _notice(root)
    assert (state, attempts, claimed_by) == ("pending", 0, None)
    _flush_delivers_it(root, mark, script, notice_id)


@pytest.mark.slow
def test_a_sigkilled_worker_takes_its_sink_program_with_it(tmp_path: Path) -> None:
    """SIGKILL leaves no time to kill a tree: the sink's program gets the parent-death signal
    (what it started in turn may outlive it, docs/notifications.md); the notice's claim
    expires on schedule."""
    root, mark = tmp_path / "project", uuid.uuid4().hex
    _, pids = _project(root, '#!/bin/sh\necho $$ >> "{pids}"\nexec sleep 600\n')
    _queue_a_failing_item(root, mark)
    worker = _wrighty(root, mark, "worker", "start", "--json")
    try:
        assert _sink_started(pids, 1)
        worker.send_signal(signal.SIGKILL)
        worker.communicate(timeout=60)
    finally:
        worker.kill()
        worker.wait()
    _all_gone(pids, mark)


class _Webhook:
    """A json:// sink's server: the notice ids Apprise posted to it, in order."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.lock = threading.Lock()
        webhook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with webhook.lock:
                    webhook.ids.append(json.loads(body["message"])["id"])
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.server.server_address[1]}/hook"

    def got(self) -> list[str]:
        with self.lock:
            return list(self.ids)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _notices(root: Path) -> list[tuple[str, str, int, str | None, list[str]]]:
    with sqlite3.connect(root / ".wrighty" / "wrighty.db") as db:
        rows = db.execute(
            "SELECT id, state, attempts, claimed_by, delivered_to FROM notices ORDER BY created_at"
        ).fetchall()
    return [(i, state, n, by, json.loads(to)) for i, state, n, by, to in rows]


@pytest.mark.slow
def test_a_hung_command_holds_up_no_other_sink(tmp_path: Path) -> None:
    """Each sink delivers independently. A json:// sink gets every notice while the
    command sink still hangs on the first one (it has started once, and is still running); the
    hung command is then handled as before: the worker's stop kills its process tree and lets
    its notices go, and the json:// sink, which has them, is not sent them again."""
    root, mark = tmp_path / "project", uuid.uuid4().hex
    script, pids = _project(root, HANG)
    webhook = _Webhook()
    try:
        document = json.loads((root / "wrighty.json").read_text())
        document["notify"]["urls"] = [webhook.url]
        (root / "wrighty.json").write_text(json.dumps(document))
        _queue_a_failing_item(root, mark)
        for title in ("Fix that", "Fix the rest"):
            code, _, err = _run(root, mark, "create", "--title", title, "--body", "go", "--queue")
            assert code == 0, err
        worker = _wrighty(root, mark, "worker", "start", "--json")
        try:
            deadline = time.monotonic() + 60
            while len(webhook.got()) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            sink_pid = int(pids.read_text().split()[0])
            # Every notice reached the webhook while the command is still on its first one.
            assert len(webhook.got()) == 3, webhook.got()
            assert not process_ended(sink_pid)
            assert len(pids.read_text().split()) == 3  # one run of the command, still hung
            worker.send_signal(signal.SIGTERM)
            out, err = worker.communicate(timeout=60)
        finally:
            worker.kill()
            worker.wait()
        assert worker.returncode == 130, err
        events = [json.loads(line) for line in out.splitlines()]
        released = [e["notice_id"] for e in events if e["event"] == "notify-released"]
        notices = _notices(root)
        assert sorted(released) == sorted(webhook.got()) == sorted(n[0] for n in notices)
        _all_gone(pids, mark)  # the hung command's whole tree, as before
        for _, state, attempts, claimed_by, delivered_to in notices:
            assert (state, attempts, claimed_by, len(delivered_to)) == ("pending", 0, None, 1)
        # Fixed, the command gets each of them; the webhook has them already.
        script.write_text(DELIVER.format(out=root / "delivered.jsonl"))
        code, out, err = _run(root, mark, "notify", "flush")
        assert (code, out) == (
            0,
            "delivered 3 notifications, 0 failed (retried later), 0 given up\n",
        ), err
        lines = (root / "delivered.jsonl").read_text().splitlines()
        assert sorted(json.loads(line)["id"] for line in lines) == sorted(webhook.got())
        assert len(webhook.got()) == 3
    finally:
        webhook.close()
