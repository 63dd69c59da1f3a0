"""An agent's adapter name in wrighty.json: a built-in adapter's (`domain/adapters.py`) or one an
installed package adds through its entry point (`wrighty/plugins.py`), looked up, never loaded,
when the config is read; the JSON Schema offers the built-in ones."""

from __future__ import annotations

from typing import Annotated

from pydantic import PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from wrighty.domain.adapters import ADAPTERS


def is_adapter_name(name: str) -> bool:
    """True for a built-in adapter's name or one an installed package adds (its entry point,
    vendors/registry.py), which is only looked up for a name that is not built in."""
    from wrighty.plugins import AGENT_ADAPTERS, plugin_names

    return name in ADAPTERS or name in plugin_names(AGENT_ADAPTERS)


def _adapter_name(value: object) -> str:
    if isinstance(value, str) and is_adapter_name(value):
        return value
    from wrighty.plugins import AGENT_ADAPTERS, plugin_names

    names = [repr(name) for name in (*ADAPTERS, *plugin_names(AGENT_ADAPTERS))]
    expected = f"{', '.join(names[:-1])} or {names[-1]}"
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


# The schema offers the built-in adapters; an installed plugin's name is valid too.
AdapterName = Annotated[
    str,
    PlainValidator(_adapter_name),
    WithJsonSchema({"enum": list(ADAPTERS), "type": "string"}),
]
