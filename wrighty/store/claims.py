"""Claims on SQL: taking the best eligible item, renewing its lease, the runs and sessions
recorded under it, and the reaper's settling of a claim whose lease expired."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from wrighty.domain.states import ItemState
from wrighty.store.fields import aggregate, to_db_time
from wrighty.store.items import ItemsSql
from wrighty.store.ledger import spend_in
from wrighty.store.rows import (
    claim_guard,
    claim_params,
    claimed_session,
    item_from_row,
    lease_from_row,
    new_run_params,
    reap_facts_from_row,
    run_from_row,
    session_from_row,
    session_params,
    stacked_on_from_row,
)
from wrighty.store.sqlbase import Refused, Tx

if TYPE_CHECKING:  # the claim's types, for a worker: a read of items loads none of them
    from wrighty.domain.claims import Claim, ClaimRequest, LeaseTerms, Renewal, RenewResult
    from wrighty.domain.model import Change, Item, NewRun, Run, Session
    from wrighty.domain.notices import Source
    from wrighty.store.port import Rows

_CLAIM_ATTEMPTS = 3


def claim_key(claimed: Item) -> dict[str, object]:
    """The claim ``claimed`` holds, as select_claim and renew_lease name it."""
    return {"id": claimed.id, "generation": claimed.generation, "claimed_by": claimed.claimed_by}


def _renew_result(row: Any, item_id: int, *, renewed: bool) -> RenewResult:
    """What a renewal came to: ``row``, the claim as read after it (None: not held)."""
    from wrighty.domain.claims import RenewOutcome, RenewResult

    if row is None:
        return RenewResult(RenewOutcome.LOST)
    lease = lease_from_row(row, item_id)
    return RenewResult(RenewOutcome.RENEWED if renewed else RenewOutcome.BUDGET_EXHAUSTED, lease)


class ClaimsSql(ItemsSql):
    """Claims move items: each claim, settle and reap is the items' guarded write."""

    def acquire(self, request: ClaimRequest, *, now: datetime) -> Claim | None:
        from wrighty.domain.claims import Claim, claim

        params = claim_params(request, now=now)
        for _ in range(_CLAIM_ATTEMPTS):
            try:
                with self._write() as tx:
                    budget = request.budget
                    if budget is not None and request.agent is not None:
                        spent = spend_in(tx, request.agent, budget.since)
                        if spent.over(budget.limit):
                            return None  # the agent's period budget is spent: nothing launches
                    if request.limits.any:
                        tx.run("lock_claim_limits")  # before counting (see queries.sql)
                    row = tx.run("select_next_claimable", params).fetchone()
                    if row is None:
                        return None
                    item = item_from_row(row)
                    change = claim(item, request, at=now)
                    # The row is this transaction's (SQLite: the write lock; PostgreSQL: the
                    # row lock). The guard fails only on PostgreSQL, when an edit made the item
                    # come after another one after this transaction's choice read the
                    # dependencies: then choose again.
                    self._apply(tx, change, stack=request.stack)
                    return Claim(
                        change.after, item.state, claimed_session(row), item.reason_code,
                        stacked_on_from_row(row),
                    )  # fmt: skip
            except Refused:
                continue
        return None

    def renew(self, claimed: Item, *, now: datetime, terms: LeaseTerms) -> RenewResult:
        guard = claim_key(claimed)
        with self._write() as tx:
            proposed = to_db_time(terms.lease_from(now))
            renewed = tx.run("renew_lease", {**guard, "proposed": proposed})
            row = tx.run("select_claim", guard).fetchone()
        return _renew_result(row, claimed.id, renewed=renewed.rowcount == 1)

    def renew_many(self, renewals: Sequence[Renewal]) -> list[RenewResult]:
        """One statement renews every claim that can be (in the common case, all of them);
        only a claim it did not renew is read again, to tell lost from out of budget."""
        batch = json.dumps(
            [
                {
                    "id": asked.claimed.id,
                    "generation": asked.claimed.generation,
                    "claimed_by": asked.claimed.claimed_by,
                    "proposed": to_db_time(asked.terms.lease_from(asked.now)),
                }
                for asked in renewals
            ]
        )
        with self._write() as tx:
            renewed = {
                (row["id"], row["generation"], row["claimed_by"]): row
                for row in tx.run("renew_leases", {"batch": batch}).fetchall()
            }
            left = {
                asked.key: tx.run("select_claim", claim_key(asked.claimed)).fetchone()
                for asked in renewals
                if asked.key not in renewed
            }
        return [
            _renew_result(renewed.get(asked.key) or left[asked.key], asked.claimed.id,
                          renewed=asked.key in renewed)
            for asked in renewals
        ]  # fmt: skip

    def start_run(
        self, claimed: Item, run: NewRun, *, session: Session | None = None
    ) -> Run | None:
        with self._write() as tx:
            cursor = tx.run("insert_run_guarded", new_run_params(claimed, run))
            rows = cursor.fetchall()  # every row, so that the statement is done
            row = rows[0] if rows else None
            if row is not None and session is not None:
                self._upsert_session(tx, claimed, session, at=run.started_at)
        return run_from_row(row) if row is not None else None

    def record_process(
        self, claimed: Item, run_id: str, *, pid: int, process_started_at: float
    ) -> bool:
        with self._write() as tx:
            cursor = tx.run(
                "record_process_guarded",
                {
                    **claim_guard(claimed),
                    "run_id": run_id,
                    "pid": pid,
                    "process_started_at": process_started_at,
                },
            )
        return cursor.rowcount == 1

    def record_agent_report(
        self,
        run_id: str,
        *,
        claim_token: str,
        report: str,
        reason: str | None,
        resets_at: datetime | None = None,
    ) -> bool:
        with self._write() as tx:
            cursor = tx.run(
                "record_agent_report_guarded",
                {
                    "run_id": run_id,
                    "claim_token": claim_token,
                    "report": report,
                    "reason": reason,
                    "resets_at": to_db_time(resets_at),
                },
            )
        return cursor.rowcount == 1

    def list_runs(self, item_id: int) -> Rows[Run]:
        return self._read_all(self._rows("select_runs", {"item_id": item_id}), run_from_row)

    def get_run(self, run_id: str) -> Run | None:
        rows = self._rows("select_run", {"run_id": run_id})
        return run_from_row(rows[0]) if rows else None

    def get_session(self, item_id: int) -> Session | None:
        rows = self._rows("select_session", {"item_id": item_id})
        return session_from_row(rows[0]) if rows else None

    def list_sessions(self, installation_id: str) -> Rows[Session]:
        rows = self._rows("select_sessions_of_installation", {"installation_id": installation_id})
        return self._read_all(rows, session_from_row)

    def record_session(
        self, claimed: Item, session: Session, *, at: datetime, run_id: str | None = None
    ) -> bool:
        with self._write() as tx:
            if not self._upsert_session(tx, claimed, session, at=at):
                return False
            if run_id is not None:
                tx.run(
                    "record_run_session",
                    {**claim_guard(claimed), "run_id": run_id, "session_id": session.session_id},
                )
            return True

    @staticmethod
    def _upsert_session(tx: Tx, claimed: Item, session: Session, *, at: datetime) -> bool:
        cursor = tx.run("upsert_session_guarded", session_params(claimed, session, at=at))
        return cursor.rowcount == 1

    def next_retry_due(self, *, after: datetime) -> datetime | None:
        [row] = self._rows("select_next_retry_after", {"after": to_db_time(after)})
        return aggregate(row).time("not_before")

    # -- the reaper ---------------------------------------------------------------------------

    def expired_claims(self, *, now: datetime, limit: int) -> Rows[Item]:
        rows = self._rows("select_expired_claims", {"now": to_db_time(now), "limit": limit})
        return self._read_all(rows, item_from_row)

    def reap(
        self, item_id: int, *, now: datetime, max_requeues: int, notify: Source | None = None
    ) -> Change | None:
        from wrighty.domain.claims import reap
        from wrighty.domain.leases import lease_expired
        from wrighty.domain.notices import with_notices

        try:
            with self._write() as tx:
                row = tx.run("select_item_to_reap", {"id": item_id}).fetchone()
                if row is None:
                    return None  # gone, or held by another transaction: never waited for
                item = item_from_row(row)
                if item.state is not ItemState.RUNNING or not lease_expired(
                    item.lease_expires_at, now
                ):
                    return None  # renewed or settled meanwhile: the live worker wins
                facts = tx.run(
                    "select_reap_facts",
                    {"item_id": item.id, "generation": item.generation},
                ).fetchone()
                change = reap(item, reap_facts_from_row(facts), at=now, max_requeues=max_requeues)
                change = with_notices(change, notify)
                self._apply(tx, change, expired_before=now)
        except Refused:
            return None
        return change
