"""An item in review, as the commands see it (nothing produces the state yet: the test
settles a claimed item to it through the store, as a worker will)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import wrighty
from tests.cli.test_claims_cli import claim_one
from tests.conftest import FakeClock
from wrighty.domain.claims import Settlement, settle
from wrighty.domain.model import RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.store.sqlite import SqliteStore


def in_review(project: Path, clock: FakeClock) -> int:
    claimed = claim_one(project, clock, with_session=True)
    store = SqliteStore.open(project / ".wrighty" / "wrighty.db")
    end = RunEnd(clock(), OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, exit_code=0)
    plan = Settlement(ItemState.REVIEW, process_started=True, run_end=end)
    assert store.write_transition(settle(claimed, plan, at=clock()))
    store.close()
    return claimed.id


def test_an_item_in_review_is_listed_counted_not_editable_and_cancellable(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = in_review(initialised, clock)
    listed = json.loads(wrighty("list", "--state", "review", "--json").stdout)
    assert [(i["id"], i["state"]) for i in listed] == [(item_id, "review")]
    assert json.loads(wrighty("list", "--state", "queued", "--json").stdout) == []
    counts = json.loads(wrighty("status", "--json", "--min-workers", "0").stdout)["counts"]
    assert (counts["review"], counts["running"]) == (1, 0)
    shown_text = wrighty("show", str(item_id))
    assert shown_text.exit_code == 0, shown_text.output
    assert "review" in shown_text.stdout
    listed_text = wrighty("list", "--state", "review")
    assert listed_text.exit_code == 0, listed_text.output
    assert "review" in listed_text.stdout
    refused = wrighty("edit", str(item_id), "--priority", "0")
    assert refused.exit_code == 2
    assert f"item {item_id} is review: it waits for review as it was verified" in refused.output
    cancelled = wrighty("cancel", str(item_id))
    assert cancelled.exit_code == 0, cancelled.output
    shown = json.loads(wrighty("show", str(item_id), "--json").stdout)
    assert shown["state"] == "cancelled"
    assert [(e["from_state"], e["to_state"]) for e in shown["events"]][-2:] == [
        ("running", "review"),
        ("review", "cancelled"),
    ]


def test_shows_history_rows_end_where_their_text_does(initialised: Path, clock: FakeClock) -> None:
    item_id = in_review(initialised, clock)
    feedback = "Please name the function after what it returns, not how. " * 5
    assert wrighty("reject", str(item_id), "--feedback", feedback).exit_code == 0
    text = wrighty("show", str(item_id)).stdout
    history = text.split("\nHistory", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line for line in history if line != line.rstrip()] == []
    # one long reason widens its own row only
    [created] = [line for line in history if "created -> queued" in line]
    assert len(created) < 80
    assert any(len(line) > 200 for line in history)
