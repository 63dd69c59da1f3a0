"""The one boundary between stored rows and the domain: every row the store reads becomes a
domain object here, each value checked as it is read (`Fields`, in fields.py), and every object
the store writes becomes its query's parameters here. This module maps items, events,
dependencies, claims, runs, sessions, checks and usage; the fleet's rows (workers, provider
circuits, the notification outbox) are mapped by fleet_rows.py, on the same `Fields`."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from wrighty.domain.model import (
    BRANCH_NAME,
    CHECK_NAME,
    COMMIT_ID,
    DEFAULT_PRIORITY,
    Dependency,
    Event,
    Item,
    NewItem,
    NewRun,
    Run,
    RunEnd,
    Session,
)
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.scheduling import PRIORITIES
from wrighty.domain.states import ItemState
from wrighty.domain.usage import LedgerEntry, Usage
from wrighty.errors import UnreadableError
from wrighty.store.fields import (
    C_INT,
    MAX_STORED_COST_USD,
    MAX_STORED_COUNT,
    STATE_NAMES,
    Fields,
    aggregate,
    shown_value,
    state_or_none,
    to_db_time,
)

# A commit's object name, as git writes it in full (SHA-1 or SHA-256).
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")

# The board, claims, checks and queue figures are read by the commands that show them; their
# mappers import them, so that a read of items (`wrighty list`) loads none of them.
if TYPE_CHECKING:
    from wrighty.domain.board import OpenItem
    from wrighty.domain.check_evidence import BaseCheck, CheckRecord
    from wrighty.domain.claims import ClaimRequest, ReapFacts, StackedOn
    from wrighty.domain.health import QueueFigures
    from wrighty.domain.landing import Landing


# -- items ------------------------------------------------------------------------------------


def new_item_params(new: NewItem, *, at: datetime) -> dict[str, Any]:
    return {
        "title": new.title,
        "body": new.body,
        "agent": new.agent,
        "timeout_seconds": new.timeout_seconds,
        "workspace": new.workspace,
        "state": new.initial_state.value,
        "queued_at": to_db_time(at) if new.initial_state is ItemState.QUEUED else None,
        "created_at": to_db_time(at),
        "max_cost_usd": new.max_cost_usd,
        "max_tokens": new.max_tokens,
        "priority": new.priority,
        "import_key": new.import_key,
        "import_fingerprint": new.import_fingerprint,
        "verify_checks": check_names_json(new.verify_checks),
    }


def check_names_json(names: tuple[str, ...] | None) -> str | None:
    """An item's chosen checks as stored: null (follow wrighty.json) or a JSON list."""
    return None if names is None else json.dumps(list(names))


def item_from_row(row: Any, salvaged: list[UnreadableError] | None = None) -> Item:
    """The item in ``row``; UnreadableError for the first value that does not read (with
    ``salvaged``, each one is noted there and a safe value stands in for it)."""
    read = Fields(row, "item", row["id"], item_id=row["id"], salvaged=salvaged)
    # Any number but NaN: the claim bounds one no clock can hold (docs/worker.md).
    timeout = read.number("timeout_seconds", math.inf, low=-math.inf)
    return Item(
        id=read.integer("id", 1),
        title=read.text("title"),
        body=read.text("body"),
        agent=read.optional_text("agent"),
        timeout_seconds=timeout,
        workspace=read.optional_text("workspace"),
        state=read.choice("state", ItemState, ItemState.NEEDS_ATTENTION),
        generation=read.integer("generation"),
        claimed_by=read.optional_text("claimed_by"),
        lease_expires_at=read.time("lease_expires_at"),
        queued_at=read.time("queued_at"),
        not_before=read.time("not_before"),
        reason_code=read.code("reason_code"),
        reason=read.optional_text("reason"),
        next_action=read.optional_text("next_action"),
        crash_retries=read.integer("crash_retries"),
        usage_retries=read.integer("usage_retries"),
        requeues=read.integer("requeues"),
        max_cost_usd=read.number("max_cost_usd", MAX_STORED_COST_USD),
        max_tokens=read.optional_integer("max_tokens"),
        priority=read.integer("priority", PRIORITIES[0], PRIORITIES[-1], DEFAULT_PRIORITY),
        import_key=read.optional_text("import_key"),
        import_fingerprint=read.optional_text("import_fingerprint"),
        verify_checks=read.check_names("verify_checks"),
        fix_turns=read.integer("fix_turns"),
        rejections=read.integer("rejections"),
        feedback=read.optional_text("feedback"),
        handoffs=read.integer("handoffs"),
        handoff_note=read.optional_text("handoff_note"),
        reviewed_commit=read.commit("reviewed_commit"),
        created_at=read.required_time("created_at"),
        updated_at=read.required_time("updated_at"),
        claimed_at=read.time("claimed_at"),
        renew_deadline=read.time("renew_deadline"),
    )


def item_mutable_params(item: Item) -> dict[str, Any]:
    return {
        "id": item.id,
        "state": item.state.value,
        "generation": item.generation,
        "claimed_by": item.claimed_by,
        "lease_expires_at": to_db_time(item.lease_expires_at),
        "queued_at": to_db_time(item.queued_at),
        "not_before": to_db_time(item.not_before),
        "reason_code": item.reason_code,
        "reason": item.reason,
        "next_action": item.next_action,
        "crash_retries": item.crash_retries,
        "usage_retries": item.usage_retries,
        "requeues": item.requeues,
        "fix_turns": item.fix_turns,
        "rejections": item.rejections,
        "feedback": item.feedback,
        "agent": item.agent,
        "handoffs": item.handoffs,
        "handoff_note": item.handoff_note,
        "reviewed_commit": item.reviewed_commit,
        "verify_checks": check_names_json(item.verify_checks),
        "max_cost_usd": item.max_cost_usd,
        "max_tokens": item.max_tokens,
        "priority": item.priority,
        "title": item.title,
        "body": item.body,
        "import_fingerprint": item.import_fingerprint,
        "updated_at": to_db_time(item.updated_at),
        "claimed_at": to_db_time(item.claimed_at),
        "renew_deadline": to_db_time(item.renew_deadline),
    }


def open_item_from_row(
    row: Any,
    runs: Mapping[str, Run | UnreadableError],
    landings: Mapping[int, Landing | UnreadableError] | None = None,
) -> OpenItem:
    """A row of select_open_items, with its latest run from ``runs`` (by id) and, for an item
    in landing, its landing from ``landings`` (by item id); a run or a landing that did not
    read makes the item's line unreadable."""
    from wrighty.domain.board import OpenItem

    last_run_id = row["last_run_id"]
    last_run = None if last_run_id is None else runs[last_run_id]
    if isinstance(last_run, UnreadableError):
        raise last_run
    landing = (landings or {}).get(int(row["id"])) if row["state"] == "landing" else None
    if isinstance(landing, UnreadableError):
        raise landing
    read = Fields(row, "item", row["id"], item_id=row["id"])
    item = item_from_row(row)
    after = sorted(
        (int(depends_on), state_or_none(state))
        for depends_on, state in read.json_list("after_json")
    )
    return OpenItem(
        item=item,
        since=read.time("since"),
        runs=int(row["run_count"]),
        last_run=last_run,
        labels=tuple(sorted(str(label) for label in read.json_list("labels_json"))),
        after=tuple(Dependency(item.id, depends_on, state) for depends_on, state in after),
        landing=landing,
    )


def event_params(event: Event) -> dict[str, Any]:
    return {
        "item_id": event.item_id,
        "at": to_db_time(event.at),
        "actor": event.actor,
        "generation": event.generation,
        "from_state": event.from_state.value if event.from_state else None,
        "to_state": event.to_state.value,
        "reason_code": event.reason_code,
        "reason": event.reason,
    }


def event_from_row(row: Any) -> Event:
    read = Fields(row, "event of item", row["item_id"], item_id=row["item_id"])
    return Event(
        item_id=row["item_id"],
        at=read.required_time("at"),
        actor=read.text("actor"),
        generation=read.integer("generation"),
        from_state=read.optional_choice("from_state", ItemState),
        to_state=read.choice("to_state", ItemState, ItemState.NEEDS_ATTENTION),
        reason_code=read.code("reason_code"),
        reason=read.optional_text("reason"),
    )


def dependency_from_row(row: Any) -> Dependency:
    return Dependency(row["item_id"], row["depends_on"], state_or_none(row["depends_on_state"]))


def labels_from_rows(rows: Iterable[Any]) -> dict[int, tuple[str, ...]]:
    """Each item's labels, in the order of the rows."""
    found: dict[int, list[str]] = {}
    for row in rows:
        found.setdefault(row["item_id"], []).append(row["label"])
    return {key: tuple(labels) for key, labels in found.items()}


def queue_figures_from_rows(
    counted: Iterable[Any], row: Any, by_agent: Iterable[Any]
) -> QueueFigures:
    """The queue's figures from its three reads: the items by state, the figures, and the
    items waiting by agent."""
    from wrighty.domain.health import QueueFigures, VerificationFigures

    counts = {state: 0 for state in ItemState}
    counts.update({ItemState(r["state"]): r["n"] for r in counted if r["state"] in STATE_NAMES})
    figures = aggregate(row)
    return QueueFigures(
        counts=counts,
        waiting=row["waiting"],
        oldest_queued_at=figures.time("oldest_queued_at"),
        unknown_queue_wait=row["unknown_queue_wait"],
        expired_leases=row["expired_leases"],
        retry_next_due=figures.time("retry_next_due"),
        oldest_review_at=figures.time("oldest_review_at"),
        oldest_landing_at=figures.time("oldest_landing_at"),
        waiting_on_dependencies=row["waiting_on_dependencies"],
        blocked=row["blocked"],
        waiting_by_agent={r["agent"]: r["n"] for r in by_agent},
        verification=VerificationFigures(
            checks_passed=row["checks_passed"],
            checks_failed=row["checks"] - row["checks_passed"] - row["checks_not_started"],
            checks_not_started=row["checks_not_started"],
            fix_turns=row["fix_turns"],
        ),
    )


# -- claims, runs and sessions ----------------------------------------------------------------


def claim_params(request: ClaimRequest, *, now: datetime) -> dict[str, Any]:
    """What select_next_claimable is asked: the claimant, and the limits it claims under."""
    limits = request.limits
    return {
        "now": to_db_time(now),
        "installation_id": request.installation_id,
        "item_id": request.item_id,
        "agent": request.agent,
        "default_agent": request.default_agent,
        "agent_limits": json.dumps(dict(limits.agents)) if limits.agents else None,
        "label_limits": json.dumps(dict(limits.labels)) if limits.labels else None,
        "stack": request.stack,
    }


def claim_guard(claimed: Item) -> dict[str, Any]:
    """The claim a write lands under: the item, its generation and its holder."""
    return {
        "item_id": claimed.id,
        "generation": claimed.generation,
        "claimed_by": claimed.claimed_by,
    }


def lease_from_row(row: Any, item_id: int) -> datetime | None:
    """The lease end select_claim read."""
    return Fields(row, "item", item_id, item_id=item_id).time("lease_expires_at")


def reap_facts_from_row(row: Any) -> ReapFacts:
    from wrighty.domain.claims import ReapFacts

    return ReapFacts(
        run_recorded=row["runs_recorded"] > 0,
        has_resume_address=row["session_id"] is not None,
        claimed_from=ItemState(row["claimed_from"] or ItemState.QUEUED),
    )


def new_run_params(claimed: Item, run: NewRun) -> dict[str, Any]:
    return {
        **claim_guard(claimed),
        "run_id": run.run_id,
        "kind": run.kind.value,
        "worker_id": run.worker_id,
        "installation_id": run.installation_id,
        "started_at": to_db_time(run.started_at),
        "session_id": run.session_id,
        "claim_token": run.claim_token,
        "agent": run.agent,
    }


def run_end_params(end: RunEnd, item_id: int, generation: int) -> dict[str, Any]:
    return {
        "item_id": item_id,
        "generation": generation,
        "ended_at": to_db_time(end.ended_at),
        "outcome_class": end.outcome_class.value,
        "confidence": end.confidence.value,
        "exit_code": end.exit_code,
        "signal": end.signal,
        "diagnostic": end.diagnostic,
        **usage_params(end.usage),
    }


def run_from_row(row: Any) -> Run:
    read = Fields(row, "run", row["run_id"], item_id=row["item_id"])
    return Run(
        run_id=read.text("run_id"),
        item_id=read.integer("item_id", 1),
        generation=read.integer("generation"),
        attempt=read.integer("attempt"),
        kind=read.choice("kind", RunKind, RunKind.FRESH),
        worker_id=read.text("worker_id"),
        installation_id=read.text("installation_id"),
        started_at=read.required_time("started_at"),
        ended_at=read.time("ended_at"),
        pid=read.optional_integer("pid"),
        process_started_at=read.number("process_started_at", float(MAX_STORED_COUNT)),
        exit_code=row["exit_code"],
        signal=row["signal"],
        outcome_class=read.optional_choice("outcome_class", OutcomeClass),
        confidence=read.optional_choice("confidence", Confidence),
        session_id=read.optional_text("session_id"),
        diagnostic=read.optional_text("diagnostic"),
        agent_report=read.optional_text("agent_report"),
        agent_reason=read.optional_text("agent_reason"),
        agent=read.optional_text("agent"),
        usage=usage_from_row(row, read),
        agent_resets_at=read.time("agent_resets_at"),
    )


def session_params(claimed: Item, session: Session, *, at: datetime) -> dict[str, Any]:
    return {
        **claim_guard(claimed),
        "vendor": session.vendor,
        "session_id": session.session_id,
        "workspace": session.workspace,
        "installation_id": session.installation_id,
        "branch": session.branch,
        "base_commit": session.base_commit,
        "updated_at": to_db_time(at),
    }


def stacked_on_from_row(row: Any) -> StackedOn | None:
    """The item the claimed item stacks on and its branch, as select_next_claimable read them
    (completion.stack; None: it starts from its base)."""
    from wrighty.domain.claims import StackedOn

    if row["stacked_on"] is None:
        return None
    item_id = row["id"]
    read = Fields(row, "item", item_id, item_id=item_id)
    pair = json.loads(row["stacked_on"])
    ok = isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int)
    branch = pair[1] if ok else None
    if not isinstance(branch, str) or BRANCH_NAME.fullmatch(branch) is None or ".." in branch:
        read.refuse("stacked_on", f"{shown_value(row['stacked_on'])} is not an item's branch")
    return StackedOn(int(pair[0]), str(branch))


def claimed_session(row: Any) -> Session | None:
    """The session columns that the claim queries join to the item, if it has one."""
    return session_from_row(row, "session_") if row["session_vendor"] is not None else None


def session_from_row(row: Any, prefix: str = "") -> Session:
    item_id = row[f"{prefix}item_id"]
    read = Fields(row, "session", item_id, item_id=item_id)
    branch = read.optional_text(f"{prefix}branch")
    if branch is not None and (BRANCH_NAME.fullmatch(branch) is None or ".." in branch):
        read.refuse(f"{prefix}branch", f"{shown_value(branch)} is not a branch wrighty makes")
    base = read.optional_text(f"{prefix}base_commit")
    if base is not None and COMMIT_ID.fullmatch(base) is None:
        read.refuse(f"{prefix}base_commit", f"{shown_value(base)} is not a commit id")
    return Session(
        item_id=item_id,
        vendor=row[f"{prefix}vendor"],
        session_id=row[f"{prefix}session_id"],
        workspace=row[f"{prefix}workspace"],
        installation_id=row[f"{prefix}installation_id"],
        branch=branch,
        base_commit=base,
    )


def wake_params(item: Item) -> dict[str, Any]:
    """What a wake-up says about the item (for a person watching; listeners only wake)."""
    not_before = to_db_time(item.not_before)
    return {"item_id": item.id, "state": item.state.value, "not_before": not_before}


# -- verification -----------------------------------------------------------------------------


def check_params(item: Item, record: CheckRecord) -> dict[str, Any]:
    """One check's evidence, to be written under ``item`` as the caller read it (its state,
    generation and owner are the write's guard)."""
    evidence = record.evidence
    return {
        "item_id": item.id,
        "state": item.state.value,
        "generation": item.generation,
        "claimed_by": item.claimed_by,
        "verification_id": record.verification_id,
        "run_id": record.run_id,
        "position": record.position,
        "actor": record.actor,
        "started_at": to_db_time(record.started_at),
        "name": evidence.name,
        "argv": json.dumps(list(evidence.argv)),
        "exit_code": evidence.exit_code,
        "signal": evidence.signal,
        "timed_out": evidence.timed_out,
        "start_failure": evidence.start_failure,
        "duration_seconds": evidence.duration_seconds,
        "output_tail": evidence.output_tail,
        "fails_on_base": evidence.fails_on_base,
    }


def check_from_row(row: Any) -> CheckRecord:
    """A stored check's evidence; UnreadableError for a value that does not read, or for a
    row that breaks CheckEvidence's rule (one that did not start has no exit code or signal;
    one that started has exactly one of them)."""
    from wrighty.domain.check_evidence import CheckEvidence, CheckRecord

    key = f"{row['verification_id']}/{row['position']}"
    read = Fields(row, "check", key, item_id=row["item_id"])
    name = read.text("name")
    if CHECK_NAME.fullmatch(name) is None:
        read.refuse("name", f"{shown_value(name)} is not a check name")
    argv = read.json_list("argv")
    if not all(isinstance(argument, str) for argument in argv):
        read.refuse("argv", f"{shown_value(row['argv'])} is not a JSON list of text")
    exit_code = read.optional_integer("exit_code", -C_INT - 1, C_INT)
    signal = read.optional_integer("signal", 1, C_INT)
    start_failure = read.optional_text("start_failure")
    if start_failure is not None and (exit_code, signal) != (None, None):
        read.refuse("start_failure", "a check that did not start has no exit code or signal")
    if start_failure is None and (exit_code is None) == (signal is None):
        read.refuse("exit_code", "a check that ran has exactly one of exit code and signal")
    fails_on_base = read.flag("fails_on_base")
    if fails_on_base and (start_failure is not None or exit_code == 0):
        read.refuse("fails_on_base", "only a check that ran and failed can fail on the base too")
    evidence = CheckEvidence(
        name=name,
        argv=tuple(argv),
        duration_seconds=read.number("duration_seconds", float(MAX_STORED_COUNT)) or 0.0,
        output_tail=read.text("output_tail"),
        exit_code=exit_code,
        signal=signal,
        timed_out=read.flag("timed_out"),
        start_failure=start_failure,
        fails_on_base=fails_on_base,
    )
    return CheckRecord(
        item_id=read.integer("item_id", 1),
        verification_id=read.text("verification_id"),
        run_id=read.optional_text("run_id"),
        position=read.integer("position"),
        actor=read.text("actor"),
        started_at=read.required_time("started_at"),
        evidence=evidence,
    )


# -- the usage ledger -------------------------------------------------------------------------


def usage_params(usage: Usage | None) -> dict[str, Any]:
    """The ledger columns of a run (``has_usage`` False: leave those recorded)."""
    known = usage or Usage()
    return {
        "has_usage": usage is not None,
        "usage": None if usage is None else ("final" if usage.final else "partial"),
        "input_tokens": known.input_tokens,
        "output_tokens": known.output_tokens,
        "cache_read_tokens": known.cache_read_tokens,
        "cache_write_tokens": known.cache_write_tokens,
        "cost_usd": known.cost_usd,
        "cost_source": known.cost_source if known.cost_usd is not None else None,
        "models": json.dumps(list(known.models)),
        "turns": known.turns,
        "api_ms": known.api_ms,
    }


def usage_from_row(row: Any, read: Fields) -> Usage | None:
    if row["usage"] is None:
        return None
    models = read.json_list("models") if row["models"] is not None else []
    cost = read.number("cost_usd", MAX_STORED_COST_USD)
    return Usage(
        input_tokens=read.integer("input_tokens"),
        output_tokens=read.integer("output_tokens"),
        cache_read_tokens=read.integer("cache_read_tokens"),
        cache_write_tokens=read.integer("cache_write_tokens"),
        cost_usd=cost,
        models=tuple(str(m) for m in models),
        turns=read.optional_integer("turns"),
        api_ms=read.optional_integer("api_ms"),
        final=row["usage"] == "final",
        cost_source=row["cost_source"] if cost is not None else None,
    )


def ledger_entry_from_row(row: Any) -> LedgerEntry:
    read = Fields(row, "run", row["run_id"], item_id=row["item_id"])
    return LedgerEntry(
        run_id=read.text("run_id"),
        item_id=read.integer("item_id", 1),
        agent=read.optional_text("agent"),
        started_at=read.required_time("started_at"),
        usage=usage_from_row(row, read) or Usage(),
    )


def spend_from_row(row: Any, agent: str) -> Usage:
    """What select_agent_spend summed for ``agent``."""
    read = Fields(row, "spend of agent", agent)
    cost = read.number("cost_usd", math.inf)  # a sum: finite, whatever its size
    return Usage(
        input_tokens=int(row["input_tokens"]),
        output_tokens=int(row["output_tokens"]),
        cache_read_tokens=int(row["cache_read_tokens"]),
        cache_write_tokens=int(row["cache_write_tokens"]),
        cost_usd=cost,
        cost_source=None if cost is None else ("estimated" if row["estimated"] else "reported"),
    )


def base_check_params(base: BaseCheck) -> dict[str, Any]:
    """A check's result on a base commit, to be kept (docs/verify.md)."""
    return {
        "base_commit": base.base_commit,
        "check_name": base.name,
        "check_key": base.key,
        "failed": base.failed,
        "ending": base.ending,
        "output_tail": base.output_tail,
        "checked_at": to_db_time(base.checked_at),
    }


def base_check_from_row(row: Any) -> BaseCheck:
    """A check's kept result on a base commit; UnreadableError for a value that does not read."""
    from wrighty.domain.check_evidence import BaseCheck

    key = f"{row['base_commit']}/{row['check_name']}"
    read = Fields(row, "base check", key)
    name = read.text("check_name")
    if CHECK_NAME.fullmatch(name) is None:
        read.refuse("check_name", f"{shown_value(name)} is not a check name")
    commit = read.text("base_commit")
    if _COMMIT.fullmatch(commit) is None:
        read.refuse("base_commit", f"{shown_value(commit)} is not a commit")
    return BaseCheck(
        base_commit=commit,
        name=name,
        key=read.text("check_key"),
        failed=read.flag("failed"),
        ending=read.text("ending"),
        output_tail=read.text("output_tail"),
        checked_at=read.required_time("checked_at"),
    )


# -- landings (docs/landing.md) ------------------------------------------------------------


def landing_params(landing: Landing) -> dict[str, Any]:
    return {
        "item_id": landing.item_id,
        "seq": landing.seq,
        "accepted_at": to_db_time(landing.accepted_at),
        "accepted_by": landing.accepted_by,
        "accepted_commit": landing.accepted_commit,
        "installation_id": landing.installation_id,
        "target": landing.target,
        "step": landing.step.value,
        "target_commit": landing.target_commit,
        "checked_commit": landing.checked_commit,
        "intent": landing.intent,
        "intent_from": landing.intent_from,
        "attempt": landing.attempt,
        "catch_ups": landing.catch_ups,
    }


def landing_from_row(row: Any) -> Landing:
    """The landing in ``row``; UnreadableError for a value that does not read."""
    from wrighty.domain.landing import Landing, Step

    read = Fields(row, "landing", row["item_id"], item_id=row["item_id"])
    try:
        return Landing(
            item_id=read.integer("item_id", 1),
            seq=read.integer("seq", 1),
            accepted_at=read.required_time("accepted_at"),
            accepted_by=read.text("accepted_by"),
            accepted_commit=read.optional_text("accepted_commit"),
            installation_id=read.text("installation_id"),
            target=read.text("target"),
            step=read.choice("step", Step, Step.WAITING),
            target_commit=read.optional_text("target_commit"),
            checked_commit=read.optional_text("checked_commit"),
            intent=read.optional_text("intent"),
            intent_from=read.optional_text("intent_from"),
            attempt=read.integer("attempt"),
            catch_ups=read.integer("catch_ups"),
        )
    except ValueError as problem:  # a rule across its values (landing_problem)
        read.refuse("landing", str(problem))
        raise
