"""The records of notifications (docs/notifications.md) that several rules pass around: a
notice as a sink gets it (and as a change carries it, wrighty/domain/model.py), a notice as
the outbox holds it with its delivery so far, one delivery attempt's result, and the outbox's
figures that `wrighty status` weighs (wrighty/domain/health.py). Pure. Making notices and
deciding their delivery: wrighty/domain/notices.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Notice:
    id: str  # the dedupe key, stable across redeliveries
    event: str  # the most specific of its events
    events: tuple[str, ...]  # every event it counts as (a sink's filter matches any)
    at: datetime
    item_id: int | None
    reason_code: str | None
    payload: dict[str, Any]  # the full JSON a sink gets; already redacted and bounded

    def matches(self, events: tuple[str, ...], reason_codes: tuple[str, ...]) -> bool:
        """Whether a sink with these ``events`` and ``reasonCodes`` gets it: any of its events,
        and (for an item's notice) one of the reason codes; a notice without an item (a
        circuit opening) always passes the reason-code filter."""
        if not set(self.events) & set(events):
            return False
        return not reason_codes or self.item_id is None or self.reason_code in reason_codes

    def text(self) -> tuple[str, str]:
        """A title and a short body for chat sinks."""
        payload = self.payload
        item = payload.get("item") or {}
        head = f"wrighty: {self.event}"
        if item:
            head += f": item {item.get('id')} {item.get('title', '')}".rstrip()
        elif payload.get("circuit"):
            head += f": {payload['circuit']} until {payload.get('until')}"
        lines = [
            part
            for part in (
                payload.get("reason"),
                _failing_line(payload.get("failing_checks")),
                f"branch {payload['branch']}" if payload.get("branch") else None,
                _stat_lines(payload.get("diff_stat")),
                _checks_line(payload.get("checks")),
                # (a review's next commands say it, among the others)
                f"next: {payload['next_action']}"
                if payload.get("next_action") and not payload.get("next_actions")
                else None,
                _actions_lines(payload.get("next_actions")),
                f"open: {payload['link']}" if payload.get("link") else None,
                _waiting_lines(payload.get("waiting")),
                f"on {payload['installation_id']}"
                + (f" by {payload['worker_id']}" if payload.get("worker_id") else "")
                + f" at {payload['at']}",
            )
            if part
        ]
        return head, "\n".join(lines)


def _waiting_lines(waiting: object) -> str | None:
    """A digest's items that wait for a person, a line each (with its link, when known)."""
    if not isinstance(waiting, list) or not waiting:
        return None
    return "\n".join(
        f"item {entry.get('id')} ({entry.get('state')}) {entry.get('title', '')}"
        + (f" {entry['link']}" if entry.get("link") else "")
        for entry in waiting
        if isinstance(entry, dict)
    )


def _failing_line(failing: object) -> str | None:
    """The failing checks a notice names, on one line (None: it names none)."""
    if not isinstance(failing, list) or not failing:
        return None
    named = (f"{check.get('name')} ({check.get('ending')})" for check in failing
             if isinstance(check, dict))  # fmt: skip
    return "failing checks: " + ", ".join(named)


def _stat_lines(stat: object) -> str | None:
    """A review's diff stat as chat lines (None: it has none)."""
    if not isinstance(stat, str):
        return None
    return "change:\n" + stat if stat else "change: none against its base"


def _checks_line(checks: object) -> str | None:
    """A review's checks, how each ended and how long it took, on one line (None: the notice
    carries no checks)."""
    if not isinstance(checks, list):
        return None
    if not checks:
        return "checks: none ran"
    shown = (
        f"{check.get('name')} {'passed' if check.get('passed') else check.get('ending')} "
        f"in {check.get('duration_seconds', 0):.1f} s"
        for check in checks
        if isinstance(check, dict)
    )
    return "checks: " + ", ".join(shown)


def _actions_lines(actions: object) -> str | None:
    """A review's next commands, one a line, each after what it does."""
    if not isinstance(actions, list) or not actions:
        return None
    return "\n".join(
        f"{action.get('purpose')}: {action.get('command')}"
        for action in actions
        if isinstance(action, dict)
    )


@dataclass(frozen=True)
class StoredNotice:
    """A notice as the outbox holds it, with its delivery so far."""

    notice: Notice
    state: str  # pending, delivered, given-up
    attempts: int
    next_attempt_at: datetime
    delivered_to: tuple[str, ...]  # the sinks that have it (their ids)
    last_error: str | None
    claimed_by: str | None
    claim_expires_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class OutboxFigures:
    pending: int
    oldest_pending_at: datetime | None
    given_up: int


@dataclass(frozen=True)
class Delivered:
    """How one delivery attempt of a claimed notice ended, to be written under its claim."""

    state: str
    attempts: int
    next_attempt_at: datetime
    delivered_to: tuple[str, ...]
    last_error: str | None
    finished_at: datetime | None
