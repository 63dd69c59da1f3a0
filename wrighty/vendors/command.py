"""The command adapter: any program, run as the agent (docs/config.md#agents).

Exit 0 is success; there is no output to read and no transcript. wrighty chooses the session id
and hands it over as WRIGHTY_SESSION_ID (the worker sets it), so a program that keeps sessions
resumes with ``resumeCommand``, which gets the follow-up prompt on stdin like the task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wrighty.vendors.base import AgentProgram, Permission, Reader, VendorError


@dataclass(frozen=True)
class CommandAdapter:
    """The adapter unconfigured (``command`` empty) or as one agent's settings make it."""

    name = "command"
    preassigns_session = True
    program_setting = "command"
    takes_permission = False
    command: tuple[str, ...] = ()
    resume_command: tuple[str, ...] | None = None

    def program(self, written: AgentProgram) -> str:
        if not written.command:
            raise VendorError("uses the command adapter but has no command")
        return written.command[0]

    def configured(self, written: AgentProgram) -> CommandAdapter:
        self.program(written)
        return CommandAdapter(written.command, written.resume_command)

    @property
    def resumable(self) -> bool:
        return self.resume_command is not None

    def flags(self, permission: Permission, *, enclosed: bool = False) -> tuple[str, ...]:
        return ()

    def budget_flags(self, max_cost_usd: float) -> tuple[str, ...]:
        return ()

    def start_argv(
        self, executable: str, session_id: str | None, extra: Sequence[str]
    ) -> list[str]:
        """The agent's command (its program as ``executable``) and ``extra``, the user's own
        arguments; the session id reaches the program as WRIGHTY_SESSION_ID."""
        return [executable, *self.command[1:], *extra]

    def resume_argv(self, executable: str, session_id: str, extra: Sequence[str]) -> list[str]:
        if self.resume_command is None:
            raise VendorError("has no resumeCommand: its sessions cannot be resumed")
        return [*self.resume_command, *extra]

    def transcript_problem(
        self, session_id: str, workspace: Path, env: Mapping[str, str]
    ) -> str | None:
        return None  # wrighty keeps no transcript of a program it does not know

    def reader(self) -> Reader | None:
        return None

    def version_argv(self, path: str) -> list[str] | None:
        return None  # any program: `--version` may mean something else to it
