"""The installed `wrighty` executable and `python -m wrighty`: a few command lines that scripts
call every few seconds are answered without building the typer app; everything else (any other
command, any other option, --help, any bad input) goes to it (app.py), unchanged.

Answered here, when the command line is exactly one of these and no WRIGHTY_CONFIG or
WRIGHTY_STORE is set (the app reads them as --config and --store):

- `wrighty --version`;
- `wrighty status --json` (or `--format json`): fast_status.py, which itself hands the command
  to the app for anything it does not vouch for.

What is printed and the exit status are the app's, byte for byte
(tests/cli/test_fast_status.py); what these lines load is pinned by
tests/cli/test_import_cost.py.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

STATUS_JSON = frozenset(
    {("status", "--json"), ("status", "--format", "json"), ("status", "--format=json")}
)
# The environment variables the app reads as options: with either set, the app answers.
OPTION_VARIABLES = ("WRIGHTY_CONFIG", "WRIGHTY_STORE")


def fast_answer(
    args: Sequence[str], environ: Mapping[str, str], cwd: Path
) -> tuple[str, int] | None:
    """What the command line ``args`` prints and its exit status, when it is one answered
    here; None for the app to run it."""
    if any(name in environ for name in OPTION_VARIABLES):
        return None
    command = tuple(args)
    if command == ("--version",):
        from wrighty import __version__

        return f"wrighty {__version__}\n", 0
    if command in STATUS_JSON:
        from wrighty.cli.fast_status import status_json_answer

        return status_json_answer(cwd)
    return None


def main() -> NoReturn:
    """Console-script entry point: this process runs one command."""
    gc.disable()  # as app.main: a read command ends before garbage matters
    answer = fast_answer(sys.argv[1:], os.environ, Path.cwd()) if _utf8_stdout() else None
    if answer is None:
        from wrighty.cli.app import main as run_app

        run_app()
    text, exit_code = answer
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # a reader that went away: as click ends a command, status 1
        os._exit(1)
    # As the app ends a read command: at once, without freeing every object one by one.
    os._exit(exit_code)


def _utf8_stdout() -> bool:
    """Standard output writes UTF-8 as it is (else the app, whose echo adapts the stream)."""
    encoding = getattr(sys.stdout, "encoding", None) or ""
    return encoding.lower().replace("-", "").replace("_", "") == "utf8"
