"""The one rule for numbers an operator writes (docs/cli.md#numbers): plain ASCII digits, a
whole number as `1000`, any other as `2.5`, with a `-` in front when negative (which the
bounds then refuse, saying so). No `_` or `,` between digits, no exponent, no spaces, no other
script's digits, and no `nan` or `inf`. The command line's int and float options obey it
through wrighty/cli/numbers.py; the forms (`--max-cost-usd`, `--max-tokens`, `report-usage`'s
counts) through ``number_problem``."""

from __future__ import annotations

import re

_WHOLE = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def number_problem(text: str, *, whole: bool) -> str | None:
    """Why ``text`` is not a number by the rule (None when it is one)."""
    if (_WHOLE if whole else _DECIMAL).fullmatch(text):
        return None
    if whole:
        return f"{text!r} is not a whole number: write it in plain digits, such as 30"
    return f"{text!r} is not a number: write it in plain digits, such as 5 or 2.5"
