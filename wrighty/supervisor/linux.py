"""Linux process controls that the standard library does not expose."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    library = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    prctl: Callable[..., int] = library.prctl
    return prctl


# Resolved once in the parent, so the child does no imports or lookups between fork and exec.
_PRCTL = _load_prctl()


def become_subreaper() -> bool:
    """Adopt orphaned descendants (so an agent's grandchildren cannot escape the worker)."""
    if _PRCTL is None:
        return False
    return _PRCTL(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def die_with_parent(parent_pid: int) -> Callable[[], None] | None:
    """A pre-exec hook that makes the child receive SIGKILL when its parent thread dies.

    Spawn from a thread that lives as long as the worker: Linux ties the signal to the
    thread that forked, not to the process.
    """
    prctl = _PRCTL
    if prctl is None:
        return None

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return hook


_SETPRIV = shutil.which("setpriv")


def with_parent_death_signal(
    argv: list[str], parent_pid: int
) -> tuple[list[str], Callable[[], None] | None]:
    """The argv and pre-exec hook that start ``argv`` so that it dies with its parent.

    util-linux's setpriv sets the signal and then execs the agent (same pid). It is preferred
    because a Python pre-exec hook forces a full fork of the worker, several milliseconds
    slower. Without setpriv, the hook does it.
    """
    if _PRCTL is None:
        return argv, None
    if _SETPRIV is not None:
        return [_SETPRIV, "--pdeathsig", "KILL", "--", *argv], None
    return argv, die_with_parent(parent_pid)
