"""wrighty.json's sandbox settings (worker.sandbox, agents.<name>.sandbox): "none" or a
bubblewrap profile; verify.sandbox (the checks' and the integration command's): "agent" too
(docs/sandbox.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Discriminator, Field, Tag

from wrighty.config.section import ENV_NAME_PATTERN
from wrighty.config.section import Section as _Section

MAX_SANDBOX_PATHS = 64
MAX_SANDBOX_PATH_CHARS = 4096


def _sandbox_path(value: str) -> str:
    if "\x00" in value or not (value.startswith("/") or value.startswith("~/")):
        raise ValueError("must be an absolute path or start with ~/ (the home folder)")
    return value


SandboxPath = Annotated[
    str,
    Field(
        min_length=2, max_length=MAX_SANDBOX_PATH_CHARS, json_schema_extra={"pattern": "^(/|~/)"}
    ),
    AfterValidator(_sandbox_path),
]


class BubblewrapProfile(_Section):
    """An agent's (and its checks') sandbox: bubblewrap (docs/sandbox.md)."""

    kind: Literal["bubblewrap"] = Field(..., description="The sandbox: bubblewrap (bwrap).")
    program: str = Field(
        "bwrap",
        min_length=1,
        max_length=MAX_SANDBOX_PATH_CHARS,
        description="The bubblewrap program: a name looked up on the worker's PATH, or a path.",
    )
    network: Literal["host", "none"] = Field(
        "host",
        description="host: the machine's network (agents need their provider); none: no "
        "network at all, not even loopback.",
    )
    hide: list[SandboxPath] = Field(
        default_factory=list,
        max_length=MAX_SANDBOX_PATHS,
        description="More paths the sandbox does not show (absolute, or ~/ for the home "
        "folder), besides the secrets it always hides.",
    )
    writable: list[SandboxPath] = Field(
        default_factory=list,
        max_length=MAX_SANDBOX_PATHS,
        description="More paths the sandbox may write (absolute, or ~/), such as caches; "
        "each must exist when a run starts.",
    )
    env: list[Annotated[str, Field(pattern=ENV_NAME_PATTERN)]] = Field(
        default_factory=list,
        max_length=MAX_SANDBOX_PATHS,
        description="More of the worker's environment variables passed in, by name, besides "
        "PATH, HOME, the locale, the terminal, the agent's env, the run's own and, to a vendor "
        "agent's runs, its CLI's key, provider and state variables.",
    )


def _sandbox_form(value: Any) -> str | None:
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict | BaseModel):
        return "object"
    return None


SandboxSetting = Annotated[
    Annotated[Literal["none"], Tag("string")] | Annotated[BubblewrapProfile, Tag("object")],
    Discriminator(
        _sandbox_form,
        custom_error_type="sandbox_form",
        custom_error_message='must be "none" or an object with kind "bubblewrap"',
    ),
]


# verify.sandbox: where checks and the integration command run. "agent" (the default): in
# the item's agent's sandbox; "none": as wrighty; or a profile of their own.
CheckSandboxSetting = Annotated[
    Annotated[Literal["agent", "none"], Tag("string")]
    | Annotated[BubblewrapProfile, Tag("object")],
    Discriminator(
        _sandbox_form,
        custom_error_type="sandbox_form",
        custom_error_message='must be "agent", "none" or an object with kind "bubblewrap"',
    ),
]
