"""Turning an agent name into what to run: the adapter, its argv, its environment.

Every agent runs through an adapter found by name (vendors/registry.py): a vendor adapter
(claude, codex, gemini), which knows its CLI's flags, session ids, transcripts and output; the
`command` adapter, which runs any program (exit 0 = success) with an optional resume command;
or an adapter an installed package adds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wrighty.config import AgentSettings, WrightyConfig
from wrighty.domain.classify import Classification, RunFacts, StopReason, classify_exit
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.redact import redact
from wrighty.errors import WrightyError
from wrighty.supervisor.process import LaunchError, LaunchSpec, launch
from wrighty.vendors.base import (
    AgentAdapter,
    AgentProgram,
    Permission,
    Reader,
    Vendor,
    VendorError,
)
from wrighty.vendors.registry import agent_adapter


@dataclass(frozen=True)
class AgentPlan:
    name: str
    adapter: str
    executable: str
    env: dict[str, str]
    vendor: AgentAdapter  # as the agent's settings configure it
    args: tuple[str, ...] = ()
    permission: Permission = "workspace"
    resume: bool = True
    # wrighty's own sandbox encloses the agent: a vendor's own sandbox is turned off inside it
    # (docs/vendors.md, "The vendors' own sandboxes").
    enclosed: bool = False

    @property
    def can_resume(self) -> bool:
        return self.resume and self.vendor.resumable

    @property
    def preassigns_session(self) -> bool:
        """True when wrighty chooses the session id (the command adapter's WRIGHTY_SESSION_ID,
        Claude's --session-id); otherwise the vendor's output tells it."""
        return self.vendor.preassigns_session

    def permission_flags(self) -> tuple[str, ...]:
        if self.enclosed:
            return self.vendor.flags(self.permission, enclosed=True)
        return self.vendor.flags(self.permission)

    def start_argv(
        self, session_id: str | None, *, max_cost_usd: float | None = None
    ) -> tuple[str, ...]:
        """A fresh run (VendorError for a session id that could pass as a flag);
        ``max_cost_usd``: what is left of the item's budget, for a CLI that can stop itself."""
        fixed = session_id if self.vendor.preassigns_session else None
        return tuple(self.vendor.start_argv(self.executable, fixed, self._extra(max_cost_usd)))

    def resume_argv(self, session_id: str, *, max_cost_usd: float | None = None) -> tuple[str, ...]:
        extra = self._extra(max_cost_usd)
        return tuple(self.vendor.resume_argv(self.executable, session_id, extra))

    def _extra(self, max_cost_usd: float | None) -> tuple[str, ...]:
        """wrighty's flags, then the user's own arguments (which come last, so they win)."""
        budget = self.vendor.budget_flags(max_cost_usd) if max_cost_usd is not None else ()
        return (*self.permission_flags(), *budget, *self.args)

    @property
    def sandbox_variables(self) -> tuple[str, ...]:
        """The worker's variables its sandbox passes in by name: the vendor CLI's own, for its
        authentication, its provider and its state (none for a command agent)."""
        return self.vendor.sandbox_variables if isinstance(self.vendor, Vendor) else ()

    def sandbox_problem(self, env: Mapping[str, str]) -> str | None:
        """Why the vendor's own sandbox cannot work for this agent under ``env`` (the worker's
        environment plus the agent's), or None."""
        if not isinstance(self.vendor, Vendor):
            return None
        return self.vendor.sandbox_problem(self.permission, env, enclosed=self.enclosed)

    def transcript_problem(
        self, session_id: str, workspace: Path, env: Mapping[str, str]
    ) -> str | None:
        """Why the session's local transcript cannot back a resume, or None when it can (or
        when the adapter keeps none)."""
        return self.vendor.transcript_problem(session_id, workspace, env)

    def reader(self) -> Reader | None:
        return self.vendor.reader()


def plan_agent(config: WrightyConfig, name: str, *, project_root: Path | None = None) -> AgentPlan:
    """How to run agent ``name``; WrightyError when it is unknown or cannot run. A relative
    program path (``./agent.sh``) means one in ``project_root``, the folder of wrighty.json,
    whatever folder the agent works in."""
    if name not in config.agent_names():
        known = ", ".join(config.agent_names())
        raise WrightyError(f"unknown agent {name!r} (known: {known}); see docs/config.md")
    settings = config.agents.get(name) or AgentSettings.model_validate({})
    adapter = settings.adapter_for(name)
    written = AgentProgram(
        executable=settings.executable,
        command=_with_program(settings.command, project_root),
        resume_command=_with_program(settings.resume_command, project_root) or None,
    )
    found = agent_adapter(adapter)
    try:
        executable = _program(found.program(written), project_root)
        configured = found.configured(written)
    except VendorError as error:
        raise WrightyError(f"agent {name!r} {error}; {_fix(found, name)}") from None
    return AgentPlan(
        name=name,
        adapter=adapter,
        executable=executable,
        env=dict(settings.env),
        vendor=configured,
        args=tuple(settings.args),
        permission=settings.permission,
        resume=settings.resume,
    )


def configured_plans(config: WrightyConfig, *, project_root: Path | None = None) -> list[AgentPlan]:
    """The agents wrighty.json gives a program to run, planned: every known name but one whose
    adapter lacks its program (the built-in ``command`` without an entry)."""
    plans = []
    for name in config.agent_names():
        try:
            plans.append(plan_agent(config, name, project_root=project_root))
        except WrightyError:
            continue
    return plans


def configured_agents(config: WrightyConfig, *, project_root: Path | None = None) -> list[str]:
    """The names of ``configured_plans``: the agents `wrighty handoff --to` takes."""
    return [plan.name for plan in configured_plans(config, project_root=project_root)]


def program_found(plan: AgentPlan) -> str | None:
    """Where the agent's program is on this machine, or None when it is not found: a path
    (absolute, or the project's, as ``plan_agent`` made it) that is an executable file; a bare
    name on the agent's PATH (its ``env``'s, else wrighty's). The one rule `wrighty agents`
    and the handoff choices ask."""
    return shutil.which(plan.executable, path=plan.env.get("PATH", os.environ.get("PATH")))


def offered_agents(config: WrightyConfig, *, project_root: Path | None = None) -> list[str]:
    """The agents an item may be handed to from here (the console's and the inbox's
    choices): configured, and their program found on this machine (docs/handoff.md)."""
    plans = configured_plans(config, project_root=project_root)
    return [plan.name for plan in plans if program_found(plan) is not None]


def _fix(adapter: AgentAdapter, name: str) -> str:
    example = ', e.g. ["python3", "agent.py"]' if adapter.program_setting == "command" else ""
    return f"set agents.{name}.{adapter.program_setting} in wrighty.json{example}"


def _program(executable: str, project_root: Path | None) -> str:
    """``executable`` as it is started from any folder: a relative path that names a folder
    (``./agent.sh``, ``bin/agent``) is taken from the project; a bare name stays one, for the
    PATH lookup."""
    if project_root is None or os.sep not in executable or os.path.isabs(executable):
        return executable
    return str(project_root / executable)


def _with_program(argv: list[str] | None, project_root: Path | None) -> tuple[str, ...]:
    if not argv:
        return ()
    return (_program(argv[0], project_root), *argv[1:])


# -- `wrighty agents`: what is installed, and a real probe ------------------------------------

VERSION_TIMEOUT_SECONDS = 15.0
PROBE_TIMEOUT_SECONDS = 180.0
PROBE_TASK = "Reply with the single word: ok. Do not use any tools."


@dataclass(frozen=True)
class AgentInfo:
    plan: AgentPlan
    path: str | None  # where the executable was found, None when it was not
    version: str | None


def describe_agent(plan: AgentPlan) -> AgentInfo:
    """Whether the agent's program is installed, and its version (the last line that
    `--version` prints: some CLIs print a notice first)."""
    env = {**os.environ, **plan.env}
    path = program_found(plan)
    argv = plan.vendor.version_argv(path) if path is not None else None
    if path is None or argv is None:
        return AgentInfo(plan, path, None)
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            timeout=VERSION_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return AgentInfo(plan, path, None)
    lines = done.stdout.decode(errors="replace").strip().splitlines()
    return AgentInfo(plan, path, redact(lines[-1]) if done.returncode == 0 and lines else None)


def probe_agent(
    plan: AgentPlan, *, timeout_seconds: float = PROBE_TIMEOUT_SECONDS
) -> Classification:
    """Run the agent once for real, as a worker would (same argv, same reader), on a one-line
    task in an empty scratch folder, and classify how it ended. May spend usage."""
    reader = plan.reader()
    with tempfile.TemporaryDirectory(prefix="wrighty-probe-") as scratch:
        folder = Path(scratch)
        (folder / "work").mkdir()
        session_id = str(uuid.uuid4()) if plan.preassigns_session else None
        env = {
            **os.environ,
            **plan.env,
            **({"WRIGHTY_SESSION_ID": session_id} if session_id else {}),
        }
        spec = LaunchSpec(
            argv=plan.start_argv(session_id),
            cwd=folder / "work",
            env=env,
            task=PROBE_TASK,
            log_dir=folder / "logs",
            on_line=reader.feed if reader else None,
        )
        try:
            agent = launch(spec)
        except LaunchError as error:
            return Classification(OutcomeClass.START_FAILED, Confidence.AUTHORITATIVE, str(error))
        status = agent.wait(timeout_seconds)
        stopped_by = StopReason.TIMEOUT if status is None else None
        agent.stop(grace_seconds=5)
        agent.close()
        status = agent.status
        assert status is not None
        vendor = reader.classify(status.exit_code) if reader else None
        return classify_exit(RunFacts(status.exit_code, status.signal, stopped_by, vendor=vendor))
