"""Reading the text a user hands wrighty (wrighty.json, a task file, standard input).

Every read is of a regular file, so that a FIFO or a device is refused at once instead of
waiting forever for a writer (or reading `/dev/zero` without end); bounded, so that a runaway
file is refused instead of filling memory; and strictly UTF-8, so that a file in another
encoding is named as such instead of being half-read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

KIB = 1024
MIB = 1024 * KIB


class InputError(ValueError):
    """The text cannot be used; the message says why (without the text itself)."""


def read_text_file(path: Path, *, limit: int) -> str:
    """The UTF-8 text of ``path`` when it is a regular file at most ``limit`` bytes long.

    OSError (missing, unreadable) is left to the caller, who knows what the file is for;
    InputError for anything but a regular file (a directory, a FIFO, a device, a socket),
    a file too large, or one not UTF-8.
    """
    # Opened without waiting (a FIFO's open would wait for a writer), then checked by what it
    # is, not by its name (no race between a check and the open).
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        broken = broken_link(path, error)
        if broken is not None:
            raise InputError(broken) from None
        raise
    kind = file_kind(os.fstat(descriptor).st_mode)
    if kind != "regular file":
        os.close(descriptor)
        raise InputError(f"is {kind}, not a regular file")
    os.set_blocking(descriptor, True)
    with os.fdopen(descriptor, "rb") as handle:
        return read_text_stream(handle, limit=limit)


def broken_link(path: Path, error: OSError) -> str | None:
    """What is wrong with ``path`` when ``error`` came from following it as a symbolic link that
    leads nowhere (a loop, or a target that does not exist); None for any other error."""
    if error.errno not in (errno.ELOOP, errno.ENOENT) or not path.is_symlink():
        return None
    if error.errno == errno.ELOOP:
        return "is a symbolic link that loops (it never reaches a file); remove it"
    return f"is a symbolic link to {os.readlink(path)!r}, which does not exist"


_KINDS = (
    (stat.S_ISREG, "regular file"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def file_kind(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words ("a FIFO (named pipe)", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_text_stream(stream: BinaryIO, *, limit: int) -> str:
    """Read at most ``limit`` bytes of UTF-8 text from ``stream`` (InputError beyond)."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"is larger than {describe_size(limit)}")
    return decode_utf8(data)


def decode_utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start}); "
            "save it as UTF-8"
        ) from None


def describe_size(size: int) -> str:
    if size >= MIB and size % MIB == 0:
        return f"{size // MIB} MiB"
    if size >= KIB and size % KIB == 0:
        return f"{size // KIB} KiB"
    return f"{size} bytes"
