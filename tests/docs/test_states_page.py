"""docs/states.md names exactly the states and the moves the code has."""

from __future__ import annotations

import re
from pathlib import Path

from wrighty.domain.states import TRANSITIONS, ItemState

PAGE = Path(__file__).parents[2] / "docs" / "states.md"


def _table(heading: str) -> list[list[str]]:
    """The rows of the first table under ``heading``, each cell's text."""
    section = PAGE.read_text(encoding="utf-8").split(f"## {heading}\n", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    cut = next(i for i, row in enumerate(rows[2:], 2) if not row.startswith("| `"))
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:cut]]


def _names(cell: str) -> set[str]:
    return set(re.findall(r"`([a-z-]+)`", cell))


def test_the_page_lists_every_state_in_the_codes_order() -> None:
    assert [row[0].strip("`") for row in _table("The states")] == [s.value for s in ItemState]
    count = len(ItemState)
    words = {7: "seven", 8: "eight", 9: "nine"}
    assert f"exactly one of {words[count]} states" in PAGE.read_text(encoding="utf-8")


def test_the_moves_table_is_the_codes_transitions() -> None:
    moves = {row[0].strip("`"): _names(row[1]) for row in _table("Allowed moves")}
    assert moves == {
        state.value: {target.value for target in targets} for state, targets in TRANSITIONS.items()
    }
