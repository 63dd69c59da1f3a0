"""Pickup latency: from `wrighty create --queue` returning to the agent process starting, with
an idle worker, with wake-ups (``worker.wakeUps``, the default) and without (polling only).

For each store (a SQLite file, a PostgreSQL schema) and each mode, a scratch project and one
`wrighty worker start`, with ``pollSeconds`` at its default (5 s). Items are created one after
another with the real command, each once the one before has settled. The agent is a shell
script whose first act writes the clock to a file. Two figures per item:

- from create returning: ``time.time()`` when the `wrighty create` process has exited, to the
  agent's clock (negative when the agent started while the command was still exiting);
- from the queue entry: the item's ``queued_at`` (stamped just before create's transaction) to
  the agent's clock.

Before each create the bench waits a random gap: up to ``pollSeconds`` when polling, so that
items arrive at any point of the worker's poll, as they do in use; 50-250 ms with wake-ups
(their latency does not depend on when the item arrives).

Usage: python bench/pickup.py [--items 50] [--stores sqlite postgresql] [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
POLL_SECONDS = 5.0  # worker.pollSeconds' default, which the bench leaves alone
AGENT = """#!/bin/sh
date +%s.%N > "$PICKUP_DIR/$WRIGHTY_ITEM_ID.start"
"""


def wrighty() -> list[str]:
    """The installed executable beside this interpreter (as a user runs it), else -m."""
    beside = Path(sys.executable).with_name("wrighty")
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "wrighty"]


@contextmanager
def postgres_schema(server: str) -> Iterator[str]:
    import psycopg
    from psycopg import sql

    schema = f"wrighty_bench_pickup_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        joiner = "&" if "?" in server else "?"
        yield f"{server}{joiner}options=-csearch_path%3D{schema}&application_name=wrighty-bench"
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


class Worker:
    """`wrighty worker start --json` in the project, its events read as they come."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [*wrighty(), "worker", "start", "--json"],
            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                with self._changed:
                    self._events.append(json.loads(line))
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, name: str, timeout: float = 60, **fields: Any) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for event in self._events:
                    if event["event"] == name and all(event.get(k) == v for k, v in fields.items()):
                        return event
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    raise RuntimeError(f"no {name} {fields} from the worker: {self._events[-3:]}")
                self._changed.wait(min(left, 0.5))

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class Figures:
    from_create: list[float]
    from_queue: list[float]


def run_mode(store_url: str | None, *, wake_ups: bool, items: int, scratch: Path) -> Figures:
    root = scratch / f"project-{'wake' if wake_ups else 'poll'}-{uuid.uuid4().hex[:6]}"
    starts = root / "starts"
    starts.mkdir(parents=True)
    agent = root / "agent.sh"
    agent.write_text(AGENT)
    agent.chmod(0o755)
    document: dict[str, Any] = {
        "worker": {"defaultAgent": "bench", "wakeUps": wake_ups},
        "agents": {"bench": {"adapter": "command", "command": [str(agent)],
                             "env": {"PICKUP_DIR": str(starts)}}},
    }  # fmt: skip
    if store_url is not None:
        document["store"] = {"url": store_url}
    (root / "wrighty.json").write_text(json.dumps(document))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    env["XDG_CONFIG_HOME"] = str(root / "config-home")
    subprocess.run([*wrighty(), "init"], cwd=root, env=env, check=True, capture_output=True)
    worker = Worker(root, env)
    figures = Figures([], [])
    try:
        worker.wait_for("wake-ups-on" if wake_ups else "started")
        for n in range(items):
            time.sleep(random.uniform(0.05, 0.25) if wake_ups else random.uniform(0, POLL_SECONDS))
            created = subprocess.run(
                [*wrighty(), "create", "--title", f"item {n}", "--body", "go", "--queue", "--json"],
                cwd=root, env=env, check=True, capture_output=True, text=True,
            )  # fmt: skip
            returned = time.time()
            item = json.loads(created.stdout)
            started = wait_for_start(starts / f"{item['id']}.start")
            queued_at = datetime.fromisoformat(item["queued_at"]).timestamp()
            figures.from_create.append(started - returned)
            figures.from_queue.append(started - queued_at)
            worker.wait_for("settled", item_id=item["id"])
    finally:
        worker.stop()
    return figures


def wait_for_start(path: Path, timeout: float = 60) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            text = path.read_text().strip()
        except FileNotFoundError:
            text = ""
        if text:
            return float(text)
        time.sleep(0.001)
    raise RuntimeError(f"the agent never started: {path}")


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile: of 50 items, p50 is the 25th and p99 the 50th."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:9.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=50, help="items per store and mode")
    parser.add_argument("--stores", nargs="+", choices=["sqlite", "postgresql"],
                        default=["sqlite", "postgresql"])  # fmt: skip
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES, help="a PostgreSQL server URL")
    parser.add_argument("--modes", nargs="+", choices=["wake-ups", "polling"],
                        default=["wake-ups", "polling"])  # fmt: skip
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="wrighty-pickup-"))
    results: dict[tuple[str, str], Figures] = {}
    try:
        for store in args.stores:
            for mode in args.modes:
                wake = mode == "wake-ups"
                if store == "sqlite":
                    results[store, mode] = run_mode(None, wake_ups=wake, items=args.items,
                                                    scratch=scratch)  # fmt: skip
                else:
                    with postgres_schema(args.postgres) as url:
                        results[store, mode] = run_mode(url, wake_ups=wake, items=args.items,
                                                        scratch=scratch)  # fmt: skip
                print(f"  {store} {mode}: done", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print_table(results, args.items)


def print_table(results: dict[tuple[str, str], Figures], items: int) -> None:
    print(f"{items} items per row, one after another; worker.pollSeconds {POLL_SECONDS:g} s "
          "(the default)")  # fmt: skip
    print(f"{'':22}{'create returned -> agent':>24}  |{'queue entry -> agent':>24}  |")
    print(f"{'store':11}{'mode':11}{'p50':>12}{'p99':>12}  |{'p50':>12}{'p99':>12}  | "
          "agent first")  # fmt: skip
    for (store, mode), figures in results.items():
        made, queued = figures.from_create, figures.from_queue
        first = sum(1 for latency in made if latency < 0)
        print(
            f"{store:11}{mode:11}{ms(percentile(made, 0.5))}{ms(percentile(made, 0.99))}  |"
            f"{ms(percentile(queued, 0.5))}{ms(percentile(queued, 0.99))}  | "
            f"{first}/{len(made)}"
        )
    for store in dict.fromkeys(store for store, _ in results):
        wake, poll = results.get((store, "wake-ups")), results.get((store, "polling"))
        if wake is None or poll is None:
            continue
        p50, p99 = (
            percentile(wake.from_queue, q) / percentile(poll.from_queue, q) for q in (0.5, 0.99)
        )
        print(f"{store}: wake-ups/polling, queue entry -> agent: p50 {p50:.3f}x, p99 {p99:.3f}x")
    print("agent first: runs whose agent started before `wrighty create` had returned "
          "(a negative time: the command was still exiting)")  # fmt: skip


if __name__ == "__main__":
    main()
