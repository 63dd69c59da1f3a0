"""Verification's cost: what one check adds to a run, beside a plain run in the same process.

Each contender is an in-process worker (as ``wrighty worker start`` runs it) draining N queued
items of its own project, whose agent is ``/bin/true`` through the command adapter:

1. plain: no ``verify`` section (claim, run record, spawn, watch, classify, settle);
2. check true: one check, ``["/bin/true"]``: the run as above, then the check is run in the
   item's workspace under supervision, its evidence written, and the item settled done;
3. check sleep 0.2: one check, ``["sleep", "0.2"]``.

Contenders run in turns (plain, true, sleep, plain, ...), ``--rounds`` rounds of ``--runs``
items each; a contender's figure is the median of its rounds' per-run times. The baseline
for the check's own time is ``sleep 0.2`` run by hand in the same process
(``subprocess.Popen(["sleep", "0.2"]).wait()``), timed ``--runs`` times in each round.
After each round the bench checks that every item is done and has one check's evidence.

SQLite (a file in a temporary directory) by default; ``--store postgresql://...`` runs each
contender in a fresh schema of that database, dropped afterwards.

Usage: python bench/verify_overhead.py [--runs 100] [--rounds 3] [--store postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pickup import postgres_schema  # a fresh schema per contender (run from bench/)

from wrighty.config import LoadedConfig, check_config_text
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.store.sqlstore import SqlStore
from wrighty.worker.loop import Worker, WorkerOptions

SLEEP_SECONDS = "0.2"
CONTENDERS: dict[str, list[list[str]]] = {
    "plain": [],
    "check true": [["/bin/true"]],
    f"check sleep {SLEEP_SECONDS}": [["sleep", SLEEP_SECONDS]],
}


def open_store(root: Path, url: str | None) -> SqlStore:
    if url is None:
        from wrighty.store.sqlite import SqliteStore

        return SqliteStore.open(root / ".wrighty" / "wrighty.db", create=True)
    from wrighty.store.postgres import PostgresStore

    return PostgresStore.open(url, create=True)


@dataclass
class Contender:
    name: str
    root: Path
    store: SqlStore
    loaded: LoadedConfig
    checks: int
    per_run: list[float] = field(default_factory=list)
    made: int = 0

    def round(self, runs: int) -> None:
        """Queue ``runs`` items, drain them, and keep the time per run."""
        now = datetime.now(UTC)
        for n in range(runs):
            new = NewItem(f"item {self.made + n}", "no-op", None, None, str(self.root),
                          ItemState.QUEUED)  # fmt: skip
            self.store.create_item(new, at=now, actor="bench")
        self.made += runs
        worker = Worker(self.store, self.loaded, installation_id="inst-bench",
                        output=lambda _: None)  # fmt: skip
        began = time.perf_counter()
        processed = worker.run(WorkerOptions(max_items=runs, stop_grace_seconds=1))
        elapsed = time.perf_counter() - began
        if processed != runs:
            raise RuntimeError(f"{self.name}: processed {processed} of {runs}")
        self.per_run.append(elapsed / runs)
        self.confirm()

    def confirm(self) -> None:
        """Every item done, with one check's evidence per verified run."""
        for item in self.store.list_items():
            if item.state is not ItemState.DONE:
                raise RuntimeError(f"{self.name}: item {item.id} is {item.state.value}")
            records = self.store.list_checks(item.id)
            if len(records) != self.checks or not all(r.evidence.passed for r in records):
                raise RuntimeError(f"{self.name}: item {item.id} has {len(records)} checks")


def make_contender(name: str, checks: list[list[str]], root: Path, url: str | None) -> Contender:
    root.mkdir(parents=True)
    document: dict[str, Any] = {
        "worker": {"defaultAgent": "bench"},
        "agents": {"bench": {"adapter": "command", "command": ["/bin/true"]}},
    }
    if checks:
        document["verify"] = {
            "checks": [{"name": f"check{n}", "argv": argv} for n, argv in enumerate(checks)]
        }
    config, problems = check_config_text(json.dumps(document))
    assert config is not None, problems
    (root / "wrighty.json").write_text(json.dumps(document))
    store = open_store(root, url)
    return Contender(name, root, store, LoadedConfig(root / "wrighty.json", config), len(checks))


def by_hand(runs: int) -> float:
    """Seconds per ``sleep 0.2`` run by hand, without wrighty."""
    began = time.perf_counter()
    for _ in range(runs):
        subprocess.Popen(["sleep", SLEEP_SECONDS]).wait()
    return (time.perf_counter() - began) / runs


def store_label(server: str | None) -> str:
    if server is None:
        return "SQLite file (WAL) in a temporary directory"
    import psycopg

    with psycopg.connect(server) as connection:
        row = connection.execute("SHOW server_version").fetchone()
    return f"PostgreSQL {row[0] if row else '?'} at {server}, a fresh schema per contender"


def run(args: argparse.Namespace, scratch: Path, urls: list[str | None]) -> None:
    contenders = [
        make_contender(name, checks, scratch / f"c{n}", url)
        for n, ((name, checks), url) in enumerate(zip(CONTENDERS.items(), urls, strict=True))
    ]
    hand: list[float] = []
    try:
        for _ in range(args.rounds):
            for contender in contenders:
                contender.round(args.runs)
            hand.append(by_hand(args.runs))
            print(".", end="", file=sys.stderr, flush=True)
    finally:
        for contender in contenders:
            contender.store.close()
    print(file=sys.stderr)
    report(args, contenders, statistics.median(hand))


def report(args: argparse.Namespace, contenders: list[Contender], hand: float) -> None:
    plain, true, sleep = (statistics.median(c.per_run) for c in contenders)
    print(f"{args.runs} runs of /bin/true per round, {args.rounds} rounds in turns; "
          f"medians of the rounds' per-run times")  # fmt: skip
    print(f"store: {store_label(args.store)}")
    print(f"{'contender':28}{'per run':>12}{'added':>12}{'run/plain':>12}")
    for contender, figure in zip(contenders, (plain, true, sleep), strict=True):
        print(f"{contender.name:28}{figure * 1000:9.2f} ms{(figure - plain) * 1000:9.2f} ms"
              f"{figure / plain:11.2f}x")  # fmt: skip
    added = sleep - plain
    print(f"{'sleep ' + SLEEP_SECONDS + ' by hand':28}{hand * 1000:9.2f} ms")
    print(f"a check of sleep {SLEEP_SECONDS}: {added * 1000:.2f} ms added to a run, "
          f"{added / hand:.3f}x the same command by hand "
          f"({(added - hand) * 1000:+.2f} ms)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="items per contender and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--store", default=None, help="postgresql://... (default: SQLite)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wrighty-verify-") as scratch_dir:
        scratch = Path(scratch_dir)
        if args.store is None:
            run(args, scratch, [None] * len(CONTENDERS))
            return
        with (
            postgres_schema(args.store) as a,
            postgres_schema(args.store) as b,
            postgres_schema(args.store) as c,
        ):
            run(args, scratch, [a, b, c])


if __name__ == "__main__":
    main()
