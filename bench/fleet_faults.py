"""The fleet's promises under real faults: how long after its lease each agent stopped, and how
long the healthy workers waited.

Two installations share one PostgreSQL database, each with one `wrighty worker start` process
(as a user runs it). Worker A reaches the database through a TCP proxy of ours
(tests/faults/proxy.py); worker B goes direct. Each scenario uses a fresh schema:

- freeze: A's agent runs; then A's packets stop, without an error, until A's item is reaped.
- refuse: A's agent runs; then the database refuses A's connections for 35 s.
- hold:   A's lease renewal reaches the server and its COMMIT never does (A's session idle in
          transaction, holding the row); once A's lease has ended, items are queued for the
          idle B, and `wrighty reap` is run.
- skew:   B's clock is 10 minutes ahead (libfaketime); items run on both.
- skew-kill: B's clock is 2 minutes ahead; B is killed while its agent runs; A reaps the item.
- full:   A cannot create workspaces (they live on a file system with no inode left: a tmpfs
          mounted for the run, so this one needs root); items are queued.

The agent writes the wall time at which it got SIGTERM to a file; the lease's end is the last
`lease_expires_at` the database held for A's claim. Figures are seconds; "before lease end"
is negative when the agent was stopped before its lease ended.

Usage: python bench/fleet_faults.py [--store postgresql://postgres@127.0.0.1:5432/test]
       [--lease 10] [--scenarios freeze refuse hold skew full]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.faults.proxy import FaultProxy  # noqa: E402
from tests.faults.skewed import skewed_env  # noqa: E402

AGENT = """
import os, signal, sys, time
out = os.environ["BENCH_OUT"]
def term(*_):
    with open(os.path.join(out, f"{os.environ['WRIGHTY_ITEM_ID']}-{os.getpid()}.term"), "w") as f:
        f.write(repr(time.time()))
    sys.exit(143)
signal.signal(signal.SIGTERM, term)
time.sleep(float(sys.stdin.read().strip() or 0))
"""


class Worker:
    """A `wrighty worker start --json` process and the events it printed so far."""

    def __init__(self, project: Path, env: dict[str, str], *args: str) -> None:
        self.events: list[dict[str, Any]] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "wrighty", "worker", "start", "--json", *args],
            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,))
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            event["seen"] = time.time()
            self.events.append(event)

    def named(self, name: str) -> list[dict[str, Any]]:
        return [event for event in list(self.events) if event.get("event") == name]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(5)


class Fleet:
    def __init__(self, server: str, base: Path, lease: float) -> None:
        self.server = server
        self.base = base
        self.lease = lease
        self.schema = f"wrighty_bench_{uuid.uuid4().hex[:10]}"
        self.out = base / "out"
        self.out.mkdir()
        self.proxy = FaultProxy(_host_port(server))
        self.workers: list[Worker] = []
        self.watches: list[LeaseWatch] = []
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {self.schema}")

    def url(self, *, through_proxy: bool) -> str:
        host = f"127.0.0.1:{self.proxy.port}" if through_proxy else "127.0.0.1:5432"
        return f"postgresql://postgres@{host}/test?options=-csearch_path%3D{self.schema}"

    def project(self, name: str, *, through_proxy: bool, **worker: Any) -> tuple[Path, dict]:
        project = self.base / name
        project.mkdir()
        command = [sys.executable, "-c", AGENT]
        document = {
            "store": {"url": self.url(through_proxy=through_proxy)},
            "worker": {
                "defaultAgent": "agent", "workspaceMode": "directory",
                "leaseSeconds": self.lease, "heartbeatSeconds": self.lease / 4,
                "pollSeconds": 0.2, **worker,
            },
            "agents": {"agent": {"adapter": "command", "command": command}},
        }  # fmt: skip
        (project / "wrighty.json").write_text(json.dumps(document))
        env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
        env["XDG_CONFIG_HOME"] = str(self.base / f"{name}-config")
        env["BENCH_OUT"] = str(self.out)
        if not (self.base / "initialised").exists():
            subprocess.run([sys.executable, "-m", "wrighty", "init"], cwd=project, env=env,
                           check=True, capture_output=True)  # fmt: skip
            (self.base / "initialised").touch()
        return project, env

    def start(self, project: Path, env: dict[str, str], *args: str) -> Worker:
        worker = Worker(project, env, *args)
        self.workers.append(worker)
        return worker

    def create(self, project: Path, env: dict[str, str], body: str) -> int:
        command = ["create", "--title", "item", "--body", body, "--queue", "--json"]
        done = subprocess.run([sys.executable, "-m", "wrighty", *command], cwd=project, env=env,
                              capture_output=True, text=True, check=True)  # fmt: skip
        return int(json.loads(done.stdout)["id"])

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url(through_proxy=False), autocommit=True) as connection:
            return connection.execute(sql, params).fetchall()

    def close(self) -> None:
        for watch in self.watches:
            watch.stop()
        self.proxy.forward()
        for worker in self.workers:
            worker.stop()
        self.proxy.close()
        with psycopg.connect(self.server, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {self.schema} CASCADE")


def _host_port(url: str) -> tuple[str, int]:
    rest = url.split("@", 1)[-1].split("/", 1)[0]
    host, _, port = rest.partition(":")
    return host or "127.0.0.1", int(port or 5432)


def _wait(what: str, ready: Callable[[], Any], timeout: float) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = ready()
        if found:
            return found
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


def _figure(ready: Callable[[], Any], timeout: float) -> Any:
    """What ``ready`` finds within ``timeout`` seconds, or None."""
    try:
        return _wait("it", ready, timeout)
    except TimeoutError:
        return None


def _after(moment: float | None, reference: float) -> float | str:
    return "not within the wait" if moment is None else round(moment - reference, 2)


def _when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class LeaseWatch:
    """The last lease end the database held for one claim (item and generation), read every
    100 ms until stopped."""

    def __init__(self, fleet: Fleet, item: int, generation: int) -> None:
        self.last: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(fleet, item, generation))
        self._thread.start()
        fleet.watches.append(self)

    def _watch(self, fleet: Fleet, item: int, generation: int) -> None:
        while not self._stop.wait(0.1):
            rows = fleet.query(
                "SELECT lease_expires_at FROM items WHERE id = %s AND generation = %s AND "
                "state = 'running'", item, generation)  # fmt: skip
            if rows and rows[0][0]:
                self.last = _when(rows[0][0])

    def stop(self) -> float:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        assert self.last is not None
        return self.last


def _term_time(fleet: Fleet, item: int) -> float | None:
    found = sorted(fleet.out.glob(f"{item}-*.term"))
    return float(found[0].read_text()) if found else None


def _reaped_at(fleet: Fleet, item: int) -> float | None:
    rows = fleet.query(
        "SELECT at FROM item_events WHERE item_id = %s AND reason_code = 'worker-lost' ORDER BY id",
        item,
    )
    return _when(rows[0][0]) if rows else None


def cut_off(fleet: Fleet, fault: str) -> dict[str, Any]:
    """freeze / refuse: A's agent runs, then A loses the database."""
    project_a, env_a = fleet.project("a", through_proxy=True)
    project_b, env_b = fleet.project("b", through_proxy=False)
    item = fleet.create(project_a, env_a, "600")
    a = fleet.start(project_a, env_a)
    spawned = _wait("A's agent", lambda: a.named("spawned"), 60)[0]
    generation = a.named("claimed")[0]["generation"]
    watch = LeaseWatch(fleet, item, generation)
    time.sleep(fleet.lease / 2)
    cut = time.time()
    if fault == "freeze":
        fleet.proxy.freeze()
    else:
        fleet.proxy.refuse()
    b = fleet.start(project_b, env_b)
    term = _figure(lambda: _term_time(fleet, item), 120)
    reaped = _figure(lambda: _reaped_at(fleet, item), 120)
    lease_end = watch.stop()
    if fault == "refuse":
        time.sleep(max(0.0, cut + 35 - time.time()))
    fleet.proxy.forward()
    unreachable = [e for e in a.named("store-unreachable") if e["seen"] >= cut]
    return {
        "agent stopped after lease end (s)": _after(term, lease_end),
        "reaped after lease end (s)": _after(reaped, lease_end),
        "A's store-unreachable events while cut off": len(unreachable),
        "A's claim-lost reasons": sorted({e.get("reason") for e in a.named("claim-lost")}),
        "spawned": spawned["item_id"], "B claimed": len(b.named("claimed")),
    }  # fmt: skip


def hold(fleet: Fleet) -> dict[str, Any]:
    project_a, env_a = fleet.project("a", through_proxy=True)
    project_b, env_b = fleet.project("b", through_proxy=False)
    item = fleet.create(project_a, env_a, "600")
    a = fleet.start(project_a, env_a)
    _wait("A's agent", lambda: a.named("spawned"), 60)
    generation = a.named("claimed")[0]["generation"]
    watch = LeaseWatch(fleet, item, generation)
    fleet.proxy.hold_after(b"SET lease_expires_at = greatest(")
    _wait("A's held renewal", lambda: fleet.proxy.held(), 60)
    stalled = time.time()
    b = fleet.start(project_b, env_b)
    _wait("B", lambda: b.named("started"), 60)
    time.sleep(max(0.0, (watch.last or time.time()) + 2 - time.time()))  # A's lease has ended
    queued = {}
    for _ in range(3):
        queued[fleet.create(project_b, env_b, "0")] = time.time()
    reap_started = time.time()
    try:
        subprocess.run([sys.executable, "-m", "wrighty", "reap"], cwd=project_b, env=env_b,
                       capture_output=True, timeout=60)  # fmt: skip
        reap_took: float | str = round(time.time() - reap_started, 2)
    except subprocess.TimeoutExpired:
        reap_took = "did not return within 60 s"
    _figure(lambda: {e["item_id"] for e in b.named("claimed")} >= set(queued), 120)
    claimed = {e["item_id"]: e["seen"] for e in reversed(b.named("claimed"))}
    waits = [claimed[n] - at for n, at in queued.items() if n in claimed]
    taken_by_a = sorted({e["item_id"] for e in a.named("claimed")} & set(queued))
    term = _figure(lambda: _term_time(fleet, item), 120)
    reaped = _figure(lambda: _reaped_at(fleet, item), 120)
    lease_end = watch.stop()
    return {
        "agent stopped after lease end (s)": _after(term, lease_end),
        "reaped after lease end (s)": _after(reaped, lease_end),
        "reaped after A's transaction stalled (s)": _after(reaped, stalled),
        "B's wait from queued to claimed, max (s)": round(max(waits), 2) if waits else None,
        "new items B claimed": len(waits),
        "new items A claimed": len(taken_by_a),
        "`wrighty reap` took (s)": reap_took,
    }


def skew(fleet: Fleet) -> dict[str, Any]:
    project_a, env_a = fleet.project("a", through_proxy=False)
    project_b, env_b = fleet.project("b", through_proxy=False)
    env_b = skewed_env(env_b, "+10m")
    items = [fleet.create(project_a, env_a, "3") for _ in range(6)]
    a = fleet.start(project_a, env_a, "--idle-timeout", "5s")
    b = fleet.start(project_b, env_b, "--idle-timeout", "5s")
    for worker in (a, b):
        worker.process.wait(300)
    rows = fleet.query("SELECT state FROM items ORDER BY id")
    lost = fleet.query("SELECT count(*) FROM item_events WHERE reason_code = 'worker-lost'")[0][0]
    return {
        "items done": sum(1 for (state,) in rows if state == "done"), "items": len(items),
        "worker-lost (reclaims spent)": lost,
        "claimed by A / B": (len(a.named("claimed")), len(b.named("claimed"))),
        "B's clock events": [e["event"] for e in b.events if "clock" in e.get("event", "")],
    }  # fmt: skip


def skew_kill(fleet: Fleet) -> dict[str, Any]:
    """A worker two minutes ahead is killed (SIGKILL) while its agent runs: how long its item
    stays running before the correct worker reaps it."""
    project_a, env_a = fleet.project("a", through_proxy=False)
    project_b, env_b = fleet.project("b", through_proxy=False)
    item = fleet.create(project_b, env_b, "600")
    b = fleet.start(project_b, skewed_env(env_b, "+2m"))
    _wait("B's agent", lambda: b.named("spawned"), 60)
    b.process.kill()
    killed = time.time()
    fleet.start(project_a, env_a)
    reaped = _figure(lambda: _reaped_at(fleet, item), 300)
    return {"item running after the kill (s)": _after(reaped, killed)}


def full(fleet: Fleet) -> dict[str, Any]:
    project_a, env_a = fleet.project("a", through_proxy=False)
    project_b, env_b = fleet.project("b", through_proxy=False)
    workspaces = project_a / ".wrighty" / "workspaces"
    workspaces.mkdir(parents=True, exist_ok=True)
    # no inode left (root writes through a read-only mode; a full file system stops it too)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,nr_inodes=1", "tmpfs",
                    str(workspaces)], check=True)  # fmt: skip
    items = [fleet.create(project_a, env_a, "0") for _ in range(20)]
    a = fleet.start(project_a, env_a, "--idle-timeout", "5s")
    time.sleep(1)
    b = fleet.start(project_b, env_b, "--idle-timeout", "5s")
    for worker in (a, b):
        worker.process.wait(300)
    subprocess.run(["umount", str(workspaces)], check=True)
    rows = fleet.query("SELECT state, crash_retries + requeues FROM items ORDER BY id")
    return {
        "items done": sum(1 for (state, _) in rows if state == "done"), "items": len(items),
        "attempts spent": sum(retries for (_, retries) in rows),
        "claimed by A / B": (len(a.named("claimed")), len(b.named("claimed"))),
    }  # fmt: skip


SCENARIOS: dict[str, Callable[[Fleet], dict[str, Any]]] = {
    "freeze": lambda fleet: cut_off(fleet, "freeze"),
    "refuse": lambda fleet: cut_off(fleet, "refuse"),
    "hold": hold,
    "skew": skew,
    "skew-kill": skew_kill,
    "full": full,
}


@contextmanager
def fleet_for(server: str, lease: float) -> Iterator[Fleet]:
    with tempfile.TemporaryDirectory(prefix="wrighty-faults-") as scratch:
        fleet = Fleet(server, Path(scratch), lease)
        try:
            yield fleet
        finally:
            fleet.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--lease", type=float, default=10.0)
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    args = parser.parse_args()
    print(f"lease {args.lease:g} s, heartbeat {args.lease / 4:g} s, PostgreSQL {args.store}")
    for name in args.scenarios:
        with fleet_for(args.store, args.lease) as fleet:
            try:
                figures = SCENARIOS[name](fleet)
            except TimeoutError as error:
                figures = {"failed": str(error)}
        print(f"{name}: " + "; ".join(f"{key} {value}" for key, value in figures.items()),
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
