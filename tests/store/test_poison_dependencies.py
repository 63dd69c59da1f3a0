"""Dependencies a store written by hand can hold, which wrighty itself never writes: on an item
that does not exist, on the item itself, or in a cycle. Each is never met: the item is blocked
(with why), the claim passes it over, and `status` counts it (docs/scheduling.md)."""

from __future__ import annotations

from tests.conftest import FakeClock
from tests.store.test_claims import queued, request
from tests.store.txhooks import execute_raw
from wrighty.domain.health import Thresholds
from wrighty.domain.scheduling import NO_LIMITS
from wrighty.services import items as item_service
from wrighty.services.status import status_report
from wrighty.store import Store
from wrighty.store.sqlite import SqliteStore


def plant_dependency(store: Store, item_id: int, depends_on: int) -> None:
    """One dependency row past every check (foreign key, no self-dependency)."""
    insert = f"INSERT INTO item_dependencies (item_id, depends_on) VALUES ({item_id}, {depends_on})"
    if isinstance(store, SqliteStore):
        connection = store._connection
        connection.execute("PRAGMA foreign_keys = OFF")
        connection.execute("PRAGMA ignore_check_constraints = ON")
        try:
            execute_raw(store, insert)
        finally:
            connection.execute("PRAGMA ignore_check_constraints = OFF")
            connection.execute("PRAGMA foreign_keys = ON")
        return
    execute_raw(store, "ALTER TABLE item_dependencies DROP CONSTRAINT item_dependencies_check")
    execute_raw(store, "SET LOCAL session_replication_role = replica; " + insert)


def waits(store: Store, item_id: int) -> str:
    item = store.get_item(item_id)
    assert item is not None
    found = item_service.scheduling_waits(store, [item], limits=NO_LIMITS, default_agent="claude")
    return f"{found[item_id].kind}: {found[item_id].reason}"


def blocked_count(store: Store, clock: FakeClock) -> int:
    report = status_report(
        store, now=clock(), thresholds=Thresholds(), worker_max_age_seconds=60,
        installation_id="inst-a", default_agent="claude",
    )  # fmt: skip
    return report.figures.blocked


def test_a_dependency_on_an_item_that_does_not_exist_is_never_met(
    store: Store, clock: FakeClock
) -> None:
    waiting = queued(store, clock, "waits for nothing there", priority=0)
    plant_dependency(store, waiting.id, 999)
    other = queued(store, clock, "free", priority=3)
    held = store.acquire(request("w1"), now=clock())
    assert held is not None
    assert held.item.id == other.id  # the one with the missing dependency is passed over
    assert store.acquire(request("w2"), now=clock()) is None
    [edge] = store.list_dependencies(waiting.id)
    assert edge.state is None
    assert waits(store, waiting.id) == (
        f"blocked: blocked: item 999 does not exist; `wrighty edit {waiting.id} --not-after "
        "999` lets it start without it"
    )
    assert store.queue_figures(now=clock()).blocked == 1
    assert blocked_count(store, clock) == 1


def test_an_item_that_comes_after_itself_is_blocked(store: Store, clock: FakeClock) -> None:
    selfish = queued(store, clock, "after itself")
    plant_dependency(store, selfish.id, selfish.id)
    assert store.acquire(request("w1"), now=clock()) is None
    assert waits(store, selfish.id) == (
        f"blocked: blocked: item {selfish.id} comes after itself; `wrighty edit {selfish.id} "
        f"--not-after {selfish.id}` breaks the cycle"
    )
    assert store.queue_figures(now=clock()).blocked == 1
    assert blocked_count(store, clock) == 1


def test_items_in_a_cycle_are_blocked_and_counted(store: Store, clock: FakeClock) -> None:
    first = queued(store, clock, "first")
    second = queued(store, clock, "second", after=(first.id,))
    third = queued(store, clock, "third", after=(second.id,))
    plant_dependency(store, first.id, second.id)  # first after second after first
    assert store.acquire(request("w1"), now=clock()) is None
    assert waits(store, first.id).startswith(
        f"blocked: blocked: items {second.id} after {first.id} after {second.id} make a cycle"
    )
    assert waits(store, third.id).startswith(f"blocked: blocked: items {second.id} after")
    assert blocked_count(store, clock) == 3
