"""The notification sinks (wrighty/notify/sinks.py): Apprise URLs against a local HTTP server on
127.0.0.1, a command writing to a file; labels and ids that never show a secret; filters."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest

from wrighty.config import NotifySettings
from wrighty.domain.notices import Source, circuit_notice, notices_for, trial_notice
from wrighty.domain.outbox import Notice
from wrighty.notify.sinks import (
    CommandSinkRunner,
    apprise_failure,
    describe_url,
    sink_id,
    sinks_of,
    url_sink,
)

SECRET = "Hunter2Secret"
AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SOURCE = Source("inst-a", "w-0123456789ab")


@dataclass
class Receiver:
    """A local HTTP server: what Apprise posted to it, and the status it answers with."""

    port: int
    posts: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    status: int = 200

    def url(self, scheme: str = "json", path: str = f"/hook/{SECRET}") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def bodies(self) -> list[dict]:
        return [json.loads(body) for _, _, body in self.posts]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver(0)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            state.posts.append((self.path, dict(self.headers), self.rfile.read(length)))
            self.send_response(state.status)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def attention(reason_code: str = "agent-failure", item_id: int | None = 12) -> Notice:
    payload = {
        "id": "ntc-1",
        "event": "needs-attention",
        "events": ["needs-attention"],
        "at": "2026-11-30T09:00:00.000Z",
        "item": {"id": item_id, "title": "Fix the flaky test"},
        "state": "needs-attention",
        "reason_code": reason_code,
        "reason": "the agent failed (exit code 3); the workspace is kept",
        "next_action": f"wrighty requeue {item_id} --resume",
        "not_before": None,
        "installation_id": "inst-a",
        "worker_id": "w-0123456789ab",
    }
    return Notice(
        "ntc-1", "needs-attention", ("needs-attention",), AT, item_id, reason_code, payload
    )


def settings(**fields: object) -> NotifySettings:
    return NotifySettings.model_validate(fields)


# -- Apprise URLs ---------------------------------------------------------------------------


def test_a_json_url_gets_the_whole_payload_as_its_message(receiver: Receiver) -> None:
    [sink] = sinks_of(settings(urls=[receiver.url()]))
    notice = attention()
    assert sink.deliver(notice) is None
    [(path, headers, _)] = receiver.posts
    assert path == f"/hook/{SECRET}"
    assert headers["Content-Type"] == "application/json"
    [body] = receiver.bodies()
    assert body["title"] == "wrighty: needs-attention: item 12 Fix the flaky test"
    assert json.loads(body["message"]) == notice.payload  # every field, the id to dedupe on


def test_a_chat_url_gets_the_short_text(receiver: Receiver) -> None:
    """form:// stands in for a chat service here: it posts the title and the body as fields."""
    [sink] = sinks_of(settings(urls=[receiver.url("form")]))
    assert sink.deliver(attention()) is None
    [(_, _, raw)] = receiver.posts
    fields = urllib.parse.parse_qs(raw.decode())
    assert fields["title"] == ["wrighty: needs-attention: item 12 Fix the flaky test"]
    _title, body = attention().text()
    assert fields["message"] == [body]
    assert body.splitlines() == [
        "the agent failed (exit code 3); the workspace is kept",
        "next: wrighty requeue 12 --resume",
        "on inst-a by w-0123456789ab at 2026-11-30T09:00:00.000Z",
    ]


def test_a_url_from_the_environment_is_read_at_delivery(receiver: Receiver) -> None:
    environ: dict[str, str] = {}
    [sink] = sinks_of(settings(urls=[{"env": "WRIGHTY_TEST_HOOK"}]), environ=environ)
    assert sink.label() == "$WRIGHTY_TEST_HOOK (notify.urls.0, not set)"
    assert sink.deliver(attention()) == "the environment variable WRIGHTY_TEST_HOOK is not set"
    environ["WRIGHTY_TEST_HOOK"] = "  "
    assert sink.deliver(attention()) == "the environment variable WRIGHTY_TEST_HOOK is empty"
    environ["WRIGHTY_TEST_HOOK"] = receiver.url()
    assert sink.label() == (f"json://127.0.0.1:{receiver.port} (notify.urls.0, $WRIGHTY_TEST_HOOK)")
    assert sink.deliver(attention()) is None
    assert len(receiver.posts) == 1
    environ["WRIGHTY_TEST_HOOK"] = f"bogus://{SECRET}"
    why = sink.deliver(attention())
    assert why is not None
    assert why.startswith("$WRIGHTY_TEST_HOOK Apprise cannot read")
    assert SECRET not in why


def test_a_refusing_server_is_a_failure_that_quotes_no_url(receiver: Receiver) -> None:
    receiver.status = 503
    [sink] = sinks_of(settings(urls=[receiver.url()]))
    why = sink.deliver(attention())
    assert why == "Apprise did not send it: the service answered HTTP 503 Service Unavailable"


def test_an_unreachable_host_is_a_failure_without_its_name() -> None:
    [sink] = sinks_of(settings(urls=[f"json://{SECRET}.invalid/hook/{SECRET}"]))
    why = sink.deliver(attention())
    assert why == "Apprise did not send it: the service could not be reached"
    assert sink.label() == f"json://{SECRET.lower()}.invalid (notify.urls.0)"  # a host name


def test_apprises_log_reaches_no_handler_of_the_process(
    receiver: Receiver, capfd: pytest.CaptureFixture[str]
) -> None:
    """Apprise logs the URL it posts to (at debug level): no handler of wrighty's process, the
    root logger's included, sees its records, whatever the level."""
    receiver.status = 404
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    root = logging.getLogger()
    handler, level = Keep(logging.DEBUG), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        [sink] = sinks_of(settings(urls=[receiver.url()]))
        assert sink.deliver(attention()) is not None
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert [message for message in seen if SECRET in message] == []
    out, err = capfd.readouterr()
    assert SECRET not in out + err


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"slack://T1JJ3T3L2/A1BRTD4JD/{SECRET}", "slack://"),
        (f"tgram://123456789:{SECRET}/", "tgram://"),
        (f"ntfy://{SECRET}-topic", "ntfy://"),
        (f"ntfys://user:{SECRET}@ntfy.example.com/topic", "ntfys://"),
        (f"discord://1234/{SECRET}", "discord://"),
        (
            f"json://user:{SECRET}@hooks.example.com:8443/x/{SECRET}",
            "json://hooks.example.com:8443",
        ),
        (f"mailtos://me:{SECRET}@mail.example.com?to=a@example.com", "mailtos://mail.example.com"),
        (f"json://[::1]:9/{SECRET}", "json://[::1]:9"),
        (f"json://127.0.0.1:99999999/{SECRET}", "json://"),  # an unreadable port: scheme only
        (SECRET, "a URL without a scheme"),
        ("dbus://", "dbus://"),
    ],
)
def test_a_label_shows_the_scheme_and_a_host_name_only(url: str, shown: str) -> None:
    assert describe_url(url) == shown
    assert SECRET not in describe_url(url)


def test_sink_ids_follow_the_destination_not_the_filter() -> None:
    one = sinks_of(settings(urls=[f"json://h/{SECRET}"], command=["notify", SECRET]))
    filtered = sinks_of(
        settings(
            urls=[{"url": f"json://h/{SECRET}", "events": ["done"]}],
            command={"argv": ["notify", SECRET], "timeoutSeconds": 5, "reasonCodes": ["x"]},
        )
    )
    other = sinks_of(settings(urls=[f"json://h/{SECRET}2"], command=["notify", "other"]))
    assert [s.id for s in one] == [s.id for s in filtered]
    assert [s.id for s in one] != [s.id for s in other]
    assert one[0].id.startswith("urls.0:")
    assert one[1].id.startswith("command:")
    for sink in one:
        assert SECRET not in sink.id
        assert len(sink.id.split(":")[1]) == 8
    by_env = sinks_of(settings(urls=[{"env": "A"}, {"env": "B"}]))
    assert by_env[0].id != by_env[1].id
    assert sink_id("urls.0", "x") == sink_id("urls.0", "x") != sink_id("urls.1", "x")


# -- filters --------------------------------------------------------------------------------


def test_a_sink_gets_its_events_and_its_reason_codes() -> None:
    default, done_only, billing = sinks_of(
        settings(
            urls=[
                "json://h/a",
                {"url": "json://h/b", "events": ["done"]},
                {"url": "json://h/c", "reasonCodes": ["billing"]},
            ]
        )
    )
    assert default.wants(attention())
    assert not done_only.wants(attention())
    assert not billing.wants(attention("agent-failure"))
    assert billing.wants(attention("billing"))
    opened = circuit_notice(
        "agent:claude@inst-a", until=AT, reason="rate-limited", failures=1, at=AT, source=SOURCE
    )
    assert default.wants(opened)
    assert billing.wants(opened)  # about no item: a reason-code filter lets it pass
    assert not done_only.wants(opened)


def test_notify_events_is_the_default_of_every_sink() -> None:
    [sink, command] = sinks_of(settings(urls=["json://h/a"], command=["x"], events=["done"]))
    assert not sink.wants(attention())
    assert not command.wants(attention())


def test_a_url_given_on_the_command_line_gets_everything() -> None:
    sink = url_sink(f"slack://T1/A1/{SECRET}")
    assert sink.label() == "slack:// (--url)"
    assert sink.wants(trial_notice(SOURCE, at=AT))
    assert sink.wants(attention())


def test_sinks_come_in_the_order_of_the_file() -> None:
    sinks = sinks_of(settings(urls=["json://h/a", {"env": "X"}], command=["/usr/bin/notifier"]))
    assert [s.label() for s in sinks] == [
        "json://h (notify.urls.0)",
        "$X (notify.urls.1, not set)",
        "command notifier (notify.command)",
    ]
    assert sinks_of(settings()) == []


# -- the command --------------------------------------------------------------------------------


def command(tmp_path: Path, script: str, timeout: float = 10) -> CommandSinkRunner:
    path = tmp_path / "sink.py"
    path.write_text(script)
    [sink] = sinks_of(
        settings(command={"argv": [sys.executable, str(path)], "timeoutSeconds": timeout})
    )
    assert isinstance(sink, CommandSinkRunner)
    return sink


def test_the_command_gets_the_payload_on_stdin(tmp_path: Path) -> None:
    out = tmp_path / "got.jsonl"
    sink = command(
        tmp_path,
        f"import sys\nopen({str(out)!r}, 'a').write(sys.stdin.read())\nprint('noise')\n",
    )
    notice = attention()
    assert sink.deliver(notice) is None
    assert [json.loads(line) for line in out.read_text().splitlines()] == [notice.payload]
    assert sink.label().startswith("command python")
    assert sink.label().endswith(" (notify.command)")


def test_a_command_that_fails_says_how(tmp_path: Path) -> None:
    assert command(tmp_path, "import sys\nsys.exit(3)\n").deliver(attention()) == (
        "exited with status 3"
    )
    killed = command(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    assert killed.deliver(attention()) == "was killed by SIGTERM"
    [missing] = sinks_of(settings(command=[str(tmp_path / "no-such-program")]))
    why = missing.deliver(attention())
    assert why == f"cannot start the program: '{tmp_path / 'no-such-program'}' not found"


def test_a_command_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    sink = command(
        tmp_path,
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(60)\n",
        timeout=1,
    )
    started = time.monotonic()
    assert sink.deliver(attention()) == "did not finish within 1 s and was killed"
    assert time.monotonic() - started < 10
    for pid in map(int, pids.read_text().split()):
        deadline = time.monotonic() + 5
        while psutil.pid_exists(pid) and time.monotonic() < deadline:
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    break
            except psutil.NoSuchProcess:
                break
            time.sleep(0.05)
        else:
            assert not psutil.pid_exists(pid)


def test_a_command_that_reads_nothing_still_works(tmp_path: Path) -> None:
    assert command(tmp_path, "pass\n").deliver(attention()) is None


def test_a_command_gets_no_shell(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    [sink] = sinks_of(settings(command=["echo", f"; touch {marker}"]))
    assert sink.deliver(attention()) is None
    assert not marker.exists()
    assert os.path.basename("echo") in sink.label()


# -- what errors may say ----------------------------------------------------------------------


def test_apprises_words_are_sorted_into_wrightys_own() -> None:
    """Only the kind of failure is kept: an HTTP status the service answered (a known code,
    with its standard phrase), a connection that failed, or neither; never Apprise's text."""
    said = f"Failed to send JSON POST notification to /hook/{SECRET}: Forbidden., error=403."
    answered = "Apprise did not send it: the service answered HTTP 403 Forbidden"
    assert apprise_failure([said]) == answered
    reached = f"A Connection error occurred sending JSON notification to {SECRET}.invalid."
    assert apprise_failure([reached]) == "Apprise did not send it: the service could not be reached"
    assert apprise_failure([f"error=999. {SECRET}", f"Token {SECRET} refused"]) == (
        "Apprise did not send it"
    )
    assert apprise_failure([]) == "Apprise did not send it"
    assert apprise_failure([said, f"bad token {SECRET}"]) == answered


def test_a_sink_filters_on_ready_for_review() -> None:
    """An item ready for review reaches the sinks that name the event, and those that name
    none (a default event: it waits for a person); not one that names only others, nor one
    whose reason codes it lacks."""
    from tests.unit.test_notices import in_review

    [review] = notices_for(in_review(), SOURCE, branch="wrighty/7-x", diff_stat="")
    default, reviews, others, billing = sinks_of(
        settings(
            urls=[
                "json://h/a",
                {"url": "json://h/b", "events": ["ready-for-review"]},
                {"url": "json://h/c", "events": ["needs-attention", "done"]},
            ],
            command={"argv": ["x"], "events": ["ready-for-review"], "reasonCodes": ["billing"]},
        )
    )
    assert default.wants(review)
    assert reviews.wants(review)
    assert not reviews.wants(attention())
    assert not others.wants(review)
    assert not billing.wants(review)
    [quiet] = sinks_of(settings(urls=["json://h/a"], events=["needs-attention"]))
    assert not quiet.wants(review)  # notify.events without it: no sink of its default gets it
