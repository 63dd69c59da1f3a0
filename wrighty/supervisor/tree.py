"""A process tree, stopped whole: the process wrighty started, the descendants it was seen
with, and every process that carries its marker in its environment
(docs/worker.md#stopping-a-process-tree).

Agents (process.py) and the short-lived programs wrighty runs (child.py: git, a check's or an
integration's command) are stopped by the same code: SIGTERM to the group and to every known
process, a grace period, SIGKILL to whatever is left, and then the marker is looked for again
until no process carries it, so that one forked while the tree was being stopped is found too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import psutil

# How often a stop looks again for processes carrying the marker, after SIGKILL: each look
# finds only those forked, before they died, by the ones the look before found.
_SWEEPS = 10
_GONE_POLL_SECONDS = 0.05


class ProcessTree:
    """The tree of the process ``pid`` (the leader of its own process group), which
    ``exited`` says has ended: whoever started it waits for it (psutil would reap it and steal
    its exit status from subprocess). Thread-safe; ``stop`` may be called from any thread."""

    def __init__(self, pid: int, exited: threading.Event, marker: tuple[str, str] | None) -> None:
        self.pid = pid
        self.pgid = pid  # started with start_new_session: it leads its own group
        self.started_at = _create_time(pid)
        self._exited = exited
        self._marker = marker
        self._known: dict[int, float] = {}  # descendants seen: pid -> create time
        self._lock = threading.Lock()  # a stop at its end and one at its limit may overlap

    def refresh_descendants(self) -> None:
        """Remember the leader's current descendants, so that ones that later leave its group
        or outlive it can still be stopped."""
        try:
            children = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return
        for child in children:
            try:
                self._remember(child.pid, child.create_time())
            except psutil.Error:
                continue

    def _remember(self, pid: int, created: float) -> None:
        with self._lock:
            self._known.setdefault(pid, created)

    def stop(self, grace_seconds: float) -> None:
        """Stop the leader and every descendant: SIGTERM, grace, then SIGKILL; then SIGKILL to
        every process still carrying the marker, until none does."""
        if not self._exited.is_set():
            self.refresh_descendants()
        self._remember_marked()
        targets = self._live_targets()
        with ignore_missing():
            os.killpg(self.pgid, signal.SIGTERM)
        for process in targets:
            with ignore_missing():
                process.send_signal(signal.SIGTERM)
        survivors = self._wait_for(targets, grace_seconds)
        if not self._exited.is_set():
            self.refresh_descendants()
        self._remember_marked()
        survivors = list({p.pid: p for p in [*survivors, *self._live_targets()]}.values())
        for process in survivors:
            with ignore_missing():
                process.kill()
        with ignore_missing():
            os.killpg(self.pgid, signal.SIGKILL)
        self._wait_for(survivors, grace_seconds)
        self._sweep(grace_seconds)

    def _sweep(self, grace_seconds: float) -> None:
        """SIGKILL every process carrying the marker, and look again, until none does."""
        if self._marker is None:
            return
        for _ in range(_SWEEPS):
            found = _processes(marked(self._marker, pids_after(self.pid)))
            if not found:
                return
            for process in found:
                with ignore_missing():
                    process.kill()
            wait_gone(found, grace_seconds)

    def _wait_for(self, targets: list[psutil.Process], timeout: float) -> list[psutil.Process]:
        """The targets still alive after up to ``timeout`` seconds (the leader is waited for
        through ``exited``)."""
        deadline = time.monotonic() + timeout
        others = [p for p in targets if p.pid != self.pid]
        _, alive = psutil.wait_procs(others, timeout=timeout)
        self._exited.wait(max(0.0, deadline - time.monotonic()))
        if not self._exited.is_set() and any(p.pid == self.pid for p in targets):
            alive.append(psutil.Process(self.pid))
        return alive

    def _remember_marked(self) -> None:
        """Remember every live process that carries the marker in its environment.

        Only processes started after the leader can carry it. On Linux, pids grow over time,
        so reading the environment of the few processes with a larger pid is enough (a pid
        wrap-around during the run could hide one; the heartbeat scan still covers it).
        """
        if self._marker is None:
            return
        for pid, created in marked(self._marker, pids_after(self.pid)).items():
            self._remember(pid, created)

    def _live_targets(self) -> list[psutil.Process]:
        """The leader and its remembered descendants that are still the same processes."""
        with self._lock:
            candidates = {self.pid: self.started_at, **self._known}
        live = []
        for pid, created in candidates.items():
            try:
                process = psutil.Process(pid)
                if abs(process.create_time() - created) < 0.01 and process.status() != (
                    psutil.STATUS_ZOMBIE
                ):
                    live.append(process)
            except psutil.Error:
                continue
        return live


def marked(marker: tuple[str, str], pids: list[int]) -> dict[int, float]:
    """The processes among ``pids`` whose environment carries ``marker``, with start times."""
    needle = b"\0" + f"{marker[0]}={marker[1]}".encode() + b"\0"
    found = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environment = b"\0" + handle.read()
            if needle in environment:
                found[pid] = psutil.Process(pid).create_time()
        except (OSError, psutil.Error):
            continue
    return found


def _processes(found: dict[int, float]) -> list[psutil.Process]:
    """The processes ``found`` (pid -> start time) that are still those processes, running."""
    live = []
    for pid, created in found.items():
        try:
            process = psutil.Process(pid)
            if abs(process.create_time() - created) < 0.01 and _still_running(process):
                live.append(process)
        except psutil.Error:
            continue
    return live


def wait_gone(targets: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """The targets still running (not ended, not zombies) after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [process for process in targets if _still_running(process)]
        left = deadline - time.monotonic()
        if not alive or left <= 0:
            return alive
        psutil.wait_procs(alive, timeout=min(_GONE_POLL_SECONDS, left))
        targets = alive


def _still_running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def pids_after(pid: int) -> list[int]:
    try:
        entries = os.listdir("/proc")
    except OSError:
        return [p for p in psutil.pids() if p > pid]
    return [int(name) for name in entries if name.isdigit() and int(name) > pid]


def _create_time(pid: int) -> float:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return 0.0


def ignore_missing() -> contextlib.suppress:
    """Ignore 'no such process' and 'access denied': the target is already gone."""
    return contextlib.suppress(
        ProcessLookupError, PermissionError, psutil.NoSuchProcess, psutil.AccessDenied
    )


def kill_group_and_descendants(pid: int) -> None:
    """SIGKILL to the process group led by ``pid`` and to every descendant of ``pid``, those
    that left the group included (their parent's waiter reaps the leader)."""
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    with contextlib.suppress(OSError):  # gone already
        os.killpg(pid, signal.SIGKILL)
    for child in descendants:
        with contextlib.suppress(psutil.Error):
            child.kill()


def started_at(pid: int | None = None) -> float:
    """When process ``pid`` (this one by default) started, as the system tells it."""
    return psutil.Process(pid).create_time()
