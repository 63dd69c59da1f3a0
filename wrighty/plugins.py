"""Adapters other packages add, through Python entry points (docs/vendors.md, "An adapter of
your own").

A group's names are read from the installed packages' metadata without importing anything; an
entry point is loaded only when its name is asked for, so a broken plugin troubles only the
agent that uses it, with one line that says which plugin and why.
"""

from __future__ import annotations

from wrighty.errors import WrightyError

AGENT_ADAPTERS = "wrighty.agents"


class PluginError(WrightyError):
    """An installed plugin could not be loaded, or is not what its group takes."""


def plugin_names(group: str) -> tuple[str, ...]:
    """The names the installed packages declare in entry point ``group``, sorted."""
    from importlib.metadata import entry_points

    return tuple(sorted({found.name for found in entry_points(group=group)}))


def load_plugin(group: str, name: str) -> object | None:
    """What entry point ``name`` of ``group`` names (None when no package declares it);
    PluginError, one line, when importing it fails."""
    from importlib.metadata import entry_points

    found = entry_points(group=group, name=name)
    if not found:
        return None
    point = next(iter(found))
    try:
        loaded: object = point.load()
    except Exception as error:  # a plugin's import may fail in any way: it is reported, whole
        why = " ".join(f"{type(error).__name__}: {error}".split())
        raise PluginError(
            f"plugin {name!r} ({point.value}, entry point group {group}) could not be loaded: {why}"
        ) from None
    return loaded
