"""A read command run by the installed executable collects no garbage and ends its process as
soon as it has finished, without the interpreter's teardown: what it prints and its exit status
are the same as when the interpreter ends it. A command that writes collects garbage and ends
as usual; so does a process with a thread or an exit handler left to run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty

# The time every command below reads (run puts it first), so that two runs print the same.
CLOCK = """
from datetime import UTC, datetime
import wrighty.operator.context
wrighty.operator.context.clock = lambda: datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
"""

# The executable's entry point, with os._exit marked so that a test sees who ended the process.
MAIN = """
import os, sys
real_exit = os._exit
def marked(code):
    sys.stderr.write("[ended at once: %d]\\n" % code)
    sys.stderr.flush()
    real_exit(code)
os._exit = marked
{prelude}
from wrighty.cli.app import main
main()
"""

# The same command, ended by the interpreter: the app called as tests call it.
INTERPRETER_ENDS = """
import sys
from wrighty.cli.app import app
sys.exit(app())
"""

LEFT_TO_RUN = {
    "an exit handler": "import atexit; atexit.register(lambda: print('handler ran'))",
    "a thread": (
        "import threading\n"
        "threading.Thread(target=lambda: (threading.main_thread().join(), print('thread ran')))"
        ".start()"
    ),
}


def run(project: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLOCK + script, *args],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.fixture
def project_with_items(initialised: Path) -> Path:
    for title in ("First", "Second"):
        created = wrighty("create", "--title", title, "--body", "a task", "--queue")
        assert created.exit_code == 0, created.output
    return initialised


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ("list",),
        ("list", "--json"),
        ("show", "1"),
        ("show", "99"),  # refused: exit 2, one line on stderr
        ("status", "--json"),
        ("status", "--min-workers", "1"),  # unhealthy: exit 1
        ("workers",),
        ("usage",),
        ("providers", "--json"),
        ("list", "--state", "nonsense"),
    ],
    ids=" ".join,
)
def test_a_read_command_ends_at_once_with_the_same_output_and_status(
    project_with_items: Path, args: tuple[str, ...]
) -> None:
    at_once = run(project_with_items, MAIN.replace("{prelude}", ""), *args)
    usual = run(project_with_items, INTERPRETER_ENDS, *args)
    marker = f"[ended at once: {usual.returncode}]\n"
    assert at_once.stderr.endswith(marker), at_once.stderr
    assert at_once.stderr.removesuffix(marker) == usual.stderr
    assert at_once.stdout == usual.stdout
    assert at_once.returncode == usual.returncode


@pytest.mark.slow
def test_a_command_that_writes_collects_garbage_and_ends_as_usual(
    project_with_items: Path,
) -> None:
    collecting = "import atexit, gc; atexit.register(lambda: print('collecting', gc.isenabled()))"
    done = run(project_with_items, MAIN.replace("{prelude}", collecting), "cancel", "2")
    assert done.returncode == 0, done.stderr
    assert "ended at once" not in done.stderr
    assert done.stdout.endswith("collecting True\n")


@pytest.mark.slow
@pytest.mark.parametrize("left", list(LEFT_TO_RUN))
def test_what_is_left_to_run_runs(project_with_items: Path, left: str) -> None:
    done = run(project_with_items, MAIN.replace("{prelude}", LEFT_TO_RUN[left]), "list")
    assert done.returncode == 0, done.stderr
    assert "ended at once" not in done.stderr
    assert done.stdout.endswith(("handler ran\n", "thread ran\n"))
