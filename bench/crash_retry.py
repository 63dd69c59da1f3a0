"""Crash retry: the time from an agent's death to its committed `retry-scheduled` row.

Measured in one run, on fresh SQLite stores in a temporary directory, with a worker running
`worker.processCrash` = retry:

- crash: N agents that print a clock reading and then die by SIGKILL; each settles as a
  scheduled retry (the failed run, `retry-scheduled`, `not_before` and the released claim, in
  one transaction);
- exit: N agents that print a clock reading and exit 0; each settles `done`.

Both are timed from the agent's last act to the worker's event, which is emitted right after
the commit. Prints p50 and p99 of each, and their ratio.

Usage: python bench/crash_retry.py [--crashes 500]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from supervise import percentiles, settle_latencies

RETRY = {"action": "retry", "maxAttempts": 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashes", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wrighty-crash-retry-") as scratch_dir:
        scratch = Path(scratch_dir)
        crash = settle_latencies(
            args.crashes, scratch / "crash", "crash", "retry-scheduled", processCrash=RETRY
        )
        plain = settle_latencies(args.crashes, scratch / "exit", "exit", "settled")
    crash50, crash99 = percentiles(crash)
    exit50, exit99 = percentiles(plain)
    print(
        f"{args.crashes} runs each: death to retry-scheduled row p50 {crash50 * 1000:.2f} ms, "
        f"p99 {crash99 * 1000:.2f} ms | exit 0 to done row p50 {exit50 * 1000:.2f} ms, "
        f"p99 {exit99 * 1000:.2f} ms | ratio p50 {crash50 / exit50:.2f}x, "
        f"p99 {crash99 / exit99:.2f}x"
    )


if __name__ == "__main__":
    main()
