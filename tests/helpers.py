from __future__ import annotations

import stat
from pathlib import Path


def snapshot(directory: Path) -> dict[str, tuple[int, bytes]]:
    """Every file and directory under ``directory`` with its mode and bytes: 'nothing changed'."""
    state: dict[str, tuple[int, bytes]] = {}
    for path in sorted(directory.rglob("*")):
        mode = stat.S_IMODE(path.lstat().st_mode)
        content = path.read_bytes() if path.is_file() else b""
        state[str(path.relative_to(directory))] = (mode, content)
    return state
