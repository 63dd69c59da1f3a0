"""The inbox board's order and words (wrighty/domain/board.py), on items made in memory."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import make_item, make_run
from wrighty.domain.board import (
    AttentionOrder,
    OpenItem,
    Section,
    board_rows,
    retry_policy,
    section_counts,
)
from wrighty.domain.landing import Landing, Step
from wrighty.domain.model import Item, Run
from wrighty.domain.states import ItemState
from wrighty.domain.usage import Usage

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def item(item_id: int, state: ItemState, **changes: object) -> Item:
    return make_item(state, id=item_id, title=f"item {item_id}", **changes)


def entry(it: Item, *, since: datetime | None = None, run: Run | None = None) -> OpenItem:
    return OpenItem(it, since, 1 if run else 0, run)


def ago(minutes: float) -> datetime:
    return NOW - timedelta(minutes=minutes)


def open_run(item_id: int, usage: Usage | None) -> Run:
    return make_run(run_id=f"r{item_id}", item_id=item_id, started_at=ago(5), usage=usage)


def test_sections_come_in_order_and_a_held_retry_is_among_the_held() -> None:
    entries = [
        entry(item(1, ItemState.TODO)),
        entry(item(2, ItemState.QUEUED, queued_at=ago(3))),
        entry(item(3, ItemState.RUNNING, claimed_at=ago(1), claimed_by="w")),
        entry(item(4, ItemState.RETRY_SCHEDULED, not_before=NOW, reason_code="process-crash")),
        entry(item(5, ItemState.NEEDS_ATTENTION, reason_code="auth"), since=ago(9)),
        entry(item(6, ItemState.RETRY_SCHEDULED, not_before=NOW)),
        entry(item(7, ItemState.QUEUED)),
    ]
    rows = board_rows(entries, {6: "held: label gpu runs 1 of 1", 7: "waits for item 1"}, now=NOW)
    assert [(r.section, r.item.id) for r in rows] == [
        (Section.ATTENTION, 5),
        (Section.RETRY, 4),
        (Section.RUNNING, 3),
        (Section.HELD, 6),
        (Section.HELD, 7),
        (Section.WAITING, 2),
        (Section.WAITING, 1),
    ]
    assert rows[3].why == "held: label gpu runs 1 of 1"
    counts = section_counts(rows)
    assert counts[Section.HELD] == 2
    assert counts[Section.WAITING] == 2


def test_items_ready_for_review_have_their_own_section_after_attention_oldest_first() -> None:
    entries = [
        entry(item(1, ItemState.QUEUED, queued_at=ago(3))),
        entry(item(2, ItemState.REVIEW), since=ago(5)),
        entry(item(3, ItemState.NEEDS_ATTENTION, reason_code="auth"), since=ago(1)),
        entry(item(4, ItemState.REVIEW), since=ago(40)),
        entry(item(5, ItemState.RETRY_SCHEDULED, not_before=NOW)),
    ]
    # A review item is never among the held: nothing it waits for is work to claim.
    rows = board_rows(entries, {2: "waits for item 1"}, now=NOW)
    assert [(r.section, r.item.id) for r in rows] == [
        (Section.ATTENTION, 3),
        (Section.REVIEW, 4),
        (Section.REVIEW, 2),
        (Section.RETRY, 5),
        (Section.WAITING, 1),
    ]
    assert rows[1].why == "ready for review: verified, waiting for a person"
    assert section_counts(rows)[Section.REVIEW] == 2


def test_needs_attention_groups_by_reason_code_or_lists_the_longest_waiting_first() -> None:
    entries = [
        entry(item(1, ItemState.NEEDS_ATTENTION, reason_code="timeout"), since=ago(50)),
        entry(item(2, ItemState.NEEDS_ATTENTION, reason_code="auth"), since=ago(5)),
        entry(item(3, ItemState.NEEDS_ATTENTION, reason_code="timeout"), since=ago(70)),
        entry(item(4, ItemState.NEEDS_ATTENTION, reason_code="auth"), since=ago(60)),
    ]
    by_reason = board_rows(entries, {}, now=NOW)
    assert [r.item.id for r in by_reason] == [4, 2, 3, 1]
    by_age = board_rows(entries, {}, now=NOW, order=AttentionOrder.AGE)
    assert [r.item.id for r in by_age] == [3, 4, 1, 2]


def test_waiting_items_are_in_claim_order_and_retries_by_due_time() -> None:
    entries = [
        entry(item(1, ItemState.QUEUED, priority=2, queued_at=ago(1))),
        entry(item(2, ItemState.TODO, priority=0)),
        entry(item(3, ItemState.QUEUED, priority=0, queued_at=ago(1))),
        entry(item(4, ItemState.QUEUED, priority=0, queued_at=ago(9))),
        entry(item(5, ItemState.RETRY_SCHEDULED, not_before=NOW + timedelta(minutes=9))),
        entry(item(6, ItemState.RETRY_SCHEDULED, not_before=NOW + timedelta(minutes=1))),
    ]
    rows = board_rows(entries, {}, now=NOW)
    assert [r.item.id for r in rows] == [6, 5, 4, 3, 2, 1]


def test_a_running_row_names_its_worker_its_spend_and_an_expired_lease() -> None:
    spending = item(1, ItemState.RUNNING, claimed_by="w-1", lease_expires_at=NOW + timedelta(1))
    silent = item(2, ItemState.RUNNING, claimed_by="w-2", lease_expires_at=NOW + timedelta(1))
    expired = item(3, ItemState.RUNNING, claimed_by="w-3", lease_expires_at=ago(1))
    usage = Usage(input_tokens=1_000, output_tokens=234, cost_usd=0.5)
    rows = board_rows(
        [
            entry(spending, run=open_run(1, usage)),
            entry(silent, run=open_run(2, Usage())),
            entry(expired, run=open_run(3, None)),
        ],
        {},
        now=NOW,
    )
    whys = {row.item.id: row.why for row in rows}
    assert whys[1] == "on w-1; $0.5000, 1,234 tokens"
    assert whys[2] == "on w-2"  # nothing reported yet: no figures
    assert whys[3].startswith("lease expired: on w-3")


@pytest.mark.parametrize(
    ("code", "policy"),
    [
        ("process-crash", "processCrash"),
        ("rate-limited", "usageFailure"),
        ("provider-unavailable", "usageFailure"),
        ("usage-retry-fresh", "usageFailure"),
        ("operator-resume", "operator"),
        ("worker-lost", "reaper"),
        ("something-new", "something-new"),
        (None, "unknown"),
    ],
)
def test_a_retry_names_the_policy_that_scheduled_it(code: str | None, policy: str) -> None:
    assert retry_policy(code) == policy


def landing_of(item_id: int, seq: int, **changes: object) -> Landing:
    fields: dict[str, object] = {
        "item_id": item_id, "seq": seq, "accepted_at": ago(30), "accepted_by": "op",
        "accepted_commit": "a" * 40, "installation_id": "inst-a", "target": "main",
    }  # fmt: skip
    return Landing(**{**fields, **changes})  # type: ignore[arg-type]


def test_landing_items_have_their_own_section_after_review_each_saying_where_it_is() -> None:
    lander = {"claimed_by": "w-9", "lease_expires_at": NOW + timedelta(seconds=30)}
    checking = landing_of(3, 7, step=Step.CHECKING, target_commit="b" * 40)
    entries = [
        entry(item(1, ItemState.QUEUED, queued_at=ago(3))),
        OpenItem(item(2, ItemState.LANDING), ago(2), 1, None, landing=landing_of(2, 9)),
        OpenItem(item(3, ItemState.LANDING, **lander), ago(8), 1, None, landing=checking),
        entry(item(4, ItemState.REVIEW), since=ago(40)),
        OpenItem(item(5, ItemState.LANDING), ago(1), 1, None, landing=None),  # did not read
        entry(item(6, ItemState.RETRY_SCHEDULED, not_before=NOW)),
    ]
    rows = board_rows(entries, {2: "waits for item 1"}, now=NOW)
    assert [(r.section, r.item.id) for r in rows] == [
        (Section.REVIEW, 4),
        (Section.LANDING, 3),  # in acceptance order
        (Section.LANDING, 2),
        (Section.LANDING, 5),
        (Section.RETRY, 6),
        (Section.WAITING, 1),
    ]
    assert [r.why for r in rows[1:4]] == [
        "checking on main at bbbbbbbbbbbb",
        "waiting in line to land on main",
        "accepted: landing",
    ]
    assert section_counts(rows)[Section.LANDING] == 3
    stale = {"claimed_by": "w-9", "lease_expires_at": NOW - timedelta(seconds=1)}
    [dead] = board_rows(
        [OpenItem(item(3, ItemState.LANDING, **stale), ago(8), 1, None, landing=checking)],
        {},
        now=NOW,
    )
    assert dead.why == (
        "checking on main at bbbbbbbbbbbb; its lander stopped renewing its claim "
        "(the next lander goes on)"
    )
