"""The third step of a claim's life: verify a succeeded run (docs/verify.md).

When `domain/decide.py` says checks are due, the branch guard first puts the item's worktree
back on its branch (the checks see the item's branch), then `CheckRunner` runs each check
under the claim (the lease renewed at every heartbeat, each check's evidence recorded as it
ends; a check that failed runs on the item's base too, unless its result there is kept).
What they showed joins the run's ending; `decide` turns it into a pass, a fix turn or a
person's attention (`domain/verify.after_checks`). A fix turn's prompt is the feedback of the
checks that failed (`worker/prepare.py`, `domain/verify.owed_feedback`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from wrighty.domain.classify import StopReason
from wrighty.domain.decide import ChecksDue, ChecksRun, decide
from wrighty.domain.model import Session
from wrighty.services.runlogs import logs_of
from wrighty.worker.checks import CheckPlace, CheckRunner, Verification
from wrighty.worker.life import ClaimLife
from wrighty.worker.watch import Ended

# Where, under the state folder, a base is checked out for a failing check to run on, each in
# a folder of its own, removed after.
BASE_CHECKS_DIR = "base-checks"


def verify(life: ClaimLife, ended: Ended) -> Ended:
    """The run's ending, with what its checks showed when checks were due."""
    due = decide(ended.ending, life.policies())
    if not isinstance(due, ChecksDue):
        return ended
    checks = _run_checks(life, ended, due)
    return dataclasses.replace(ended, ending=dataclasses.replace(ended.ending, checks=checks))


def _run_checks(life: ClaimLife, ended: Ended, due: ChecksDue) -> ChecksRun:
    """Run the due checks of a succeeded run on the item's branch. A lost claim is told by the
    check runner; nothing more is written after it."""
    claimed, run_id, session = life.claimed, ended.run_id, ended.session
    aside = life.off_branch(run_id, session)  # the checks see the item's branch
    if aside is not None:
        life.outcome_known()
        return ChecksRun(off_branch=aside)
    place = CheckPlace(
        claimed,
        run_id,
        Path(session.workspace),
        logs_of(life.setting.state_dir, claimed.id, run_id),
        life.plan.name,
        base_commit=_base_commit(life, session),
        base_dir=life.setting.state_dir / BASE_CHECKS_DIR,
    )
    outcome = _check_runner(life).run(place, Verification(due.checks, due.unknown))
    if isinstance(outcome, StopReason):
        if outcome is StopReason.SHUTDOWN:
            life.outcome_known()
        return ChecksRun(stopped_by=outcome)
    life.outcome_known()
    return ChecksRun(evidence=tuple(outcome))


def _base_commit(life: ClaimLife, session: Session) -> str | None:
    """The item's base, a failing check is run on (docs/verify.md#checks-that-fail-on-the-
    base): the base commit its session recorded for this workspace (worktree mode); None
    without one (current or directory mode)."""
    if session.base_commit is not None:
        return session.base_commit
    recorded = life.claim.session
    if recorded is None or recorded.workspace != session.workspace:
        return None
    return recorded.base_commit


def _check_runner(life: ClaimLife) -> CheckRunner:
    setting = life.setting
    return CheckRunner(
        life.store, life.guard, terms=setting.terms,
        heartbeat_seconds=setting.heartbeat_seconds,
        stop_grace_seconds=setting.stop_grace_seconds,
        stop_requested=setting.stop_requested, wake=life.wake, now=life.now,
        emit=life.emit, actor=f"worker:{setting.worker_id}", lost=life.tell_lost,
        known=setting.secrets, sandbox=setting.check_sandbox, withheld=setting.withheld,
    )  # fmt: skip
