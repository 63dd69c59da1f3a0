"""Turning an agent name into what to run: the adapter, its argv, its environment.

Only the `command` adapter runs today; the vendor adapters (claude, codex, gemini) arrive with
the vendor issue and are refused with a clear reason until then.
"""

from __future__ import annotations

from dataclasses import dataclass

from wrighty.config import AgentSettings, WrightyConfig
from wrighty.errors import WrightyError

RUNNABLE_ADAPTERS = frozenset({"command"})


@dataclass(frozen=True)
class AgentPlan:
    name: str
    adapter: str
    argv: tuple[str, ...]
    resume_argv: tuple[str, ...] | None
    env: dict[str, str]


def plan_agent(config: WrightyConfig, name: str) -> AgentPlan:
    """How to run agent ``name``; WrightyError when it is unknown or cannot run yet."""
    if name not in config.agent_names():
        known = ", ".join(config.agent_names())
        raise WrightyError(f"unknown agent {name!r} (known: {known}); see docs/config.md")
    settings = config.agents.get(name) or AgentSettings.model_validate({})
    adapter = settings.adapter_for(name)
    if adapter not in RUNNABLE_ADAPTERS:
        raise WrightyError(
            f"agent {name!r} uses the {adapter} adapter, which this version cannot run yet; "
            'declare a command agent: "agents": {"NAME": {"adapter": "command", '
            '"command": ["prog", "arg"]}}'
        )
    if not settings.command:
        raise WrightyError(
            f"agent {name!r} uses the command adapter but has no command; set "
            f'agents.{name}.command in wrighty.json, e.g. ["python3", "agent.py"]'
        )
    return AgentPlan(
        name=name,
        adapter=adapter,
        argv=(*settings.command, *settings.args),
        resume_argv=(*settings.resume_command, *settings.args) if settings.resume_command else None,
        env=dict(settings.env),
    )
