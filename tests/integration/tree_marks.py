"""What a test needs to show that nothing a program started outlives it: a variable of the
test's own that every process of the program's tree inherits, and the processes still
carrying it; and hooks and programs that leave processes behind, each writing its pid."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import psutil

from tests.helpers import poll, read_pid

MARK = "WRIGHTY_TEST_TREE"


def new_mark() -> dict[str, str]:
    """The variable (name and a value of this test's own) a program's tree inherits."""
    return {MARK: uuid.uuid4().hex}


def carrying(mark: dict[str, str]) -> list[int]:
    """The live processes (not zombies) whose environment carries ``mark``."""
    needle = b"\0" + f"{MARK}={mark[MARK]}".encode() + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if needle not in b"\0" + handle.read():
                    continue
            if psutil.Process(int(name)).status() != psutil.STATUS_ZOMBIE:
                found.append(int(name))
        except (OSError, psutil.Error):
            continue
    return found


def none_left(mark: dict[str, str], *pid_files: Path, within: float = 10.0) -> list[int]:
    """The processes of the tree still alive after up to ``within`` seconds (each pid file's
    and each carrying ``mark``): [] once every one has ended, at once when none is left."""
    pids = {read_pid(path) for path in pid_files}

    def alive() -> list[int]:
        return sorted({*carrying(mark), *(pid for pid in pids if running(pid))})

    poll(lambda: not alive(), timeout=within, every=0.05)
    return alive()


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def daemon(pid_file: Path) -> str:
    """Shell words that start a process of a session of its own (it left the caller's group,
    as a daemon does) that writes its pid to ``pid_file`` and sleeps."""
    return (
        f"setsid sh -c 'echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}; "
        "exec sleep 600' </dev/null >/dev/null 2>&1 &"
    )


def hook(path: Path, marks: Path, *, hangs: bool) -> None:
    """A git hook that starts a daemon (its pid in marks/daemon.pid), writes its own pid (and
    its parent's, git's) and then hangs (``hangs``, its output closed) or ends with 0."""
    path.parent.mkdir(parents=True, exist_ok=True)
    end = "exec sleep 600" if hangs else "exit 0"
    path.write_text(
        "#!/bin/sh\nexec </dev/null >/dev/null 2>&1\n"
        f"{daemon(marks / 'daemon.pid')}\n"
        f"echo $PPID > {marks}/git.pid.tmp && mv {marks}/git.pid.tmp {marks}/git.pid\n"
        f"echo $$ > {marks}/hook.pid.tmp && mv {marks}/hook.pid.tmp {marks}/hook.pid\n"
        f"while [ ! -s {marks}/daemon.pid ]; do sleep 0.01; done\n{end}\n"
    )
    path.chmod(0o755)
