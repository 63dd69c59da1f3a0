"""Item ids are the stores' 64-bit integers: a larger number is refused in one line, not a crash
of the store's driver."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.helpers import snapshot

LARGEST = 2**63 - 1

COMMANDS = [["show"], ["queue"], ["cancel"], ["requeue"], ["release"], ["logs"]]


@pytest.mark.parametrize(
    "command",
    [[*command, str(LARGEST + 1)] for command in COMMANDS]
    + [["worker", "start", "--once", "--item", str(LARGEST + 1)]],
)
def test_an_id_past_the_store_range_is_refused_in_one_line(
    initialised: Path, command: list[str]
) -> None:
    before = snapshot(initialised)
    result = wrighty(*command)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("wrighty: ")
    assert f"less than or equal to {LARGEST}" in line
    assert snapshot(initialised) == before


@pytest.mark.parametrize(
    "command", [["show"], ["queue"], ["cancel"], ["requeue", "--fresh"], ["release", "--force"]]
)
def test_the_largest_id_is_looked_up_like_any_other(initialised: Path, command: list[str]) -> None:
    result = wrighty(*command, str(LARGEST))
    assert result.exit_code == 2, result.output
    assert f"no item {LARGEST}" in result.stderr
