"""Whether each agent's sandbox starts on this machine, as `wrighty agents` tells it
(docs/sandbox.md, "Is it working?"): the bubblewrap program probed once per program, and with
``check`` a sandboxed `true` started through the worker's own SandboxMaker, with every mount
of a real run."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from wrighty.agents import AgentPlan
from wrighty.config import WrightyConfig, sandbox_profile
from wrighty.domain.sandbox import SandboxStatus
from wrighty.services.sandboxes import Around
from wrighty.store import StoreTarget
from wrighty.supervisor.sandboxing import sandbox_problem, sandboxed_start_problem
from wrighty.worker.preflight import sandbox_maker


def agent_sandboxes(
    config: WrightyConfig,
    plans: Sequence[AgentPlan],
    *,
    check: bool,
    project_root: Path,
    state_dir: Path,
    config_path: Path | None,
    store: StoreTarget | None,
) -> list[SandboxStatus | None]:
    """Each plan's sandbox (None: it runs unsandboxed) and whether it starts here."""
    chosen = [sandbox_profile(config, plan.name) for plan in plans]
    programs = sorted({pick[1].program for pick in chosen if pick is not None})
    problems = {program: sandbox_problem(program) for program in programs}
    statuses: list[SandboxStatus | None] = []
    for plan, pick in zip(plans, chosen, strict=True):
        if pick is None:
            statuses.append(None)
            continue
        setting, profile = pick
        problem = problems[profile.program]
        if check and problem is None:
            sqlite = store.sqlite_path if store is not None else None
            around = Around(project_root, config_path, sqlite)
            maker = sandbox_maker(config, plan, around)
            assert maker is not None  # a profile was chosen
            with _workspace(config, project_root, state_dir) as workspace:
                problem = sandboxed_start_problem(maker.at(workspace), os.environ)
        statuses.append(SandboxStatus(setting, profile, problem, checked=check))
    return statuses


@contextlib.contextmanager
def _workspace(config: WrightyConfig, project_root: Path, state_dir: Path) -> Iterator[Path]:
    """Where the check's `true` starts, as an item's workspace would be: the project's folder
    in current mode; in worktree mode a fresh folder in the state folder (as a worktree is),
    removed afterwards, with the state folder if it made it (a PostgreSQL store's project may
    have none before its worker's first run)."""
    if config.worker.workspace_mode == "current":
        yield project_root
        return
    made = not state_dir.exists()
    state_dir.mkdir(mode=0o700, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(dir=state_dir, prefix="sandbox-check-") as folder:
            yield Path(folder)
    finally:
        if made:
            with contextlib.suppress(OSError):
                state_dir.rmdir()
