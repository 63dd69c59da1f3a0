"""A lease's arithmetic: whether it has expired, and the lease guard's
(docs/claims.md#the-lease-guard): when a worker that could not renew starts stopping its agent,
and how soon its heartbeat must come. Apart from claims.py, so that what reads a lease (`show`,
the board, the config's check of the heartbeat, which every command runs) loads no claim.
"""

from __future__ import annotations

from datetime import datetime


def lease_expired(lease_expires_at: datetime | None, now: datetime) -> bool:
    """Expired strictly before ``now``: a lease that ends exactly now is still valid."""
    return lease_expires_at is not None and lease_expires_at < now


# The lease guard (docs/claims.md#the-lease-guard): a worker that could not renew starts
# stopping its agent this long before the lease ends by the worker's own monotonic clock: a
# quarter of the lease, at most 10 s. Half of it is the SIGTERM grace, then SIGKILL.
STOP_MARGIN_FRACTION = 0.25
STOP_MARGIN_MAX_SECONDS = 10.0


def stop_margin(lease_seconds: float) -> float:
    """How long before a lease ends its worker starts stopping the agent, if it could not
    renew: a quarter of the lease, at most STOP_MARGIN_MAX_SECONDS."""
    return min(STOP_MARGIN_MAX_SECONDS, lease_seconds * STOP_MARGIN_FRACTION)


def heartbeat_limit(lease_seconds: float) -> float:
    """The heartbeat must come sooner than this, so that a renewal lands before the lease
    guard's moment: the lease less the guard's margin."""
    return lease_seconds - stop_margin(lease_seconds)


def until_beat(interval: float, clock: float) -> float:
    """Seconds from ``clock`` (a monotonic reading) to the next heartbeat of a grid every
    ``interval`` seconds: the claims of one worker that wait for it renew together, in one
    transaction (docs/scale.md)."""
    return interval - clock % interval
