"""The oldest review wait of `wrighty status`: what it costs to read it from the items' history.

`select_queue_figures` reads when the item longest in review entered it from each review item's
last event into review (through the index `item_events_by_item`), not from its `updated_at`,
which a same-state event moves. This bench says what that costs, and whether an index of its
own would pay: for each store, N items (every one with a history of three events) of which R
are in review, it times, best of --repeat:

- history: the figure as wrighty reads it (the subquery of `select_queue_figures`);
- updated_at: `min(updated_at)` of the items in review, the cheap reading it does not use;
- figures: the whole `select_queue_figures` query, with the figure and without it, in turns.

Usage: python bench/review_wait.py [--items 200000] [--review 200 6000]
       [--stores sqlite postgresql] [--postgres URL] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pickup import DEFAULT_POSTGRES, postgres_schema  # a fresh schema (run from bench/)
from status import best  # the best of repeated timings (run from bench/)

from wrighty.store.sqlfiles import queries
from wrighty.store.sqlite import SqliteStore, to_db_time

OTHER_STATES = (("done", 0.72), ("cancelled", 0.10), ("queued", 0.05), ("needs-attention", 0.05),
                ("retry-scheduled", 0.05), ("running", 0.03))  # fmt: skip
FIGURE = re.compile(r"    \(SELECT min\(coalesce\(.*?AS oldest_review_at,\n", re.S)
HISTORY = (
    "SELECT min(coalesce((SELECT e.at FROM item_events AS e WHERE e.item_id = items.id "
    "AND e.to_state = 'review' AND e.from_state <> 'review' ORDER BY e.id DESC LIMIT 1), "
    "updated_at)) FROM items WHERE state = 'review'"
)
UPDATED_AT = "SELECT min(updated_at) FROM items WHERE state = 'review'"


def rows(
    items: int, review: int, now: datetime
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The items (``review`` of them in review, the rest in a mix of states) and their
    history: queued, running, then the state they are in."""
    rng = random.Random(7)
    in_review = set(rng.sample(range(items), review))
    states = [state for state, _ in OTHER_STATES]
    weights = [weight for _, weight in OTHER_STATES]
    found, events = [], []
    for n in range(items):
        state = "review" if n in in_review else rng.choices(states, weights)[0]
        at = now - timedelta(seconds=rng.randrange(86400))
        due = now + timedelta(seconds=rng.randrange(-600, 600))
        retry = to_db_time(due) if state == "retry-scheduled" else None
        stamp = to_db_time(at)
        found.append((n + 1, f"item {n}", "body", state, stamp, stamp, stamp, retry))
        events.append((n + 1, to_db_time(at - timedelta(seconds=30)), "op", 0, None, "queued"))
        events.append((n + 1, to_db_time(at - timedelta(seconds=20)), "w", 1, "queued", "running"))
        last = "running" if state == "queued" else state
        events.append((n + 1, to_db_time(at), "w", 1, "running", last))
    return found, events


ITEM_COLUMNS = "id, title, body, state, queued_at, created_at, updated_at, not_before"
EVENT_COLUMNS = "item_id, at, actor, generation, from_state, to_state"


def best_ms(repeat: int, action: Callable[[], object]) -> float:
    return best(repeat, action) * 1000


def turns(
    repeat: int, first: Callable[[], object], second: Callable[[], object]
) -> tuple[float, float]:
    """The best time of each of two actions, run in turns (neither gets a warmer cache)."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for action, taken in ((first, times[0]), (second, times[1])):
            began = time.perf_counter()
            action()
            taken.append(time.perf_counter() - began)
    return min(times[0]) * 1000, min(times[1]) * 1000


def sqlite_timer(
    items: list[tuple[Any, ...]], events: list[tuple[Any, ...]]
) -> Iterator[Callable[[str], object]]:
    with tempfile.TemporaryDirectory(prefix="wrighty-review-wait-") as scratch:
        path = Path(scratch) / "wrighty.db"
        SqliteStore.open(path).close()
        with sqlite3.connect(path) as connection:
            connection.execute("DROP TRIGGER IF EXISTS items_terminal_write_once")
            connection.executemany(
                f"INSERT INTO items ({ITEM_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)", items
            )
            connection.executemany(
                f"INSERT INTO item_events ({EVENT_COLUMNS}) VALUES (?,?,?,?,?,?)", events
            )
            connection.execute("ANALYZE")
        connection = sqlite3.connect(path)
        yield lambda query: connection.execute(query, PARAMS).fetchone()
        connection.close()


def postgres_timer(
    server: str, items: list[tuple[Any, ...]], events: list[tuple[Any, ...]]
) -> Iterator[Callable[[str], object]]:
    import psycopg

    from wrighty.store.postgres import PostgresStore

    with postgres_schema(server) as url:
        PostgresStore.open(url, create=True).close()
        with psycopg.connect(url, autocommit=True) as connection:
            with connection.cursor().copy(f"COPY items ({ITEM_COLUMNS}) FROM STDIN") as copy:
                for row in items:
                    copy.write_row(row)
            with connection.cursor().copy(f"COPY item_events ({EVENT_COLUMNS}) FROM STDIN") as copy:
                for row in events:
                    copy.write_row(row)
            connection.execute("ANALYZE")
            yield lambda query: connection.execute(
                re.sub(r":(\w+)", r"%(\1)s", query), PARAMS
            ).fetchone()


PARAMS: dict[str, Any] = {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--review", type=int, nargs="+", default=[200, 6000])
    parser.add_argument("--stores", nargs="+", choices=["sqlite", "postgresql"],
                        default=["sqlite", "postgresql"])  # fmt: skip
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES, help="a PostgreSQL server URL")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    now = datetime.now(UTC)
    PARAMS["now"] = to_db_time(now)
    for review in args.review:
        items, events = rows(args.items, review, now)
        for store in args.stores:
            figures = queries(store)["select_queue_figures"]
            without = FIGURE.sub("", figures)
            assert without != figures, "select_queue_figures has no oldest_review_at"
            timers = (
                sqlite_timer(items, events)
                if store == "sqlite"
                else postgres_timer(args.postgres, items, events)
            )
            for run in timers:
                shown = measure(run, figures, without, review, args.repeat)
                print(f"{store:10} {args.items} items, {review} in review: {shown}", flush=True)


def measure(
    run: Callable[[str], object], figures: str, without: str, review: int, repeat: int
) -> str:
    history = best_ms(repeat, lambda: run(HISTORY))
    cheap = best_ms(repeat, lambda: run(UPDATED_AT))
    whole, bare = turns(repeat, lambda: run(figures), lambda: run(without))
    return (
        f"history {history:.1f} ms ({history * 1000 / review:.1f} us an item) | updated_at "
        f"{cheap:.1f} ms | figures {whole:.1f} ms, without it {bare:.1f} ms"
    )


if __name__ == "__main__":
    sys.exit(main())
