"""A worker's notifications end to end (docs/notifications.md): real agent processes, a real
SQLite store, an Apprise json:// sink on a local HTTP server and a command sink writing to a
file. A failing item's notice arrives once, right after the settle commits; a slow sink never
delays a settle; the pause hook leaves the notice to the next worker; no secret gets out."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import wait_for
from tests.integration.harness import WorkerProject
from tests.unit.test_notify_sinks import SECRET, Receiver
from wrighty.domain.model import Item, NewItem
from wrighty.domain.states import ItemState
from wrighty.notify.delivery import DeliveryThread
from wrighty.worker.loop import WorkerOptions

API_KEY = "sk-ant-api03-" + "Zq9Wx8Ev7Rt6" * 4
AGENT = """
import sys
code = sys.stdin.read()
exec(compile(code, "<task>", "exec"))
"""


class Project(WorkerProject):
    @property
    def sink_file(self) -> Path:
        """Where the command sink writes what it is told."""
        return self.root.parent / "commanded.jsonl"

    def item(self, code: str, title: str = "Fix the flaky test") -> Item:
        return self.store.create_item(
            NewItem(title, textwrap.dedent(code), None, None, str(self.root), ItemState.QUEUED),
            at=datetime.now(UTC),
            actor="op",
        )

    def commanded(self) -> list[dict[str, Any]]:
        if not self.sink_file.exists():
            return []
        return [json.loads(line) for line in self.sink_file.read_text().splitlines()]


# The command sink: writes what it is told to the sink file; a held one first waits until
# the test makes the release file (or gives up after a minute).
SINK = """
import os, sys, time
data = sys.stdin.read()
if {held}:
    deadline = time.monotonic() + 60
    while not os.path.exists({release!r}) and time.monotonic() < deadline:
        time.sleep(0.02)
open({sink_file!r}, "a").write(data)
"""


def notifying(
    make_project: Callable[..., Project], tmp_path: Path, hook: Receiver, *, held: bool = False
) -> Project:
    """A project whose agent runs each item's body as Python and whose notices go to ``hook``
    and to the command sink (held until the test releases it, if ``held``)."""
    root = tmp_path / "project"
    root.mkdir()
    sink_file = tmp_path / "commanded.jsonl"
    release = str(tmp_path / "release")
    (root / "sink.py").write_text(SINK.format(held=held, release=release, sink_file=str(sink_file)))
    sink = {"argv": [sys.executable, str(root / "sink.py")], "timeoutSeconds": 90}
    made = make_project(
        kind=Project, programs={"fake": ("agent.py", AGENT)}, worker={"pollSeconds": 0.05},
        notify={"urls": [hook.url()], "command": sink},
    )  # fmt: skip
    assert made.sink_file == sink_file
    return made


@pytest.fixture
def project(make_project: Callable[..., Project], tmp_path: Path, receiver: Receiver) -> Project:
    return notifying(make_project, tmp_path, receiver)


class Running:
    """A worker running in a thread until stopped."""

    def __init__(self, project: Project) -> None:
        self.worker = project.worker()
        self.thread = threading.Thread(target=self.worker.run, args=(WorkerOptions(),))
        self.thread.start()

    def stop(self) -> None:
        self.worker.request_stop()
        self.thread.join(30)
        assert not self.thread.is_alive()


FAILING = "sys.exit(3)\n"


def test_a_failing_item_is_told_once_right_after_it_settles(
    project: Project,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The deliverer's own looks (every 5 s) come only once an hour here: a delivery within
    # wait_for's minute was woken by the settlement.
    defaults = DeliveryThread.__init__.__kwdefaults__
    assert defaults is not None
    monkeypatch.setitem(defaults, "interval_seconds", 3600.0)
    item = project.item(FAILING)
    running = Running(project)
    try:
        wait_for(lambda: project.named("notify-delivered"), timeout=60, what="notify-delivered")
        assert project.named("settled") != []
    finally:
        running.stop()
    [posted] = receiver.bodies()
    payload = json.loads(posted["message"])
    assert payload == project.commanded()[0]  # the same event, the same id, to every sink
    assert payload["event"] == "needs-attention"
    assert payload["item"] == {"id": item.id, "title": "Fix the flaky test"}
    assert payload["reason_code"] == "agent-failure"
    assert payload["reason"] == "the agent failed (exit code 3); the workspace is kept"
    assert payload["next_action"] == f"wrighty requeue {item.id} --fresh"
    assert payload["worker_id"] == project.named("started")[0]["worker_id"]
    assert posted["title"] == f"wrighty: needs-attention: item {item.id} Fix the flaky test"
    [stored] = project.store.list_notices(["delivered"])
    assert stored.notice.id == payload["id"]
    assert len(stored.delivered_to) == 2
    assert len(receiver.posts) == 1  # once
    assert project.store.list_notices(["pending", "given-up"]) == []


def test_a_slow_sink_never_delays_a_settle(
    make_project: Callable[..., Project],
    tmp_path: Path,
    receiver: Receiver,
) -> None:
    project = notifying(make_project, tmp_path, receiver, held=True)
    try:
        project.item(FAILING)
        project.item(FAILING)
        running = Running(project)
        try:
            wait_for(lambda: len(project.named("settled")) == 2, timeout=60, what="two settlements")
            # Both items ran and settled while the command sink still held the first notice,
            # and so did its delivery: it waits for every sink.
            assert project.commanded() == []
            assert project.named("notify-delivered") == []
            (tmp_path / "release").touch()
            wait_for(lambda: len(project.commanded()) == 2, timeout=60, what="two commands")
        finally:
            running.stop()
        assert len(receiver.posts) == 2
        assert len(project.named("notify-delivered")) == 2
    finally:
        project.store.close()


def test_paused_the_worker_writes_and_the_next_worker_delivers(
    project: Project,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project.item(FAILING)
    monkeypatch.setenv("WRIGHTY_NOTIFY_PAUSE", "1")
    project.worker().run(WorkerOptions(once=True, stop_grace_seconds=1))
    assert project.named("notify-paused") != []
    assert receiver.posts == []
    [pending] = project.store.list_notices(["pending"])
    assert pending.attempts == 0
    monkeypatch.delenv("WRIGHTY_NOTIFY_PAUSE")
    project.events.clear()
    project.worker().run(WorkerOptions(once=True, stop_grace_seconds=1))  # nothing to claim
    assert len(receiver.posts) == 1
    assert json.loads(receiver.bodies()[0]["message"])["id"] == pending.notice.id
    assert project.store.list_notices(["pending"]) == []


def test_a_failing_sink_does_not_fail_the_worker_and_is_retried_later(
    project: Project,
    receiver: Receiver,
) -> None:
    receiver.status = 500
    project.item(FAILING)
    project.worker().run(WorkerOptions(once=True, stop_grace_seconds=1))
    [failed] = project.named("notify-failed")
    assert failed["state"] == "pending"
    assert failed["error"].startswith(f"json://127.0.0.1:{receiver.port} (notify.urls.0): ")
    assert len(project.commanded()) == 1  # the command sink has it; a retry goes to the URL only
    [stored] = project.store.list_notices(["pending"])
    assert stored.attempts == 1
    [item] = project.store.list_items()
    assert item.state is ItemState.NEEDS_ATTENTION


def test_no_secret_of_the_item_or_the_url_gets_out(
    project: Project,
    receiver: Receiver,
) -> None:
    receiver.status = 403
    project.item(f"print({API_KEY!r})\nsys.exit(3)\n", title=f"Rotate the key {API_KEY}")
    project.worker().run(WorkerOptions(once=True, stop_grace_seconds=1))
    shown = json.dumps(project.events) + json.dumps(project.commanded())
    shown += "".join(body.decode() for _, _, body in receiver.posts)
    for stored in project.store.list_notices(["pending", "delivered", "given-up"]):
        shown += json.dumps(stored.notice.payload) + (stored.last_error or "")
        shown += "".join(stored.delivered_to)
    assert API_KEY not in shown
    assert SECRET not in shown
    assert "[REDACTED]" in json.dumps(project.commanded())
