"""Where an accepted item's landing stands, as `show` says it (wrighty/domain/landing_view.py,
docs/landing.md#where-it-shows): on items, landings and histories made in memory."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import make_item
from wrighty.domain.landing import Landing, Step, accepted_words
from wrighty.domain.landing_view import landing_view
from wrighty.domain.model import (
    INTEGRATION_FAILED,
    LANDED,
    LANDING_CHECKS_FAILED,
    LANDING_GAVE_UP,
    Event,
    Item,
)
from wrighty.domain.states import ItemState

ACCEPTED_AT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
TARGET_TIP = "1a2b3c4d5e6f" + "0" * 28


def landing(**changes: object) -> Landing:
    fields: dict[str, object] = {
        "item_id": 4, "seq": 1, "accepted_at": ACCEPTED_AT, "accepted_by": "ana",
        "accepted_commit": "a" * 40, "installation_id": "inst-a", "target": "main",
    }  # fmt: skip
    return Landing(**{**fields, **changes})  # type: ignore[arg-type]


def item(state: ItemState, **changes: object) -> Item:
    return make_item(state, id=4, **changes)


def moved(
    minutes: float, from_state: ItemState, to_state: ItemState, code: str | None, why: str
) -> Event:
    return Event(4, ACCEPTED_AT + timedelta(minutes=minutes), "worker:w", 3, from_state,
                 to_state, code, why)  # fmt: skip


ACCEPT = moved(0, ItemState.REVIEW, ItemState.LANDING, "accepted", "accepted")
LANDER = {"claimed_by": "w-1", "lease_expires_at": ACCEPTED_AT + timedelta(minutes=5)}


@pytest.mark.parametrize(
    ("state", "held", "shown", "where"),
    [
        (ItemState.LANDING, {}, landing(), "waiting in line to land on main"),
        (ItemState.LANDING, LANDER, landing(step=Step.UPDATING), "updating with main"),
        (
            ItemState.LANDING, LANDER, landing(step=Step.CHECKING, target_commit=TARGET_TIP),
            "checking on main at 1a2b3c4d5e6f",
        ),
        (
            ItemState.LANDING, LANDER, landing(step=Step.INTEGRATING, attempt=2),
            "integrating into main (attempt 2)",
        ),
    ],
)  # fmt: skip
def test_a_landing_item_says_its_landers_step(
    state: ItemState, held: dict[str, object], shown: Landing, where: str
) -> None:
    view = landing_view(shown, item(state, **held), [ACCEPT], max_fix_turns=2)
    assert (view.where, view.fix_turn, view.landed) == (where, None, None)


FIX = moved(2, ItemState.LANDING, ItemState.RETRY_SCHEDULED, LANDING_CHECKS_FAILED,
            "tests failed on main; fix turn 1 of 2")  # fmt: skip
RUN = moved(3, ItemState.RETRY_SCHEDULED, ItemState.RUNNING, "claimed", "w claimed it")


def test_a_landings_fix_turn_says_which_of_how_many() -> None:
    turn = landing(step=Step.FIX_TURN)
    waiting = landing_view(turn, item(ItemState.RETRY_SCHEDULED, fix_turns=1), [ACCEPT, FIX],
                           max_fix_turns=2)  # fmt: skip
    assert (waiting.where, waiting.fix_turn) == ("fix turn 1 of 2 before it lands on main", 1)
    crashed = moved(4, ItemState.RUNNING, ItemState.RETRY_SCHEDULED, "process-crash", "crash")
    for history in ([ACCEPT, FIX, RUN], [ACCEPT, FIX, RUN, crashed]):
        view = landing_view(turn, item(history[-1].to_state, fix_turns=1), history,
                            max_fix_turns=2)  # fmt: skip
        assert view.fix_turn == 1
    unknown = landing_view(turn, item(ItemState.RUNNING, fix_turns=2), [ACCEPT, FIX, RUN],
                           max_fix_turns=None)  # fmt: skip
    assert unknown.where == "fix turn 2 before it lands on main"


def test_a_rework_after_the_fix_turn_went_to_review_is_no_fix_turn() -> None:
    """The fix turn sent it back to review; rejected there, its rework is the agent's run of
    a rejection, whatever step its landing row was left at."""
    again = [
        moved(5, ItemState.RUNNING, ItemState.REVIEW, "ready-for-review", "review it again"),
        moved(6, ItemState.REVIEW, ItemState.RETRY_SCHEDULED, "rejected", "no"),
        moved(7, ItemState.RETRY_SCHEDULED, ItemState.RUNNING, "claimed", "w claimed it"),
    ]
    view = landing_view(landing(step=Step.FIX_TURN), item(ItemState.RUNNING, fix_turns=1),
                        [ACCEPT, FIX, RUN, *again], max_fix_turns=2)  # fmt: skip
    assert view.fix_turn is None
    assert view.where == "accepted by ana; lands on main"


def test_a_landed_item_says_what_landed_and_on_what_it_was_checked() -> None:
    done = moved(3, ItemState.LANDING, ItemState.DONE, LANDED, "fast-forwarded main to bbbb")
    view = landing_view(landing(target_commit=TARGET_TIP), item(ItemState.DONE),
                        [ACCEPT, done], max_fix_turns=2)  # fmt: skip
    assert view.where == "landed on main, checked at 1a2b3c4d5e6f"
    assert (view.landed, view.landed_at) == ("fast-forwarded main to bbbb", done.at)


@pytest.mark.parametrize(
    ("state", "code"),
    [(ItemState.REVIEW, INTEGRATION_FAILED), (ItemState.NEEDS_ATTENTION, LANDING_GAVE_UP)],
)
def test_a_landing_that_went_back_to_a_person_says_it_did_not_land(
    state: ItemState, code: str
) -> None:
    back = moved(3, ItemState.LANDING, state, code, "it did not land: the target moved")
    view = landing_view(landing(), item(state), [ACCEPT, back], max_fix_turns=2)
    assert (view.where, view.landed) == ("did not land on main (see its reason)", None)


def test_a_move_out_of_landing_before_the_latest_accept_is_not_this_landings() -> None:
    earlier = moved(-9, ItemState.LANDING, ItemState.REVIEW, INTEGRATION_FAILED, "no")
    view = landing_view(landing(), item(ItemState.REVIEW), [earlier, ACCEPT], max_fix_turns=2)
    assert view.where == "accepted by ana; lands on main"


def test_the_accept_says_who_the_commit_they_saw_and_the_target() -> None:
    assert accepted_words(landing()) == "by ana at aaaaaaaaaaaa; lands on main"
    assert accepted_words(landing(accepted_commit=None)) == "by ana; lands on main"


def test_an_accepts_reason_reads_as_a_person_writes_it_after_its_code() -> None:
    from wrighty.domain.landing import accept

    moved = accept(
        item(ItemState.REVIEW), at=ACCEPTED_AT, actor="ana", accepted_commit="a" * 40,
        installation_id="inst-a", target="main",
    )  # fmt: skip
    event = moved.change.event
    shown = f"{event.reason_code}: {event.reason}"
    assert shown == "accepted: by ana at aaaaaaaaaaaa; lands on main"


def test_a_lander_claims_the_head_of_a_line_nobody_holds_that_is_not_in_a_fix_turn() -> None:
    from wrighty.domain.landing import InLine, head_to_claim

    main = [InLine(1, "main", True, False), InLine(2, "main", True, False)]
    assert head_to_claim(main) == 1
    assert head_to_claim([InLine(1, "main", False, False), InLine(2, "main", True, False)]) is None
    assert head_to_claim([InLine(1, "main", True, False), InLine(2, "main", True, True)]) is None
    both = [InLine(1, "main", True, True), InLine(3, "rel", True, False)]
    assert head_to_claim(both) == 3
    assert head_to_claim(both, target="main") is None
