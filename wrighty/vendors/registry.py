"""Every adapter by name: the built-in ones (the vendor CLIs, the command adapter) and those
installed packages add through the `wrighty.agents` entry point group (docs/vendors.md, "An
adapter of your own").

The built-in names are domain/adapters.py's one list; a test keeps the two in step.
"""

from __future__ import annotations

from wrighty.domain.adapters import ADAPTERS
from wrighty.plugins import AGENT_ADAPTERS, PluginError, load_plugin, plugin_names
from wrighty.vendors.base import AgentAdapter, Vendor
from wrighty.vendors.claude import Claude
from wrighty.vendors.codex import Codex
from wrighty.vendors.command import CommandAdapter
from wrighty.vendors.gemini import Gemini

VENDORS: dict[str, Vendor] = {vendor.name: vendor for vendor in (Claude(), Codex(), Gemini())}
COMMAND = CommandAdapter()
BUILT_IN: dict[str, AgentAdapter] = {**VENDORS, COMMAND.name: COMMAND}


def agent_adapter(name: str) -> AgentAdapter:
    """The adapter called ``name``: a built-in one, else an installed plugin's (PluginError,
    one line, when it is unknown or broken)."""
    found = BUILT_IN.get(name)
    if found is not None:
        return found
    loaded = load_plugin(AGENT_ADAPTERS, name)
    if loaded is None:
        known = ", ".join((*ADAPTERS, *plugin_names(AGENT_ADAPTERS)))
        raise PluginError(f"unknown adapter {name!r} (known: {known})")
    adapter = loaded() if isinstance(loaded, type) else loaded
    if not isinstance(adapter, AgentAdapter):
        raise PluginError(
            f"plugin {name!r} (entry point group {AGENT_ADAPTERS}) is not an agent adapter: "
            f"{type(adapter).__name__} lacks what wrighty.vendors.base.AgentAdapter asks"
        )
    if adapter.name != name:
        raise PluginError(
            f"plugin {name!r} (entry point group {AGENT_ADAPTERS}) names itself "
            f"{adapter.name!r}: the entry point's name and the adapter's must be the same"
        )
    return adapter
