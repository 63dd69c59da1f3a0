"""Items and runs as the domain holds them, for tests that need one without a store: every
field set once here, a test naming only the fields it is about (keyword overrides; a field
that does not exist is a TypeError)."""

from __future__ import annotations

from typing import Any

from tests.conftest import START
from wrighty.domain.model import Item, Run
from wrighty.domain.outcomes import RunKind
from wrighty.domain.states import ItemState


def make_item(state: ItemState = ItemState.TODO, **overrides: Any) -> Item:
    """Item 1, ``state`` (todo), made at START (tests.conftest), never claimed or queued."""
    fields: dict[str, Any] = {
        "id": 1, "title": "t", "body": "b", "agent": None, "timeout_seconds": None,
        "workspace": None, "state": state, "generation": 0, "claimed_by": None,
        "lease_expires_at": None, "queued_at": None, "not_before": None, "reason_code": None,
        "reason": None, "next_action": None, "crash_retries": 0, "requeues": 0,
        "created_at": START, "updated_at": START,
    }  # fmt: skip
    return Item(**{**fields, **overrides})


def claimed_item(state: ItemState = ItemState.RUNNING, **overrides: Any) -> Item:
    """An item as a worker holds it: running, generation 1, claimed by ``w-1``, queued at
    START; its lease, unless given, unset."""
    claim = {"generation": 1, "claimed_by": "w-1", "queued_at": START}
    return make_item(state, **{**claim, **overrides})


def make_run(**overrides: Any) -> Run:
    """Run ``r1``: item 1's first fresh run (generation 1) by worker ``w`` of installation
    ``i``, started at START and not ended, nothing known of its process or outcome."""
    fields: dict[str, Any] = {
        "run_id": "r1", "item_id": 1, "generation": 1, "attempt": 1, "kind": RunKind.FRESH,
        "worker_id": "w", "installation_id": "i", "started_at": START, "ended_at": None,
        "pid": None, "process_started_at": None, "exit_code": None, "signal": None,
        "outcome_class": None, "confidence": None, "session_id": None, "diagnostic": None,
    }  # fmt: skip
    return Run(**{**fields, **overrides})
