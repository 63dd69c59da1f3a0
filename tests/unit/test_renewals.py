"""A worker's renewals, gathered (worker/renewals.py): one transaction for the claims that ask
together, each claim its own answer."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from tests.unit.test_lease_guard import CLAIMED
from wrighty.domain.claims import LeaseTerms, Renewal, RenewOutcome, RenewResult
from wrighty.domain.model import Item
from wrighty.errors import StoreError
from wrighty.worker.renewals import Renewals

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
TERMS = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)


def claimed(item_id: int) -> Item:
    return dataclasses.replace(CLAIMED, id=item_id, title=f"item {item_id}")


class Store:
    """renew and renew_many as the SQL store answers them; ``lost``: the claims it no longer
    holds; ``broken``: the items whose renewal fails with a bug, not the store."""

    def __init__(self, *, lost: Sequence[int] = (), broken: Sequence[int] = ()) -> None:
        self.lost, self.broken = set(lost), set(broken)
        self.batches: list[list[int]] = []
        self.alone: list[int] = []
        self.down = False

    def _answer(self, renewal: Renewal) -> RenewResult:
        if renewal.claimed.id in self.broken:
            raise RuntimeError(f"planted: item {renewal.claimed.id}")
        if renewal.claimed.id in self.lost:
            return RenewResult(RenewOutcome.LOST)
        return RenewResult(RenewOutcome.RENEWED, renewal.now + timedelta(seconds=60))

    def renew_many(self, renewals: Sequence[Renewal]) -> list[RenewResult]:
        if self.down:
            raise StoreError("the database is unreachable")
        self.batches.append([renewal.claimed.id for renewal in renewals])
        return [self._answer(renewal) for renewal in renewals]

    def renew(self, claimed: Item, *, now: datetime, terms: LeaseTerms) -> RenewResult:
        if self.down:
            raise StoreError("the database is unreachable")
        self.alone.append(claimed.id)
        return self._answer(Renewal(claimed, now, terms))


def ask_together(
    renewals: Renewals, items: Sequence[Item]
) -> dict[int, RenewResult | BaseException]:
    """Each of ``items`` renewed from a thread of its own, as a worker's claims are."""
    answers: dict[int, RenewResult | BaseException] = {}

    def ask(item: Item) -> None:
        try:
            answers[item.id] = renewals.renew(item, now=NOW, terms=TERMS)
        except BaseException as error:
            answers[item.id] = error

    threads = [threading.Thread(target=ask, args=(item,)) for item in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(answers) == len(items)
    return answers


def members(renewals: Renewals, count: int) -> list[object]:
    holds = [renewals.member() for _ in range(count)]
    for hold in holds:
        hold.__enter__()
    return holds


def test_the_claims_that_ask_together_go_in_one_transaction() -> None:
    store = Store(lost=[3])
    # A clock that stands still: the first to ask waits for every claim the worker holds.
    renewals = Renewals(store, heartbeat_seconds=20, clock=lambda: 0.0)  # type: ignore[arg-type]
    holds = members(renewals, 8)  # noqa: F841 -- held while the claims ask
    answers = ask_together(renewals, [claimed(n) for n in range(1, 9)])
    assert [sorted(batch) for batch in store.batches] == [list(range(1, 9))]
    assert store.alone == []
    assert answers[3] == RenewResult(RenewOutcome.LOST)  # each claim hears its own
    renewed = [answer for n, answer in answers.items() if n != 3]
    assert all(isinstance(a, RenewResult) and a.outcome is RenewOutcome.RENEWED for a in renewed)


def test_a_claim_that_does_not_ask_is_not_waited_for_past_the_window() -> None:
    store = Store()
    readings = iter(float(n) for n in range(100))  # a second passes at every reading
    renewals = Renewals(store, heartbeat_seconds=2, clock=lambda: next(readings))  # type: ignore[arg-type]
    holds = members(renewals, 3)  # noqa: F841 -- held while the claims ask
    result = renewals.renew(claimed(1), now=NOW, terms=TERMS)
    assert result.outcome is RenewOutcome.RENEWED
    assert store.alone == [1]  # sent alone, as soon as the window passed


def test_a_store_error_reaches_every_claim_of_the_batch() -> None:
    store = Store()
    store.down = True
    renewals = Renewals(store, heartbeat_seconds=20, clock=lambda: 0.0)  # type: ignore[arg-type]
    holds = members(renewals, 3)  # noqa: F841 -- held while the claims ask
    answers = ask_together(renewals, [claimed(n) for n in (1, 2, 3)])
    assert all(isinstance(answer, StoreError) for answer in answers.values())


def test_a_renewal_that_fails_with_a_bug_fails_only_its_own_claim() -> None:
    store = Store(broken=[2])
    renewals = Renewals(store, heartbeat_seconds=20, clock=lambda: 0.0)  # type: ignore[arg-type]
    holds = members(renewals, 3)  # noqa: F841 -- held while the claims ask
    answers = ask_together(renewals, [claimed(n) for n in (1, 2, 3)])
    assert isinstance(answers[2], RuntimeError)
    assert {n: getattr(answers[n], "outcome", None) for n in (1, 3)} == {
        1: RenewOutcome.RENEWED,
        3: RenewOutcome.RENEWED,
    }
    assert sorted(store.alone) == [1, 2, 3]  # asked again a claim at a time


def test_a_claim_let_go_is_no_longer_waited_for() -> None:
    store = Store()
    renewals = Renewals(store, heartbeat_seconds=20, clock=lambda: 0.0)  # type: ignore[arg-type]
    holds = members(renewals, 2)
    asking = threading.Thread(
        target=renewals.renew, args=(claimed(1),), kwargs={"now": NOW, "terms": TERMS}
    )
    asking.start()
    holds[1].__exit__(None, None, None)  # type: ignore[attr-defined]
    asking.join(timeout=30)
    assert not asking.is_alive()
    assert store.alone == [1]


@pytest.mark.parametrize(("heartbeat", "gather"), [(20, 1.0), (2, 0.5), (0.2, 0.05)])
def test_the_window_is_a_quarter_heartbeat_at_most_a_second(
    heartbeat: float, gather: float
) -> None:
    assert Renewals(Store(), heartbeat_seconds=heartbeat)._gather == gather  # type: ignore[arg-type]
