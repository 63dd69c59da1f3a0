"""A run's or a check's output as wrighty shows it: secrets redacted, bytes that are not UTF-8
kept (as "surrogateescape" surrogates) until a terminal gets `printable_output` and a pipe that
asked for the raw bytes `output_bytes`, and a tail as the logs and a check's evidence show it
(`tails_text`). Pure: the bytes come from whoever read them (services/runlogs.py reads the log
files, supervisor/checks.py a check's process)."""

from __future__ import annotations

from collections.abc import Sequence

from wrighty.domain.model import Stream
from wrighty.domain.redact import redact_bytes_tail, replace_undecodable
from wrighty.domain.text import printable


def printable_output(text: str) -> str:
    """Output as a terminal shows it: bytes that are not UTF-8 as U+FFFD, control characters
    as escapes (newlines and tabs kept)."""
    return printable(replace_undecodable(text))


def output_bytes(text: str) -> bytes:
    """Output as the agent wrote it, byte for byte, but for the redacted secrets."""
    return text.encode("utf-8", errors="surrogateescape")


def tails_text(
    tails: Sequence[tuple[Stream, int, bytes]], *, chars: int, secrets: Sequence[str] = ()
) -> str:
    """Each stream's tail (the bytes written before it, and it) as `tail_output`
    (services/runlogs.py) shows them: its last ``chars`` characters, redacted, printable,
    stderr's under a line that names it; a tail that does not start the stream starts with a
    line that counts what came before."""
    parts = []
    for stream, skipped, data in tails:
        if data:
            text = redact_bytes_tail(
                data, chars, keep_undecodable=True, dropped_before=skipped, secrets=secrets
            )
            text = printable_output(text)
            parts.append(text if stream == "stdout" else f"── stderr ──\n{text}")
    return "\n".join(part.rstrip("\n") for part in parts)
