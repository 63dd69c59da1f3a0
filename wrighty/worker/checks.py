"""A succeeded run's verification: its checks run in turn under the claim (docs/verify.md).

Each check is run by supervisor/checks.py in the item's workspace, and watched like an
agent: the lease is renewed at every heartbeat, the lease guard stops it at its moment, and a
lost claim, a stop request or the check's own time limit stops its whole tree. Each check's
evidence is written under the claim as soon as it ends, so a worker that dies keeps what its
checks showed so far. A check that failed is first run on the item's base, unless its result
there is kept already (docs/verify.md#checks-that-fail-on-the-base): checked out on its own,
under the claim as the check itself ran, so its evidence says whether it fails there too.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from wrighty.domain.check_evidence import BaseCheck, CheckEvidence, CheckRecord
from wrighty.domain.claims import LeaseTerms, RenewOutcome
from wrighty.domain.classify import StopReason
from wrighty.domain.model import Item
from wrighty.domain.redact import secret_values
from wrighty.domain.sources import withheld as withheld_from
from wrighty.domain.verify import Check, base_run_due, check_key, on_base, unknown_check
from wrighty.domain.worker_events import Emit, WorkerEvent
from wrighty.errors import UnreadableError
from wrighty.services.sandboxes import CHECK_VARIABLES
from wrighty.supervisor.checks import CheckSpec, Keep, run_check
from wrighty.supervisor.process import AgentProcess
from wrighty.supervisor.sandboxing import SandboxMaker
from wrighty.worker.lease import LeaseGuard
from wrighty.worker.patient import LeaseGone, PatientStore
from wrighty.workproduct.basetree import base_worktree
from wrighty.workproduct.runner import GitError


@dataclass(frozen=True)
class Verification:
    """What one verification runs: the checks in order, after the names the item chose that
    its agent has no check for (each a check that could not start)."""

    checks: tuple[Check, ...]
    unknown: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckPlace:
    """Where a verification's checks run and leave their logs."""

    item: Item  # the claimed item
    run_id: str  # the agent run they verify
    workspace: Path
    log_dir: Path  # the run's log folder: each check's logs go in checks/NN-NAME/
    agent: str  # the item's agent, as a reason names it
    base_commit: str | None = None  # the item's base: a failing check runs there too
    base_dir: Path | None = None  # where a base is checked out for that, each in a folder


class CheckRunner:
    """Runs one verification under a claim, recording each check's evidence as it ends."""

    def __init__(
        self,
        store: PatientStore,
        guard: LeaseGuard,
        *,
        terms: LeaseTerms,
        heartbeat_seconds: float,
        stop_grace_seconds: float,
        stop_requested: threading.Event,
        wake: threading.Event,
        now: Callable[[], datetime],
        emit: Emit,
        actor: str,
        lost: Callable[[], StopReason],
        environ: Mapping[str, str] = os.environ,
        withheld: frozenset[str] = frozenset(),
        known: Sequence[str] = (),
        sandbox: SandboxMaker | None = None,
    ) -> None:
        """``known``: values its evidence never shows besides ``environ``'s credentials (the
        worker's config.known_secrets)."""
        self._store = store
        self._guard = guard
        self._terms = terms
        self._heartbeat = heartbeat_seconds
        self._grace = stop_grace_seconds
        self._stop_requested = stop_requested
        self._wake = wake
        self._now = now
        self._emit = emit
        self._actor = actor
        self._lost = lost  # the claim is gone: tell it, and say why (cancelled or fenced)
        self._environ = withheld_from(environ, withheld)
        self._sandbox = sandbox  # where each check runs (None: as the worker)
        self.secrets = tuple(dict.fromkeys((*secret_values(environ), *known)))
        self._claim_time_up = False  # the last check run was stopped as the claim's time ran out

    def run(
        self, place: CheckPlace, verification: Verification
    ) -> list[CheckEvidence] | StopReason:
        """Every check's evidence, in order; it stops at a check that could not start (the
        rest would only add to a configuration problem). ``StopReason.SHUTDOWN`` when the
        worker was asked to stop first (the checks so far are recorded); ``FENCED`` or
        ``CANCELLED`` when the claim was lost (told, and the running check stopped)."""
        item = place.item
        verification_id = f"ver-{uuid.uuid4().hex[:12]}"
        names = [check.name for check in verification.checks]
        self._emit(
            WorkerEvent.VERIFY_START,
            item_id=item.id,
            run_id=place.run_id,
            verification_id=verification_id,
            checks=[*verification.unknown, *names],
        )
        evidence: list[CheckEvidence] = []
        planned: list[Check | str] = [*verification.unknown, *verification.checks]
        for position, check in enumerate(planned):
            if self._stop_requested.is_set():
                return StopReason.SHUTDOWN
            started = self._now()
            if isinstance(check, str):
                result: CheckEvidence | StopReason = unknown_check(check, place.agent)
            else:
                result = self._run_one(place, check, position)
                if not isinstance(result, StopReason):
                    result = self._against_base(place, check, position, result)
            if isinstance(result, StopReason):
                return result
            record = CheckRecord(
                item.id, verification_id, place.run_id, position, self._actor, started, result
            )
            if not self._store.record_check(item, record):
                return self._lost()
            self._tell(place, verification_id, position, result)
            evidence.append(result)
            if not result.started:
                break
        return evidence

    def _tell(
        self, place: CheckPlace, verification_id: str, position: int, evidence: CheckEvidence
    ) -> None:
        event = WorkerEvent.CHECK_PASSED if evidence.passed else WorkerEvent.CHECK_FAILED
        self._emit(
            event,
            item_id=place.item.id,
            run_id=place.run_id,
            verification_id=verification_id,
            position=position,
            check=evidence.name,
            exit_code=evidence.exit_code,
            signal=evidence.signal,
            timed_out=evidence.timed_out,
            fails_on_base=evidence.fails_on_base,
            start_failure=evidence.start_failure,
            duration_seconds=round(evidence.duration_seconds, 3),
        )

    def _against_base(
        self, place: CheckPlace, check: Check, position: int, evidence: CheckEvidence
    ) -> CheckEvidence | StopReason:
        """``evidence``, marked when the check failed and fails on the item's base too
        (domain/verify.on_base): its result there is the one kept for the base commit and the
        check's command, or else it is run there now and kept."""
        base = place.base_commit
        if base is None or place.base_dir is None or not base_run_due(check, evidence, base):
            return evidence
        key = check_key(check)
        try:
            known = self._store.base_check(base, check.name, key)
        except UnreadableError as error:  # run it again (its write then changes nothing)
            self._emit(WorkerEvent.BASE_CHECK_UNREADABLE, item_id=place.item.id,
                       check=check.name, cause=str(error))  # fmt: skip
            known = None
        if known is None:
            ran = self._run_on_base(place, check, position, key)
            if isinstance(ran, StopReason):
                return ran
            if ran is None:
                return evidence  # the base could not be checked out: the agent's, as before
            self._store.record_base_check(ran)
            known = ran
        return on_base(evidence, known)

    def _run_on_base(
        self, place: CheckPlace, check: Check, position: int, key: str
    ) -> BaseCheck | StopReason | None:
        """Run the check on the item's base, checked out on its own, under the claim as the
        check itself ran; None when git could not check the base out, or when the claim's time
        ran out before the check's own did (that says nothing of the base, and is not kept)."""
        base, under = place.base_commit, place.base_dir
        assert base is not None
        assert under is not None
        logs = place.log_dir / "checks" / f"{position + 1:02d}-{check.name}-base"
        try:
            with base_worktree(place.workspace, base, under) as tree:
                ran = self._run_one(place, check, position, cwd=tree, log_dir=logs)
        except GitError:
            return None
        if isinstance(ran, StopReason):
            return ran
        if self._claim_time_up:
            return None  # stopped for the claim's time, not its own: nothing said of the base
        return BaseCheck(
            base, check.name, key, ran.failed, ran.ending(), ran.output_tail, self._now()
        )

    def _run_one(
        self,
        place: CheckPlace,
        check: Check,
        position: int,
        *,
        cwd: Path | None = None,
        log_dir: Path | None = None,
    ) -> CheckEvidence | StopReason:
        """Run one check under the claim: the lease guard watches it, and at every heartbeat
        the claim is renewed and a stop request heard. ``cwd`` and ``log_dir``: where it runs
        and leaves its logs (the item's workspace and the run's checks/NN-NAME/ by default)."""
        item = place.item
        why: list[StopReason] = []
        self._claim_time_up = False

        def started(process: AgentProcess) -> bool:
            return self._guard.attach_check(process)  # False: the guard's moment came

        def keep() -> Keep:
            if self._stop_requested.is_set():
                why.append(StopReason.SHUTDOWN)
                return Keep.STOP
            result = self._store.renew(item, terms=self._terms)
            if result.outcome is RenewOutcome.LOST:
                why.append(StopReason.FENCED)
                return Keep.STOP
            if result.outcome is RenewOutcome.BUDGET_EXHAUSTED:
                self._claim_time_up = True
                return Keep.TIME_UP  # the claim's time for its checks is up
            return Keep.GO

        suffix = "" if cwd is None else "-base"
        folder = cwd or place.workspace
        env = self._env(place, check)
        spec = CheckSpec(
            check,
            folder,
            log_dir or place.log_dir / "checks" / f"{position + 1:02d}-{check.name}",
            env,
            secrets=self.secrets,
            grace_seconds=self._grace,
            heartbeat_seconds=self._heartbeat,
            marker=("WRIGHTY_CHECK_ID", f"{place.run_id}-{position}{suffix}"),
            sandbox=self._sandbox.at(folder, passed=CHECK_VARIABLES) if self._sandbox else None,
        )
        evidence = run_check(spec, wake=self._wake, started=started, keep=keep)
        if evidence is None:
            if not why:  # the lease guard's moment came before it could watch the check
                raise LeaseGone(self._guard.cause())
            return why[0] if why[0] is StopReason.SHUTDOWN else self._lost()
        if not self._guard.outcome_known():
            raise LeaseGone(self._guard.cause())
        return evidence

    def _env(self, place: CheckPlace, check: Check) -> dict[str, str]:
        return {
            **self._environ,
            "WRIGHTY_ITEM_ID": str(place.item.id),
            "WRIGHTY_RUN_ID": place.run_id,
            "WRIGHTY_CHECK_NAME": check.name,
        }
