"""An example agent, for trying wrighty without a real coding agent.

It installs with wrighty as the command ``wrighty-example-agent`` (and runs from a clone as
``python3 examples/agent.py``). Run it as wrighty runs an agent, with the task on standard input
(it never reads arguments):

    echo "wrighty-example: fail" | wrighty-example-agent

The task is free text. The first line of the form ``wrighty-example: <action>`` (in any case)
picks what the agent does; without one it succeeds. Every run first appends a line to
``WRIGHTY_EXAMPLE_NOTES.md`` in the current directory (UTC time, the WRIGHTY_ITEM_ID,
WRIGHTY_RUN_ID, WRIGHTY_SESSION_ID and WRIGHTY_RUN_KIND variables, the action) and prints a few
progress lines to stdout and one to stderr. Then, by action:

    succeed        exit 0
    fail           give a reason on stderr, exit 3
    crash-kill     die by SIGKILL
    crash-segv     die by SIGSEGV
    crash-abort    die by SIGABRT
    hang           sleep until killed
    ignore-term    ignore SIGTERM, then sleep until killed
    grandchild     start a child that ignores SIGTERM, leaves the process group with setsid()
                   and keeps stdout and stderr open; print "grandchild pid <N>", then hang.
                   The child writes its pid to the file named by
                   WRIGHTY_EXAMPLE_GRANDCHILD_PIDFILE, if that is set.
    output-large   write about 5 MB of lines to stdout, exit 0
    output-binary  write invalid UTF-8 and NUL bytes to stdout, exit 0
    secret         print a fake Anthropic key and a fake bearer token, to see redaction, exit 0
    slow [N]       print a line every 0.1 s for N seconds (default 3), exit 0
    crash-random P die by SIGKILL with probability P (default 0.3), otherwise succeed
    crash-kill-until N, crash-segv-until N
                   die by SIGKILL (or SIGSEGV) while this session has had fewer than N
                   earlier runs, then succeed: a crash that a resume of the same session
                   (same WRIGHTY_SESSION_ID, same workspace) gets past. The session's earlier
                   runs are counted from the notes file.
"""

from __future__ import annotations

import os
import random
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

NOTES_FILE = "WRIGHTY_EXAMPLE_NOTES.md"
DIRECTIVE = re.compile(
    r"^[ \t]*wrighty-example:[ \t]*(\S+)[ \t]*(\S*)", re.IGNORECASE | re.MULTILINE
)
EXIT_FAILED = 3
EXIT_BAD_TASK = 2

# Runs in the grandchild. The pid file is written under another name and renamed, so a reader
# never sees it half written.
GRANDCHILD_CODE = """
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.setsid()
path = os.environ.get("WRIGHTY_EXAMPLE_GRANDCHILD_PIDFILE")
if path:
    with open(path + ".tmp", "w") as pidfile:
        pidfile.write(str(os.getpid()))
    os.replace(path + ".tmp", path)
while True:
    time.sleep(1)
"""


def say(line: str) -> None:
    print(line, flush=True)


def parse_task(task: str) -> tuple[str, str]:
    """The action and its optional argument, from the first `wrighty-example:` line."""
    found = DIRECTIVE.search(task)
    if found is None:
        return "succeed", ""
    return found[1].lower(), found[2]


def runs_of_this_session() -> int:
    """How many runs of this WRIGHTY_SESSION_ID the notes file records, this one included."""
    session_id = os.environ.get("WRIGHTY_SESSION_ID")
    notes = Path(NOTES_FILE)
    if not session_id or not notes.exists():
        return 0
    marker = f" session_id={session_id} "
    return sum(marker in line for line in notes.read_text(encoding="utf-8").splitlines())


def write_note(action: str) -> None:
    now = datetime.now(UTC).isoformat(timespec="seconds")
    ids = " ".join(
        f"{name.removeprefix('WRIGHTY_').lower()}={os.environ.get(name) or '-'}"
        for name in ("WRIGHTY_ITEM_ID", "WRIGHTY_RUN_ID", "WRIGHTY_SESSION_ID", "WRIGHTY_RUN_KIND")
    )
    with Path(NOTES_FILE).open("a", encoding="utf-8") as notes:
        notes.write(f"- {now} {ids} action={action}\n")


def hang() -> NoReturn:
    while True:
        time.sleep(1)


def die_by(signal_number: signal.Signals) -> NoReturn:
    # a crash on purpose should not leave a core file in the working directory
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.kill(os.getpid(), signal_number)
    raise SystemExit(f"example agent: still alive after {signal_number.name}")


def succeed(argument: str) -> int:
    say("example agent: nothing to do, done")
    return 0


def fail(argument: str) -> int:
    print("example agent: failing on purpose, as the task asked", file=sys.stderr, flush=True)
    return EXIT_FAILED


def ignore_term(argument: str) -> int:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    say("example agent: ignoring SIGTERM")
    hang()


def grandchild(argument: str) -> int:
    child = subprocess.Popen([sys.executable, "-c", GRANDCHILD_CODE], stdin=subprocess.DEVNULL)
    say(f"grandchild pid {child.pid}")
    hang()


def output_large(argument: str) -> int:
    line = "example agent: filler " + "x" * 77 + "\n"  # 100 bytes
    for _ in range(50_000):
        sys.stdout.write(line)
    sys.stdout.flush()
    return 0


def output_binary(argument: str) -> int:
    sys.stdout.buffer.write(b"bytes: \xff\xfe\x00\xc3\x28 \x80\x00 end\n")
    sys.stdout.buffer.flush()
    return 0


def secret(argument: str) -> int:
    # built from pieces so this file holds nothing shaped like a real key
    key = "sk-" + "ant-" + "0123456789abcdefghij" * 2
    token = "example" + "Token" + "0123456789" * 3
    say(f"example agent: using {key}")
    say(f"example agent: sending Authorization: Bearer {token}")
    return 0


class _BadArgument(Exception):
    """The task's argument is not what its action takes (the message says what it takes)."""


def _number(argument: str, default: str, kind: Callable[[str], float], what: str) -> float:
    try:
        return kind(argument or default)
    except ValueError:
        raise _BadArgument(f"example agent: expected {what}, got {argument!r}") from None


def slow(argument: str) -> int:
    seconds = _number(argument, "3", float, "a number of seconds")
    deadline = time.monotonic() + seconds
    tick = 0
    while time.monotonic() < deadline:
        tick += 1
        say(f"example agent: working, tick {tick}")
        time.sleep(0.1)
    return 0


def crash_until(signal_number: signal.Signals) -> Callable[[str], int]:
    def run(argument: str) -> int:
        crashes = _number(argument, "1", int, "a number of runs")
        this_run = runs_of_this_session()
        if this_run <= crashes:
            say(f"example agent: run {this_run} of this session, crashing on purpose")
            die_by(signal_number)
        say(f"example agent: run {this_run} of this session picks up the work, done")
        return 0

    return run


def crash_random(argument: str) -> int:
    chance = _number(argument, "0.3", float, "a probability")
    if random.random() < chance:  # noqa: S311 - dice for a demo, not a secret
        say("example agent: crashing, as chance would have it")
        die_by(signal.SIGKILL)
    return succeed(argument)


ACTIONS: dict[str, Callable[[str], int]] = {
    "succeed": succeed,
    "fail": fail,
    "crash-kill": lambda _: die_by(signal.SIGKILL),
    "crash-segv": lambda _: die_by(signal.SIGSEGV),
    "crash-abort": lambda _: die_by(signal.SIGABRT),
    "hang": lambda _: hang(),
    "ignore-term": ignore_term,
    "grandchild": grandchild,
    "output-large": output_large,
    "output-binary": output_binary,
    "secret": secret,
    "slow": slow,
    "crash-random": crash_random,
    "crash-kill-until": crash_until(signal.SIGKILL),
    "crash-segv-until": crash_until(signal.SIGSEGV),
}


def main() -> int:
    action, argument = parse_task(sys.stdin.read())
    run = ACTIONS.get(action)
    if run is None:
        known = ", ".join(ACTIONS)
        print(f"example agent: unknown action {action!r}; known: {known}", file=sys.stderr)
        return EXIT_BAD_TASK
    write_note(action)
    print(f"example agent: pid {os.getpid()}, action {action}", file=sys.stderr, flush=True)
    say(f"example agent: read the task, action {action}")
    say(f"example agent: noted the run in {NOTES_FILE}")
    try:
        return run(argument)
    except _BadArgument as error:
        print(error, file=sys.stderr)
        return EXIT_BAD_TASK


def run() -> NoReturn:
    """The `wrighty-example-agent` command."""
    sys.exit(main())


if __name__ == "__main__":
    run()
