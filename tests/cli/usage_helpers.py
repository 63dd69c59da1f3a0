"""Runs with usage, written straight to a project's store through the store port, as a worker
records them: the agent with the run, the usage at a heartbeat (partial) and at the end."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from pathlib import Path

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import TERMS, open_store
from wrighty.domain.claims import ClaimRequest
from wrighty.domain.model import NewRun, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition
from wrighty.domain.usage import Usage
from wrighty.installation import installation_id


def create(*extra: str, title: str = "t") -> int:
    result = wrighty("create", "--title", title, "--body", "b", "--queue", "--json", *extra)
    assert result.exit_code == 0, result.output
    return int(json.loads(result.stdout)["id"])


def run(
    project: Path,
    item_id: int,
    *,
    at: datetime,
    agent: str | None,
    usage: Usage | None,
    end: ItemState | None = ItemState.RETRY_SCHEDULED,
) -> str:
    """One run of a queued (or due) item, with ``usage``: recorded at a heartbeat and, when
    the run ends (``end``: the item's state after it; None leaves the run open), with its
    end. A run that ends moves the item to ``end``; a retry is due at once, so the next call
    claims it again. Its run id."""
    store = open_store(project)
    try:
        held = store.acquire(
            ClaimRequest("w-test", installation_id(), TERMS, "claude", item_id=item_id), now=at
        )
        assert held is not None, f"item {item_id} could not be claimed"
        run_id = f"run-{item_id}-{len(store.list_runs(item_id)) + 1}"
        new = NewRun(run_id, RunKind.FRESH, "w-test", installation_id(), at, None, agent=agent)
        assert store.start_run(held.item, new) is not None
        if usage is not None:
            partial = Usage(usage.input_tokens, usage.output_tokens, models=usage.models)
            assert store.record_usage(held.item, run_id, partial)
        if end is not None:
            change = transition(
                held.item,
                end,
                at=at,
                actor="worker:w-test",
                reason_code="process-crash" if end is ItemState.RETRY_SCHEDULED else None,
                reason="seeded",
                not_before=at if end is ItemState.RETRY_SCHEDULED else None,
                run_end=RunEnd(
                    at, OutcomeClass.PROCESS_CRASH, Confidence.AUTHORITATIVE, usage=usage
                ),
            )
            assert store.write_transition(change)
        elif usage is not None:  # the run goes on: its usage as the last heartbeat read it
            assert store.record_usage(held.item, run_id, dataclasses.replace(usage, final=False))
        return run_id
    finally:
        store.close()


def configure(project: Path, **budgets: object) -> None:
    """Set ``budgets`` (the `budgets` section of wrighty.json, by its JSON keys)."""
    path = project / "wrighty.json"
    config = json.loads(path.read_text())
    config["budgets"] = budgets
    path.write_text(json.dumps(config, indent=2))
