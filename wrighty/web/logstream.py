"""A run's output followed live on an item's page (docs/web.md#an-item): server-sent events
from the run's log files, as `wrighty logs --follow` reads them (services/runlogs.LogReader:
whole lines, secrets replaced, with the earlier output as the redaction's context), control
characters escaped (the page puts the text in as text, never as HTML).

The events:

- ``start``: ``{"run": attempt, "skipped": {"stdout": bytes, "stderr": bytes}}``; a page
  that (re)connects starts over with it: the last ``TAIL_BYTES`` of each stream, from the
  start of a line, then what follows.
- ``out``: ``{"stream": "stdout" | "stderr", "text": ...}``, new output.
- ``end``: ``{"outcome": ...}`` once the run has ended and every byte it wrote is out; the
  page then closes the stream.

Nothing here holds a store open: ``run_open`` opens one for each look (once a tick).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from wrighty.domain.model import Run
from wrighty.domain.output import printable_output
from wrighty.services.runlogs import LogReader

# How much of each stream a page that opens the log gets before what follows (bytes).
TAIL_BYTES = 64 * 1024
# How often a followed run's files are read again (seconds), and a quiet stream says it is
# alive (so that a browser that went away is noticed).
LOG_TICK_SECONDS = 0.5
LOG_KEEPALIVE_SECONDS = 15.0


def event(name: str, value: object) -> str:
    """One server-sent event with a JSON value (one data line: JSON escapes newlines)."""
    return f"event: {name}\ndata: {json.dumps(value, ensure_ascii=True)}\n\n"


async def log_events(
    run: Run,
    readers: Sequence[LogReader],
    *,
    run_open: Callable[[], str | None],
    disconnected: Callable[[], Awaitable[bool]],
    tick: float = LOG_TICK_SECONDS,
    keepalive: float = LOG_KEEPALIVE_SECONDS,
) -> AsyncIterator[str]:
    """The run's output as events until it has ended and is drained, or the page goes.
    ``run_open`` says whether the run is still open: None while it is, its outcome once it
    ended (read before the files, so that everything written before the end is read after)."""
    skipped = await asyncio.to_thread(_skip, readers)
    yield "retry: 3000\n" + event("start", {"run": run.attempt, "skipped": skipped})
    quiet = 0.0
    while not await disconnected():
        outcome = await asyncio.to_thread(run_open)
        final = outcome is not None
        said = False
        for reader in readers:
            text = await asyncio.to_thread(reader.read_new, final=final)
            if text:
                said = True
                yield event("out", {"stream": reader.stream, "text": printable_output(text)})
        if final:
            yield event("end", {"outcome": outcome})
            return
        quiet = 0.0 if said else quiet + tick
        if quiet >= keepalive:
            quiet = 0.0
            yield ": alive\n\n"
        await asyncio.sleep(tick)


def _skip(readers: Sequence[LogReader]) -> dict[str, int]:
    return {reader.stream: reader.skip_to_tail(TAIL_BYTES) for reader in readers}
