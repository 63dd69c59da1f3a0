"""Nothing wrighty runs for a moment outlives the wrighty process that ran it, even one killed
with SIGKILL (docs/worker.md#stopping-a-process-tree).

The parent-death signal kills only the process wrighty started (git, a check), not what that
process started in turn (a hook, its `sleep`, a daemon that left the group with `setsid`).
So the first such program a wrighty process runs also starts its keeper: a small process of
its own session that holds the read end of a pipe whose write end only the wrighty process
holds. When the wrighty process ends, however it ends, the pipe reads end-of-file, and the
keeper kills every process whose environment carries the owner's marker, a variable that each
such program (and so everything it starts) inherits, looking again until none is left.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import threading

# The keeper: Python alone (-I -S: no site, no wrighty), so that it starts in milliseconds,
# and off the caller's path (nobody waits for it). Its only argument is the marker's name.
_KEEPER = """
import os, signal, sys, time
needle = b"\\0" + sys.argv[1].encode() + b"=1\\0"
while os.read(0, 512):
    pass
for _ in range(100):
    found = False
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/" + name + "/environ", "rb") as handle:
                if needle in b"\\0" + handle.read():
                    os.kill(int(name), signal.SIGKILL)
                    found = True
        except OSError:
            pass
    if not found:
        break
    time.sleep(0.02)
"""
_PREFIX = "WRIGHTY_OWNER_"


class _Keeper:
    def __init__(self) -> None:
        self.pid = os.getpid()  # a forked child of this process gets a keeper of its own
        self.name = _PREFIX + secrets.token_hex(8)
        read, self._write = os.pipe()  # neither end is inherited by what wrighty starts
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _KEEPER, self.name],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},
                start_new_session=True,  # a signal to the owner's group does not reach it
                close_fds=True,
            )
        except BaseException:
            os.close(self._write)
            raise
        finally:
            os.close(read)

    def release(self) -> None:
        """Let the keeper do its work now and end (as the owner's end would)."""
        with contextlib.suppress(OSError):
            os.close(self._write)
        self.process.wait()


_lock = threading.Lock()
_keeper: _Keeper | None = None


def owner_marker() -> dict[str, str]:
    """The variable that a program this process runs for a moment carries, so that its keeper
    kills it, and all it started, when this process ends; none when no keeper could start
    (the parent-death signal and the stop of its tree still hold)."""
    global _keeper
    with _lock:
        if _keeper is None or _keeper.pid != os.getpid():
            try:
                _keeper = _Keeper()
            except OSError:
                return {}
        return {_keeper.name: "1"}


def release_keeper() -> None:
    """End this process's keeper now, killing what carries its marker (a test suite's end,
    which waits for every process it started)."""
    global _keeper
    with _lock:
        if _keeper is not None and _keeper.pid == os.getpid():
            _keeper.release()
        _keeper = None
