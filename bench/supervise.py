"""Supervision overhead: what wrighty adds around each agent run, and what an idle worker costs.

Measured in one run, on a fresh SQLite store in a temporary directory:

1. runs/s and per-run time of N runs of ``/bin/true`` through the command adapter
   (claim, run record, session, spawn, pid record, watch, classify, settle), beside a bare
   ``subprocess.Popen(["/bin/true"]).wait()`` loop; the difference is wrighty's overhead;
2. exit-detection latency: from the moment an agent exits (it prints a clock reading as its
   last act) to the moment its settled row is committed, p50 and p99;
3. an idle ``wrighty worker start`` (empty queue, default poll interval): CPU and RSS.

Usage: python bench/supervise.py [--runs 2000] [--latency-runs 200] [--idle-seconds 60]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from wrighty.config import LoadedConfig, check_config_text
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.store.sqlite import SqliteStore
from wrighty.worker.loop import Worker, WorkerOptions


def make_project(root: Path, command: list[str], **worker: Any) -> tuple[SqliteStore, LoadedConfig]:
    document = {
        "worker": {"defaultAgent": "bench", **worker},
        "agents": {"bench": {"adapter": "command", "command": command, "resumeCommand": command}},
    }
    config, problems = check_config_text(json.dumps(document))
    assert config is not None, problems
    (root / "wrighty.json").write_text(json.dumps(document))
    store = SqliteStore.open(root / ".wrighty" / "wrighty.db")
    return store, LoadedConfig(root / "wrighty.json", config)


def queue_items(store: SqliteStore, root: Path, count: int) -> None:
    now = datetime.now(UTC)
    for n in range(count):
        new = NewItem(f"item {n}", "no-op", None, None, str(root), ItemState.QUEUED)
        store.create_item(new, at=now, actor="bench")


def bare_loop(runs: int) -> float:
    began = time.perf_counter()
    for _ in range(runs):
        subprocess.Popen(["/bin/true"]).wait()
    return (time.perf_counter() - began) / runs


def wrighty_loop(runs: int, scratch: Path) -> float:
    root = scratch / "throughput"
    root.mkdir()
    store, loaded = make_project(root, ["/bin/true"])
    queue_items(store, root, runs)
    worker = Worker(store, loaded, installation_id="inst-bench", output=lambda _: None)
    began = time.perf_counter()
    processed = worker.run(WorkerOptions(max_items=runs, stop_grace_seconds=1))
    elapsed = time.perf_counter() - began
    store.close()
    if processed != runs:
        raise RuntimeError(f"processed {processed} of {runs}")
    return elapsed / runs


def exit_latencies(runs: int, scratch: Path) -> list[float]:
    """Seconds from each agent's last act to its settled row, for ``runs`` runs."""
    return settle_latencies(runs, scratch / "latency", "exit", "settled")


# The agent's last act: print the clock, then end (exit 0, or die by SIGKILL).
_LAST_ACT = {
    "exit": "import time\nprint(repr(time.time()), flush=True)\n",
    "crash": (
        "import os, signal, time\nprint(repr(time.time()), flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    ),
}


def settle_latencies(
    runs: int, root: Path, ending: str, event_name: str, **worker: Any
) -> list[float]:
    """Seconds from each agent's last act (``ending``: "exit" or "crash") to the moment the
    worker reported ``event_name`` for its item (emitted right after the row is committed)."""
    root.mkdir()
    agent = root / "agent.py"
    agent.write_text(_LAST_ACT[ending])
    store, loaded = make_project(root, [sys.executable, "-S", str(agent)], **worker)
    queue_items(store, root, runs)
    committed_at: dict[int, float] = {}

    def on_event(event: dict[str, Any]) -> None:
        if event["event"] == event_name:
            committed_at[event["item_id"]] = time.time()

    worker_ = Worker(store, loaded, installation_id="inst-bench", output=on_event)
    worker_.run(WorkerOptions(max_items=runs, stop_grace_seconds=1))
    latencies = []
    for item in store.list_items():
        [run] = store.list_runs(item.id)
        log = root / ".wrighty" / "runs" / str(item.id) / run.run_id / "stdout.log"
        ended_at = float(log.read_text().split()[0])
        latencies.append(committed_at[item.id] - ended_at)
    store.close()
    return latencies


def percentiles(latencies: list[float]) -> tuple[float, float]:
    ordered = sorted(latencies)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def idle_worker(seconds: float, scratch: Path) -> tuple[float, float]:
    """CPU (share of one core) and RSS (MB) of an idle worker over ``seconds``."""
    root = scratch / "idle"
    root.mkdir()
    store, _ = make_project(root, ["/bin/true"])
    store.close()
    process = subprocess.Popen(
        [sys.executable, "-m", "wrighty", "worker", "start"],
        cwd=root,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "XDG_CONFIG_HOME": str(scratch / "xdg")},
    )
    try:
        time.sleep(3)  # let it import and open the store before measuring
        watched = psutil.Process(process.pid)
        cpu_before = sum(watched.cpu_times()[:2])
        time.sleep(seconds)
        cpu = (sum(watched.cpu_times()[:2]) - cpu_before) / seconds
        rss_mb = watched.memory_info().rss / 1e6
    finally:
        process.terminate()
        process.wait(30)
    return cpu, rss_mb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--latency-runs", type=int, default=200)
    parser.add_argument("--idle-seconds", type=float, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wrighty-supervise-") as scratch_dir:
        scratch = Path(scratch_dir)
        bare = bare_loop(args.runs)
        supervised = wrighty_loop(args.runs, scratch)
        print(
            f"{args.runs} runs of /bin/true: bare Popen().wait() {bare * 1000:.2f} ms/run "
            f"({1 / bare:.0f}/s), wrighty {supervised * 1000:.2f} ms/run ({1 / supervised:.0f}/s); "
            f"overhead {(supervised - bare) * 1000:.2f} ms/run, ratio {supervised / bare:.1f}x",
            flush=True,
        )
        latencies = exit_latencies(args.latency_runs, scratch)
        p50, p99 = percentiles(latencies)
        print(
            f"exit to settled row over {len(latencies)} runs: p50 {p50 * 1000:.2f} ms, "
            f"p99 {p99 * 1000:.2f} ms",
            flush=True,
        )
        cpu, rss = idle_worker(args.idle_seconds, scratch)
        print(
            f"idle worker over {args.idle_seconds:.0f} s: CPU {cpu * 100:.2f}% of a core, "
            f"RSS {rss:.1f} MB",
            flush=True,
        )


if __name__ == "__main__":
    main()
