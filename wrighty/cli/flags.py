"""How `--help` names options' values and arguments.

Typer's rich help (typer 0.29) fills the type column of every option from its Python type, flags
included: `--json <bool>`, `--title <str>`, `--after <list[int]>`, `ITEM <int range>`, and the
usage line writes a required argument as `{item_id}`. This makes the help speak the command
line's own words, as click's plain help does: a flag takes no value; a value is named by the
option's `metavar` when it has one (`--agent NAME`, `--timeout DURATION`), else by its kind
(`TEXT`, `N`, `NUMBER`, `PATH`, or its choices as `[a|b]`); an argument is named once, in capitals
(`ID`, `PATH`), and the usage line writes it so (`[PATH]` when it may be left out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_origin

from typer.core import TyperArgument, TyperOption

_typer_display_type = TyperOption.display_type


def value_word(param: TyperOption, ctx: Any) -> str:
    """The word that names an option's value: its metavar, else its kind."""
    if param.metavar is not None:
        return param.metavar
    descriptor = param.type_descriptor
    if descriptor.is_choice:
        return "[" + _typer_display_type(param, ctx).strip("<>") + "]"
    annotation: object = descriptor.annotation
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation)
    if annotation is int:
        return "N"
    if annotation is float:
        return "NUMBER"
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return "PATH"
    return "TEXT"


def _option_value(option: TyperOption, ctx: Any) -> str | None:
    """What the help shows after the option's name: nothing for a flag (or a counter)."""
    if option.is_flag or option.count:
        return None
    return value_word(option, ctx)


def _argument_type(_argument: TyperArgument, ctx: Any) -> str | None:
    del ctx
    return None  # the name column already names it


def _argument_name(argument: TyperArgument) -> str:
    return argument.metavar if argument.metavar is not None else (argument.name or "").upper()


def _argument_usage(argument: TyperArgument) -> str:
    name = _argument_name(argument)
    name = name if argument.required else f"[{name}]"
    return name + ("..." if argument.nargs != 1 else "")


def show_values_in_command_line_words() -> None:
    """Make every command's help name values as the module docstring says."""
    TyperOption.display_type_rich = _option_value  # type: ignore[method-assign,assignment]
    TyperArgument.display_type_rich = _argument_type  # type: ignore[method-assign,assignment]
    TyperArgument.display_name_raw = property(_argument_name)  # type: ignore[method-assign,assignment]
    TyperArgument._usage_display_name = _argument_usage  # type: ignore[method-assign,assignment]
