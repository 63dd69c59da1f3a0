"""`wrighty worker start --max-items N` counts items, not runs (docs/worker.md#the-claim-loop):
an item's fix turn (or retry) is the same item, so N items are carried through their retries
and the worker then exits; on both stores, with real git, checks and worker processes."""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_review_processes import AGENT
from tests.integration.test_work_product_processes import make_project
from wrighty.domain.states import ItemState

# Fails the first time it runs on an agent's answer, passes after: every item needs one fix
# turn. The base (no answer yet) passes, so the failure is the agent's to fix.
ONCE = {
    "checks": [
        {
            "name": "twice",
            "argv": ["sh", "-c", "test ! -f answer.txt || test -f ran || { touch ran; exit 1; }"],
        }
    ]
}


def test_max_items_counts_each_item_once_through_its_fix_turn(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(tmp_path / "p", store_url, agent=AGENT, verify=ONCE)
    items = [project.plant("Write the answer.", title=f"Answer {n}") for n in range(3)]

    finished = project.worker("--max-items", "2", "--idle-timeout", "5m")

    assert finished.returncode == 0, finished.stderr
    claims = [event["item_id"] for event in finished.named("claimed")]
    assert claims == [items[0], items[0], items[1], items[1]]  # a fix turn after each first run
    assert [project.get(item).state for item in items] == [
        ItemState.DONE, ItemState.DONE, ItemState.QUEUED]  # fmt: skip
    [stopping] = finished.named("stopping")
    assert stopping["processed"] == 2
