"""A process whose wall clock is off: the environment that runs it under libfaketime.

libfaketime comes from the Debian package `faketime` (`.ci/run` installs it). Without it a test
that needs it skips, saying why; with WRIGHTY_REQUIRE_FAKETIME=1 (set by `.ci/run`) it fails.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest

SHIM = Path(__file__).resolve().parent / "faketime_shim"


def libfaketime() -> str:
    """The library's path, or skip (fail in CI) when it is not installed."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    found += sorted(glob.glob("/usr/lib/faketime/libfaketime.so.1"))
    if found:
        return found[0]
    reason = "libfaketime is not installed (apt-get install faketime)"
    if os.environ.get("WRIGHTY_REQUIRE_FAKETIME") == "1":
        pytest.fail(f"{reason}, and WRIGHTY_REQUIRE_FAKETIME=1 requires it")
    pytest.skip(reason)


def skewed_env(env: dict[str, str], offset: str) -> dict[str, str]:
    """``env`` for a process whose wall clock is ``offset`` off (libfaketime's form: ``+10m``,
    ``-10m``); its monotonic clock stays true, and its Python sleeps work (the shim)."""
    path = env.get("PYTHONPATH")
    return {
        **env,
        "LD_PRELOAD": libfaketime(),
        "FAKETIME": offset,
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "PYTHONPATH": str(SHIM) if not path else f"{SHIM}{os.pathsep}{path}",
    }
