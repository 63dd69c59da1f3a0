"""The reaper pass: settle the claims whose lease expired (their worker stopped renewing)."""

from __future__ import annotations

from datetime import datetime

from wrighty.domain.model import Change
from wrighty.domain.notices import Source
from wrighty.store.port import Store


def reap_expired(
    store: Store,
    *,
    now: datetime,
    max_requeues: int,
    limit: int = 100,
    notify: Source | None = None,
) -> list[Change]:
    """Settle up to ``limit`` expired claims as worker-lost; the changes that landed (with
    ``notify``, each tells of itself through the outbox)."""
    landed = []
    for item in store.expired_claims(now=now, limit=limit):
        change = store.reap(item.id, now=now, max_requeues=max_requeues, notify=notify)
        if change is not None:
            landed.append(change)
    return landed
