"""The web console's board: what a page and a live update cost, beside `wrighty status --json`.

One store of N items (default 100,000, of which 500 open), seeded as bench/inbox_refresh.py
seeds it (the finished items in bulk with the rows the store writes, the open ones through the
store port), and a project beside it whose wrighty.json sets the same day budget and label
limit. Then, in the same run, on that store:

- status --json, in process: the command itself (``wrighty --store S status --json`` through
  typer's CliRunner), store opened and closed per call as the command does; the baseline,
  as in bench/inbox_refresh.py (the interpreter's start is bench/cli_latency.py's);
- status --json, subprocess: the same command as a process (its start included), for scale;
- GET / and GET /board: the board page and its table, over HTTP (httpx) from a real
  `wrighty serve` process (started with ``--port 0``, logged in with the URL it prints);
  each request opens the store, reads the board, renders the page;
- the morning view: ``wrighty list --since 24h --json`` (in process and as a process, as
  status) and GET /since (its last 24 hours), which hold none of the seeded items (they are
  days older) but for the live updates' made after them; and the same for BUSY_DAY, the
  seeded store's last day (``list --since BUSY_DAY --json`` in process, GET
  /since?since=BUSY_DAY): about 1,650 finished items and most of the open ones;
- a live update: with a GET /events stream open on that server, an item is created through
  the service (``services.items.create_item``, as `wrighty create` makes it) and the time until
  the stream's ``event: board`` line arrives is taken; the changes are made at random moments
  (0.3 to 1.3 s apart) so that they fall at every phase of the server's one-second read.

The calls are timed in turns (each one of every kind, then again), after warm-up rounds, so
that a slow moment of the machine falls on all of them alike; per-call median and p95 (nearest
rank) with their ratios to the in-process status. Every call runs at the machine's clock (the
server's), a day or more after the seeded items' own times (bench/inbox_refresh.py's fixed
clock), so the board stands still but for the bench's changes; the ledger's last 24 hours,
which status and the board both read, hold almost none of the finished items' runs.

SQLite (the default): a file in a temporary directory. PostgreSQL (``--store
postgresql://...``): a fresh schema, vacuumed and analysed after seeding, dropped afterwards.

Usage: python bench/web_board.py [--items 100000] [--open 500] [--runs 30] [--changes 10]
       [--store postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from inbox_refresh import (
    BUDGETED,
    BUDGETS,
    LIMITED,
    LIMITS,
    NOW,
    OpenMix,
    Seeded,
    new,
    print_ratios,
    seeded_from,
    timed,
)
from typer.testing import CliRunner

from wrighty.cli.app import app
from wrighty.services.items import create_item
from wrighty.store import open_store, parse_store_url
from wrighty.store.port import Store

# How long the server may take to print its URL, and to answer (seconds).
START_TIMEOUT = 60.0
EVENT_TIMEOUT = 10.0
# The server reads the board this often (WebSettings.poll_seconds, `wrighty serve`'s).
POLL_SECONDS = 1.0
# The seeded store's last day (a day before bench/inbox_refresh.py's clock, NOW): the morning
# view of a busy night.
BUSY_DAY = (NOW - timedelta(days=1)).isoformat().replace("+00:00", "Z")


def project(root: Path) -> Path:
    """A project whose wrighty.json sets the day budget and the label limit that the seeded
    items spend and reach (bench/inbox_refresh.py's BUDGETS and LIMITS)."""
    budget = BUDGETS.agent_limit(BUDGETED)
    config = {
        "schemaVersion": 1,
        "budgets": {"perDay": {BUDGETED: {"maxCostUsd": budget.max_cost_usd}}},
        "limits": {"labels": {LIMITED: {"maxConcurrent": LIMITS.labels[LIMITED]}}},
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    (root / "wrighty.json").write_text(json.dumps(config, indent=2) + "\n")
    return root


def command_env(scratch: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CONFIG_HOME": str(scratch / "xdg")}


@contextmanager
def served(root: Path, target: str, env: dict[str, str]) -> Iterator[tuple[httpx.Client, str]]:
    """A real `wrighty serve` on the store, and an httpx client logged in to it (the token's
    cookie kept): the client and the server's base URL. Stopped with SIGTERM afterwards."""
    command = [sys.executable, "-m", "wrighty", "--store", target, "serve", "--port", "0"]
    server = subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(
                f"wrighty serve said {url!r}: {server.stderr.read() if server.stderr else ''}"
            )
        base = url.split("/?", 1)[0]
        with httpx.Client(timeout=START_TIMEOUT) as client:
            login = client.get(url)
            if login.status_code != 303 or "wrighty_token" not in client.cookies:
                raise RuntimeError(f"the login answered {login.status_code}")
            yield client, base
    finally:
        server.terminate()
        try:
            _, said = server.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            _, said = server.communicate()
        if server.returncode != 0:
            print(f"wrighty serve ended with {server.returncode}: {said}", file=sys.stderr)


def page(client: httpx.Client, url: str) -> Callable[[], object]:
    def get() -> object:
        response = client.get(url)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url}: {response.status_code}")
        return response.text

    return get


def command_calls(
    target: str, env: dict[str, str], name: str, args: list[str]
) -> dict[str, Callable[[], object]]:
    """``wrighty --store S <args>`` in process (typer's CliRunner) and as a process."""
    runner = CliRunner()
    full = ["--store", target, *args]
    command = [sys.executable, "-m", "wrighty", *full]

    def in_process() -> object:
        result = runner.invoke(app, full, catch_exceptions=False)
        if result.exit_code not in (0, 1):  # 1: not healthy (the seeded attention items)
            raise RuntimeError(f"{name}: {result.output}")
        return result.output

    def subprocess_call() -> object:
        done = subprocess.run(command, capture_output=True, env=env, check=False)
        if done.returncode not in (0, 1):
            raise RuntimeError(f"{name}: {done.stderr.decode()}")
        return done

    return {f"{name} (in process)": in_process, f"{name} (process)": subprocess_call}


def status_calls(target: str, env: dict[str, str]) -> dict[str, Callable[[], object]]:
    return command_calls(target, env, "status --json", ["status", "--json"])


def since_calls(target: str, env: dict[str, str]) -> dict[str, Callable[[], object]]:
    """The morning view's command: what moved in the last 24 hours (nothing but the bench's
    own changes: the seeded items are days older), and what moved in the seeded store's last
    day (BUSY_DAY: about 1,650 finished items and most of the open ones), in process."""
    quiet = command_calls(
        target, env, "list --since 24h --json", ["list", "--since", "24h", "--json"]
    )
    name = "list --since BUSY_DAY --json"
    busy = command_calls(target, env, name, ["list", "--since", BUSY_DAY, "--json"])
    return {**quiet, f"{name} (in process)": busy[f"{name} (in process)"]}


def live_latency(
    client: httpx.Client, base: str, store: Store, changes: int, first: int
) -> list[float]:
    """Seconds from each item created through the service to the ``event: board`` line on an
    open /events stream of the server."""
    arrived: queue.Queue[float] = queue.Queue()
    ready = threading.Event()

    def listen() -> None:
        try:
            with client.stream("GET", f"{base}/events", timeout=None) as stream:
                for line in stream.iter_lines():
                    if line == ": connected":
                        ready.set()
                    elif line == "event: board":
                        arrived.put(time.perf_counter())
        except (httpx.HTTPError, RuntimeError):
            return  # the stream closed at the end

    listener = threading.Thread(target=listen, name="bench-events", daemon=True)
    listener.start()
    if not ready.wait(EVENT_TIMEOUT):
        raise RuntimeError("/events did not answer")
    rng = random.Random(11)
    time.sleep(2 * POLL_SECONDS)  # the watcher's first read (its digest) is taken
    latencies = []
    for k in range(changes):
        time.sleep(rng.uniform(0.3, 1.3))
        while not arrived.empty():  # an event of no change of ours (none is expected)
            arrived.get_nowait()
        began = time.perf_counter()
        create_item(store, new(first + k), now=datetime.now(UTC))
        try:
            latencies.append(arrived.get(timeout=EVENT_TIMEOUT) - began)
        except queue.Empty:
            raise RuntimeError(
                f"no board event within {EVENT_TIMEOUT} s of change {k + 1}"
            ) from None
    return latencies


def report(seeded: Seeded, items: int, mix: OpenMix, runs: int, changes: int) -> None:
    print(
        f"{items} items: {items - mix.total} done or cancelled, {mix.total} open "
        f"({mix.describe()}); seeded in {seeded.seconds:.1f} s (bench/inbox_refresh.py's store)"
    )
    print(f"store: {seeded.where}")
    seeded.store.close()
    with tempfile.TemporaryDirectory(prefix="wrighty-web-") as scratch:
        root = project(Path(scratch) / "project")
        env = command_env(Path(scratch))
        os.chdir(root)  # the in-process command reads the project's wrighty.json
        with served(root, seeded.target, env) as (client, base):
            calls = {
                **status_calls(seeded.target, env),
                "GET / (HTTP)": page(client, f"{base}/"),
                "GET /board (HTTP)": page(client, f"{base}/board"),
                **since_calls(seeded.target, env),
                "GET /since (HTTP)": page(client, f"{base}/since"),
                "GET /since?since=BUSY_DAY (HTTP)": page(
                    client, f"{base}/since?since={BUSY_DAY.replace('+', '%2B')}"
                ),
            }
            size = len(client.get(f"{base}/").text)
            moved = json.loads(str(calls["list --since 24h --json (in process)"]()))
            busy = json.loads(str(calls["list --since BUSY_DAY --json (in process)"]()))
            print(
                f"server: `wrighty serve --port 0` at {base}; GET / is {size / 1024:.0f} KiB "
                f"of HTML; moved in the last 24 hours: {len(moved)} items, since BUSY_DAY "
                f"({BUSY_DAY}): {len(busy)}"
            )
            times = timed(calls, runs)
            # A store of its own for the changes, opened once the in-process commands are
            # done (the seeded one was closed before them): a second open of a SQLite file in
            # one process releases the POSIX locks of the first connection (the header
            # check's open and close of the file), and its writes were then lost to the
            # server's reads.
            store = open_store(parse_store_url(seeded.target, base=root))
            try:
                latencies = live_latency(client, base, store, changes, first=items + 1)
            finally:
                store.close()
    print_ratios(times, "status --json (in process)", runs, width=44)
    base50 = statistics.median(times["status --json (in process)"])
    p50, worst = statistics.median(latencies), max(latencies)
    print(
        f"live update, {len(latencies)} items created through the service: `event: board` on "
        f"/events after median {p50 * 1000:.0f} ms, max {worst * 1000:.0f} ms "
        f"(min {min(latencies) * 1000:.0f} ms; the server reads the board every "
        f"{POLL_SECONDS:.0f} s); median/status {p50 / base50:.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000, help="every item, open or not")
    parser.add_argument("--open", type=int, default=500, help="how many of them are open")
    parser.add_argument("--runs", type=int, default=30, help="timed calls of each")
    parser.add_argument("--changes", type=int, default=10, help="live updates timed")
    parser.add_argument("--store", help="a PostgreSQL server URL; a SQLite file when absent")
    args = parser.parse_args()
    mix, place = seeded_from(parser, args)
    with place as seeded:
        report(seeded, args.items, mix, args.runs, args.changes)


if __name__ == "__main__":
    main()
