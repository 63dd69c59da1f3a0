"""The sandboxes wrighty.json gives a project's programs, made on this machine
(docs/sandbox.md): a worker's agent runs, and the checks and integration commands that
whoever lands, verifies or accepts an item runs (a worker, `wrighty verify`, `accept`,
`land`, the console). One rule for all of them: a configured sandbox that cannot start here
refuses the command before anything runs, with one line that says how to fix it. Nothing runs
unsandboxed when a sandbox was asked for."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from wrighty.config import STATE_DIRNAME, WrightyConfig, sandbox_profile
from wrighty.config.translate import check_sandbox_profile
from wrighty.domain.sandbox import Profile
from wrighty.errors import WrightyError
from wrighty.supervisor.sandboxing import SandboxMaker, sandbox_problem
from wrighty.workproduct.gitdirs import git_places

# What a sandboxed check gets of wrighty's own variables besides the profile's.
CHECK_VARIABLES = ("WRIGHTY_ITEM_ID", "WRIGHTY_RUN_ID", "WRIGHTY_CHECK_NAME")
# A setting's choice: the setting's name in wrighty.json and its profile; None: no sandbox.
Chosen = tuple[str, Profile] | None
# Each agent's checks' sandbox, by the agent's name (CheckSandboxes.of).
ChecksIn = Callable[[str], SandboxMaker | None]


@dataclass(frozen=True)
class Around:
    """What every sandbox of a project is made around: the project, its state folder (hidden),
    wrighty.json (read-only), a SQLite store's file (hidden) and the person's home."""

    project_root: Path
    config_path: Path | None
    sqlite_path: Path | None
    home: Path = field(default_factory=lambda: Path(os.environ.get("HOME") or Path.home()))

    @property
    def state_dir(self) -> Path:
        return self.project_root / STATE_DIRNAME


def sandbox_refusal(setting: str, program: str, problem: str) -> str:
    """The line that says a sandbox cannot start here, and what to do about it."""
    return (
        f"{setting}: bubblewrap {program!r} {problem}; install it (Debian: apt-get install "
        f'bubblewrap), set {setting}.program to its path, or set {setting} to "none" to run '
        "unsandboxed (docs/sandbox.md)"
    )


def make_sandbox(
    chosen: Chosen,
    around: Around,
    *,
    writable: tuple[Path, ...] = (),
    probe: Callable[[str], str | None] = sandbox_problem,
) -> SandboxMaker | None:
    """The sandbox ``chosen`` describes, once it was seen to start here (``probe`` starts a
    sandboxed no-op); WrightyError when it cannot. ``writable``: more paths written in it (a
    vendor's session state)."""
    if chosen is None:
        return None
    setting, profile = chosen
    problem = probe(profile.program)
    if problem is not None:
        raise WrightyError(sandbox_refusal(setting, profile.program, problem))
    hidden: tuple[Path, ...] = ()
    if around.sqlite_path is not None:
        database = around.sqlite_path.absolute()
        hidden = tuple(Path(f"{database}{suffix}") for suffix in ("", "-wal", "-shm", "-journal"))
    return SandboxMaker(
        profile,
        setting,
        project_root=around.project_root,
        state_dir=around.state_dir,
        home=around.home,
        read_only=(around.config_path,) if around.config_path is not None else (),
        hidden=hidden,
        writable=writable,
        git_of=git_places,
    )


class CheckSandboxes:
    """The sandbox the checks and the integration command of each agent's items run in
    (verify.sandbox: the agent's by default), made once per agent. Made, it has started every
    sandbox they could need on this machine, so that no landing finds out half way."""

    def __init__(
        self,
        config: WrightyConfig,
        around: Around,
        *,
        probe: Callable[[str], str | None] = sandbox_problem,
    ) -> None:
        self._config = config
        self._around = around
        self._made: dict[str, SandboxMaker | None] = {}
        self._started: dict[str, str | None] = {}
        self._probe = probe
        agents = {config.worker.default_agent, *config.agents}
        for agent in sorted(agents):
            self.of(agent)

    def of(self, agent: str) -> SandboxMaker | None:
        """The checks' sandbox of ``agent``'s items (None: they run as wrighty); "" is the
        default agent's (an item that names no agent is its)."""
        agent = agent or self._config.worker.default_agent
        if agent not in self._made:
            chosen = check_sandbox_profile(self._config, agent)
            self._made[agent] = make_sandbox(chosen, self._around, probe=self._started_once)
        return self._made[agent]

    def _started_once(self, program: str) -> str | None:
        if program not in self._started:
            self._started[program] = self._probe(program)
        return self._started[program]


def agent_sandbox(
    config: WrightyConfig,
    agent: str,
    around: Around,
    *,
    writable: tuple[Path, ...] = (),
    probe: Callable[[str], str | None] = sandbox_problem,
) -> SandboxMaker | None:
    """The sandbox ``agent``'s runs start in (agents.<name>.sandbox or worker.sandbox)."""
    return make_sandbox(sandbox_profile(config, agent), around, writable=writable, probe=probe)
