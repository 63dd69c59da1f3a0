"""The fleet's rows and the domain (the other half of the boundary rows.py is): the worker
registry, provider circuits, the notification outbox and the sources' state, each value
checked as it is read (`Fields`). Their domain types are loaded by the mappers themselves, by
the commands that show or keep them, not by every store."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from wrighty.domain.conversation import LOGIN, REPO
from wrighty.errors import UnreadableError
from wrighty.store.fields import (
    MAX_CLOCK_OFFSET_SECONDS,
    MAX_STORED_COUNT,
    Fields,
    aggregate,
    to_db_time,
)

# Workers, circuits and the outbox are read by the commands that show them; their mappers
# import them, so that a read of items (`wrighty list`) loads none of them.
if TYPE_CHECKING:
    from wrighty.domain.circuits import Circuit
    from wrighty.domain.conversation import AnswerRecord, TrackerItem
    from wrighty.domain.health import WorkerRow
    from wrighty.domain.outbox import Delivered, Notice, OutboxFigures, StoredNotice
    from wrighty.domain.sources import SourceState


# -- the worker registry ----------------------------------------------------------------------


def worker_params(row: WorkerRow) -> dict[str, Any]:
    return {
        "worker_id": row.worker_id,
        "label": row.label,
        "installation_id": row.installation_id,
        "pid": row.pid,
        "process_started_at": row.process_started_at,
        "version": row.version,
        "state": row.state.value,
        "items": ",".join(str(item) for item in row.items),
        "started_at": to_db_time(row.started_at),
        "last_heartbeat_at": to_db_time(row.last_heartbeat_at),
        "agent": row.agent,
        "clock_offset_seconds": row.clock_offset_seconds,
        "held_reason": row.held_reason,
        "waiting_for": row.waiting_for,
    }


def worker_from_row(row: Any) -> WorkerRow:
    from wrighty.domain.health import WorkerRow, WorkerState

    read = Fields(row, "worker", row["worker_id"])
    return WorkerRow(
        worker_id=read.text("worker_id"),
        label=read.optional_text("label"),
        installation_id=read.text("installation_id"),
        pid=read.integer("pid"),
        process_started_at=read.number("process_started_at", float(MAX_STORED_COUNT)) or 0.0,
        version=read.text("version"),
        state=read.choice("state", WorkerState, WorkerState.IDLE),
        items=tuple(int(item) for item in read.text("items").split(",") if item.isdecimal()),
        started_at=read.required_time("started_at"),
        last_heartbeat_at=read.required_time("last_heartbeat_at"),
        agent=read.optional_text("agent"),
        clock_offset_seconds=read.number(
            "clock_offset_seconds", MAX_CLOCK_OFFSET_SECONDS, low=-MAX_CLOCK_OFFSET_SECONDS
        ),
        held_reason=read.optional_text("held_reason"),
        waiting_for=read.optional_text("waiting_for"),
    )


# -- provider circuits ------------------------------------------------------------------------


def circuit_params(circuit: Circuit) -> dict[str, Any]:
    """The stored fields of ``circuit``; its version is the write's to set."""
    return {
        "name": circuit.name,
        "opened_at": to_db_time(circuit.opened_at),
        "until": to_db_time(circuit.until),
        "reason": circuit.reason,
        "failures": circuit.failures,
        "probe_by": circuit.probe_by,
        "probe_item": circuit.probe_item,
        "probe_expires_at": to_db_time(circuit.probe_expires_at),
    }


def circuit_from_row(row: Any, salvaged: list[UnreadableError] | None = None) -> Circuit:
    from wrighty.domain.circuits import Circuit

    read = Fields(row, "circuit", row["name"], salvaged=salvaged)
    return Circuit(
        name=read.text("name"),
        version=read.integer("version", 1, MAX_STORED_COUNT, stand_in=1),
        opened_at=read.time("opened_at"),
        until=read.time("until"),
        reason=read.optional_text("reason"),
        failures=read.integer("failures"),
        probe_by=read.optional_text("probe_by"),
        probe_item=read.optional_integer("probe_item"),
        probe_expires_at=read.time("probe_expires_at"),
        probe_running=bool(row["probe_running"]),
    )


# -- the notification outbox ------------------------------------------------------------------


def notice_params(notice: Notice) -> dict[str, Any]:
    return {
        "id": notice.id,
        "created_at": to_db_time(notice.at),
        "event": notice.event,
        "events": json.dumps(list(notice.events)),
        "item_id": notice.item_id,
        "reason_code": notice.reason_code,
        "payload": json.dumps(notice.payload, sort_keys=False),
    }


def finish_params(
    notice_id: str, deliverer: str | None, claimed_until: str | None, outcome: Delivered
) -> dict[str, Any]:
    """An attempt's outcome, to be written under the claim (``deliverer`` until
    ``claimed_until``, as stored) that made it."""
    return {
        "id": notice_id,
        "deliverer": deliverer,
        "claimed_until": claimed_until,
        "state": outcome.state,
        "attempts": outcome.attempts,
        "next_attempt_at": to_db_time(outcome.next_attempt_at),
        "delivered_to": json.dumps(list(outcome.delivered_to)),
        "last_error": outcome.last_error,
        "finished_at": to_db_time(outcome.finished_at),
    }


def stored_notice_from_row(row: Any, salvaged: list[UnreadableError] | None = None) -> StoredNotice:
    from wrighty.domain.outbox import Notice, StoredNotice

    item_id = row["item_id"]
    read = Fields(row, "notice", row["id"], item_id=item_id, salvaged=salvaged)
    notice = Notice(
        id=read.text("id"),
        event=read.text("event"),
        events=tuple(str(event) for event in read.json_list("events")),
        at=read.required_time("created_at"),
        item_id=read.optional_integer("item_id"),
        reason_code=read.code("reason_code"),
        payload=read.json_object("payload"),
    )
    return StoredNotice(
        notice=notice,
        state=read.text("state"),
        attempts=read.integer("attempts"),
        next_attempt_at=read.required_time("next_attempt_at"),
        delivered_to=tuple(str(sink) for sink in read.json_list("delivered_to")),
        last_error=read.optional_text("last_error"),
        claimed_by=read.optional_text("claimed_by"),
        claim_expires_at=read.time("claim_expires_at"),
        finished_at=read.time("finished_at"),
    )


def outbox_figures_from_row(row: Any) -> OutboxFigures:
    from wrighty.domain.outbox import OutboxFigures

    return OutboxFigures(
        pending=row["pending"],
        oldest_pending_at=aggregate(row).time("oldest_pending_at"),
        given_up=row["given_up"],
    )


# -- the sources' state (docs/sources.md) ------------------------------------------------------


def source_params(state: SourceState) -> dict[str, Any]:
    from wrighty.domain.sources import pages_json

    return {
        "name": state.name,
        "synced_at": to_db_time(state.synced_at),
        "attempted_at": to_db_time(state.attempted_at),
        "rate_remaining": state.rate_remaining,
        "rate_reset": to_db_time(state.rate_reset),
        "last_error": state.last_error,
        "failures": state.failures,
        "pages": pages_json(state.settings, state.pages),
    }


def source_from_row(row: Any) -> SourceState:
    from wrighty.domain.sources import SourceState, pages_of

    read = Fields(row, "source", row["name"])
    settings, pages = pages_of(read.text("pages"))
    return SourceState(
        name=read.text("name"),
        synced_at=read.time("synced_at"),
        attempted_at=read.time("attempted_at"),
        rate_remaining=read.optional_integer("rate_remaining"),
        rate_reset=read.time("rate_reset"),
        last_error=read.optional_text("last_error"),
        failures=read.integer("failures", 0, MAX_STORED_COUNT),
        settings=settings,
        pages=pages,
        answers_since=read.time("answers_since"),
        answers_etag=_etag(read, "answers_etag"),
    )


def _etag(read: Fields, name: str) -> str | None:
    """An ETag as stored: printable ASCII of bounded length (it goes back into a header)."""
    value = read.optional_text(name)
    if value is not None and (len(value) > MAX_ETAG_CHARS or not _HEADER_SAFE.fullmatch(value)):
        read.refuse(name, "it is not an ETag")
        return None
    return value


# -- talking on a tracker (docs/sources.md#talking-on-the-issue) -------------------------------

MAX_ETAG_CHARS = 200
MAX_ANSWER_RESULT_CHARS = 4000
_HEADER_SAFE = re.compile(r"[\x21-\x7e ]*")
_DIGEST = re.compile(r"[0-9a-f]{32}")
MAX_GITHUB_ID = 2**53


def tracker_item_from_row(row: Any) -> TrackerItem:
    from wrighty.domain.conversation import PULL_STATES, TrackerItem

    read = Fields(row, "tracker item", row["item_id"])
    digest = read.optional_text("comment_digest")
    if digest is not None and not _DIGEST.fullmatch(digest):
        read.refuse("comment_digest", "it is not a digest")
        digest = None
    repo = read.optional_text("pull_repo")
    if repo is not None and not re.fullmatch(REPO, repo):
        read.refuse("pull_repo", "it is not a repository's owner/name")
        repo = None
    url = read.optional_text("pull_url")
    if url is not None and (len(url) > 2000 or not url.startswith(("https://", "http://"))
                            or not _HEADER_SAFE.fullmatch(url) or " " in url):  # fmt: skip
        read.refuse("pull_url", "it is not a pull request's URL")
        url = None
    state = read.optional_text("pull_state")
    if state is not None and state not in PULL_STATES:
        read.refuse("pull_state", f"it is not one of {', '.join(PULL_STATES)}")
        state = None
    return TrackerItem(
        item_id=read.integer("item_id", 1, MAX_GITHUB_ID),
        comment_id=read.optional_integer("comment_id", 1, MAX_GITHUB_ID),
        comment_digest=digest,
        pull_repo=repo,
        pull_number=read.optional_integer("pull_number", 1, MAX_GITHUB_ID),
        pull_url=url,
        pull_state=state,
        pull_etag=_etag(read, "pull_etag"),
    )


def answer_from_row(row: Any) -> AnswerRecord:
    from wrighty.domain.conversation import ACTED, ANSWERED, TAKEN, AnswerRecord

    read = Fields(row, "answer", row["comment_id"])
    author = read.text("author")
    if not re.fullmatch(LOGIN, author):
        read.refuse("author", "it is not a GitHub login")
    step = read.text("step")
    if step not in (TAKEN, ACTED, ANSWERED):
        read.refuse("step", "it is not taken, acted or answered")
    action = read.text("action")
    if not re.fullmatch(r"[a-z?][a-z0-9_-]{0,40}", action):
        read.refuse("action", "it is not an action's name")
    result = read.optional_text("result")
    if result is not None and len(result) > MAX_ANSWER_RESULT_CHARS:
        read.refuse("result", "it is longer than an answer's result")
    return AnswerRecord(
        source=read.text("source"),
        comment_id=read.integer("comment_id", 1, MAX_GITHUB_ID),
        issue=read.integer("issue", 1, MAX_GITHUB_ID),
        item_id=read.optional_integer("item_id", 1, MAX_GITHUB_ID),
        author=author,
        action=action,
        step=step,
        seen=read.optional_text("seen"),
        result=result,
    )
