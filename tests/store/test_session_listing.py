"""`Store.list_sessions`: the sessions one installation recorded (`wrighty workspaces`), on
both stores."""

from __future__ import annotations

from tests.conftest import FakeClock
from tests.store.test_claims import acquire, queued
from tests.store.txhooks import execute_raw
from wrighty.domain.model import NewRun, Session
from wrighty.domain.outcomes import RunKind
from wrighty.store import Store

BASE = "ab" * 20


def with_session(store: Store, clock: FakeClock, installation: str, **extra: str) -> int:
    queued(store, clock)
    claimed = acquire(store, clock, installation=installation)
    session = Session(claimed.id, "claude", "s", f"/w/{claimed.id}", installation, **extra)
    run = NewRun(f"r-{claimed.id}", RunKind.FRESH, "w1", installation, clock(), "s")
    assert store.start_run(claimed, run, session=session) is not None
    return claimed.id


def test_only_this_installations_sessions_by_item(store: Store, clock: FakeClock) -> None:
    first = with_session(store, clock, "inst-a", branch="wrighty/1-x", base_commit=BASE)
    with_session(store, clock, "inst-b")
    third = with_session(store, clock, "inst-a")
    queued(store, clock)  # no session at all
    listed = store.list_sessions("inst-a")
    assert [session.item_id for session in listed] == [first, third]
    assert (listed[0].workspace, listed[0].branch, listed[0].base_commit) == (
        f"/w/{first}",
        "wrighty/1-x",
        BASE,
    )
    assert store.list_sessions("inst-c") == []


def test_a_session_that_does_not_read_is_left_out_and_told(store: Store, clock: FakeClock) -> None:
    bad = with_session(store, clock, "inst-a")
    good = with_session(store, clock, "inst-a")
    execute_raw(store, f"UPDATE sessions SET branch = '-x' WHERE item_id = {bad}")
    listed = store.list_sessions("inst-a")
    assert [session.item_id for session in listed] == [good]
    assert len(listed.unreadable) == 1
