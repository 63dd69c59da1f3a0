from __future__ import annotations

import stat
import time
from pathlib import Path

import psutil


def snapshot(directory: Path) -> dict[str, tuple[int, bytes]]:
    """Every file and directory under ``directory`` with its mode and bytes: 'nothing changed'."""
    state: dict[str, tuple[int, bytes]] = {}
    for path in sorted(directory.rglob("*")):
        mode = stat.S_IMODE(path.lstat().st_mode)
        content = path.read_bytes() if path.is_file() else b""
        state[str(path.relative_to(directory))] = (mode, content)
    return state


def process_ended(pid: int, within: float = 10.0) -> bool:
    """Whether ``pid`` ends within ``within`` seconds (an unreaped zombie has ended)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.02)
    return False
