"""Flags shown as flags in `--help`.

Typer's rich help (typer 0.29) fills the type column of every option, flags included, so
`--json`, `--once`, `--version` and `--help` read as if they took a value (`--json <bool>`).
Its plain help leaves flags without one; this makes the rich help do the same.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperOption

_typer_display_type = TyperOption.display_type_rich


def _display_type(option: TyperOption, ctx: Any) -> str | None:
    """What the help shows after the option's name: nothing for a flag (or a counter)."""
    if option.is_flag:
        return None
    return _typer_display_type(option, ctx)


def show_flags_without_a_value() -> None:
    """Make every command's rich help show flags with no value after them."""
    TyperOption.display_type_rich = _display_type  # type: ignore[method-assign,assignment]
