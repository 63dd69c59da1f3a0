"""Integration: what accepting an item does with its branch, per completion.integrate
(docs/work-product.md#integration): merge it into the project's checked-out branch, push it
to a remote, or run the project's command (a pull request, a deploy), with the item's summary
on its standard input.

A merge reads the repository's state first (the item's worktree in one `git status`, the
project's in another, where their commits meet in one `git merge-base`), lets the domain
decide (domain/integration.py: `worktree_refusal`, `merge_plan`), then acts. Nothing is done
that could leave the project half changed: every refusal comes before git changes anything
(a merge's conflicts are found by `git merge-tree`, which writes no file of the working
tree), and a merge that fails all the same is aborted. Every git command goes through
runner.py; the command is started like a check (supervisor/process.py: its own process
group, the parent-death signal, no shell) and stopped, tree and all, at its time limit. A
failure is an ``IntegrationError``: one line, neutralised, secrets redacted.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wrighty.domain.integration import (
    SHORT,
    AlreadyMerged,
    Integration,
    ProjectState,
    Refused,
    WorktreeState,
    conflict_refusal,
    last_url,
    merge_made,
    merge_plan,
    one_line,
    worktree_refusal,
)
from wrighty.domain.model import COMMIT_ID
from wrighty.domain.redact import redact, redact_known, secret_values
from wrighty.domain.text import printable_line
from wrighty.domain.work_product import merge_message
from wrighty.supervisor.child import new_marker
from wrighty.supervisor.process import LaunchError, LaunchSpec, launch, program_from
from wrighty.supervisor.sandboxing import SandboxMaker
from wrighty.workproduct.reads import commit_id, head_status, toplevel
from wrighty.workproduct.runner import GitError, GitResult, identity, run_git

# How long a command gets to end after SIGTERM, at its time limit, before SIGKILL.
GRACE_SECONDS = 5.0
# The most of a command's output kept on disk while it runs, per stream; what is read back.
OUTPUT_CAP_BYTES = 1024 * 1024
OUTPUT_TAIL_BYTES = 64 * 1024
# How long a message is.
MAX_MESSAGE_CHARS = 600


class IntegrationError(Exception):
    """The integration was refused or failed; the message is one line, neutralised, with
    secrets redacted, ready to record on the item."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(redact(message), MAX_MESSAGE_CHARS))


@dataclass(frozen=True)
class IntegrationTarget:
    """The accepted item, as the integration needs it."""

    item_id: int
    title: str
    branch: str | None  # None: the item has no branch (it did not work in a worktree)
    base: str | None  # the base commit its session recorded
    worktree: Path | None  # where its worktree was made (it may be gone)
    summary: str  # what a command reads on stdin (domain/integration.summary)
    attempt: int = 1  # how many times this landing started its integration (1: the first)


@dataclass(frozen=True)
class Integrated:
    """What the integration did: ``words`` for the done event's reason (None: nothing was
    asked), the URL a command printed, the commit the project's branch or the remote's now
    has."""

    words: str | None
    url: str | None = None
    commit: str | None = None


def integrate(
    project_root: Path,
    integration: Integration,
    target: IntegrationTarget,
    *,
    author_name: str | None = None,
    author_email: str | None = None,
    hooks: bool = False,
    sandbox: SandboxMaker | None = None,
) -> Integrated:
    """Integrate ``target``'s branch as ``integration`` says (IntegrationError when it is
    refused or fails: then nothing of the project, its branch or the remote was changed, but
    by a command that failed half way, which is the command's to tell). ``hooks``: the
    project's hooks run in the merge or the push (completion.hooks run). ``sandbox``: where
    an integration command runs (verify.sandbox; None: as wrighty)."""
    if integration.kind == "none":
        return Integrated(None)
    try:
        branch, tip = _branch(project_root, target)
        worktree = _worktree(target, branch, tip)
        if integration.kind == "merge":
            author = identity(author_name, author_email)
            return _merge(project_root, integration, target, branch, tip, author, hooks=hooks)
        if integration.kind == "push":
            return _push(project_root, integration, branch, tip, hooks=hooks)
        return _command(project_root, integration, target, branch, worktree, sandbox)
    except GitError as error:
        raise IntegrationError(str(error)) from None


def _branch(project_root: Path, target: IntegrationTarget) -> tuple[str, str]:
    """The item's branch and its commit; refused when it has none."""
    if target.branch is None:
        raise IntegrationError(
            f"item {target.item_id} has no branch to integrate (only an item that worked in a "
            "worktree, workspaceMode worktree, has one)"
        )
    tip = commit_id(project_root, f"refs/heads/{target.branch}")
    if tip is None:
        raise IntegrationError(
            f"item {target.item_id}'s branch {target.branch} is not in the project's repository"
        )
    return target.branch, tip


def refuse_unheld_work(item_id: int, worktree: Path, branch: str, tip: str) -> None:
    """IntegrationError when the item's worktree holds what landing ``branch`` (at ``tip``)
    would leave out: uncommitted changes, or a HEAD with commits the branch lacks
    (domain/integration.worktree_refusal). A worktree that is gone holds nothing."""
    _worktree(IntegrationTarget(item_id, "", branch, None, worktree, ""), branch, tip)


def _worktree(target: IntegrationTarget, branch: str, tip: str) -> Path | None:
    """The item's worktree when it is still there (None: gone), read in one git command or
    two; refused (domain/integration.worktree_refusal) when it holds what integrating the
    branch would leave out."""
    path = target.worktree
    if path is None or not path.is_dir() or toplevel(path) != path.resolve():
        return None
    found = head_status(path, untracked=True)
    head_in_tip, compare_why = True, None
    if found.changed is False and found.head is not None and found.head != tip:
        answer = run_git(path, "merge-base", "--is-ancestor", found.head, tip)
        head_in_tip = answer.returncode == 0
        compare_why = None if answer.returncode in (0, 1) else answer.why()
    state = WorktreeState(
        str(path), found.head, found.branch, found.changed, found.why, head_in_tip, compare_why
    )
    refusal = worktree_refusal(target.item_id, branch, tip, state)
    if refusal is not None:
        raise IntegrationError(refusal)
    return path


def _project(root: Path, tip: str) -> ProjectState:
    """The project's checked-out branch, its commit and its tracked changes (one `git
    status`), and where that commit and ``tip`` meet (one `git merge-base`)."""
    found = head_status(root, untracked=False)
    head, checked_out = found.head, found.branch
    if found.changed is None:  # status could not run: HEAD read alone keeps the refusals in order
        named = run_git(root, "symbolic-ref", "--quiet", "HEAD")
        ref = named.stdout.strip() if named.ok else ""
        checked_out = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
        head = commit_id(root, "HEAD")
    if head is None or checked_out is None:
        return ProjectState(checked_out, head, found.changed, found.why)
    met = run_git(root, "merge-base", head, tip)
    compare_why = None if met.returncode in (0, 1) else met.why()
    base = (met.stdout.strip() or None) if met.ok else None
    return ProjectState(checked_out, head, found.changed, found.why, base, compare_why)


@dataclass(frozen=True)
class _Merge:
    """One merge of the item's branch into the project's: what is merged into what."""

    root: Path
    branch: str
    tip: str  # the branch's commit
    into: str  # the project's checked-out branch
    head: str  # its commit before the merge
    hooks: bool  # the project's hooks run (completion.hooks run)


def _merge(
    root: Path,
    integration: Integration,
    target: IntegrationTarget,
    branch: str,
    tip: str,
    author: Mapping[str, str],
    *,
    hooks: bool,
) -> Integrated:
    """Read the project, let the domain decide (domain/integration.merge_plan), then merge."""
    plan = merge_plan(branch, tip, _project(root, tip), integration.merge)
    if isinstance(plan, Refused):
        raise IntegrationError(plan.why)
    if isinstance(plan, AlreadyMerged):
        return Integrated(plan.words, commit=plan.commit)
    if plan.check_conflicts:
        _refuse_conflicts(root, plan.head, tip, branch, plan.into)
    subject, trailer = merge_message(target.item_id, target.title)
    args = (plan.flag, "--no-edit", "--no-autostash", "-m", subject, "-m", trailer, tip)
    return _merged(
        _Merge(root, branch, tip, plan.into, plan.head, hooks), args, author, integration
    )


def _merged(
    merge: _Merge, args: tuple[str, ...], author: Mapping[str, str], integration: Integration
) -> Integrated:
    """`git merge ARGS`, and what it made; a merge git did not finish is undone."""
    root, branch, into = merge.root, merge.branch, merge.into
    try:
        merged = run_git(root, "merge", *args, env=author, hooks=merge.hooks,
                         timeout=integration.timeout_seconds)  # fmt: skip
    except GitError as error:  # git stopped at its time limit (a hook that hung), or gone
        now, parents = _head_now(root)
        if now is None or now == merge.head:  # stopped before its commit: nothing is made
            _undo_merge(root)
            raise IntegrationError(
                f"{error}; the merge of {branch} into {into} was undone"
            ) from None
        made = _made(merge, now, parents)  # stopped after its commit (a post-merge hook)
        after = f"git merge went on past the time limit of {integration.timeout_seconds:g}s"
        return Integrated(f"{made}; {after} after the merge (a post-merge hook) and was stopped",
                          commit=now)  # fmt: skip
    if not merged.ok:
        _undo_merge(root)
        raise IntegrationError(
            f"git could not merge {branch} into {into}, and the project is as it was: "
            f"{_first_line(merged)}"
        )
    now, parents = _head_now(root)
    if now is None or now == merge.head:
        raise IntegrationError(f"git merged nothing of {branch} into {into}")
    return Integrated(_made(merge, now, parents), commit=now)


def _head_now(root: Path) -> tuple[str | None, list[str]]:
    """The project's HEAD commit after the merge and its parents, in one git command (None:
    git cannot read it)."""
    found = run_git(root, "rev-list", "--parents", "--max-count=1", "HEAD")
    commits = found.stdout.split() if found.ok else []
    return (commits[0], commits[1:]) if commits else (None, [])


def _made(merge: _Merge, now: str, parents: list[str]) -> str:
    """What the merge made of the project's branch, which is at ``now``; IntegrationError when
    that is not this merge (the branch moved some other way)."""
    kind = merge_made(now, parents, head=merge.head, tip=merge.tip)
    if kind is None:
        raise IntegrationError(
            f"the project's branch {merge.into} moved to {now[:SHORT]} while {merge.branch} "
            f"was merged into it, and that is not the merge: look at {merge.into} before you "
            "accept again"
        )
    return f"merged {merge.branch} into {merge.into} as {now[:SHORT]} ({kind})"


def _refuse_conflicts(root: Path, head: str, tip: str, branch: str, into: str) -> None:
    """Refused when merging ``tip`` into ``head`` conflicts, naming the files: found by `git
    merge-tree`, which writes objects but no file of the working tree, no index, no ref."""
    tried = run_git(
        root, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", head, tip
    )
    fields = tried.stdout.split("\0")
    if tried.returncode == 0:
        return
    if tried.returncode != 1 or not COMMIT_ID.fullmatch(fields[0]):
        raise IntegrationError(
            f"git cannot tell whether {branch} merges cleanly into {into}: {tried.why()}"
        )
    files = list(dict.fromkeys(name for name in fields[1:] if name))
    raise IntegrationError(conflict_refusal(branch, into, files))


def _first_line(result: GitResult) -> str:
    """What a failed merge said first: why (git's error, a hook's words); its last line is
    what git would have a person do next, which the abort undid."""
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    return lines[0] if lines else result.why()


def _undo_merge(root: Path) -> None:
    """Put the project back as it was after a merge git did not finish: `git merge --abort`
    when git left a merge under way; otherwise `git reset --merge` (git stopped before it
    wrote MERGE_HEAD, or refused before it began), which keeps untracked files and, since the
    working tree had no change to a tracked file, takes back only what the merge did."""
    if run_git(root, "rev-parse", "--quiet", "--verify", "MERGE_HEAD").ok:
        run_git(root, "merge", "--abort")
    else:
        run_git(root, "reset", "--merge", "--quiet", "HEAD")


def _push(
    root: Path, integration: Integration, branch: str, tip: str, *, hooks: bool
) -> Integrated:
    remote = integration.remote
    listed = run_git(root, "remote")
    if not listed.ok:
        raise IntegrationError(f"cannot list the project's git remotes: {listed.why()}")
    if remote not in listed.stdout.split():
        raise IntegrationError(
            f"the project's repository has no git remote named {remote}: add it (git remote add "
            f"{remote} URL), or set completion.remote"
        )
    ref = f"refs/heads/{branch}"
    # git takes the first remote.<name>.receivepack it reads, the repository's: the command
    # line's wins (docs/work-product.md#what-git-runs).
    pushed: GitResult = run_git(
        root, "push", "--quiet", "--receive-pack=git-receive-pack", remote, f"{ref}:{ref}",
        timeout=integration.timeout_seconds,
        hooks=hooks,
    )  # fmt: skip
    if not pushed.ok:
        raise IntegrationError(f"git could not push {branch} to {remote}: {_push_why(pushed)}")
    return Integrated(f"pushed {branch} to {remote} ({tip[:SHORT]})", commit=tip)


def _push_why(pushed: GitResult) -> str:
    """What git said of a failed push: the ref it rejected and why, or its first fatal line,
    or its last error (git ends with hints, and with "and the repository exists.")."""
    lines = [line.strip() for line in pushed.stderr.splitlines()]
    for starts in ("! ", "fatal:"):
        found = next((line for line in lines if line.startswith(starts)), None)
        if found is not None:
            return found
    errors = [line for line in lines if line.startswith("error:")]
    return errors[-1] if errors else pushed.why()


def _command(
    root: Path,
    integration: Integration,
    target: IntegrationTarget,
    branch: str,
    worktree: Path | None,
    sandbox: SandboxMaker | None,
) -> Integrated:
    # A relative program is the project directory's, never the worktree's (the agent's copy).
    argv = program_from(integration.command, root)
    cwd = worktree or root
    program = one_line(os.path.basename(argv[0]), 80)
    variables = {
        "WRIGHTY_ITEM_ID": str(target.item_id),
        "WRIGHTY_ITEM_TITLE": target.title,
        "WRIGHTY_BRANCH": branch,
        "WRIGHTY_BASE": target.base or "",
        # More than 1: an earlier attempt may have run it (its lander died): docs/landing.md
        "WRIGHTY_INTEGRATION_ATTEMPT": str(target.attempt),
    }
    env = {**os.environ, **variables}
    with tempfile.TemporaryDirectory(prefix="wrighty-integrate-") as logs:
        spec = LaunchSpec(
            argv=argv,
            cwd=cwd,
            env=env,
            task=target.summary,
            log_dir=Path(logs) / "output",
            log_cap_bytes=OUTPUT_CAP_BYTES,
            marker=new_marker(),
            owned=True,
            role="integration command",
            sandbox=sandbox.at(cwd, passed=tuple(variables)) if sandbox else None,
        )
        try:
            process = launch(spec)
        except LaunchError as error:
            raise IntegrationError(f"completion.integrateCommand: {error}") from None
        try:
            status = process.wait(integration.timeout_seconds)
        finally:
            process.stop(grace_seconds=GRACE_SECONDS)  # its tree, or what it left behind
            process.close()
        secrets = secret_values(env)
        stdout = redact_known(_tail(spec.log_dir / "stdout.log"), secrets)
        stderr = redact_known(_tail(spec.log_dir / "stderr.log"), secrets)
    if status is None:
        raise IntegrationError(
            f"the integration command {program} did not finish within "
            f"{integration.timeout_seconds:g}s and was stopped{_said(stderr, stdout)}"
        )
    if status.exit_code != 0:
        ended = (
            f"exited with status {status.exit_code}"
            if status.exit_code is not None
            else f"was killed by signal {status.signal}"
        )
        raise IntegrationError(f"the integration command {program} {ended}{_said(stderr, stdout)}")
    url = last_url(stdout)
    shown = printable_line(url) if url is not None else None
    return Integrated(f"ran {program}: {shown}" if shown else f"ran {program}", url=shown)


def _tail(path: Path) -> str:
    """The last OUTPUT_TAIL_BYTES of a log file, as text ("" when there is none)."""
    try:
        with path.open("rb") as file:
            file.seek(max(0, path.stat().st_size - OUTPUT_TAIL_BYTES))
            return file.read(OUTPUT_TAIL_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _said(stderr: str, stdout: str) -> str:
    """The command's last line (of stderr, else stdout), as a message's end."""
    lines = [line for line in (stderr or stdout).splitlines() if line.strip()]
    if not lines and stderr:
        lines = [line for line in stdout.splitlines() if line.strip()]
    return f": {lines[-1]}" if lines else ""
