"""The bubblewrap a sandbox test runs with (docs/sandbox.md).

It is WRIGHTY_BWRAP (a path: a copy unpacked from the Debian package without installing it)
or `bwrap` on PATH, and it must start a sandbox here. Without one a test that needs it skips,
saying why; with WRIGHTY_REQUIRE_SANDBOX=1 it fails.
"""

from __future__ import annotations

import os
import shutil

import pytest

from wrighty.supervisor.sandboxing import sandbox_problem


def bubblewrap() -> str:
    """The bubblewrap program to name in a profile's ``program``."""
    program = os.environ.get("WRIGHTY_BWRAP") or shutil.which("bwrap")
    if program is None:
        reason = "bubblewrap is not installed (apt-get install bubblewrap, or WRIGHTY_BWRAP)"
    else:
        problem = sandbox_problem(program)
        if problem is None:
            return program
        reason = f"bubblewrap {program} {problem}"
    if os.environ.get("WRIGHTY_REQUIRE_SANDBOX") == "1":
        pytest.fail(f"{reason}, and WRIGHTY_REQUIRE_SANDBOX=1 requires it")
    pytest.skip(reason)
