"""The one rule for numbers on the command line (docs/cli.md#numbers).

A number is written in plain ASCII digits: a whole number as `1000`, any other as `2.5`, with
a `-` in front when negative (which the option's bounds then refuse, saying so). No `_` or
`,` between digits, no exponent, no spaces, no other script's digits, and no `nan` or `inf`.
Every option and argument obeys it: those typer reads as an int or a float (`--limit`,
`--interval`, an item's id), through the check installed here, and those wrighty reads itself
(`--max-cost-usd`, `--max-tokens`, `report-usage`'s counts) through
``operator/numbers.number_problem``.
(Python's own `int` and `float`, and pydantic's, take `1_000`, `1e3`, ` 12 ` and `nan`, so
which of those an option took depended on how it was read.)
"""

from __future__ import annotations

from typing import Any

from wrighty.operator.numbers import number_problem


def plain_numbers_only() -> None:
    """Make every int and float option and argument typer reads obey the rule, before its
    bounds are checked: typer (0.29) reads them with pydantic, which takes `1_000` and `nan`."""
    from typing import Annotated

    from pydantic import BeforeValidator, TypeAdapter
    from pydantic_core import PydanticCustomError
    from typer import _adapters

    build = _adapters._build_number_adapter
    if getattr(build, "wrighty_plain", False):
        return

    def plain(number_class: type[Any], **bounds: Any) -> TypeAdapter[Any]:
        typed = build(number_class, **bounds)._type  # typer's own type, bounds and all

        def check(value: Any) -> Any:
            if isinstance(value, str):
                problem = number_problem(value, whole=number_class is int)
                if problem is not None:
                    raise PydanticCustomError("plain_number", problem)
            return value

        return TypeAdapter(Annotated[typed, BeforeValidator(check)])  # type: ignore[arg-type]

    plain.wrighty_plain = True  # type: ignore[attr-defined]
    _adapters._build_number_adapter = plain
