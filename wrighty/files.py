"""Directories and files wrighty makes for itself: private, created without races, and, when the
operating system refuses one, a line that says which path and why."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

PRIVATE_DIR_MODE = 0o700


def make_private_dirs(directory: Path) -> list[Path]:
    """Create ``directory`` and each missing parent with mode 0700; those made, outermost first.

    (``Path.mkdir(parents=True, mode=...)`` gives the mode to the last directory only.)
    """
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        current = current.parent
    made: list[Path] = []
    for path in reversed(missing):
        try:
            path.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            if not path.is_dir():
                raise
            continue  # another process made it first: it is not ours to remove
        made.append(path)
    return made


def remove_made_dirs(made: list[Path]) -> None:
    """Undo ``make_private_dirs``: remove what it made, innermost first, while still empty."""
    for path in reversed(made):
        try:
            path.rmdir()
        except OSError:
            return


def link_new(source: Path, target: Path) -> bool:
    """Give ``source``'s file the name ``target`` unless that name is taken; True if it was given.

    A link never replaces, so of processes racing to create ``target`` exactly one gets True,
    and nobody ever sees it half written. ``source`` is removed in every case.
    """
    try:
        os.link(source, target)
    except FileExistsError:
        return False
    finally:
        source.unlink(missing_ok=True)
    return True


def access_problem(path: Path) -> str:
    """Why this user cannot use ``path``: the first directory on the way it may not enter, or
    the file itself, with its owner and how to fix it."""
    me = _user_name(os.geteuid())
    absolute = path.absolute()
    for step in (*reversed(absolute.parents), absolute):
        try:
            info = step.lstat()
        except OSError:
            break
        is_dir = stat.S_ISDIR(info.st_mode)
        if step != absolute:
            needed, what, chmod = os.X_OK, "enter it", "u+x"
        elif is_dir:
            needed, what, chmod = os.R_OK | os.W_OK | os.X_OK, "use it", "u+rwx"
        else:
            needed, what, chmod = os.R_OK | os.W_OK, "read and write it", "u+rw"
        if os.access(step, needed):
            continue
        if needed & os.W_OK and _on_read_only_mount(step):
            return (
                f"{step}: read-only file system (it is mounted read-only, and wrighty writes "
                "there); remount it read-write, or move the project or its store elsewhere"
            )
        owner = _user_name(info.st_uid)
        if owner == me:
            fix = f"give yourself access (chmod {chmod})"
        else:
            fix = f"run wrighty as {owner}, or change its owner or mode (chown/chmod)"
        mode = f"{stat.S_IMODE(info.st_mode):04o}"
        return (
            f"{step}: permission denied: it belongs to {owner} (mode {mode}) "
            f"and {me} may not {what}; {fix}"
        )
    return f"{absolute}: permission denied; check the permissions of it and its directories"


def _on_read_only_mount(path: Path) -> bool:
    """Whether ``path`` lies on a file system mounted read-only (EROFS for any write)."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _user_name(uid: int) -> str:
    try:
        return f"user {pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"uid {uid}"
