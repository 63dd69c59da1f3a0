"""The base of every wrighty.json section's model, and the rules they share."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

# An environment variable's name, as a sink's env, a sandbox's env or an agent's env name it.
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"


class Section(BaseModel):
    """A section of wrighty.json: camelCase keys, strict types, nothing unknown, frozen."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        alias_generator=to_camel,
        validate_by_name=False,
        validate_by_alias=True,
    )
