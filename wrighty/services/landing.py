"""A lander: an accepted item's landing, step by step, under its landing claim
(docs/landing.md). A worker lands between claims; `wrighty accept` lands while it waits.

The steps: the branch brought up to date with the target's tip (the item's base becomes that
tip), its checks run there, the commit the target will move to recorded (the intent), the
target moved (or the branch pushed, or the command run), the item settled. Each step is
written under the claim before the next starts, so a lander that dies anywhere leaves what the
next claim needs to finish it once (domain/landing.py). A conflict or a red check is a fix turn
of the agent in the item's session; what a person must decide goes back to review.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from wrighty.domain import landing as moves
from wrighty.domain.check_evidence import BaseCheck, CheckEvidence, CheckRecord
from wrighty.domain.claims import ClaimRequest, LeaseTerms, RenewOutcome
from wrighty.domain.integration import summary
from wrighty.domain.landing import Landing, LandingChange, Step
from wrighty.domain.model import LANDING_CHECKS_FAILED, LANDING_CONFLICT, Item, Session
from wrighty.domain.notices import Source, with_notices
from wrighty.domain.sources import withheld
from wrighty.domain.states import ItemState
from wrighty.domain.text import plural
from wrighty.domain.verify import (
    Check,
    base_run_due,
    check_key,
    feedback_prompt,
    fit_text,
    latest_verification,
    on_base,
)
from wrighty.domain.work_product import Completion, merge_message
from wrighty.errors import UnreadableError, WrightyError
from wrighty.services.pulls import PullOpener
from wrighty.services.sandboxes import CHECK_VARIABLES
from wrighty.store.port import Store
from wrighty.supervisor.checks import CheckSpec, Keep, run_check
from wrighty.supervisor.sandboxing import SandboxMaker
from wrighty.workproduct.basetree import base_worktree
from wrighty.workproduct.diff import branch_stat, change_stat
from wrighty.workproduct.integrate import (
    IntegrationError,
    IntegrationTarget,
    integrate,
    refuse_unheld_work,
)
from wrighty.workproduct.landing import (
    Conflict,
    LandingError,
    MovedLate,
    TargetMoved,
    branch_tip,
    checkout_refusal,
    landing_commit,
    move_target,
    pushed_as,
    recover_worktree,
    target_first,
    update_branch,
)
from wrighty.workproduct.reads import is_ancestor, toplevel
from wrighty.workproduct.runner import GitError, identity, run_git

if TYPE_CHECKING:
    from wrighty.config.models import WrightyConfig


@dataclass(frozen=True)
class Lander:
    """What a lander needs: where, who, and what wrighty.json says."""

    store: Store
    project_root: Path
    installation_id: str
    worker_id: str
    completion: Completion
    checks_of: Callable[[Item], tuple[Check, ...]]  # the checks an item's landing runs
    max_fix_turns: int
    feedback_bytes: int
    terms: LeaseTerms
    now: Callable[[], datetime]
    log_dir: Path  # each landing's checks leave their logs in log_dir/<id>/<verification>
    secrets: tuple[str, ...] = ()
    heartbeat_seconds: float = 10.0
    say: Callable[[str], None] = lambda _: None
    # Who tells of the landing's moves through the outbox (None: notifications are off), and
    # what wakes the deliverer once a move's notice is written (a worker's).
    notify: Source | None = None
    told: Callable[[], None] = lambda: None
    # Where an agent's items' checks and integration command run (services/sandboxes.py,
    # verify.sandbox); None: as the lander.
    checks_in: Callable[[str], SandboxMaker | None] = lambda _: None
    # completion.integrate github-pr: what opens an item's pull request (services/pulls.py).
    pulls: PullOpener | None = None
    withheld: frozenset[str] = frozenset()  # no check is given these (the trackers' tokens)

    def sandbox(self, item: Item) -> SandboxMaker | None:
        return self.checks_in(item.agent or "")

    def request(self) -> ClaimRequest:
        return ClaimRequest(
            worker_id=self.worker_id,
            installation_id=self.installation_id,
            terms=self.terms,
            default_agent="",
        )


class _Lost(Exception):
    """The landing claim is no longer this lander's: it writes nothing more."""


def land_next(lander: Lander, *, item_id: int | None = None) -> Item | None:
    """Claim the head of a line (of ``item_id``'s line only, with it) and land it; the item as
    its landing left it, or None when there was nothing to claim or the claim was lost."""
    held = lander.store.acquire_landing(lander.request(), now=lander.now(), item_id=item_id)
    if held is None:
        return None
    claimed, landing = held
    lander.say(f"landing item {claimed.id} on {landing.target}")
    try:
        move = _land(lander, claimed, landing)
    except _Lost:
        return None
    move = _with_notice(lander, move)
    if not lander.store.write_landing(move):
        return None
    if move.change.notices:
        lander.told()
    return move.change.after


def _with_notice(lander: Lander, move: LandingChange) -> LandingChange:
    """``move`` carrying its notice (docs/notifications.md: landed, or not landed and back
    with a person), which write_landing writes in the move's own transaction: the item's
    latest checks with it, and for an item back in review its branch and its change's stat."""
    if lander.notify is None:
        return move
    after = move.change.after
    checks = [record.evidence for record in latest_verification(lander.store.list_checks(after.id))]
    branch = diff_stat = None
    if after.state is ItemState.REVIEW:
        session = lander.store.get_session(after.id)
        if session is not None:
            branch = session.branch
            if session.base_commit is not None:
                diff_stat = change_stat(Path(session.workspace), session.base_commit)
    told = with_notices(
        move.change, lander.notify, checks=checks, branch=branch, diff_stat=diff_stat
    )
    return dataclasses.replace(move, change=told)


def _land(lander: Lander, claimed: Item, landing: Landing) -> LandingChange:
    session = lander.store.get_session(claimed.id)
    at = lander.now()
    if session is None or session.branch is None:
        return moves.back_to_review(claimed, landing, "it has no branch to land", at=at)
    try:
        if landing.step is Step.INTEGRATING and landing.intent and landing.intent_from:
            # an attempt of its own, recorded before it starts: its lander may have run the
            # command (or pushed) and died before it could say so, and a third is told so too
            again = dataclasses.replace(landing, attempt=landing.attempt + 1)
            landing = _record(lander, claimed, again)
            finished = _integrate(lander, claimed, landing, session, recovering=True)
            if finished is not None:
                return finished
            landing = dataclasses.replace(landing, intent=None, intent_from=None)
        for _ in range(moves.MAX_CATCH_UPS + 1):
            outcome = _one_pass(lander, claimed, landing, session)
            if isinstance(outcome, LandingChange):
                return outcome
            landing = dataclasses.replace(outcome, catch_ups=outcome.catch_ups + 1)
        why = f"{landing.target} kept moving while it was checked; it stays in line"
        return moves.release(claimed, landing, why, at=lander.now())
    except (LandingError, IntegrationError, GitError) as refused:
        return moves.back_to_review(claimed, landing, str(refused), at=lander.now())


def _one_pass(
    lander: Lander, claimed: Item, landing: Landing, session: Session
) -> LandingChange | Landing:
    """Update, check and integrate once; the landing to go round again with when the target
    moved meanwhile."""
    root, target, branch = lander.project_root, landing.target, session.branch or ""
    tip = branch_tip(root, target)
    if tip is None:
        raise LandingError(f"the target branch {target} is not in the project's repository")
    before = branch_tip(root, branch)
    if before is None:
        raise LandingError(f"the item's branch {branch} is not in the project's repository")
    recover_worktree(Path(session.workspace), tip)  # a dead lander's update, put back first
    refuse_unheld_work(claimed.id, Path(session.workspace), branch, before)
    worktree = _worktree(lander, session)
    landing = _record(lander, claimed, dataclasses.replace(landing, step=Step.UPDATING))
    commit = before
    if not is_ancestor(root, tip, before):
        updated = update_branch(
            worktree, branch, target, tip, mode=lander.completion.update,
            author=_author(lander), hooks=lander.completion.hooks == "run",
        )  # fmt: skip
        if isinstance(updated, Conflict):
            return _conflict_turn(lander, claimed, landing, updated)
        commit = updated.commit
    checking = dataclasses.replace(landing, step=Step.CHECKING, target_commit=tip)
    landing = _record(lander, claimed, checking, base=tip)
    checks = lander.checks_of(claimed)
    if checks and not _checked_already(lander, claimed, landing, commit, updated=commit != before):
        evidence = _run_checks(lander, claimed, worktree, checks, tip)
        if any(check.agents_failure for check in evidence):
            return _checks_turn(lander, claimed, landing, evidence)
        landing = _record(lander, claimed, dataclasses.replace(landing, checked_commit=commit))
    if branch_tip(root, target) != tip:
        return landing  # the target moved while the checks ran: catch up again
    intent = _intent(lander, claimed, session, commit, tip)
    integrating = dataclasses.replace(
        landing, step=Step.INTEGRATING, intent=intent, intent_from=tip, attempt=landing.attempt + 1
    )
    landing = _record(lander, claimed, integrating)
    try:
        finished = _integrate(lander, claimed, landing, session, recovering=False)
    except TargetMoved:
        return dataclasses.replace(landing, intent=None, intent_from=None)
    if finished is None:
        return dataclasses.replace(landing, intent=None, intent_from=None)
    return finished


def _integrate(
    lander: Lander, claimed: Item, landing: Landing, session: Session, *, recovering: bool
) -> LandingChange | None:
    """Carry out the recorded intent (completion.integrate); the item landed, or None when the
    target moved elsewhere meanwhile (the landing goes round again)."""
    integration = lander.completion.integration
    intent, start = landing.intent or "", landing.intent_from or ""
    checked = f"; checked on {landing.target} at {start[: moves.SHORT]}" if start else ""
    if integration.kind == "merge":
        try:
            moved = move_target(
                lander.project_root, landing.target, from_commit=start, to_commit=intent,
                item_id=claimed.id, author=_author(lander),
                hooks=lander.completion.hooks == "run",
                timeout=integration.timeout_seconds, recovering=recovering,
            )  # fmt: skip
        except TargetMoved:
            if recovering:
                return None
            raise
        except MovedLate as late:
            moved, checked = True, f"{checked}; {late}"
        how = "it was there already" if not moved else _how(lander)
        words = f"landed on {landing.target} as {intent[: moves.SHORT]} ({how}){checked}"
        return moves.landed(claimed, landing, words, at=lander.now())
    said = _summary(lander, claimed, session, landing)
    target = IntegrationTarget(
        claimed.id, claimed.title, session.branch, landing.target_commit,
        Path(session.workspace), said, attempt=landing.attempt,
    )  # fmt: skip
    if integration.kind == "github-pr":
        return _pull_request(lander, claimed, landing, target, checked)
    done = integrate(
        lander.project_root, integration, target, author_name=lander.completion.author_name,
        author_email=lander.completion.author_email, hooks=lander.completion.hooks == "run",
        sandbox=lander.sandbox(claimed),
    )  # fmt: skip
    words = f"{done.words or 'integrated'}{checked}"
    return moves.landed(claimed, landing, words, at=lander.now())


def _pull_request(
    lander: Lander, claimed: Item, landing: Landing, target: IntegrationTarget, checked: str
) -> LandingChange:
    """Push the checked branch to completion.remote and open (or update) its pull request;
    the item waits in review for its merge."""
    if lander.pulls is None:
        raise LandingError("completion.integrate github-pr has no repository to open it in")
    pushing = dataclasses.replace(lander.completion.integration, kind="push")
    integrate(lander.project_root, pushing, target, hooks=lander.completion.hooks == "run")
    try:
        pull = lander.pulls(
            claimed, branch=target.branch or "", target=landing.target, summary=target.summary
        )
    except WrightyError as refused:
        why = str(refused).removesuffix("; wrighty tries again later")
        raise IntegrationError(f"the branch was pushed, but {why}: accept it again") from None
    words = f"pull request #{pull.number} is open: {pull.url}{checked}"
    return moves.pull_opened(claimed, landing, words, at=lander.now())


def _how(lander: Lander) -> str:
    if lander.completion.squash:
        return "one commit"
    return "a merge commit" if lander.completion.integration.merge == "no-ff" else "fast-forward"


def _intent(lander: Lander, claimed: Item, session: Session, commit: str, tip: str) -> str:
    """The commit the target moves to (a merge), or the branch's commit (push, command)."""
    completion = lander.completion
    if completion.integration.kind != "merge":
        return commit
    commit = target_first(lander.project_root, session.branch or "", commit, tip)
    how = "ff"
    if completion.squash:
        how = "squash"
    elif completion.integration.merge == "no-ff":
        how = "no-ff"
    if how == "ff":
        return commit
    subject, trailer = merge_message(claimed.id, claimed.title)
    if how == "squash":
        subject = claimed.title
    passed = _passed_words(lander, claimed)
    body = claimed.body.strip().splitlines()[0] if claimed.body.strip() else ""
    message = "\n\n".join(part for part in (subject, body, passed, trailer) if part) + "\n"
    return landing_commit(
        lander.project_root, how, branch_commit=commit, target_commit=tip, message=message,
        author=_author(lander),
    )  # fmt: skip


def _passed_words(lander: Lander, claimed: Item) -> str:
    latest = latest_verification(lander.store.list_checks(claimed.id))
    names = [record.evidence.name for record in latest if record.evidence.passed]
    return f"Checks passed: {', '.join(names)}" if names else ""


def _checked_already(
    lander: Lander, claimed: Item, landing: Landing, commit: str, *, updated: bool
) -> bool:
    """Whether the checks need not run again: the branch was checked at this very commit
    (an earlier pass of this landing), or it needed no update and its latest verification, that
    of its last run (whose commit this is), passed."""
    if landing.checked_commit == commit:
        return True
    if updated:
        return False
    latest = latest_verification(lander.store.list_checks(claimed.id))
    if not latest or any(record.evidence.agents_failure for record in latest):
        return False
    runs = lander.store.list_runs(claimed.id)
    last = max(runs, key=lambda run: run.started_at, default=None)
    return last is not None and latest[0].run_id == last.run_id


def _run_checks(
    lander: Lander, claimed: Item, worktree: Path, checks: Sequence[Check], target_tip: str
) -> list[CheckEvidence]:
    """Run the checks on the updated branch under the claim, each one's evidence recorded as
    it ends; one that fails is run on the target's tip too (its result there kept once per
    commit and check), and marked when it fails there as well: not the agent's
    (docs/verify.md#checks-that-fail-on-the-base). _Lost when the claim goes."""
    verification_id = f"land-{uuid.uuid4().hex[:12]}"
    evidence: list[CheckEvidence] = []
    lost: list[bool] = []

    def keep() -> Keep:
        renewed = lander.store.renew(claimed, now=lander.now(), terms=lander.terms)
        if renewed.outcome is RenewOutcome.LOST:
            lost.append(True)
            return Keep.STOP
        return Keep.GO

    maker = lander.sandbox(claimed)

    def one(check: Check, cwd: Path, logs: Path) -> CheckEvidence:
        spec = CheckSpec(
            check, cwd, logs,
            {**_environ(lander), "WRIGHTY_ITEM_ID": str(claimed.id),
             "WRIGHTY_CHECK_NAME": check.name},
            secrets=lander.secrets, heartbeat_seconds=lander.heartbeat_seconds,
            sandbox=maker.at(cwd, passed=CHECK_VARIABLES) if maker is not None else None,
        )  # fmt: skip
        result = run_check(spec, wake=threading.Event(), keep=keep)
        if result is None or lost:
            raise _Lost
        return result

    logs = lander.log_dir / str(claimed.id) / verification_id
    for position, check in enumerate(checks):
        started = lander.now()
        result = one(check, worktree, logs / check.name)
        if base_run_due(check, result, target_tip):
            result = on_base(result, _on_target(lander, check, target_tip, worktree, logs, one))
        record = CheckRecord(
            claimed.id, verification_id, None, position, f"worker:{lander.worker_id}", started,
            result,
        )  # fmt: skip
        if not lander.store.record_check(claimed, record):
            raise _Lost
        evidence.append(result)
        if not result.started:
            break
    return evidence


def _on_target(
    lander: Lander,
    check: Check,
    tip: str,
    worktree: Path,
    logs: Path,
    one: Callable[[Check, Path, Path], CheckEvidence],
) -> BaseCheck | None:
    """The check's result on the target's tip: kept, or run there now (checked out on its own)
    and kept; None when git cannot check it out (the failure is then the agent's)."""
    key = check_key(check)
    try:
        known = lander.store.base_check(tip, check.name, key)
    except UnreadableError:
        known = None  # run it again: its write then changes nothing
    if known is not None:
        return known
    try:
        with base_worktree(worktree, tip, lander.log_dir.parent / "base-checks") as tree:
            ran = one(check, tree, logs / f"{check.name}-base")
    except GitError:
        return None
    kept = BaseCheck(tip, check.name, key, ran.failed, ran.ending(), ran.output_tail, lander.now())
    lander.store.record_base_check(kept)
    return kept


def _environ(lander: Lander) -> dict[str, str]:
    return withheld(os.environ, lander.withheld)


def _conflict_turn(
    lander: Lander, claimed: Item, landing: Landing, conflict: Conflict
) -> LandingChange:
    target = landing.target
    named = ", ".join(conflict.files[:10]) + (" ..." if len(conflict.files) > 10 else "")
    why = (
        f"bringing it up to date with {target} conflicts in "
        f"{len(conflict.files)} {plural(len(conflict.files), 'file', 'files')}: {named}"
    )
    prompt = _conflict_prompt(target, conflict)
    return moves.fix_turn(
        claimed, landing, reason_code=LANDING_CONFLICT, why=why,
        prompt=fit_text(prompt, lander.feedback_bytes), max_fix_turns=lander.max_fix_turns,
        at=lander.now(),
    )  # fmt: skip


def _conflict_prompt(target: str, conflict: Conflict) -> str:
    files = "".join(f"- {name}\n" for name in conflict.files)
    return (
        f"A person accepted your work. Before it lands on {target}, your branch is brought up "
        f"to date with {target}, and merging {target} into it conflicts in these files:\n\n"
        f"{files}\n"
        "The merge is under way in this workspace, with the conflict markers in those files. "
        "Resolve each conflict so that your change and what the target gained work together, "
        "remove every marker, and end your turn. Do not commit and do not abort the merge: "
        "wrighty commits your resolution and checks it.\n\n"
        f"What {target} gained:\n{conflict.gained or '(nothing listed)'}\n\n"
        f"The conflicting hunks:\n{conflict.hunks}\n"
    )


def _checks_turn(
    lander: Lander, claimed: Item, landing: Landing, evidence: Sequence[CheckEvidence]
) -> LandingChange:
    failing = [check.name for check in evidence if check.agents_failure]
    on = (landing.target_commit or "")[: moves.SHORT]
    why = f"on {landing.target} at {on}, {', '.join(failing)} failed"
    head = (
        f"A person accepted your work. Your branch was brought up to date with "
        f"{landing.target}, and there the project's checks failed. Make them pass.\n\n"
    )
    told = feedback_prompt(evidence, feedback_bytes=lander.feedback_bytes, secrets=lander.secrets)
    return moves.fix_turn(
        claimed, landing, reason_code=LANDING_CHECKS_FAILED, why=why,
        prompt=fit_text(head + told, lander.feedback_bytes), max_fix_turns=lander.max_fix_turns,
        at=lander.now(),
    )  # fmt: skip


def _summary(lander: Lander, claimed: Item, session: Session, landing: Landing) -> str:
    checks = latest_verification(lander.store.list_checks(claimed.id))
    base = landing.target_commit or session.base_commit
    return summary(
        item_id=claimed.id, title=claimed.title, branch=session.branch, base=base,
        diff_stat=branch_stat(lander.project_root, base, session.branch or ""),
        checks=[record.evidence for record in checks],
    )  # fmt: skip


def _worktree(lander: Lander, session: Session) -> Path:
    """The item's worktree, made again on its branch when it is gone."""
    path = Path(session.workspace)
    if path.is_dir() and toplevel(path) == path.resolve():
        return path
    made = run_git(lander.project_root, "worktree", "add", "--quiet", str(path),
                   session.branch or "")  # fmt: skip
    if not made.ok:
        raise LandingError(f"the item's worktree {path} is gone and git cannot make it again")
    return path


def _record(lander: Lander, claimed: Item, landing: Landing, *, base: str | None = None) -> Landing:
    """Write a step of the landing under the claim (renewed first); _Lost when it is gone."""
    now = lander.now()
    renewed = lander.store.renew(claimed, now=now, terms=lander.terms)
    if renewed.outcome is RenewOutcome.LOST:
        raise _Lost
    if not lander.store.record_landing(claimed, landing, at=now, base_commit=base):
        raise _Lost
    return landing


def _author(lander: Lander) -> dict[str, str]:
    return identity(lander.completion.author_name, lander.completion.author_email)


def lander_from(
    config: WrightyConfig,
    project_root: Path,
    store: Store,
    *,
    worker_id: str,
    now: Callable[[], datetime],
    secrets: tuple[str, ...] = (),
    say: Callable[[str], None] = lambda _: None,
    worker: bool = False,
    told: Callable[[], None] = lambda: None,
    checks_in: Callable[[str], SandboxMaker | None],
) -> Lander:
    """The lander wrighty.json describes, for a worker (``worker``: its notices name it, and
    ``told`` wakes its deliverer) or for `wrighty accept` and `wrighty land`. With a sink in
    notify, each move out of landing writes its notice, with serve.publicUrl's link.
    ``checks_in``: each agent's checks' sandbox (services/sandboxes.CheckSandboxes.of)."""
    from wrighty.config import STATE_DIRNAME
    from wrighty.config.translate import (
        agent_checks,
        completion_of,
        lease_terms_of,
        pull_request_of,
        tracker_tokens,
    )
    from wrighty.domain.verify import select_checks
    from wrighty.domain.verify_limits import DEFAULT_FEEDBACK_BYTES, DEFAULT_FIX_TURNS
    from wrighty.installation import installation_id

    def checks_of(item: Item) -> tuple[Check, ...]:
        available = agent_checks(config, item.agent or config.worker.default_agent)
        return select_checks(available, item.verify_checks)[0]

    verify = config.verify
    here = installation_id()
    notify = None
    if config.notify.enabled:
        notify = Source(here, worker_id if worker else None, config.serve.public_url)
    place = pull_request_of(config)
    return Lander(
        store=store,
        project_root=project_root,
        installation_id=here,
        worker_id=worker_id,
        completion=completion_of(config),
        checks_of=checks_of,
        max_fix_turns=verify.max_fix_turns if verify is not None else DEFAULT_FIX_TURNS,
        feedback_bytes=verify.feedback_bytes if verify is not None else DEFAULT_FEEDBACK_BYTES,
        terms=lease_terms_of(config),
        now=now,
        log_dir=project_root / STATE_DIRNAME / "landings",
        secrets=secrets,
        say=say,
        notify=notify,
        told=told,
        checks_in=checks_in,
        pulls=None if place is None else PullOpener(place, store, os.environ),
        withheld=tracker_tokens(config),
    )


@dataclass(frozen=True)
class Place:
    """Where an accepted item lands: the installation whose repository holds its branch, the
    target branch, and the branch's commit the person accepted."""

    installation_id: str
    target: str
    accepted_commit: str | None


def landing_place(
    project_root: Path, completion: Completion, session: Session, *, installation_id: str
) -> Place:
    """Where ``session``'s item would land, on this installation; WrightyError (one line, exit
    2, nothing changed) when it cannot: its branch is another installation's, the project's
    checkout has a detached HEAD, the branch is gone."""
    from wrighty.errors import WrightyError

    item_id = session.item_id
    if session.installation_id != installation_id:
        raise WrightyError(
            f"item {item_id}'s branch is in the repository of installation "
            f"{session.installation_id}, not this one: accept it there"
        )
    branch = session.branch or ""
    target = _target(project_root, completion)
    if target is None:
        raise WrightyError(
            f"the project's checkout {project_root} has a detached HEAD: check out the branch "
            f"item {item_id} is to land on (git switch BRANCH), then accept it"
        )
    if completion.integration.kind == "merge":  # the checkout it moves: refused up front
        refusal = checkout_refusal(project_root, target)
        if refusal is not None:
            raise WrightyError(f"item {item_id} was not accepted: {refusal}")
    tip = branch_tip(project_root, branch)
    if tip is None:
        raise WrightyError(
            f"item {item_id}'s branch {branch} is not in the project's repository: "
            f"`wrighty show {item_id}` says where its work is"
        )
    if completion.update == "rebase":
        pushed = pushed_as(project_root, tip)
        if pushed:
            raise WrightyError(
                f"item {item_id}'s branch {branch} was pushed ({', '.join(pushed[:3])} holds "
                "its commit): a rebase would rewrite what others may have; land it with "
                "completion.update merge"
            )
    return Place(installation_id, target, tip)


def _target(project_root: Path, completion: Completion) -> str | None:
    """The branch items land on: the project's checked-out branch, or for a push or a command
    completion.base when it names a branch."""
    from wrighty.workproduct.landing import checked_out_branch

    base = completion.base
    if completion.integration.kind != "merge" and base and branch_tip(project_root, base):
        return base
    return checked_out_branch(project_root)


def accept_to_land(store: Store, item: Item, place: Place, *, now: datetime, actor: str) -> Item:
    """review -> landing, the acceptance recorded; WrightyError when the item moved meanwhile
    (a reject, a cancel or another accept came first)."""
    from wrighty.errors import WrightyError

    move = moves.accept(
        item, at=now, actor=actor, accepted_commit=place.accepted_commit,
        installation_id=place.installation_id, target=place.target,
    )  # fmt: skip
    if not store.write_landing(move):
        current = store.get_item(item.id)
        state = current.state if current is not None else "gone"
        raise WrightyError(f"item {item.id} is {state} now, not in review: it was not accepted")
    return move.change.after


def land_while_waiting(
    lander: Lander,
    item_id: int,
    *,
    wait_seconds: float,
    pause: Callable[[float], None],
    clock: Callable[[], float],
) -> Item | None:
    """Land ``item_id``, and first whatever is ahead of it in its line, as long as no other
    lander holds the line; wait (at most ``wait_seconds``) while one does. The item as it is
    once it left landing, or None when it still waits (a worker lands it): also at once when
    an item it comes after is not on its way to land yet (completion.stack)."""
    ends = clock() + wait_seconds
    while True:
        land_next(lander, item_id=item_id)
        item = lander.store.get_item(item_id)
        if item is None or item.state is not ItemState.LANDING:
            return item
        if clock() >= ends:
            return None
        if moves.held_up_by(item_id, lander.store.list_dependencies(item_id)) is not None:
            return None
        pause(0.2)
