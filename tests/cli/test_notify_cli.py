"""`wrighty notify test`, `notify pending` and `notify flush` (docs/cli.md#wrighty-notify-test),
against a local HTTP server on 127.0.0.1 and a command writing to a file."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

from tests.cli.conftest import wrighty
from tests.conftest import FakeClock
from tests.helpers import snapshot
from tests.unit.test_notify_sinks import SECRET, Receiver, receiver  # noqa: F401
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.notices import RETRY_FIRST_SECONDS
from wrighty.domain.outbox import Notice
from wrighty.store.sqlite import SqliteStore

NOTICE_KEYS = [
    "id", "event", "events", "created_at", "item_id", "reason_code", "state", "attempts",
    "next_attempt_at", "delivered_to", "last_error", "claimed_by", "claim_expires_at",
    "finished_at", "payload",
]  # fmt: skip


def configure(project: Path, **notify: object) -> None:
    path = project / "wrighty.json"
    document = json.loads(path.read_text())
    document["notify"] = notify
    path.write_text(json.dumps(document))


def command_sink(project: Path, *, exit_code: int = 0) -> tuple[list[str], Path]:
    out = project / "commanded.jsonl"
    script = project / "sink.py"
    script.write_text(
        f"import sys\nopen({str(out)!r}, 'a').write(sys.stdin.read())\nsys.exit({exit_code})\n"
    )
    return [sys.executable, str(script)], out


def store_of(project: Path) -> SqliteStore:
    return SqliteStore.open(project / ".wrighty" / "wrighty.db")


def add_notice(project: Path, clock: FakeClock, number: int = 1, **payload: object) -> Notice:
    notice_id = f"ntc-cli-{number}"
    body = {
        "id": notice_id, "event": "needs-attention", "events": ["needs-attention"],
        "item": {"id": number, "title": "t"}, "reason": "the agent failed",
        "next_action": f"wrighty requeue {number} --fresh", "installation_id": "inst-a",
        "worker_id": None, "at": "2026-11-30T09:00:00.000Z", **payload,
    }  # fmt: skip
    notice = Notice(notice_id, "needs-attention", ("needs-attention",), clock(), number,
                    "agent-failure", body)  # fmt: skip
    store = store_of(project)
    assert store.add_notice_once(notice)
    store.close()
    return notice


# -- notify test ------------------------------------------------------------------------------


def test_a_test_message_goes_through_every_sink(
    initialised: Path,
    receiver: Receiver,  # noqa: F811
) -> None:
    argv, out = command_sink(initialised)
    configure(initialised, urls=[receiver.url()], command=argv)
    result = wrighty("notify", "test")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"json://127.0.0.1:{receiver.port} (notify.urls.0): sent",
        "command " + Path(sys.executable).name + " (notify.command): sent",
    ]
    [posted] = receiver.bodies()
    message = json.loads(posted["message"])
    assert message["event"] == "test"
    assert message == json.loads(out.read_text())
    assert SECRET not in result.output


def test_a_sink_that_fails_the_test_says_why_and_exits_1(
    initialised: Path,
    receiver: Receiver,  # noqa: F811
) -> None:
    receiver.status = 500
    argv, _ = command_sink(initialised, exit_code=4)
    configure(initialised, urls=[receiver.url(), {"env": "WRIGHTY_TEST_UNSET_URL"}], command=argv)
    result = wrighty("notify", "test")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"json://127.0.0.1:{receiver.port} (notify.urls.0): failed: ")
    assert lines[1] == (
        "$WRIGHTY_TEST_UNSET_URL (notify.urls.1, not set): failed: the environment variable "
        "WRIGHTY_TEST_UNSET_URL is not set"
    )
    assert lines[2].endswith("(notify.command): failed: exited with status 4")
    assert SECRET not in result.output


def test_url_tries_one_url_instead_of_the_sinks(
    initialised: Path,
    receiver: Receiver,  # noqa: F811
) -> None:
    result = wrighty("notify", "test", "--url", receiver.url())
    assert result.exit_code == 0, result.output
    assert result.stdout == f"json://127.0.0.1:{receiver.port} (--url): sent\n"
    assert len(receiver.posts) == 1


def test_url_apprise_cannot_use_is_refused_without_its_secret(initialised: Path) -> None:
    result = wrighty("notify", "test", "--url", f"slack://{SECRET}")
    assert result.exit_code == 2
    assert result.stderr.startswith("wrighty: --url Apprise cannot use this slack:// URL")
    assert SECRET not in result.output


def test_without_sinks_there_is_nothing_to_test(initialised: Path) -> None:
    result = wrighty("notify", "test")
    assert result.exit_code == 2
    assert "no notification sinks are configured" in result.stderr
    assert "--url" in result.stderr


# -- notify pending ---------------------------------------------------------------------------


def test_pending_lists_what_is_not_delivered(
    initialised: Path, clock: FakeClock, receiver: Receiver  # noqa: F811
) -> None:  # fmt: skip
    assert wrighty("notify", "pending").stdout == "no notifications waiting\n"
    assert json.loads(wrighty("notify", "pending", "--json").stdout) == []
    receiver.status = 500
    configure(initialised, urls=[receiver.url()], maxAttempts=2)
    add_notice(initialised, clock, 1)
    add_notice(initialised, clock, 2)
    assert wrighty("notify", "flush").exit_code == 1
    clock.advance(RETRY_FIRST_SECONDS)
    wrighty("notify", "flush")  # the second attempt: given up
    add_notice(initialised, clock, 3)
    shown = json.loads(wrighty("notify", "pending", "--json").stdout)
    assert [(n["id"], n["state"], n["attempts"]) for n in shown] == [
        ("ntc-cli-1", "given-up", 2), ("ntc-cli-2", "given-up", 2), ("ntc-cli-3", "pending", 0),
    ]  # fmt: skip
    assert list(shown[0]) == NOTICE_KEYS
    assert shown[0]["last_error"].startswith(f"json://127.0.0.1:{receiver.port} (notify.urls.0):")
    assert shown[0]["next_attempt_at"] is None  # given up: no next attempt
    assert shown[2]["next_attempt_at"] == "2026-11-30T09:00:30.000Z"
    assert shown[2]["payload"]["next_action"] == "wrighty requeue 3 --fresh"
    text = wrighty("notify", "pending")
    assert text.exit_code == 0
    header, *rows = text.stdout.splitlines()
    assert header.split() == ["ID", "EVENT", "ITEM", "STATE", "ATTEMPTS", "NEXT", "ATTEMPT",
                              "LAST", "ERROR"]  # fmt: skip
    assert rows[0].split()[:5] == ["ntc-cli-1", "needs-attention", "1", "given-up", "2"]
    assert SECRET not in text.stdout + json.dumps(shown)


def test_pending_needs_no_sink_and_changes_nothing(initialised: Path, clock: FakeClock) -> None:
    add_notice(initialised, clock)
    before = snapshot(initialised)
    assert len(json.loads(wrighty("notify", "pending", "--json").stdout)) == 1
    assert snapshot(initialised) == before


# -- notify flush -----------------------------------------------------------------------------


def test_flush_delivers_what_is_due(
    initialised: Path, clock: FakeClock, receiver: Receiver  # noqa: F811
) -> None:  # fmt: skip
    argv, out = command_sink(initialised)
    configure(initialised, urls=[receiver.url()], command=argv)
    first = add_notice(initialised, clock, 1)
    add_notice(initialised, clock, 2)
    result = wrighty("notify", "flush")
    assert result.exit_code == 0, result.output
    assert result.stdout == "delivered 2 notifications, 0 failed (retried later), 0 given up\n"
    assert [json.loads(b["message"])["id"] for b in receiver.bodies()] == ["ntc-cli-1",
                                                                           "ntc-cli-2"]  # fmt: skip
    assert json.loads(out.read_text().splitlines()[0]) == first.payload
    again = wrighty("notify", "flush")
    assert again.stdout.startswith("delivered 0 notifications")  # none twice
    assert len(receiver.posts) == 2


def test_flush_says_what_failed_and_exits_1(
    initialised: Path, clock: FakeClock, receiver: Receiver  # noqa: F811
) -> None:  # fmt: skip
    receiver.status = 503
    configure(initialised, urls=[receiver.url()])
    add_notice(initialised, clock)
    result = wrighty("notify", "flush")
    assert result.exit_code == 1
    summary, detail = result.stdout.splitlines()
    assert summary == "delivered 0 notifications, 1 failed (retried later), 0 given up"
    assert detail.startswith(f"  ntc-cli-1: json://127.0.0.1:{receiver.port} (notify.urls.0): ")
    assert SECRET not in result.output


def test_flush_tries_a_notice_waiting_for_its_retry_now(
    initialised: Path, clock: FakeClock, receiver: Receiver  # noqa: F811
) -> None:  # fmt: skip
    """Like `postqueue -f`: once the sink is fixed, a person does not wait out the backoff.
    A worker's deliverer still does (the notice is not due for it)."""
    receiver.status = 503
    configure(initialised, urls=[receiver.url()])
    add_notice(initialised, clock)
    assert wrighty("notify", "flush").exit_code == 1
    store = store_of(initialised)
    [waiting] = store.list_notices(["pending"])
    assert store.claim_notice("w-worker", now=clock(), lease_seconds=120) is None  # not due
    store.close()
    assert waiting.next_attempt_at == clock() + timedelta(seconds=RETRY_FIRST_SECONDS)
    receiver.status = 200
    result = wrighty("notify", "flush")  # the clock has not moved
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "delivered 1 notifications, 0 failed (retried later), 0 given up; "
        "1 of them were waiting for a retry\n"
    )
    assert [json.loads(b["message"])["id"] for b in receiver.bodies()] == ["ntc-cli-1"] * 2
    store = store_of(initialised)
    assert store.list_notices(["pending", "given-up"]) == []
    store.close()


def test_flush_leaves_a_given_up_notice_given_up(
    initialised: Path, clock: FakeClock, receiver: Receiver  # noqa: F811
) -> None:  # fmt: skip
    receiver.status = 503
    configure(initialised, urls=[receiver.url()], maxAttempts=1)
    add_notice(initialised, clock)
    assert wrighty("notify", "flush").exit_code == 1
    receiver.status = 200
    result = wrighty("notify", "flush")
    assert result.exit_code == 0
    assert result.stdout == "delivered 0 notifications, 0 failed (retried later), 0 given up\n"
    assert len(receiver.posts) == 1
    store = store_of(initialised)
    [kept] = store.list_notices(["given-up"])
    store.close()
    assert kept.attempts == 1


def test_flush_without_sinks_refuses_and_delivers_nothing(
    initialised: Path, clock: FakeClock
) -> None:
    add_notice(initialised, clock)
    before = snapshot(initialised)
    result = wrighty("notify", "flush")
    assert result.exit_code == 2
    assert "nothing was delivered" in result.stderr
    assert snapshot(initialised) == before


def test_flush_tells_of_a_quiet_worker_when_a_sink_wants_it(
    initialised: Path, clock: FakeClock, receiver: Receiver  # noqa: F811
) -> None:  # fmt: skip
    configure(initialised, urls=[{"url": receiver.url(), "events": ["worker-quiet"]}])
    store = store_of(initialised)
    store.upsert_worker(
        WorkerRow("w-aaaaaaaaaaaa", "night", "inst-other", 4242, 0.0, "0.1", WorkerState.RUNNING,
                  (5,), clock() - timedelta(hours=2), clock() - timedelta(seconds=600))
    )  # fmt: skip
    store.close()
    result = wrighty("notify", "flush")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "delivered 1 notifications, 0 failed (retried later), 0 given up; 1 workers gone quiet "
        "added first\n"
    )
    [posted] = receiver.bodies()
    assert posted["title"] == "wrighty: worker-quiet"
    message = json.loads(posted["message"])
    assert message["id"] == "ntc-quiet-w-aaaaaaaaaaaa"
    assert message["quiet_worker"]["items"] == [5]
    assert wrighty("notify", "flush").stdout.startswith("delivered 0 notifications, ")  # once
