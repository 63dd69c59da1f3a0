"""Every command's `--help` names values in the command line's words (wrighty/cli/flags.py),
never in Python's: no `<str>`, `<int range>`, `<list[int]>`, `<path>` or `{item_id}`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer.main

from tests.cli.conftest import wrighty
from wrighty.cli.app import app

# A word in angle brackets or braces, a Python type's name, a list of a type.
PYTHON_SHAPED = re.compile(
    r"<[a-z][^>]*>|\{[a-z_]+\}|\blist\[|\b(?:str|int|float|bool|Path|NoneType)\b(?! \w)"
)


def _command_paths() -> Iterator[tuple[str, ...]]:
    root = typer.main.get_command(app)
    ctx: Any = root.make_context("wrighty", ["--help"], resilient_parsing=True)

    def walk(group: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            yield (*path, name)
            if hasattr(command, "list_commands"):
                yield from walk(command, (*path, name))

    yield ()
    yield from walk(root, ())


COMMANDS = list(_command_paths())


def test_every_command_is_scanned() -> None:
    assert {("show",), ("worker", "start"), ("notify", "flush"), ("config", "validate")} <= set(
        COMMANDS
    )


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "wrighty")
def test_help_names_no_value_in_pythons_words(path: tuple[str, ...]) -> None:
    result = wrighty(*path, "--help", env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    # The help texts themselves may say `limits.labels.<label>` (a config path): only the
    # usage line and the column between an option's name and its help are the program's.
    usage = next(line for line in result.stdout.splitlines() if "Usage:" in line)
    assert not PYTHON_SHAPED.search(usage), usage
    for line in result.stdout.splitlines():
        row = re.match(r"│\s*\*?\s*(-{0,2}[A-Za-z][\w-]*(?:,\s*-\w)?)\s+(.*?)\s{2,}", line)
        if row:
            assert not PYTHON_SHAPED.search(row.group(2)), line


@pytest.mark.parametrize(
    ("path", "option", "word"),
    [
        (("show",), None, "ID"),
        (("create",), "--after", "ID"),
        (("create",), "--title", "TEXT"),
        (("create",), "--timeout", "DURATION"),
        (("create",), "--body-file", "PATH"),
        (("worker", "start"), "--concurrency", "N"),
        (("usage",), "--by", "[agent|day|item]"),
        (("import",), None, "PATH"),
    ],
)
def test_values_are_named_in_the_command_lines_words(
    path: tuple[str, ...], option: str | None, word: str
) -> None:
    text = wrighty(*path, "--help", env={"COLUMNS": "200"}).stdout
    if option is None:
        usage = next(line for line in text.splitlines() if "Usage:" in line)
        assert usage.split()[-1] == word, usage
    else:
        [row] = [line.split() for line in text.splitlines() if f" {option} " in line]
        assert row[row.index(option) + 1] == word, row
