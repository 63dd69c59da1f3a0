"""A worker whose own machine cannot make workspaces (a tmpfs with no inodes left where it makes
them, as root; a folder it may not write, otherwise) beside a healthy worker on the same store:
the sick one puts each item back unspent, backs off, holds and says so in `workers` and
`status`; the healthy one does every item (docs/worker.md#when-the-workers-machine-fails). The
same with six sick workers at once, each whose own folder is broken another way (a file, a link
loop, a too long name, no permission, where its workspaces or run logs go)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import postgres_schema
from tests.integration.worker_process import EXAMPLE_AGENT, make_project
from wrighty.domain.model import NewItem
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import replay
from wrighty.store import open_store, parse_store_url
from wrighty.store.port import Store

ITEMS = 4


def project(root: Path, url: str) -> Path:
    """A project at ``root`` on the shared store ``url``, which its commands make."""
    made = make_project(
        root, worker={"workspaceMode": "directory"}, store_url=url, create_store=False
    )
    return made.root


@pytest.fixture
def no_room(tmp_path: Path) -> Iterator[Path]:
    """A folder where no directory can be made: a tmpfs with no inode left (as root), or a
    folder of mode 0500 (otherwise: root writes in it anyway)."""
    folder = tmp_path / "a" / ".wrighty" / "workspaces"
    folder.mkdir(parents=True)
    if os.geteuid() != 0:
        folder.chmod(0o500)
        yield folder
        folder.chmod(0o700)
        return
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k,nr_inodes=1", "tmpfs", str(folder)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
        return
    with postgres_schema() as url:
        yield url


def shared(url: str, *, create: bool = False) -> Store:
    return open_store(parse_store_url(url, base=Path("/")), create=create)


def wrighty(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wrighty", "--config", str(folder / "wrighty.json"), *args],
        cwd=folder, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def reading(folder: Path, *args: str) -> subprocess.Popen[str]:
    """`wrighty ARGS` started in the background (the reads run side by side)."""
    return subprocess.Popen(
        [sys.executable, "-m", "wrighty", "--config", str(folder / "wrighty.json"), *args],
        cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def events_until(worker: subprocess.Popen[str], wanted: str) -> list[dict[str, Any]]:
    """The worker's events up to the first ``wanted``; the test fails if the worker ends, or
    a minute passes, before it (a worker that never holds must not hang the test)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert worker.stdout is not None
        for line in worker.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None:
            pytest.fail(f"no {wanted} event from the worker: {seen[-20:]}")
        seen.append(json.loads(line))
        if seen[-1]["event"] == wanted:
            return seen


def test_a_worker_that_cannot_make_workspaces_holds_and_a_healthy_one_does_every_item(
    tmp_path: Path, no_room: Path, store_url: str
) -> None:
    sick = project(tmp_path / "a", store_url)  # its workspaces folder: no room (no_room)
    healthy = project(tmp_path / "b", store_url)
    store = shared(store_url, create=True)
    try:
        for n in range(ITEMS):
            new = NewItem(f"item {n}", "do it", None, None, None, ItemState.QUEUED)
            store.create_item(new, at=datetime.now(UTC), actor="test")
    finally:
        store.close()

    a = subprocess.Popen(
        [sys.executable, "-m", "wrighty", "--config", str(sick / "wrighty.json"), "worker",
         "start", "--json"],
        cwd=sick, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        told = events_until(a, "worker-held")
        reads = [reading(healthy, *args) for args in (["workers", "--json"], ["status", "--json"],
                                                       ["workers"])]  # fmt: skip
        workers, status, table = (read.communicate(timeout=60)[0] for read in reads)
        workers, status = json.loads(workers), json.loads(status)
        b = wrighty(healthy, "worker", "start", "--idle-timeout", "1s", "--json")
    finally:
        a.send_signal(signal.SIGTERM)
        a.wait(timeout=60)
        assert a.stderr is not None
        a_err = a.stderr.read()
    assert b.returncode == 0, b.stderr
    assert a.returncode == 130, a_err

    # A: three machine failures in a row (1 s, then 2 s apart), then held; it said why.
    failures = [e for e in told if e["event"] == "machine-failure"]
    assert [e["retry_in_seconds"] for e in failures] == [1, 2, 120]
    assert "no space left on device" in failures[0]["cause"].lower() or (
        "permission denied" in failures[0]["cause"].lower()
    )
    assert [e["state"] for e in told if e["event"] == "settled"] == ["queued"] * 3
    [held] = [e for e in told if e["event"] == "worker-held"]
    a_id = held["worker_id"]
    [row] = [w for w in workers if w["worker_id"] == a_id]
    assert row["held_reason"] == held["reason"]
    assert "could not create the workspace" in row["held_reason"]
    assert "(3 times in a row)" in row["held_reason"]
    [warning] = [w for w in status["warnings"] if w["check"] == "held_workers"]
    assert warning["message"].startswith(f"worker {a_id} claims nothing: its machine could not")
    assert f"held {a_id}: its machine could not create the workspace" in table

    # B did every item; none spent an attempt; every history replays.
    store = shared(store_url)
    try:
        items = store.list_items()
        assert [item.state for item in items] == [ItemState.DONE] * ITEMS
        b_ids = {e["worker_id"] for e in json.loads("[" + ",".join(b.stdout.splitlines()) + "]")}
        for item in items:
            assert (item.crash_retries, item.usage_retries, item.requeues) == (0, 0, 0)
            assert {run.worker_id for run in store.list_runs(item.id)} <= b_ids
            history = store.list_events(item.id)
            assert replay(history) is ItemState.DONE
            for event in history:
                if event.reason_code == "machine-failure":
                    assert event.actor == f"worker:{a_id}"
                    assert (event.from_state, event.to_state) == (
                        ItemState.RUNNING, ItemState.QUEUED)  # fmt: skip
        put_back = [
            e
            for item in items
            for e in store.list_events(item.id)
            if e.reason_code == "machine-failure"
        ]
        assert len(put_back) == 3
    finally:
        store.close()


def test_a_held_worker_lets_go_of_the_project_directory_in_current_mode(tmp_path: Path) -> None:
    # Worker A's agent cannot be found on the PATH the agent gets (its `env`): every start
    # fails on A's side. In "current" mode one agent at a time works in the project directory;
    # a held A must not keep it from B, which runs another agent there.
    agent = str(Path(EXAMPLE_AGENT[1]))
    folder = project(tmp_path / "p", "sqlite:///.wrighty/wrighty.db")
    document = json.loads((folder / "wrighty.json").read_text())
    document["worker"]["workspaceMode"] = "current"
    document["agents"]["broken"] = {"adapter": "command", "command": ["python3", agent],
                                    "env": {"PATH": str(tmp_path / "empty")}}  # fmt: skip
    (folder / "wrighty.json").write_text(json.dumps(document))
    store = shared(f"sqlite:///{folder / '.wrighty' / 'wrighty.db'}", create=True)
    try:
        for agent_name in ("broken", "example"):
            new = NewItem(agent_name, "do it", agent_name, None, None, ItemState.QUEUED)
            store.create_item(new, at=datetime.now(UTC), actor="test")
    finally:
        store.close()
    a = reading(folder, "worker", "start", "--agent", "broken", "--json")
    try:
        told = events_until(a, "worker-held")
        b = wrighty(folder, "worker", "start", "--agent", "example", "--once", "--json")
    finally:
        a.send_signal(signal.SIGTERM)
        a.wait(timeout=60)
    assert "could not find the agent's program" in told[-1]["cause"]
    assert b.returncode == 0, b.stderr
    assert [json.loads(line)["event"] for line in b.stdout.splitlines()][1:3] == [
        "claimed", "spawned"]  # fmt: skip
    store = shared(f"sqlite:///{folder / '.wrighty' / 'wrighty.db'}")
    try:
        broken, example = store.list_items()
    finally:
        store.close()
    assert (broken.state, broken.reason_code) == (ItemState.QUEUED, "machine-failure")
    assert example.state is ItemState.DONE


# -- a matrix of sick workers beside one healthy worker ------------------------------------


def file_at(path: Path) -> None:
    path.write_text("not a folder\n")


def loop_at(path: Path) -> None:
    path.symlink_to(path.name)  # a link to itself: ELOOP, EEXIST when made


def too_long_at(path: Path) -> None:
    path.symlink_to(path.parent / ("x" * 300))  # a name longer than any folder's: ENAMETOOLONG


def read_only_at(path: Path) -> None:
    path.mkdir()
    path.chmod(0o500)  # the item's folder cannot be made in it: EACCES


def git_project(root: Path) -> None:
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True)


GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip

ROOT_FAILED = "create the folder it makes workspaces in"
# (name, workspaceMode, the worker's folder made sick, how, what its hold says it could not do)
SICK = [
    ("file-workspaces", "directory", "workspaces", file_at, ROOT_FAILED),
    ("file-worktrees", "worktree", "worktrees", file_at, ROOT_FAILED),
    ("loop", "directory", "workspaces", loop_at, ROOT_FAILED),
    ("too-long", "directory", "workspaces", too_long_at, ROOT_FAILED),
    ("read-only", "directory", "workspaces", read_only_at, "create the workspace"),
    ("file-runs", "directory", "runs", file_at, "write the run's logs"),
]


def without_root_powers() -> list[str]:
    """What the sick workers run under: as root, without the power to write in any folder
    (so a folder of mode 0500 refuses it, as it refuses anyone else)."""
    if os.geteuid() != 0:
        return []
    drop = "-dac_override,-dac_read_search"
    return ["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}"]


def test_sick_workers_of_every_kind_put_every_item_back_and_a_healthy_one_does_them_all(
    tmp_path: Path, store_url: str
) -> None:
    # Six workers, each whose own folder is broken in its own way, on the same store as a
    # healthy one: each puts back what it claims, unspent, and holds saying why; the healthy
    # worker then does every item. A failure making the worker's own folders is its machine's,
    # whatever the error (a file where one goes: ENOTDIR; a link loop; a too long name; no
    # permission).
    sick: dict[str, tuple[Path, str]] = {}
    for name, mode, folder, make_sick, cannot in SICK:
        root = project(tmp_path / name, store_url)
        document = json.loads((root / "wrighty.json").read_text())
        document["worker"]["workspaceMode"] = mode
        (root / "wrighty.json").write_text(json.dumps(document))
        if mode == "worktree":
            git_project(root)
        (root / ".wrighty").mkdir(mode=0o700)
        make_sick(root / ".wrighty" / folder)
        sick[name] = (root, cannot)
    healthy = project(tmp_path / "healthy", store_url)
    store = shared(store_url, create=True)
    try:
        for n in range(ITEMS):
            new = NewItem(f"item {n}", "do it", None, None, None, ItemState.QUEUED)
            store.create_item(new, at=datetime.now(UTC), actor="test")
    finally:
        store.close()

    workers = {name: sick_worker(root) for name, (root, _) in sick.items()}
    good: subprocess.Popen[str] | None = None
    try:
        told = {name: events_until(worker, "worker-held") for name, worker in workers.items()}
        rows = json.loads(wrighty(healthy, "workers", "--json").stdout)
        good = reading(healthy, "worker", "start", "--idle-timeout", "1h", "--json")
        deadline = time.monotonic() + 120
        while not all_done(store_url):
            assert good.poll() is None, good.communicate()
            assert time.monotonic() < deadline, states(store_url)
            time.sleep(0.2)
    finally:
        for worker in [*workers.values(), *([good] if good else [])]:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
    assert good is not None
    assert good.returncode == 130

    held_by: dict[str, str] = {}
    for name, (_, cannot) in sick.items():
        [held] = [e for e in told[name] if e["event"] == "worker-held"]
        held_by[held["worker_id"]] = name
        assert f"its machine could not {cannot}: " in held["reason"], (name, held["reason"])
        [row] = [w for w in rows if w["worker_id"] == held["worker_id"]]
        assert row["held_reason"] == held["reason"]
        settled = [e for e in told[name] if e["event"] == "settled"]
        assert [(e["state"], e["reason_code"]) for e in settled] == [
            ("queued", "machine-failure")] * 3, name  # fmt: skip

    store = shared(store_url)
    try:
        for item in store.list_items():
            assert item.state is ItemState.DONE
            assert (item.crash_retries, item.usage_retries, item.requeues) == (0, 0, 0)
            for run in store.list_runs(item.id):
                if run.worker_id in held_by:  # a sick worker's run (the logs' step records it)
                    assert run.outcome_class is OutcomeClass.START_FAILED
            for event in store.list_events(item.id):
                if event.reason_code == "machine-failure":
                    assert event.actor.removeprefix("worker:") in held_by
    finally:
        store.close()


def sick_worker(root: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*without_root_powers(), sys.executable, "-m", "wrighty", "--config",
         str(root / "wrighty.json"), "worker", "start", "--json"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def all_done(url: str) -> bool:
    store = shared(url)
    try:
        return all(item.state is ItemState.DONE for item in store.list_items())
    finally:
        store.close()


def states(url: str) -> list[tuple[int, str, str | None]]:
    store = shared(url)
    try:
        return [(item.id, item.state.value, item.reason) for item in store.list_items()]
    finally:
        store.close()
