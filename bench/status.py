"""`wrighty status --json` over a large queue, beside the hand-written aggregate SQL.

Builds one SQLite store of N items (default 1,000,000) in mixed states, then times, on the same
database in the same run:

- baseline: one hand-written aggregate query (counts by state, waiting items, the oldest queue
  entry, unknown entry times, expired leases, the next due retry) with sqlite3;
- wrighty: `services.status.status_report` + the JSON document, in process (what the command does
  after it has started);
- command: the whole `wrighty status --json` command as a subprocess (Python start included).

Each is run --repeat times; the best time is reported, with the ratios.

Usage: python bench/status.py [--items 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from wrighty.domain.health import Thresholds
from wrighty.operator.documents import status_json
from wrighty.services.status import status_report
from wrighty.store.sqlite import SqliteStore, to_db_time

MIX = (
    ("done", 0.70),
    ("cancelled", 0.10),
    ("queued", 0.05),
    ("needs-attention", 0.05),
    ("retry-scheduled", 0.05),
    ("running", 0.03),
    ("todo", 0.02),
)

BASELINE = """
SELECT
  (SELECT json_group_object(state, n) FROM (SELECT state, count(*) AS n FROM items GROUP BY state)),
  (SELECT count(*) FROM items WHERE state = 'queued')
    + (SELECT count(*) FROM items WHERE state = 'retry-scheduled' AND not_before <= :now),
  (SELECT min(queued_at) FROM items
   WHERE (state = 'queued' OR (state = 'retry-scheduled' AND not_before <= :now))
     AND queued_at IS NOT NULL),
  (SELECT count(*) FROM items
   WHERE (state = 'queued' OR (state = 'retry-scheduled' AND not_before <= :now))
     AND queued_at IS NULL),
  (SELECT count(*) FROM items WHERE state = 'running' AND lease_expires_at < :now),
  (SELECT min(not_before) FROM items WHERE state = 'retry-scheduled')
"""


def build(path: Path, items: int) -> None:
    SqliteStore.open(path).close()  # the schema, as wrighty makes it
    now = datetime.now(UTC)
    states = [state for state, _ in MIX]
    weights = [weight for _, weight in MIX]
    rng = random.Random(7)

    def rows():  # type: ignore[no-untyped-def]
        for n in range(items):
            state = rng.choices(states, weights)[0]
            at = to_db_time(now - timedelta(seconds=rng.randrange(86400)))
            lease = to_db_time(now + timedelta(seconds=rng.randrange(-60, 60)))
            due = to_db_time(now + timedelta(seconds=rng.randrange(-600, 600)))
            yield (
                f"item {n}", "body", state,
                "w-x" if state == "running" else None,
                lease if state == "running" else None,
                None if rng.random() < 0.001 else at,
                due if state == "retry-scheduled" else None,
                at, at,
            )  # fmt: skip

    with sqlite3.connect(path) as connection:
        connection.execute("DROP TRIGGER IF EXISTS items_terminal_write_once")
        connection.executemany(
            "INSERT INTO items (title, body, state, claimed_by, lease_expires_at, queued_at, "
            "not_before, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows(),
        )
    with sqlite3.connect(path) as connection:
        connection.execute("ANALYZE")


def best(repeat: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        action()
        times.append(time.perf_counter() - began)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wrighty-status-") as scratch:
        path = Path(scratch) / "wrighty.db"
        began = time.perf_counter()
        build(path, args.items)
        print(f"built {args.items} items in {time.perf_counter() - began:.1f} s", flush=True)
        now = datetime.now(UTC)

        connection = sqlite3.connect(path)
        baseline = best(
            args.repeat,
            lambda: connection.execute(BASELINE, {"now": to_db_time(now)}).fetchone(),
        )
        connection.close()

        store = SqliteStore.open(path)
        in_process = best(
            args.repeat,
            lambda: json.dumps(
                status_json(
                    status_report(
                        store,
                        now=now,
                        thresholds=Thresholds(),
                        worker_max_age_seconds=60,
                        installation_id="inst-bench",
                    )
                )
            ),
        )
        store.close()

        env = {**os.environ, "XDG_CONFIG_HOME": str(Path(scratch) / "xdg")}
        command = [sys.executable, "-m", "wrighty", "--store", str(path), "status", "--json"]
        whole = best(
            args.repeat,
            lambda: subprocess.run(command, capture_output=True, env=env, check=False),
        )
    print(
        f"{args.items} items: hand-written SQL {baseline * 1000:.1f} ms | wrighty status "
        f"in process {in_process * 1000:.1f} ms ({in_process / baseline:.2f}x) | "
        f"whole command {whole * 1000:.1f} ms ({whole / baseline:.2f}x)"
    )


if __name__ == "__main__":
    main()
