"""One check run as a supervised process, and the evidence it leaves (docs/verify.md).

A check is started like an agent (``launch``: its own process group, the parent-death signal,
output pumped to capped log files, no shell) with stdin empty, and stopped, tree and all, at
its time limit or when whoever runs it says so. Its evidence keeps the end of its output,
secrets redacted. Who runs it (the worker under a claim, or `wrighty verify` by hand) decides
at every heartbeat whether it goes on (``keep``).
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from wrighty.domain.check_evidence import CheckEvidence
from wrighty.domain.leases import until_beat
from wrighty.domain.output import tails_text
from wrighty.domain.redact import redact_known, tail_window_bytes
from wrighty.domain.sandbox import Sandbox
from wrighty.domain.verify import Check
from wrighty.supervisor.child import new_marker
from wrighty.supervisor.process import AgentProcess, LaunchError, LaunchSpec, launch, program_from

# How much of the end of a check's output its evidence keeps, in characters.
TAIL_CHARS = 4_000


class Keep(enum.Enum):
    """What whoever runs a check says at a heartbeat."""

    GO = "go"  # let it run
    STOP = "stop"  # stop it now; the caller knows why (no evidence)
    TIME_UP = "time-up"  # stop it as if its own time limit had come (evidence, timed out)


@dataclass(frozen=True)
class CheckSpec:
    """One check to run: where, with what environment, and how its stop is paced."""

    check: Check
    cwd: Path
    log_dir: Path  # its own folder: stdout.log and stderr.log
    env: Mapping[str, str]
    secrets: tuple[str, ...] = ()  # values its evidence never shows
    grace_seconds: float = 5.0  # SIGTERM, this long, then SIGKILL
    heartbeat_seconds: float = 10.0  # how often ``keep`` is asked (on the grid of until_beat)
    marker: tuple[str, str] | None = None  # as LaunchSpec's (None: one of its own)
    sandbox: Sandbox | None = None  # as LaunchSpec's (docs/sandbox.md)


def check_argv(check: Check, cwd: Path) -> tuple[str, ...]:
    """The check's argv with a relative program path (``.venv/bin/pytest``) made absolute
    from the folder it runs in, as a person reads it; a bare name is looked up on PATH."""
    return program_from(check.argv, cwd)


def run_check(
    spec: CheckSpec,
    *,
    wake: threading.Event | None = None,
    started: Callable[[AgentProcess], bool] = lambda _: True,
    keep: Callable[[], Keep] = lambda: Keep.GO,
) -> CheckEvidence | None:
    """Run the check to its end, or its time limit, and return its evidence; None when
    ``started`` (told the process once it runs) or ``keep`` (asked at every heartbeat and
    whenever ``wake`` is set) said to stop it: it is stopped, tree and all, and the caller
    knows why. A check that could not be started has evidence that says why."""
    check = spec.check
    wake = wake or threading.Event()
    began = time.monotonic()
    launch_spec = LaunchSpec(
        argv=check_argv(check, spec.cwd),
        cwd=spec.cwd,
        env=spec.env,
        task="",
        log_dir=spec.log_dir,
        wake=wake,
        marker=spec.marker or new_marker(),
        owned=True,
        role=f"check {check.name}",
        tail_bytes=tail_window_bytes(TAIL_CHARS),
        sandbox=spec.sandbox,
    )
    try:
        process = launch(launch_spec)
    except LaunchError as error:
        why = redact_known(error.failure.message, spec.secrets)
        return CheckEvidence(check.name, check.argv, time.monotonic() - began, start_failure=why)
    try:
        timed_out = _watch(process, spec, began, wake, started, keep)
    finally:
        process.stop(grace_seconds=spec.grace_seconds)  # its tree, or what it left behind
        process.close()
    if timed_out is None:
        return None
    status = process.status
    assert status is not None
    # The end, from what the process kept in memory: the log files stop at their cap.
    tail = tails_text(process.output_tails(), chars=TAIL_CHARS, secrets=spec.secrets)
    return CheckEvidence(
        check.name,
        check.argv,
        time.monotonic() - began,
        tail,
        exit_code=status.exit_code,
        signal=status.signal,
        timed_out=timed_out,
    )


def _watch(
    process: AgentProcess,
    spec: CheckSpec,
    began: float,
    wake: threading.Event,
    started: Callable[[AgentProcess], bool],
    keep: Callable[[], Keep],
) -> bool | None:
    """Wait for the check to end; whether its time limit stopped it, or None when its runner
    said to stop it."""
    if not started(process):
        return None
    deadline = began + spec.check.timeout_seconds
    while True:
        remaining = deadline - time.monotonic()
        wake.wait(
            timeout=max(0.0, min(until_beat(spec.heartbeat_seconds, time.monotonic()), remaining))
        )
        wake.clear()
        if process.status is not None:
            return False
        if time.monotonic() >= deadline:
            process.stop(grace_seconds=spec.grace_seconds)
            return True
        process.refresh_descendants()
        said = keep()
        if said is Keep.STOP:
            return None
        if said is Keep.TIME_UP:
            process.stop(grace_seconds=spec.grace_seconds)
            return True
