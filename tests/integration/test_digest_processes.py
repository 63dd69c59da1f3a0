"""The morning digest and the link in notices, with real `wrighty worker start` processes on
each store (docs/notifications.md#the-morning-digest): two workers on one project whose
notify.digest time has passed today make one digest for the day between them, even when the
one delivering it is SIGKILLed; its counts are the store's; and an item's notice links to its
page when serve.publicUrl is set, never with a token, and has no link when it is not."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FakeClock
from tests.helpers import wait_for
from tests.integration.worker_process import ProjectOnDisk
from tests.store.test_claims import acquire, queued, request, settlement, start
from tests.store.test_landings import accepted, in_review
from wrighty.domain import landing
from wrighty.domain.claims import settle, worker_actor
from wrighty.domain.model import Item
from wrighty.domain.notices import DELIVERY_LEASE_SECONDS, digest_notice_id
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition
from wrighty.store.port import Store

PUBLIC_URL = "https://wrighty.example.net:8443"
ALL = ("pending", "delivered", "given-up")

# The command sink: appends what it is told to SINK; in a worker started with
# DIGEST_TEST_HOLD=1, it first writes it to HELD and then never finishes (until it is killed
# with its worker), so that the test can kill that worker while it delivers.
SINK = """
import os, signal, sys
data = sys.stdin.read()
if os.environ.get("DIGEST_TEST_HOLD") == "1":
    open({held!r} + ".part", "w").write(data)
    os.replace({held!r} + ".part", {held!r})
    while True:
        signal.pause()  # until it is killed
open({sink!r}, "a").write(data)
"""


def sink_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def worker(project: ProjectOnDisk, **env: str) -> subprocess.Popen[str]:
    """`wrighty worker start --json` in the project, as its user starts it."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    return subprocess.Popen(
        project.command("worker", "start", "--json"), cwd=project.root, env={**environ, **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def events_until(process: subprocess.Popen[str], name: str) -> list[dict[str, Any]]:
    """The worker's events up to and including the first called ``name``."""
    assert process.stdout is not None
    seen: list[dict[str, Any]] = []
    for line in process.stdout:
        seen.append(json.loads(line))
        if seen[-1]["event"] == name:
            return seen
    raise AssertionError(f"the worker ended before {name}: {seen}")


def stopped(process: subprocess.Popen[str]) -> list[dict[str, Any]]:
    """SIGTERM, and the rest of its events (it delivers what is due, then exits 130)."""
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@dataclasses.dataclass
class Seeded:
    finished: list[int]
    landed: list[int]
    failed: list[int]
    waiting: list[int]


def seed(store: Store, now: datetime) -> Seeded:
    """Items as workers, people and landers left them: one done 30 hours ago (not in the
    day's digest), then, within the last hour, 2 finished, 1 landed, 3 failed and 4 waiting
    for review."""
    clock = FakeClock(now - timedelta(hours=30))

    def ran(to: ItemState, outcome: OutcomeClass) -> Item:
        queued(store, clock, f"to {to.value}")
        claimed = acquire(store, clock)
        start(store, claimed, clock)
        change = settle(claimed, settlement(to, outcome, clock), at=clock.advance(1))
        assert store.write_transition(change)
        return change.after

    ran(ItemState.DONE, OutcomeClass.SUCCEEDED)  # the day before: left out
    clock.current = now - timedelta(hours=1)
    finished = [ran(ItemState.DONE, OutcomeClass.SUCCEEDED).id for _ in range(2)]
    lands = accepted(store, clock, in_review(store, clock, "lands"))
    claimed, held = store.acquire_landing(request("l1"), now=clock())  # type: ignore[misc]
    step = dataclasses.replace(held, step=landing.Step.CHECKING, target_commit="c" * 40)
    change = transition(claimed, ItemState.LANDING, at=clock(), actor=worker_actor("l1"))
    assert store.write_landing(landing.LandingChange(change, step))
    done = landing.landed(change.after, step, "fast-forwarded main", at=clock.advance(1))
    assert store.write_landing(done)
    failed = [ran(ItemState.NEEDS_ATTENTION, OutcomeClass.AGENT_FAILURE).id for _ in range(3)]
    waiting = []
    for n in range(4):
        clock.advance(1)
        waiting.append(in_review(store, clock, f"review {n}").id)
    for item_id in (*finished, lands.id, *failed, *waiting):
        assert store.get_item(item_id).updated_at > now - timedelta(hours=2)  # type: ignore[union-attr]
    return Seeded(finished, [lands.id], failed, waiting)


# The second worker takes the digest once the killed one's claim on it has run out: at least
# DELIVERY_LEASE_SECONDS (120 s), by design; the test waits that long.
@pytest.mark.slow
@pytest.mark.timeout(DELIVERY_LEASE_SECONDS + 300)
def test_two_workers_make_one_digest_for_the_day_even_when_its_deliverer_is_killed(
    make_project: Callable[..., ProjectOnDisk], store_url: str | None, tmp_path: Path
) -> None:
    now = datetime.now(UTC)
    at = (now - timedelta(minutes=2)).replace(second=0, microsecond=0)  # already past today
    day: date = at.date()  # (yesterday's, from 00:00 to 00:02 UTC: still that day's digest)
    sink, held = tmp_path / "sink.jsonl", tmp_path / "held.json"
    program = tmp_path / "sink.py"
    program.write_text(SINK.format(held=str(held), sink=str(sink)))
    project = make_project(
        store_url=store_url, worker={"pollSeconds": 0.05},
        notify={"command": {"argv": [sys.executable, str(program)], "timeoutSeconds": 60},
                "digest": at.strftime("%H:%M")},
        serve={"publicUrl": PUBLIC_URL},
    )  # fmt: skip
    store = project.store()
    try:
        seeded = seed(store, now)
    finally:
        store.close()

    # The first worker makes the day's digest and starts delivering it: its sink holds it.
    first = worker(project, DIGEST_TEST_HOLD="1")
    second: subprocess.Popen[str] | None = None
    try:
        wait_for(held.exists, timeout=60, what="the first worker to deliver the digest")
        assert json.loads(held.read_text())["id"] == digest_notice_id(day)
        # The second starts beside it (its own look adds nothing), then the first is killed
        # during the delivery: its claim runs out, and the second delivers it.
        second = worker(project)
        events_until(second, "started")
        first.send_signal(signal.SIGKILL)
        assert first.wait(30) == -signal.SIGKILL
        wait_for(lambda: sink_lines(sink), timeout=DELIVERY_LEASE_SECONDS + 180, what="the digest")
        events = stopped(second)
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()
    delivered = [e for e in events if e["event"] == "notify-delivered"]
    assert [e["notice_id"] for e in delivered] == [digest_notice_id(day)]

    [digest] = sink_lines(sink)  # the killed worker's sink wrote nothing: once, in the sink
    store = project.store()
    try:
        [stored] = [s for s in store.list_notices(ALL) if s.notice.event == "digest"]
    finally:
        store.close()
    assert (stored.notice.id, stored.state) == (digest_notice_id(day), "delivered")  # once
    assert stored.notice.payload == digest
    assert (digest["event"], digest["events"], digest["item"]) == ("digest", ["digest"], None)
    assert digest["day"] == day.isoformat()
    assert digest["counts"] == {"moved": 10, "finished": 2, "landed": 1, "failed": 3, "waiting": 4}
    assert digest["reason"].endswith(": 2 finished, 1 landed, 3 need attention, 4 wait for review")
    # what waits for a person: those that failed, then those in review, most recent first
    assert [entry["id"] for entry in digest["waiting"]] == [
        *reversed(seeded.failed), *reversed(seeded.waiting)
    ]  # fmt: skip
    assert {entry["state"] for entry in digest["waiting"]} == {"needs-attention", "review"}
    for entry in digest["waiting"]:
        assert entry["link"] == f"{PUBLIC_URL}/items/{entry['id']}"
    assert digest["next_action"] == "wrighty list --since 24h"


FAILING = "import sys; sys.exit(4)"


@pytest.mark.parametrize("public_url", [PUBLIC_URL, None], ids=["public-url", "no-public-url"])
def test_an_items_notice_links_to_its_page_only_with_a_public_url(
    make_project: Callable[..., ProjectOnDisk],
    store_url: str | None,
    tmp_path: Path,
    public_url: str | None,
) -> None:
    sink = tmp_path / "sink.jsonl"
    appender = "import sys; open(sys.argv[1], 'a').write(sys.stdin.read())"
    serve = {"serve": {"publicUrl": public_url}} if public_url else {}
    project = make_project(
        store_url=store_url, programs={"failing": FAILING}, worker={"pollSeconds": 0.05},
        notify={"command": [sys.executable, "-c", appender, str(sink)]}, **serve,
    )  # fmt: skip
    item_id = project.plant("go", title="Fix the flaky test")
    finished = project.worker("--once")
    assert finished.returncode == 0, finished.stderr
    assert finished.named("notify-delivered") != []
    [notice] = sink_lines(sink)
    assert (notice["event"], notice["item"]["id"]) == ("needs-attention", item_id)
    if public_url is None:
        assert "link" not in notice
    else:
        assert notice["link"] == f"{PUBLIC_URL}/items/{item_id}"
    assert "token" not in sink.read_text().lower()
