"""The last step of a claim's life: commit, decide, write
(docs/architecture.md#one-items-path).

`domain/decide.py` says where the item goes from the run's ending. When it would be done, the
finish step is due first: the branch guard (nothing is committed off the item's branch), then
the commit completion.commit asks, under the claim (renewed at every heartbeat while git and
its hooks run). The settlement is then written under the claim, with its notice.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from wrighty.domain.claims import Settlement, settle
from wrighty.domain.decide import FinishDue, Finished, commit_facts, decide
from wrighty.domain.model import Session
from wrighty.domain.states import ItemState
from wrighty.domain.work_product import CommitResult, Ending
from wrighty.domain.worker_events import WorkerEvent
from wrighty.worker.life import ClaimLife
from wrighty.worker.watch import Ended
from wrighty.workproduct.commit import complete
from wrighty.workproduct.diff import change_stat


def finish(life: ClaimLife, ended: Ended) -> None:
    """Decide where the item goes, doing the finish step first when it is due, and write it;
    nothing when the claim was lost on the way (told)."""
    policies = life.policies()
    decision = decide(ended.ending, policies)
    if isinstance(decision, FinishDue):
        finished = _finished(life, ended)
        if finished is None:
            life.tell_lost()
            return
        decision = decide(dataclasses.replace(ended.ending, finished=finished), policies)
    if decision is None:
        return  # the claim was lost, and that was told
    if not isinstance(decision, Settlement):
        raise RuntimeError(f"a step is due before the finish: {decision}")
    change = settle(life.claimed, decision, at=life.now())
    life.move_circuit(change, ended.ending.result.outcome_class, ended.reset_hint)
    stat = None
    if change.after.state is ItemState.REVIEW and life.setting.notify is not None:
        stat = _change_stat(life, ended.session)
    checks = ended.ending.checks.evidence if ended.ending.checks is not None else ()
    life.write_settlement(change, ended.run_id, checks=checks, diff_stat=stat)


def _finished(life: ClaimLife, ended: Ended) -> Finished | None:
    """The branch guard, then the commit of a done run's item with a branch; None if the
    claim was lost."""
    aside = life.off_branch(ended.run_id, ended.session)
    if aside is not None:
        return Finished(off_branch=aside)
    if life.branch is None:
        return Finished()
    done = _commit(life, ended.run_id, ended.session)
    if done is None:
        return None
    return Finished(commit=commit_facts(done))


def _commit(life: ClaimLife, run_id: str, session: Session) -> CommitResult | None:
    """What completion.commit asks after a done run on the item's branch, under the claim
    (renewed at every heartbeat while git and its hooks run), told as an event; None if
    the claim was lost."""
    claimed, branch = life.claimed, life.branch
    done = life.renewing(
        lambda: complete(
            Path(session.workspace),
            life.setting.completion,
            item=claimed,
            run_id=run_id,
            base_commit=session.base_commit or _recorded_base(life.claim.session, session),
        ),
        name="commit",
    )
    if done is not None and done.ending is Ending.COMMITTED:
        life.emit(
            WorkerEvent.COMMITTED,
            item_id=claimed.id, run_id=run_id, branch=branch, commit=done.commit,
        )  # fmt: skip
    elif done is not None and done.ending is Ending.UNCOMMITTED:
        life.emit(WorkerEvent.UNCOMMITTED, item_id=claimed.id, run_id=run_id, branch=branch)
    return done


def _recorded_base(recorded: Session | None, session: Session) -> str | None:
    """The base commit the item's session recorded for the run's workspace (a worktree kept
    as it was keeps its base)."""
    if recorded is None or recorded.workspace != session.workspace:
        return None
    return recorded.base_commit


def _change_stat(life: ClaimLife, session: Session) -> str | None:
    """The stat of the item's change against its base, for the notice of an item ready
    for review (None without a base, or when git cannot tell)."""
    recorded = life.claim.session
    base = session.base_commit or (recorded.base_commit if recorded else None)
    if base is None:
        return None
    return change_stat(Path(session.workspace), base)
