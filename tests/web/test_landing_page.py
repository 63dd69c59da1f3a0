"""A landing item's page in the console (docs/landing.md#where-it-shows): `show`'s landing
fields (where it is, who accepted it, the commit they saw and the target) and no action, for
nothing but its lander moves it."""

from __future__ import annotations

from tests.conftest import FakeClock
from tests.web.conftest import Console
from tests.web.test_console import in_review
from tests.web.test_item_page import forms_on
from wrighty.domain import landing


def test_a_landing_items_page_says_where_it_is_and_offers_nothing(
    console: Console, clock: FakeClock
) -> None:
    item_id = in_review(console.app_ctx, clock)
    with console.app_ctx.store() as store:
        item = store.get_item(item_id)
        assert item is not None
        move = landing.accept(item, at=clock(), actor="ana", accepted_commit="a" * 40,
                              installation_id="inst-a", target="main")  # fmt: skip
        assert store.write_landing(move)
    console.login()
    page = console.client.get(f"/items/{item_id}").text
    assert "waiting in line to land on main" in page
    assert "by ana at aaaaaaaaaaaa; lands on main" in page
    assert forms_on(console, item_id) == {}
