"""`wrighty reap` and `wrighty release` on items claimed by (simulated) workers."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.conftest import FakeClock
from tests.helpers import snapshot
from wrighty.domain.claims import ClaimRequest, LeaseTerms
from wrighty.domain.model import Item, NewRun, Session
from wrighty.domain.outcomes import RunKind
from wrighty.store.sqlite import SqliteStore


def claim_one(project: Path, clock: FakeClock, *, with_session: bool) -> Item:
    result = wrighty("create", "--title", "t", "--body", "b", "--queue", "--json")
    assert result.exit_code == 0, result.output
    store = SqliteStore.open(project / ".wrighty" / "wrighty.db")
    terms = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)
    held = store.acquire(ClaimRequest("w-gone", "inst-a", terms, "claude"), now=clock())
    assert held is not None
    claimed = held.item
    store.start_run(claimed, NewRun("r1", RunKind.FRESH, "w-gone", "inst-a", clock(), None))
    if with_session:
        session = Session(claimed.id, "claude", "sess-1", str(project), "inst-a")
        store.record_session(claimed, session, at=clock())
    store.close()
    return claimed


def test_reap_settles_only_expired_claims(initialised: Path, clock: FakeClock) -> None:
    claimed = claim_one(initialised, clock, with_session=True)
    assert wrighty("reap").stdout.strip() == "nothing to reap"
    clock.advance(61)
    result = wrighty("reap", "--json")
    assert result.exit_code == 0, result.output
    [reaped] = json.loads(result.stdout)
    assert reaped["id"] == claimed.id
    assert (reaped["from_state"], reaped["to_state"], reaped["reason_code"]) == (
        "running",
        "retry-scheduled",
        "worker-lost",
    )
    assert reaped["worker_id"] == "w-gone"
    shown = json.loads(wrighty("show", str(claimed.id), "--json").stdout)
    assert shown["state"] == "retry-scheduled"
    assert shown["runs"][0]["outcome_class"] == "worker-lost"
    assert shown["runs"][0]["confidence"] == "inferred"
    assert wrighty("reap").stdout.strip() == "nothing to reap"


def test_reap_respects_the_configured_reclaim_budget(initialised: Path, clock: FakeClock) -> None:
    config = initialised / "wrighty.json"
    document = json.loads(config.read_text())
    document["worker"]["maxRequeues"] = 0
    config.write_text(json.dumps(document))
    claimed = claim_one(initialised, clock, with_session=True)
    clock.advance(61)
    text = wrighty("reap").stdout
    assert text.startswith(f"item {claimed.id}: running -> needs-attention: ")
    assert "reclaim budget (0) is spent" in text


def test_release_needs_force_and_fences_the_old_worker(initialised: Path, clock: FakeClock) -> None:
    claimed = claim_one(initialised, clock, with_session=False)
    before = snapshot(initialised)
    refused = wrighty("release", str(claimed.id))
    assert refused.exit_code == 2
    assert f"wrighty release {claimed.id} --force" in refused.stderr
    assert snapshot(initialised) == before
    result = wrighty("release", str(claimed.id), "--force", "--json")
    assert result.exit_code == 0, result.output
    released = json.loads(result.stdout)
    assert (released["state"], released["reason_code"], released["generation"]) == (
        "needs-attention",
        "operator-released",
        claimed.generation + 1,
    )
    again = wrighty("release", str(claimed.id), "--force")
    assert again.exit_code == 2
    assert "applies to running items" in again.stderr


def test_reap_leaves_a_renewed_claim_alone(initialised: Path, clock: FakeClock) -> None:
    claimed = claim_one(initialised, clock, with_session=False)
    store = SqliteStore.open(initialised / ".wrighty" / "wrighty.db")
    clock.advance(50)
    store.renew(claimed, now=clock(), terms=LeaseTerms(60, 600))
    store.close()
    clock.current += timedelta(seconds=30)  # past the first lease, inside the renewed one
    assert wrighty("reap").stdout.strip() == "nothing to reap"


def released(project: Path, clock: FakeClock, *, with_session: bool) -> Item:
    """An item in needs-attention after its worker was released (a run, maybe a session)."""
    claimed = claim_one(project, clock, with_session=with_session)
    result = wrighty("release", str(claimed.id), "--force")
    assert result.exit_code == 0, result.output
    return claimed


def test_requeue_resume_makes_a_retry_due_now_with_a_new_budget(
    initialised: Path, clock: FakeClock
) -> None:
    item = released(initialised, clock, with_session=True)
    clock.advance(5)
    result = wrighty("requeue", str(item.id), "--resume", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(wrighty("show", str(item.id), "--json").stdout)
    assert (shown["state"], shown["reason_code"]) == ("retry-scheduled", "operator-resume")
    assert shown["not_before"] == shown["queued_at"] == "2026-11-30T09:00:05.000Z"
    assert shown["crash_retries"] == 0
    assert "sess-1" in shown["events"][-1]["reason"]
    # the retry is due: the command just run is not offered again
    text = wrighty("show", str(item.id)).stdout
    assert "Next:" in text
    assert f"wrighty requeue {item.id} --resume" not in text
    clock.advance(1)
    assert f"wrighty requeue {item.id} --resume" not in wrighty("show", str(item.id)).stdout
    store = SqliteStore.open(initialised / ".wrighty" / "wrighty.db")
    terms = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)
    elsewhere = store.acquire(ClaimRequest("w-b", "inst-b", terms, "claude"), now=clock())
    here = store.acquire(ClaimRequest("w-a", "inst-a", terms, "claude"), now=clock())
    store.close()
    assert elsewhere is None  # the session lives on inst-a: only its workers may resume it
    assert here is not None
    assert here.item.id == item.id


def test_requeue_fresh_queues_the_item_for_any_worker(initialised: Path, clock: FakeClock) -> None:
    item = released(initialised, clock, with_session=True)
    result = wrighty("requeue", str(item.id), "--fresh")
    assert result.exit_code == 0, result.output
    shown = json.loads(wrighty("show", str(item.id), "--json").stdout)
    assert (shown["state"], shown["reason_code"]) == ("queued", "operator-requeue")
    store = SqliteStore.open(initialised / ".wrighty" / "wrighty.db")
    terms = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)
    taken = store.acquire(ClaimRequest("w-b", "inst-b", terms, "claude"), now=clock())
    store.close()
    assert taken is not None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "say how item 1 starts again"),
        (["--resume", "--fresh"], "say how item 1 starts again"),
        (
            ["--resume"],
            "no recorded session to resume; start over with `wrighty requeue 1 --fresh`",
        ),
    ],
)
def test_requeue_refuses_bad_requests_and_changes_nothing(
    initialised: Path, clock: FakeClock, args: list[str], message: str
) -> None:
    released(initialised, clock, with_session=False)
    before = snapshot(initialised)
    result = wrighty("requeue", "1", *args)
    assert result.exit_code == 2
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert snapshot(initialised) == before


def test_requeue_refuses_an_item_that_is_not_waiting_for_a_person(
    initialised: Path, clock: FakeClock
) -> None:
    claimed = claim_one(initialised, clock, with_session=True)
    result = wrighty("requeue", str(claimed.id), "--fresh")
    assert result.exit_code == 2
    assert "is running; requeue takes items that are needs-attention or retry-scheduled" in (
        result.output
    )
