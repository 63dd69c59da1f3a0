"""What a worker checks before its loop starts: that its agent and its items' checks are
programs it can start, that in worktree mode its items' branches have a base, and that
`--item N` names an item it could claim. Each refusal is one `WrightyError` line."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path

from wrighty.agents import AgentPlan
from wrighty.config import WrightyConfig, check_program_problems, sandbox_profile
from wrighty.domain.claims import not_claimable_reason
from wrighty.domain.work_product import Completion
from wrighty.errors import WrightyError
from wrighty.services.items import require_item
from wrighty.store import StoreTarget
from wrighty.store.port import Store
from wrighty.supervisor.process import executable_problem
from wrighty.supervisor.sandboxing import SandboxMaker, sandbox_problem
from wrighty.vendors.base import Vendor
from wrighty.workproduct.gitdirs import git_places
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
    config: WrightyConfig,
    plan: AgentPlan,
    *,
    project_root: Path,
    state_dir: Path,
    config_path: Path | None,
    store: StoreTarget | None,
) -> SandboxMaker | None:
    """The sandbox the worker's agent and its checks run in (None: none configured). One
    that cannot start on this machine refuses the worker: never silently unsandboxed."""
    maker = sandbox_maker(
        config, plan, project_root=project_root, state_dir=state_dir,
        config_path=config_path, store=store,
    )  # fmt: skip
    if maker is None:
        return None
    problem = sandbox_problem(maker.profile.program)
    if problem is not None:
        raise WrightyError(sandbox_refusal(maker.setting, maker.profile.program, problem))
    return maker


def sandbox_refusal(setting: str, program: str, problem: str) -> str:
    """The line that says a sandbox cannot start here, and what to do about it."""
    return (
        f"{setting}: bubblewrap {program!r} {problem}; install it (Debian: apt-get install "
        f'bubblewrap), set {setting}.program to its path, or set {setting} to "none" to run '
        "unsandboxed (docs/sandbox.md)"
    )


def sandbox_maker(
    config: WrightyConfig,
    plan: AgentPlan,
    *,
    project_root: Path,
    state_dir: Path,
    config_path: Path | None,
    store: StoreTarget | None,
) -> SandboxMaker | None:
    """The sandbox ``plan``'s runs and checks get, with every mount a worker's has (the
    project, its hidden state folder and store, the home folder and its secrets, the
    vendor's state); None: none configured. It does not ask whether it starts."""
    chosen = sandbox_profile(config, plan.name)
    if chosen is None:
        return None
    setting, profile = chosen
    home = Path(os.environ.get("HOME") or Path.home())
    hidden: tuple[Path, ...] = ()
    if store is not None and store.sqlite_path is not None:
        database = store.sqlite_path.absolute()
        hidden = tuple(Path(f"{database}{suffix}") for suffix in ("", "-wal", "-shm", "-journal"))
    vendor = vendor_state(plan)
    return SandboxMaker(
        profile,
        setting,
        project_root=project_root,
        state_dir=state_dir,
        home=home,
        read_only=(config_path,) if config_path is not None else (),
        hidden=hidden,
        writable=vendor,
        git_of=git_places,
    )


def vendor_state(plan: AgentPlan) -> tuple[Path, ...]:
    """What the agent's vendor CLI writes for its sessions (docs/vendors.md), writable in the
    sandbox: its folders, made when missing (the CLI would make them at its first run); a file
    it has not made yet is left out (the CLI cannot make it inside: docs/sandbox.md)."""
    if not isinstance(plan.vendor, Vendor):
        return ()
    places = []
    for state in plan.vendor.state_paths({**os.environ, **plan.env}):
        if state.folder:
            state.path.mkdir(parents=True, exist_ok=True)
        elif not state.path.exists():
            continue
        places.append(state.path)
    return tuple(places)


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
