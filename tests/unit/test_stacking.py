"""The pure rules of stacked items (docs/landing.md#stacked-items): a line passes over an item
that waits for one it comes after to land, keeping its place; `accept` stops waiting for an
item whose predecessor is not on its way to land."""

from __future__ import annotations

import pytest

from wrighty.domain.landing import InLine, head_to_claim, held_up_by
from wrighty.domain.model import Dependency
from wrighty.domain.states import ItemState


@pytest.mark.parametrize(
    ("line", "target", "claimed"),
    [
        # B (2) accepted before A (1), which it comes after: A lands first
        ([InLine(2, "main", True, False, waits=True), InLine(1, "main", True, False)], None, 1),
        # nothing else in line: the line waits for A to be accepted
        ([InLine(2, "main", True, False, waits=True)], None, None),
        # passed over, but one landing at a time: a held item still holds the line
        ([InLine(2, "main", True, False, waits=True), InLine(1, "main", True, True)], None, None),
        # once A is done, B is the head again
        ([InLine(2, "main", True, False), InLine(3, "main", True, False)], None, 2),
        # a waiting item in one line does not hold another target's
        ([InLine(2, "main", True, False, waits=True), InLine(5, "rel", True, False)], "rel", 5),
        # the first that does not wait is the head even when it is in its fix turn
        (
            [InLine(2, "main", True, False, waits=True), InLine(1, "main", False, False),
             InLine(3, "main", True, False)],
            None, None,
        ),
    ],
)  # fmt: skip
def test_a_line_passes_over_an_item_that_waits_for_its_predecessor(
    line: list[InLine], target: str | None, claimed: int | None
) -> None:
    assert head_to_claim(line, target=target) == claimed


@pytest.mark.parametrize(
    ("states", "held_by"),
    [
        ((), None),
        ((ItemState.DONE,), None),
        ((ItemState.LANDING,), None),  # on its way: a lander lands it first
        ((ItemState.REVIEW,), 1),  # a person has yet to accept it
        ((ItemState.RUNNING,), 1),  # rejected, reworked now
        ((ItemState.DONE, ItemState.NEEDS_ATTENTION), 2),
        ((None,), 1),  # no such item: it never lands
    ],
)
def test_an_accept_stops_waiting_for_an_item_whose_predecessor_is_not_on_its_way(
    states: tuple[ItemState | None, ...], held_by: int | None
) -> None:
    mine = [Dependency(9, n, state) for n, state in enumerate(states, start=1)]
    others = [Dependency(12, 9, ItemState.QUEUED)]  # one that comes after item 9: not its own
    assert held_up_by(9, [*others, *mine]) == held_by
