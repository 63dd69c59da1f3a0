"""Test-only, for a Python process run under libfaketime (tests/faults/skewed.py puts this
folder on PYTHONPATH for that process alone, never for the suite).

libfaketime shifts the wall clock; with FAKETIME_DONT_FAKE_MONOTONIC=1 the monotonic clock stays
true, but Python's time.sleep (clock_nanosleep on an absolute monotonic deadline) then fails
with EINVAL, and so does everything that sleeps with it (subprocess's timed waits). A sleep
through select(), a relative timeout libfaketime leaves alone, does what time.sleep does.
"""

import select
import time


def _sleep(seconds: float) -> None:
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    select.select([], [], [], seconds)


time.sleep = _sleep
