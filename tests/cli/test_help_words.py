"""Every command's `--help` names values in the command line's words (wrighty/cli/flags.py),
never in Python's: no `<str>`, `<int range>`, `<list[int]>`, `<path>` or `{item_id}`."""

from __future__ import annotations

import re

import pytest

from tests.cli.conftest import wrighty
from tests.cli.test_docs import _command_paths as command_paths

# A word in angle brackets or braces, a Python type's name, a list of a type.
PYTHON_SHAPED = re.compile(
    r"<[a-z][^>]*>|\{[a-z_]+\}|\blist\[|\b(?:str|int|float|bool|Path|NoneType)\b(?! \w)"
)


# The root, every group and every command a user can type.
COMMANDS = sorted(
    {()}
    | {tuple(path.split()[:1]) for path, _ in command_paths()}
    | {tuple(path.split()) for path, _ in command_paths()}
)


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
