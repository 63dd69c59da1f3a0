"""Reading the text a user hands wrighty (wrighty.json, a task file, standard input).

Every read is bounded, so that `/dev/zero` or a runaway file is refused instead of filling
memory, and strictly UTF-8, so that a file in another encoding is named as such instead of
being half-read.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

KIB = 1024
MIB = 1024 * KIB


class InputError(ValueError):
    """The text cannot be used; the message says why (without the text itself)."""


def read_text_file(path: Path, *, limit: int) -> str:
    """The UTF-8 text of ``path`` when it is at most ``limit`` bytes long.

    OSError (missing, unreadable, a directory) is left to the caller, who knows what the file
    is for; InputError for a file too large or not UTF-8.
    """
    with path.open("rb") as handle:
        return read_text_stream(handle, limit=limit)


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
