"""A worker's own machine failing to start a run, told apart from the item's failures, and
the worker's back-off and hold after such failures (pure;
docs/worker.md#when-the-workers-machine-fails).

A failure of the worker's machine (no space or inodes for a workspace, a read-only or foreign
folder, the agent's program gone, the run-log folder unwritable, fork refused) is not the
item's fault: the item goes back where its claim found it, no attempt spent, and the worker
backs off so that another worker takes it; after HOLD_AFTER such failures in a row the worker
holds (claims nothing but one try per longest back-off) and says why. Whose a failure is
follows from what failed: making the worker's own folders (where it makes workspaces and run
logs) is the machine's whatever the OS error, since every item would meet it. A failure that
belongs to the item (a pin or a recorded workspace wrighty will not use, something else at
its own folder's name, a vendor's refusal of its argv) still asks a person, as before.
"""

from __future__ import annotations

import errno as errnos
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from wrighty.domain.claims import Settlement
from wrighty.domain.model import RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.text import clip

# The reason code of an item its worker's machine could not start (docs/json.md).
MACHINE_FAILURE = "machine-failure"


class Step(StrEnum):
    """Where a run failed to start."""

    WORKSPACE_ROOT = "workspace-root"  # .wrighty/workspaces or .wrighty/worktrees
    WORKSPACE = "workspace"  # the item's own folder in it (.wrighty/workspaces/ID)
    GIT = "git"  # git is missing, or `git worktree add` failed
    PINNED_WORKSPACE = "pinned-workspace"  # --workspace names a folder wrighty will not use
    RECORDED_WORKSPACE = "recorded-workspace"  # the session's workspace wrighty will not use
    ARGV = "argv"  # the agent's command line (a vendor's refusal, a NUL byte, no command)
    CWD = "cwd"  # the workspace was gone when the agent was to start in it
    PROGRAM = "program"  # the agent's program: not found, or not executable
    LOGS = "logs"  # the run's log folder or files
    SPAWN = "spawn"  # fork or exec of the agent's program


# OS errors that say the machine (its disk, its permissions, its process table) failed, not
# the item: no space, no inodes or over quota, read-only, not allowed, I/O error, too many
# open files, no memory, no more processes.
MACHINE_ERRNOS = frozenset(
    {
        errnos.ENOSPC,
        errnos.EDQUOT,
        errnos.EROFS,
        errnos.EACCES,
        errnos.EPERM,
        errnos.EIO,
        errnos.EMFILE,
        errnos.ENFILE,
        errnos.ENOMEM,
        errnos.EAGAIN,
    }
)
# An exec that fails because the program went away or is broken is the machine's too.
_EXEC_ERRNOS = frozenset({errnos.ENOENT, errnos.ENOEXEC, errnos.ETXTBSY})

# What the machine could not do, by step; None: the item's, whatever the error.
_WHAT: dict[Step, str | None] = {
    Step.WORKSPACE_ROOT: "create the folder it makes workspaces in",
    Step.WORKSPACE: "create the workspace",
    Step.GIT: "create a git worktree",
    Step.PINNED_WORKSPACE: None,
    Step.RECORDED_WORKSPACE: None,
    Step.ARGV: None,
    Step.CWD: None,
    Step.PROGRAM: "find the agent's program",
    Step.LOGS: "write the run's logs",
    Step.SPAWN: "start the agent's process",
}
# Steps whose failure is the machine's only for these OS errors (an exec refused otherwise is
# the item's argv).
_MACHINE_ONLY_FOR = {Step.SPAWN: MACHINE_ERRNOS | _EXEC_ERRNOS}
# Steps whose failure is the item's only for these OS errors. The item's own folder in the
# worker's folder is the item's when something else stands at its name (EEXIST: a file, a
# link); any other failure to make it (no room, no permission, a file, a link loop or too
# long a path where the worker's folder is) is the worker's folder's, so its machine's.
_ITEM_ONLY_FOR = {Step.WORKSPACE: frozenset({errnos.EEXIST})}


@dataclass(frozen=True)
class StartFailure:
    """Why a claimed item's run could not start: the step, the error in words (one line), and
    the OS error number when an OS call failed."""

    step: Step
    message: str
    errno: int | None = None


def machine_cannot(failure: StartFailure) -> str | None:
    """What the worker's machine could not do, when ``failure`` is the machine's (words that
    follow "could not"); None when it is the item's."""
    what = _WHAT[failure.step]
    machines = _MACHINE_ONLY_FOR.get(failure.step)
    if what is None or (machines is not None and failure.errno not in machines):
        return None
    if failure.errno in _ITEM_ONLY_FOR.get(failure.step, ()):
        return None
    return what


MAX_CAUSE_CHARS = 300


def cause_of(failure: StartFailure, what: str) -> str:
    """The failure as one bounded line: what the machine could not do, and why."""
    return clip(f"could not {what}: {failure.message}", MAX_CAUSE_CHARS)


def after_machine_failure(
    *,
    claimed_from: ItemState,
    kind: RunKind,
    worker_id: str,
    cause: str,
    at: datetime,
    run_recorded: bool,
) -> Settlement:
    """The settlement of an item whose worker's machine could not start its run: back where
    the claim found it, no attempt spent (crash_retries, usage_retries and requeues stay).

    A resume of a due retry stays a due retry, due at once, its session kept. A fresh run goes
    back to ``queued``, keeping its queue entry time; so does a due retry that was to start a
    new session (its new session never started, so only a fresh run can follow).
    ``run_recorded``: the run was recorded, and ends as start-failed."""
    resume = claimed_from is ItemState.RETRY_SCHEDULED and kind.resumes
    said = f"worker {worker_id}'s machine {cause}"
    run_end = (
        RunEnd(at, OutcomeClass.START_FAILED, Confidence.AUTHORITATIVE, diagnostic=said)
        if run_recorded
        else None
    )
    state, then, not_before = (
        (ItemState.RETRY_SCHEDULED, "the retry is due again, its session kept", at)
        if resume
        else (ItemState.QUEUED, "back in the queue", None)
    )
    return Settlement(
        state,
        process_started=False,
        run_end=run_end,
        reason_code=MACHINE_FAILURE,
        reason=f"{said}; {then}, no attempt spent",
        not_before=not_before,
    )


# -- the worker's back-off and hold --------------------------------------------------------


@dataclass(frozen=True)
class Backoff:
    """How long a worker waits before its next claim after its machine failed: the first
    back-off, doubling with each failure in a row, at most ``max_seconds``; after
    ``hold_after`` failures in a row it is held, and tries one claim every ``max_seconds``."""

    initial_seconds: float = 1.0
    max_seconds: float = 120.0
    hold_after: int = 3

    def __post_init__(self) -> None:
        if not 0 < self.initial_seconds <= self.max_seconds or self.hold_after < 1:
            raise ValueError("a back-off needs 0 < initial <= max and hold_after >= 1")

    def delay(self, failures: int) -> float:
        """The pause after ``failures`` failures in a row (1 or more)."""
        if failures >= self.hold_after:
            return self.max_seconds
        return min(self.initial_seconds * 2.0 ** (failures - 1), self.max_seconds)


BACKOFF = Backoff()


@dataclass(frozen=True)
class MachineHealth:
    """A worker's machine, as its last starts found it. ``failures``: machine failures in a
    row; ``cause``: the last one; ``next_claim_at``: no claim before this moment (a monotonic
    clock's seconds); ``held``: it failed ``hold_after`` times in a row."""

    failures: int = 0
    cause: str | None = None
    next_claim_at: float | None = None
    held: bool = False

    def may_claim(self, now: float) -> bool:
        return self.next_claim_at is None or now >= self.next_claim_at

    def pause_seconds(self, now: float) -> float:
        """How long until it may claim (0: now)."""
        return 0.0 if self.next_claim_at is None else max(0.0, self.next_claim_at - now)

    def held_reason(self, policy: Backoff = BACKOFF) -> str | None:
        """Why it holds, as one line for its registry row; None while it claims."""
        if not self.held or self.cause is None:
            return None
        return (
            f"its machine {self.cause} ({self.failures} times in a row); it tries one claim "
            f"every {policy.max_seconds:g} s"
        )


def machine_failed(
    health: MachineHealth, cause: str, *, now: float, policy: Backoff = BACKOFF
) -> MachineHealth:
    """After a failure of the worker's machine: one more in a row, and a pause."""
    failures = health.failures + 1
    return MachineHealth(
        failures=failures,
        cause=cause,
        next_claim_at=now + policy.delay(failures),
        held=failures >= policy.hold_after,
    )


def machine_started(health: MachineHealth) -> MachineHealth:
    """An agent started: the machine works, the count starts over."""
    return MachineHealth()
