"""What a worker checks before its loop starts: that its agent and its items' checks are
programs it can start, that in worktree mode its items' branches have a base, and that
`--item N` names an item it could claim. Each refusal is one `WrightyError` line."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path

from wrighty.agents import AgentPlan
from wrighty.config import WrightyConfig, check_program_problems
from wrighty.domain.claims import not_claimable_reason
from wrighty.domain.work_product import Completion
from wrighty.errors import WrightyError
from wrighty.services.items import require_item
from wrighty.services.sandboxes import Around, agent_sandbox
from wrighty.store.port import Store
from wrighty.supervisor.process import executable_problem
from wrighty.supervisor.sandboxing import SandboxMaker
from wrighty.vendors.base import Vendor
from wrighty.workproduct.runner import GitError
from wrighty.workproduct.worktree import resolve_base


def refuse_unrunnable(plan: AgentPlan) -> None:
    """The worker's agent must be a program it can start (on the worker's own PATH)."""
    problem = executable_problem(plan.executable, None)
    if problem is None:
        return
    fix = f"; install it or set agents.{plan.name}.{plan.vendor.program_setting} in wrighty.json"
    raise WrightyError(
        f"agent {plan.name!r}: executable {problem}" + (fix if "not found" in problem else "")
    )


def sandbox_or_refuse(
    config: WrightyConfig, plan: AgentPlan, around: Around
) -> SandboxMaker | None:
    """The sandbox the worker's agent runs in (None: none configured), its vendor's session
    state writable in it. One that cannot start on this machine refuses the worker: never
    silently unsandboxed."""
    return agent_sandbox(config, plan.name, around, writable=vendor_state(plan))


def sandbox_maker(config: WrightyConfig, plan: AgentPlan, around: Around) -> SandboxMaker | None:
    """The sandbox ``plan``'s runs get, with every mount a worker's has (the project, its
    hidden state folder and store, the home folder and its secrets, the vendor's state); None:
    none configured. It does not ask whether it starts."""
    return agent_sandbox(
        config, plan.name, around, writable=vendor_state(plan), probe=lambda _: None
    )


def vendor_state(plan: AgentPlan) -> tuple[Path, ...]:
    """What the agent's vendor CLI writes for its sessions (docs/vendors.md), writable in the
    sandbox: its folders, made when missing (the CLI would make them at its first run). A
    single file stays as it is: a CLI replaces it, writing a new file beside it and renaming
    it over, which neither a read-only folder nor a mount on the file allows (Claude Code's
    ~/.claude.json, docs/sandbox.md#the-vendors)."""
    if not isinstance(plan.vendor, Vendor):
        return ()
    states = plan.vendor.state_paths({**os.environ, **plan.env})
    folders = [state.path for state in states if state.folder]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    return tuple(folders)


def refuse_broken_vendor_sandbox(plan: AgentPlan, environ: Mapping[str, str]) -> None:
    """The vendor's own sandbox must be able to run the agent's commands: one that cannot
    would fail each of them while the run goes on (docs/vendors.md, "The vendors' own
    sandboxes"). ``environ`` is the worker's environment, to which the agent's env adds."""
    problem = plan.sandbox_problem({**environ, **plan.env})
    if problem is not None:
        raise WrightyError(f"agent {plan.name!r}: {problem}")


def refuse_no_base(mode: str, project_root: Path, completion: Completion) -> None:
    """In worktree mode, every item's branch starts from completion.base (or HEAD): it must
    name a commit of the project's repository, or no claim could start."""
    if mode != "worktree":
        return
    try:
        resolve_base(project_root, completion)
    except GitError as error:
        raise WrightyError(str(error)) from None


def refuse_missing_checks(config: WrightyConfig, agent: str) -> None:
    """The checks the worker's items run must be programs it can start, as its agent must."""
    problems = check_program_problems(config, agent=agent)
    if not problems:
        return
    first = problems[0]
    fix = "install it or change" if "not found" in first.message else "change"
    more = len(problems) - 1
    suffix = f" (and {more} more; `wrighty config validate` lists them)" if more else ""
    raise WrightyError(f"{first.message}; {fix} {first.path} in wrighty.json{suffix}")


def refuse_unclaimable(
    store: Store, item_id: int, *, agent: str, default_agent: str, now: Callable[[], datetime]
) -> None:
    """`--item N` names an item this worker could claim (now or when it is due)."""
    item = require_item(store, item_id)
    why = not_claimable_reason(item, agent=agent, default_agent=default_agent, now=now())
    if why is not None:
        raise WrightyError(why)
