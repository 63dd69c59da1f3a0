"""The names of wrighty's adapters: the one list every other spelling is derived from.

The vendor adapters (wrighty/vendors) run a vendor's CLI; the command adapter runs any program.
wrighty.json's `agents.<name>.adapter` takes one of these names, and an agent named after one
needs no adapter of its own (docs/config.md#agents).
"""

from __future__ import annotations

import typing
from typing import Literal

AdapterName = Literal["claude", "codex", "gemini", "command"]
ADAPTERS: tuple[AdapterName, ...] = typing.get_args(AdapterName)
COMMAND_ADAPTER: AdapterName = "command"
VENDOR_ADAPTERS: tuple[AdapterName, ...] = tuple(a for a in ADAPTERS if a != COMMAND_ADAPTER)
