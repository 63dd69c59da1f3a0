"""The names of wrighty's built-in adapters: the one list every other spelling is derived from.

The vendor adapters (wrighty/vendors) run a vendor's CLI; the command adapter runs any program.
wrighty.json's `agents.<name>.adapter` takes one of these names, or the name of an adapter an
installed package adds (vendors/registry.py); an agent named after a built-in adapter needs no
settings of its own (docs/config.md#agents).
"""

from __future__ import annotations

COMMAND_ADAPTER = "command"
VENDOR_ADAPTERS: tuple[str, ...] = ("claude", "codex", "gemini")
ADAPTERS: tuple[str, ...] = (*VENDOR_ADAPTERS, COMMAND_ADAPTER)
