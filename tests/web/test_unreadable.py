"""A row that does not read (docs/storage.md): the board says so, and the server does not
tell it on stderr at every request (and every second of the live updates)."""

from __future__ import annotations

import sqlite3

import pytest

from tests.conftest import FakeClock
from tests.web.conftest import Console, seeded


def test_an_unreadable_item_is_on_the_board_not_on_stderr(
    console: Console, clock: FakeClock, capfd: pytest.CaptureFixture[str]
):
    if console.app_ctx.store_option is not None:
        pytest.skip("raw SQL past the checks on SQLite's file (test_poison_rows.py covers both)")
    made = seeded(console.app_ctx, clock)
    connection = sqlite3.connect(console.project / ".wrighty" / "wrighty.db")
    connection.execute("PRAGMA ignore_check_constraints = ON")
    connection.execute(f"UPDATE items SET priority = 7 WHERE id = {made.queued}")
    connection.commit()
    connection.close()
    client = console.login()
    capfd.readouterr()
    for _ in range(3):
        page = client.get("/")
        assert page.status_code == 200
        assert "unreadable, left out: " in page.text
        assert f'href="/items/{made.queued}"' not in page.text
    assert capfd.readouterr().err == ""
