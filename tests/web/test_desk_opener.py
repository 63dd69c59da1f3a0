"""`wrighty serve`'s store: opened at the first request and kept for the next ones, opened
again after it failed, closed when the server stops (cli/serve.DeskOpener)."""

from __future__ import annotations

import pytest

from tests.conftest import FakeClock
from tests.web.conftest import Console, make_console
from wrighty.errors import StoreError
from wrighty.operator.context import AppContext
from wrighty.store import open_store as real_open_store
from wrighty.store.port import Store


class Counted:
    """open_store, counting the stores it opened and those closed."""

    def __init__(self) -> None:
        self.opened: list[Store] = []
        self.closed = 0

    def __call__(self, target, **kwargs):  # type: ignore[no-untyped-def]
        store = real_open_store(target, **kwargs)
        close = store.close

        def counted_close() -> None:
            self.closed += 1
            close()

        store.close = counted_close  # type: ignore[method-assign]
        self.opened.append(store)
        return store


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counted:
    made = Counted()
    monkeypatch.setattr("wrighty.store.open_store", made)
    return made


def test_requests_share_one_store_until_the_server_stops(
    project_ctx: AppContext, clock: FakeClock, counted: Counted
):
    console: Console = make_console(project_ctx, project_ctx.cwd)
    with console.client:
        client = console.login()
        for _ in range(3):
            assert client.get("/").status_code == 200
        assert client.get("/items/1").status_code == 404
        assert (len(counted.opened), counted.closed) == (1, 0)
    assert counted.closed == 1  # the server's end closed it


def test_a_store_that_failed_is_opened_again_by_the_next_request(
    project_ctx: AppContext, clock: FakeClock, counted: Counted
):
    console = make_console(project_ctx, project_ctx.cwd)
    with console.client:
        client = console.login()
        [store] = counted.opened

        def gone(*args: object, **kwargs: object) -> object:
            raise StoreError("the store does not answer")

        store.list_board = gone  # type: ignore[attr-defined, method-assign]
        store.store_time = gone  # type: ignore[method-assign]
        failed = client.get("/")
        assert failed.status_code == 503
        assert "wrighty: the store does not answer" in failed.text
        assert counted.closed == 1
        assert client.get("/").status_code == 200
        assert len(counted.opened) == 2


def test_a_failed_store_is_closed_only_when_no_request_uses_it(
    project_ctx: AppContext, clock: FakeClock, counted: Counted
):
    from wrighty.cli.serve import DeskOpener
    from wrighty.operator.desk import board_settings

    desks = DeskOpener(project_ctx, board_settings(project_ctx))
    with desks() as reading:  # a request under way in another thread, say
        with pytest.raises(StoreError), desks():
            raise StoreError("the store does not answer")
        assert counted.closed == 0  # not under the request that still reads it
        assert reading.store.list_items() == []
        with desks() as next_one:
            assert next_one.store is not reading.store  # the next request opens another
    assert (len(counted.opened), counted.closed) == (2, 1)
    desks.close()
    assert counted.closed == 2
