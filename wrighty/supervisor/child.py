"""A program wrighty runs for a moment (git, and through launch() a check or an integration's
command), supervised as an agent is: its own process group, the parent-death signal, a marker
in its environment, and, when it ends, at its time limit, or when the wrighty process that ran
it ends, its whole tree stopped (docs/worker.md#stopping-a-process-tree)."""

from __future__ import annotations

import os
import subprocess
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wrighty.supervisor.linux import with_parent_death_signal
from wrighty.supervisor.owner import owner_marker
from wrighty.supervisor.tree import ProcessTree

# How long what is left of a program's tree gets to end after SIGTERM, before SIGKILL.
GRACE_SECONDS = 2.0
MARKER = "WRIGHTY_CHILD_ID"


class TimedOut(Exception):
    """The program ran past its time limit; its tree was stopped."""


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: bytes
    stderr: bytes


def supervised_env(env: Mapping[str, str], marker: tuple[str, str]) -> dict[str, str]:
    """``env`` with the program's own marker and its owner's (owner.py) added."""
    return {**env, marker[0]: marker[1], **owner_marker()}


def new_marker() -> tuple[str, str]:
    """A marker (name, value) unique to one program run."""
    return (MARKER, uuid.uuid4().hex)


def run_to_end(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    stdin: bytes | None = None,
    cwd: Path | None = None,
    grace_seconds: float = GRACE_SECONDS,
) -> Finished:
    """Run ``argv`` (no shell) to its end with ``stdin`` (None: none) and its output captured;
    TimedOut after ``timeout`` seconds. Whichever way it ends, nothing it started is left
    running when this returns (OSError: it could not be started)."""
    marker = new_marker()
    command, pre_exec = with_parent_death_signal(list(argv), os.getpid())
    popen = subprocess.Popen(
        command,
        cwd=cwd,
        env=supervised_env(env, marker),
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
        preexec_fn=pre_exec,
    )
    exited = threading.Event()
    tree = ProcessTree(popen.pid, exited, marker)

    def reap() -> None:
        popen.wait()
        exited.set()
        # What it left running (a hook's daemon) may hold its output open: stop it, so that
        # the output ends.
        tree.stop(grace_seconds)

    reaper = threading.Thread(target=reap, name=f"reap:{popen.pid}", daemon=True)
    reaper.start()
    try:
        out, err = popen.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        tree.stop(grace_seconds)
        popen.communicate()
        raise TimedOut from None
    except BaseException:
        tree.stop(grace_seconds)
        raise
    finally:
        reaper.join()
    return Finished(popen.returncode, out, err)
