"""The Sink contract (wrighty/notify/sinks.py), held against both sinks: an Apprise URL that
posts to a local HTTP server on 127.0.0.1, and a command that appends what it reads to a file.
Each destination can be made to refuse, and each holds a secret in its address."""

from __future__ import annotations

import json
import math
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from wrighty.config import NotifySettings
from wrighty.domain.outbox import Notice
from wrighty.notify.sinks import Sink, sinks_of

SECRET = "Hunter2Secret"
AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
APPEND_STDIN = (
    "import sys\n"
    "open(sys.argv[1], 'a').write(sys.stdin.read() + '\\n')\n"
    "sys.exit(0 if sys.argv[3] == 'ok' else 3)\n"
)


@dataclass
class Destination:
    """Where one kind of sink delivers on this machine: how wrighty.json writes a sink that
    reaches it (or is refused), and the payloads it received."""

    kind: str
    tmp_path: Path
    port: int = 0
    posts: list[bytes] = field(default_factory=list)

    def sink(self, *, ok: bool = True, events: list[str] | None = None) -> Sink:
        answer = "ok" if ok else "fail"
        entry: dict[str, object]
        if self.kind == "apprise":
            entry = {"url": f"json://127.0.0.1:{self.port}/{answer}/{SECRET}"}
            fields: dict[str, object] = {"urls": [{**entry, "events": events}]}
        else:
            script = self.tmp_path / "sink.py"
            script.write_text(APPEND_STDIN)
            argv = [sys.executable, str(script), str(self.tmp_path / "got"), SECRET, answer]
            fields = {"command": {"argv": argv, "events": events}}
        [sink] = sinks_of(NotifySettings.model_validate(fields))
        return sink

    def received(self) -> list[object]:
        if self.kind == "apprise":
            return [json.loads(json.loads(body)["message"]) for body in self.posts]
        got = self.tmp_path / "got"
        lines = got.read_text().splitlines() if got.exists() else []
        return [json.loads(line) for line in lines if line]


@pytest.fixture(params=["apprise", "command"])
def destination(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Destination]:
    state = Destination(request.param, tmp_path)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            refused = self.path.startswith("/fail/")
            if not refused:
                state.posts.append(body)
            self.send_response(500 if refused else 200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield state
    server.shutdown()
    server.server_close()


def attention() -> Notice:
    payload = {
        "id": "ntc-1",
        "event": "needs-attention",
        "events": ["needs-attention"],
        "at": "2026-11-30T09:00:00.000Z",
        "item": {"id": 12, "title": "Fix the flaky test"},
        "state": "needs-attention",
        "reason_code": "agent-failure",
        "reason": "the agent failed (exit code 3); the workspace is kept",
        "next_action": "wrighty requeue 12 --resume",
        "not_before": None,
        "installation_id": "inst-a",
        "worker_id": "w-0123456789ab",
    }
    return Notice(
        "ntc-1", "needs-attention", ("needs-attention",), AT, 12, "agent-failure", payload
    )


def test_a_delivery_that_went_out_answers_none_and_the_destination_has_the_payload(
    destination: Destination,
) -> None:
    notice = attention()
    assert destination.sink().deliver(notice) is None
    assert destination.received() == [notice.payload]


def test_a_refused_delivery_is_a_reason_in_wrightys_words_without_a_secret(
    destination: Destination,
) -> None:
    why = destination.sink(ok=False).deliver(attention())
    assert isinstance(why, str)
    assert why
    assert SECRET.lower() not in why.lower()
    assert destination.received() in ([], [attention().payload])  # the command read it, failed


def test_the_label_never_holds_a_secret(destination: Destination) -> None:
    label = destination.sink().label()
    assert label
    assert SECRET.lower() not in label.lower()
    assert "\n" not in label


def test_the_id_follows_the_destination_not_the_filter(destination: Destination) -> None:
    every = destination.sink()
    filtered = destination.sink(events=["done"])
    assert every.id == filtered.id
    assert destination.sink(ok=False).id != every.id
    assert SECRET.lower() not in every.id.lower()


def test_a_sink_wants_what_its_filter_takes(destination: Destination) -> None:
    assert destination.sink(events=["needs-attention"]).wants(attention())
    assert not destination.sink(events=["done"]).wants(attention())


def test_a_delivery_has_a_time_bound(destination: Destination) -> None:
    bound = destination.sink().time_bound_seconds
    assert bound > 0
    assert math.isfinite(bound)
