"""The inbox's board (`wrighty inbox`): the open items in the sections a person works through,
and what each row says about its item.

The store reads the open items in one snapshot (``Store.list_open_items``); the services add
why a waiting item waits (dependencies, concurrency limits, a spent budget, an open provider
circuit); this module puts them in order. Nothing here renders: the text it makes is plain,
and the inbox neutralises control characters when it draws it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from wrighty.domain.budgets import usage_text
from wrighty.domain.leases import lease_expired
from wrighty.domain.ledger import reported
from wrighty.domain.model import Dependency, Item, Run
from wrighty.domain.outcomes import USAGE_RETRY_FRESH
from wrighty.domain.states import ItemState

if TYPE_CHECKING:  # a board with no landing item loads no landing module
    from wrighty.domain.landing import Landing

# How many open items a refresh reads at most; the rest are counted, not listed.
BOARD_LIMIT = 2000


@dataclass(frozen=True)
class OpenItem:
    """An item that is not finished, as one board read sees it."""

    item: Item
    # When it entered its state: its latest move's event (an edit is not a move); None when
    # the history has none (it cannot be, but a board must not fail on it).
    since: datetime | None
    runs: int  # how many runs it has had
    last_run: Run | None  # its latest run (the open one, while it runs)
    labels: tuple[str, ...] = ()  # by name
    after: tuple[Dependency, ...] = ()  # the items it comes after, with their states
    # An item in landing's landing, read in the same snapshot (None: another state).
    landing: Landing | None = None


class Section(StrEnum):
    """Where a row stands on the board, in the order the board shows them."""

    ATTENTION = "needs-attention"
    REVIEW = "review"  # ready for review: a verified success waiting for a person
    LANDING = "landing"  # accepted: being brought up to date, checked and integrated
    RETRY = "retry-scheduled"
    RUNNING = "running"
    HELD = "held"  # waiting, but something holds it: a dependency, a limit, a budget, a circuit
    WAITING = "waiting"  # queued (or todo) with nothing holding it


class AttentionOrder(StrEnum):
    """How the needs-attention section is sorted (the inbox's `s` key turns it)."""

    REASON = "reason"  # grouped by reason code, the longest waiting first in each
    AGE = "age"  # the longest waiting first


@dataclass(frozen=True)
class Row:
    section: Section
    entry: OpenItem
    why: str  # one plain line: the reason, the retry's policy, the worker, what holds it

    @property
    def item(self) -> Item:
        return self.entry.item


# Which retry policy (or who) scheduled a retry, by the reason code it carries.
_RETRY_BY: Mapping[str, str] = {
    "process-crash": "processCrash",
    "rate-limited": "usageFailure",
    "provider-unavailable": "usageFailure",
    USAGE_RETRY_FRESH: "usageFailure",
    "operator-resume": "operator",
    "worker-stopped": "worker stopped",
    "worker-lost": "reaper",
}


def retry_policy(reason_code: str | None) -> str:
    """The policy (or actor) that scheduled a retry with this reason code."""
    if reason_code is None:
        return "unknown"
    return _RETRY_BY.get(reason_code, reason_code)


def section_of(item: Item, held: str | None) -> Section:
    if item.state is ItemState.NEEDS_ATTENTION:
        return Section.ATTENTION
    if item.state is ItemState.REVIEW:
        return Section.REVIEW
    if item.state is ItemState.LANDING:
        return Section.LANDING
    if item.state is ItemState.RUNNING:
        return Section.RUNNING
    if held is not None:
        return Section.HELD
    if item.state is ItemState.RETRY_SCHEDULED:
        return Section.RETRY
    return Section.WAITING


def _why(entry: OpenItem, section: Section, held: str | None, now: datetime) -> str:
    item = entry.item
    if section is Section.HELD and held is not None:
        return held
    if section is Section.REVIEW:
        return "ready for review: verified, waiting for a person"
    if section is Section.LANDING:
        return landing_words(entry, now)
    if section is Section.ATTENTION:
        return f"{item.reason_code or 'unknown'}: {item.reason or ''}".rstrip(": ")
    if section is Section.RETRY:
        return f"{retry_policy(item.reason_code)}: {item.reason or ''}".rstrip(": ")
    if section is Section.RUNNING:
        worker = f"on {item.claimed_by or 'an unknown worker'}"
        if lease_expired(item.lease_expires_at, now):
            return f"lease expired: {worker}, which stopped renewing it (release or reap)"
        run = entry.last_run  # the open run, while it runs
        if run is not None and run.ended_at is None and reported(run.usage):
            return f"{worker}; {usage_text(run.usage)}"
        return worker
    return "to do: `wrighty queue` makes it claimable" if item.state is ItemState.TODO else ""


def landing_words(entry: OpenItem, now: datetime) -> str:
    """Where a landing item's landing is (`domain/landing.where`)."""
    if entry.landing is None:  # a row written by hand, or a landing that did not read
        return "accepted: landing"
    from wrighty.domain.landing import where

    item = entry.item
    words = where(entry.landing, item)
    if item.claimed_by is not None and lease_expired(item.lease_expires_at, now):
        return f"{words}; its lander stopped renewing its claim (the next lander goes on)"
    return words


def board_rows(
    entries: Iterable[OpenItem],
    held: Mapping[int, str],
    *,
    now: datetime,
    order: AttentionOrder = AttentionOrder.REASON,
) -> list[Row]:
    """The rows of the board, section by section. ``held``: why each waiting item that is held
    waits, by id (a retry that is held shows among the held, with its due time)."""
    rows = []
    for entry in entries:
        why = held.get(entry.item.id)
        section = section_of(entry.item, why)
        rows.append(Row(section, entry, _why(entry, section, why, now)))
    return sorted(rows, key=lambda row: _sort_key(row, order))


_SECTION_RANK = {section: rank for rank, section in enumerate(Section)}


def _when(moment: datetime | None) -> tuple[bool, datetime | None]:
    """A time to sort by; a missing one last."""
    return (moment is None, moment)


def _sort_key(row: Row, order: AttentionOrder) -> tuple[object, ...]:
    item, rank = row.item, _SECTION_RANK[row.section]
    if row.section is Section.ATTENTION:
        group = item.reason_code or "" if order is AttentionOrder.REASON else ""
        return (rank, group, _when(row.entry.since), item.id)
    if row.section is Section.REVIEW:  # the longest waiting first
        return (rank, _when(row.entry.since), item.id)
    if row.section is Section.LANDING:  # in acceptance order: each target's line as it goes
        landing = row.entry.landing
        return (rank, landing is None, landing.seq if landing else 0, item.id)
    if row.section is Section.RETRY:
        return (rank, _when(item.not_before), item.id)
    if row.section is Section.RUNNING:
        return (rank, _when(item.claimed_at), item.id)
    if row.section is Section.HELD:
        return (rank, item.priority, item.id)
    # Waiting: in claim order (priority, a queued item before a todo one, queue time).
    return (rank, item.priority, item.state is ItemState.TODO, _when(item.queued_at), item.id)


def row_matches(row: Row, text: str) -> bool:
    """Whether a board row is one a search for ``text`` finds: in its id, title or why, case
    folded (the console's text filter, the inbox's `/`)."""
    return text.casefold() in f"{row.item.id} {row.item.title} {row.why}".casefold()


def section_counts(rows: Iterable[Row]) -> dict[Section, int]:
    """How many rows each section has (every section present, zero included)."""
    counts = dict.fromkeys(Section, 0)
    for row in rows:
        counts[row.section] += 1
    return counts


def age(seconds: float) -> str:
    """``45s``, ``12m``, ``3h``, ``2d``: the largest whole unit."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def since_text(moment: datetime | None, now: datetime) -> str:
    return "-" if moment is None else age((now - moment).total_seconds())


def when_cell(row: Row, now: datetime) -> str:
    """A row's WHEN: how long it has waited (needs a person, waits), until its retry is due,
    or how long it has run."""
    item = row.item
    if row.section is Section.RETRY or (
        row.section is Section.HELD and item.state is ItemState.RETRY_SCHEDULED
    ):
        if item.not_before is None:
            return "-"
        left = (item.not_before - now).total_seconds()
        return f"in {age(left)}" if left > 0 else "due"
    if row.section is Section.RUNNING:
        return since_text(item.claimed_at, now)
    return since_text(row.entry.since, now)
