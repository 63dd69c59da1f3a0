"""The console examples of README.md and docs/*.md: how a page marks them, how they are read,
run in a scratch project and compared (docs/testing.md#the-docs-examples-run).

A page marks its examples with fenced blocks:

- ```` ```console ````: lines starting with ``$ `` are commands (a line ending in ``\\`` and the
  lines of a here-document belong to the command); the lines after a command, up to the next,
  are its expected output (standard output and standard error, as a terminal shows them). A
  line ``...`` in the expected output stands for any number of lines.
- ```` ```sh ````: a script; each command in it must succeed (exit 0); its output is not
  compared.
- ``<!-- setup ... -->``: hidden commands, run where they stand like an ``sh`` block (to bring
  the project to the state the next example shows).
- ``<!-- not run: REASON -->`` on the line before a ``console`` or ``sh`` block: the block is
  not run, for that reason; the test counts and lists it.

A fenced block without a language whose lines start with ``$ `` is refused: it must say
whether it runs.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

RUN_KINDS = ("console", "sh")
FENCE = re.compile(r"^(`{3,})([\w-]*)\s*$")
NOT_RUN = re.compile(r"^<!-- not run: (?P<reason>\S.*?)\s*-->$")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(?P<word>\w+)\1")
WILDCARD = "..."
# The project folder every page's examples show (and the scratch folder is shown as).
SHOWN_PROJECT = "/tmp/demo/shop"
# The folder of the venv's programs (`wrighty agents` shows where it found one).
SHOWN_VENV = "/tmp/venv/bin"


class PageError(Exception):
    """A page whose examples cannot be read: where and why."""


@dataclass(frozen=True)
class Command:
    line: int
    text: str
    expected: tuple[str, ...] = ()


@dataclass(frozen=True)
class Example:
    """One block (or setup comment) of a page, in page order."""

    page: str
    line: int
    kind: str  # "console", "sh" or "setup"
    commands: tuple[Command, ...]
    not_run: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def read_page(text: str, page: str) -> list[Example]:
    """Every example of a page, in order; PageError for a block that does not say whether it
    runs, or a marker that marks nothing."""
    lines = text.splitlines()
    examples: list[Example] = []
    pending_reason: tuple[int, str] | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        marker = NOT_RUN.match(line.strip())
        if marker:
            pending_reason = (index + 1, marker["reason"])
            index += 1
            continue
        if line.strip() == "<!-- setup":
            end = _find(lines, index + 1, lambda text: text.strip() == "-->", page, index, "-->")
            script = "\n".join(lines[index + 1 : end])
            examples.append(Example(page, index + 1, "setup", (Command(index + 2, script),)))
            index = end + 1
            continue
        fence = FENCE.match(line)
        if not fence:
            if line.strip() and pending_reason is not None:
                raise PageError(f"{page}:{pending_reason[0]}: 'not run' marks no block after it")
            index += 1
            continue
        ticks, kind = fence.groups()
        end = _find(
            lines, index + 1, lambda text, ticks=ticks: text.strip() == ticks, page, index, ticks
        )
        body = lines[index + 1 : end]
        reason = pending_reason[1] if pending_reason else None
        pending_reason = None
        if kind == "console":
            commands = _console_commands(body, page, index + 2)
            examples.append(Example(page, index + 1, kind, commands, reason))
        elif kind == "sh":
            commands = (Command(index + 2, "\n".join(body)),)
            examples.append(Example(page, index + 1, kind, commands, reason))
        elif reason is not None:
            raise PageError(f"{page}:{index + 1}: 'not run' marks a block that never runs")
        elif kind == "" and any(text.startswith("$ ") for text in body):
            raise PageError(
                f"{page}:{index + 1}: a block of `$ ` commands without a language: "
                "fence it ```console (run by the tests) or mark it <!-- not run: REASON -->"
            )
        index = end + 1
    if pending_reason is not None:
        raise PageError(f"{page}:{pending_reason[0]}: 'not run' marks no block after it")
    return examples


def _find(lines: Sequence[str], start: int, found, page: str, opened: int, what: str) -> int:
    for index in range(start, len(lines)):
        if found(lines[index]):
            return index
    raise PageError(f"{page}:{opened + 1}: no closing {what}")


def _console_commands(body: Sequence[str], page: str, first_line: int) -> tuple[Command, ...]:
    commands: list[Command] = []
    index = 0
    while index < len(body):
        if not body[index].startswith("$ "):
            raise PageError(f"{page}:{first_line + index}: output before the first `$ ` command")
        start = index
        text = [body[index][2:]]
        index += 1
        while text[-1].endswith("\\") and index < len(body):
            text.append(body[index])
            index += 1
        heredoc = HEREDOC.search(text[0])
        if heredoc:
            while index < len(body) and body[index] != heredoc["word"]:
                text.append(body[index])
                index += 1
            text.append(body[index] if index < len(body) else heredoc["word"])
            index += 1
        expected: list[str] = []
        while index < len(body) and not body[index].startswith("$ "):
            expected.append(body[index])
            index += 1
        commands.append(Command(first_line + start, "\n".join(text), tuple(expected)))
    return tuple(commands)


# ---------------------------------------------------------------------------------------------
# Normalising: what changes from run to run, on both sides of the comparison


@dataclass(frozen=True)
class Normaliser:
    """Turns a line of output, printed or documented, into the form they are compared in."""

    replacements: tuple[tuple[str, str], ...] = ()  # exact strings of this run (its folders)
    patterns: tuple[tuple[re.Pattern[str], str], ...] = field(
        default_factory=lambda: tuple((re.compile(p), r) for p, r in _PATTERNS)
    )

    def line(self, text: str) -> str:
        for old, new in self.replacements:
            text = text.replace(old, new)
        for pattern, new in self.patterns:
            text = pattern.sub(new, text)
        return " ".join(text.split())


_PATTERNS = (
    # times: ISO 8601, the tables' local times, the worker's HH:MM:SS, days
    (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?", "<time>"),
    (r"\d{4}-\d\d-\d\d[ _]\d\d[:-]\d\d(?:[:-]\d\d)?", "<time>"),
    (r"\b\d\d:\d\d:\d\d\b", "<time>"),
    (r"\b\d{4}-\d\d-\d\d\b", "<date>"),
    # ids: workers, installations, deliverers, runs, notifications, sessions, process ids
    (r"\bw-[0-9a-f]{12}\b", "w-<id>"),
    (r"\binst-[0-9a-f]{24}\b", "inst-<id>"),
    (r"\bcli-[0-9a-f]{12}\b", "cli-<id>"),
    (r"\brun-[0-9a-f]{12}\b", "run-<id>"),
    (r"\bntc-[0-9a-f]{32}\b", "ntc-<id>"),
    (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>"),
    (r"\bpid([ =])\d+\b", r"pid\1<pid>"),
    (r"(\"pid\": )\d+", r"\1<pid>"),
    (r"(inst-<id>\s+)\d+\b", r"\1<pid>"),  # the PID column of `workers` and `status`
    # durations measured by the run
    (r"\b\d+(?:\.\d+)? ?(?:ms|s)\b", "<duration>"),
    (r"(\"\w+_seconds\": )[\d.]+", r"\1<duration>"),
    # versions of wrighty
    (r"\bwrighty \d+\.\d+\.\d+\S*", "wrighty <version>"),
)


def matches(expected: Sequence[str], actual: Sequence[str]) -> bool:
    """Whether the normalised output matches the normalised expected lines (``...`` stands for
    any number of lines)."""
    if not expected:
        return not actual
    if expected[0] == WILDCARD:
        return any(matches(expected[1:], actual[skip:]) for skip in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


# ---------------------------------------------------------------------------------------------
# Running a page


@dataclass(frozen=True)
class Result:
    command: Command
    example: Example
    output: str
    status: int


SEPARATOR = "\x1e"


def run_page(
    examples: Iterable[Example],
    project: Path,
    env: dict[str, str],
    *,
    timeout: float = 120,
) -> list[Result]:
    """Run a page's examples in order in one bash process in ``project``; each command's merged
    output and exit status (a setup or sh block runs under ``set -e``: if it fails, the page
    stops there)."""
    runnable = [example for example in examples if example.not_run is None]
    plan: list[tuple[Example, Command]] = []
    script = ["exec 2>&1"]
    for example in runnable:
        for command in example.commands:
            if example.kind == "console":
                script.append(command.text)
            else:
                # In the page's shell (its `cd` and `export` hold for what follows); a command
                # that fails ends the page there.
                script.append(f"set -e\n{command.text}\nset +e")
            # The status is printed, then restored: a page's `echo $?` sees the command's.
            script.append(f"_rc=$?; printf '\\n{SEPARATOR}%d{SEPARATOR}\\n' $_rc; (exit $_rc)")
            plan.append((example, command))
    shell = subprocess.Popen(
        ["bash", "--noprofile", "--norc", "-c", "\n".join(script)],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = shell.communicate(timeout=timeout)
        stopped = ""
    except subprocess.TimeoutExpired:
        # A command that never ends (a worker with nothing to stop it): what ran until then is
        # compared, and the rest is reported as not reached.
        os.killpg(shell.pid, signal.SIGKILL)
        output, _ = shell.communicate()
        stopped = f" after {timeout:g} seconds"
    text = output.decode("utf-8", errors="replace")
    chunks = re.split(f"\n{SEPARATOR}(\\d+){SEPARATOR}\n", text)
    results: list[Result] = []
    for position, (example, command) in enumerate(plan):
        if 2 * position + 1 >= len(chunks):
            rest = chunks[-1] if chunks else ""
            message = f"(the page's script stopped here{stopped})\n{rest}"
            results.append(Result(command, example, message, -1))
            break
        results.append(
            Result(command, example, chunks[2 * position], int(chunks[2 * position + 1]))
        )
    return results
