"""Strict JSON reading of wrighty.json and problem reports that say where, by JSON path.

The file is read refusing what ``json`` lets through (duplicate keys, NaN, numbers of any
length, any depth); pydantic's errors become one line each, which echoes a value only when it
cannot be a secret.
"""

from __future__ import annotations

import json
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel

from wrighty.config.models import (
    MAX_CONFIG_DEPTH,
    SCHEMA_VERSION,
    VerifySettings,
    WrightyConfig,
)
from wrighty.config.section import (
    ENV_NAME_PATTERN,
)
from wrighty.config_file import (
    CONFIG_FILENAME,
    MAX_NUMBER_DIGITS,
)
from wrighty.domain.integration import REMOTE_NAME, REMOTE_RULE
from wrighty.domain.model import CHECK_NAME
from wrighty.domain.verify_limits import MIN_CHECK_TIMEOUT_SECONDS

EMPTY_PROGRAM = 'is empty: name the program to run, as in ["/usr/local/bin/notify-me"]'
EMPTY_CHECK_PROGRAM = 'is empty: name the program to run, as in ["python", "-m", "pytest", "-q"]'
EMPTY_INTEGRATE_PROGRAM = 'is empty: name the program to run, as in ["gh", "pr", "create"]'
_INTEGRATE_COMMAND = ("completion", "integrateCommand")
# Where a sink's form tag sits in a problem's location (it is left out of the JSON path).
_SINK_TAG_AT = {("notify", "urls"): 3, ("notify", "command"): 2}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config file: where (a JSON path) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def read_json(text: str) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The JSON object in ``text``, or the one problem that keeps it from being read."""
    try:
        data = json.loads(
            text,
            object_pairs_hook=_refuse_duplicate_keys,
            parse_int=_bounded_int,
            parse_constant=_refuse_constant,
        )
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        return None, [Problem("", f"invalid JSON at {where}: {error.msg}")]
    except _DuplicateKeyError as error:
        return None, [Problem("", f"duplicate key {json.dumps(error.args[0])}")]
    except _UnreadableValueError as error:
        return None, [Problem("", str(error))]
    except RecursionError:
        return None, [Problem("", _too_deep())]
    if not isinstance(data, dict):
        return None, [Problem("", "must be a JSON object")]
    if _depth(data) > MAX_CONFIG_DEPTH:
        return None, [Problem("", _too_deep())]
    return data, []


def problems_from(details: list[Any]) -> list[Problem]:
    """pydantic's validation errors (``ValidationError.errors()``) as problems."""
    return [_problem_from(detail) for detail in details]


class _DuplicateKeyError(ValueError):
    pass


class _UnreadableValueError(ValueError):
    pass


def _bounded_int(text: str) -> int:
    # Python refuses to parse very long integers (and slowly); no setting needs more digits.
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise _UnreadableValueError(
            f"a number has {len(text.lstrip('-'))} digits; numbers in {CONFIG_FILENAME} have "
            f"at most {MAX_NUMBER_DIGITS}"
        )
    return int(text)


def _refuse_constant(text: str) -> Any:
    raise _UnreadableValueError(f"{text} is not a JSON number; write a number such as 60")


def _depth(value: Any) -> int:
    """How deeply ``value`` nests (a scalar: 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(current, dict):
            stack.extend((child, level + 1) for child in current.values())
        elif isinstance(current, list):
            stack.extend((child, level + 1) for child in current)
    return deepest


def _too_deep() -> str:
    return f"nested more than {MAX_CONFIG_DEPTH} levels deep; this is not a {CONFIG_FILENAME}"


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


_BOUND_WORDS = {
    "greater_than": (">", "gt"),
    "greater_than_equal": (">=", "ge"),
    "less_than": ("<", "lt"),
    "less_than_equal": ("<=", "le"),
}


# What a pattern asks for, in words, for the patterns a person writes by hand most.
_PATTERN_WORDS = {
    f"^{CHECK_NAME.pattern}$": "must be 1 to 64 letters, digits, '.', '_' or '-', starting "
    "with a letter or digit",
    f"^{REMOTE_NAME.pattern}$": REMOTE_RULE,
    ENV_NAME_PATTERN: "must be a variable name: letters, digits and '_', not starting with a digit",
}
# Bounds in minutes that read better in words than as a decimal.
_MINUTES_WORDS = {MIN_CHECK_TIMEOUT_SECONDS / 60: "1/60 (one second)"}


_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")


def json_path(*parts: str | int) -> str:
    """Where a value is, as `agents.claude.args.0`; a key that is not a plain name is written
    as a JSON string (`agents["a b"]`), so that no key can break the line or hide in it."""
    path = ""
    for part in parts:
        if isinstance(part, str) and not _PLAIN_KEY.fullmatch(part):
            path += f"[{json.dumps(part)}]"
        else:
            path += f"{'.' if path else ''}{part}"
    return path


def _without_sink_tag(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """A location inside a sink entry or a sandbox setting, without the tag of the form it
    was written in."""
    at = _SINK_TAG_AT.get(loc[:2])
    if loc[:2] in (("worker", "sandbox"), ("verify", "sandbox")):
        at = 2
    elif loc[:1] == ("agents",) and loc[2:3] == ("sandbox",):
        at = 3
    if at is not None and len(loc) > at and loc[at] in ("string", "list", "object"):
        return loc[:at] + loc[at + 1 :]
    return loc


def _problem_from(detail: Mapping[str, Any]) -> Problem:
    loc = _without_sink_tag(tuple(detail["loc"]))
    path = json_path(*loc)
    kind = detail["type"]
    context = detail.get("ctx") or {}
    if kind in _BOUND_WORDS:
        symbol, key = _BOUND_WORDS[kind]
        got = echo_value(detail.get("input"), loc)
        bound = context[key]
        words = _MINUTES_WORDS.get(bound) if str(loc[-1]).endswith("Minutes") else None
        message = f"must be {symbol} {words or number_text(bound)}{got}"
    elif kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1])
        message = "unknown key" + (f" (allowed here: {', '.join(allowed)})" if allowed else "")
        message += _projects_own(loc)
    elif kind == "missing":
        message = "is required"
    elif (sized := _length_words(kind, loc, context)) is not None:
        message = sized
    elif kind == "string_pattern_mismatch" and context.get("pattern") in _PATTERN_WORDS:
        message = _PATTERN_WORDS[context["pattern"]] + echo_value(detail.get("input"), loc)
    elif kind == "value_error":  # a rule of wrighty's own (a field_validator's ValueError)
        message = str(context.get("error", detail["msg"])) + echo_value(detail.get("input"), loc)
    elif kind in ("model_type", "dict_type"):
        message = "must be an object" + echo_value(detail.get("input"), loc)
    elif kind == "literal_error" and loc == ("schemaVersion",):
        message = (
            f"this wrighty understands version {SCHEMA_VERSION}"
            f"{echo_value(detail.get('input'), loc)}; upgrade wrighty or fix the file"
        )
    else:
        message = str(detail["msg"]).replace("Input should be", "must be")
        message += echo_value(detail.get("input"), loc)
    return Problem(path, message)


def _length_words(kind: str, loc: tuple[Any, ...], context: Mapping[str, Any]) -> str | None:
    """What a list that is too short or too long should hold, for the lists a person writes
    by hand most (None: pydantic's own words)."""
    if kind == "too_short" and loc[:2] == ("notify", "command"):
        return EMPTY_PROGRAM
    if kind == "too_short" and _is_check_argv(loc):
        return EMPTY_CHECK_PROGRAM
    if kind == "too_short" and loc == _INTEGRATE_COMMAND:
        return EMPTY_INTEGRATE_PROGRAM
    if kind == "too_long" and loc == _INTEGRATE_COMMAND:
        return f"has {context['actual_length']} arguments: at most {context['max_length']}"
    if kind == "too_long" and loc[-2:] == ("verify", "checks"):
        return f"has {context['actual_length']} checks: at most {context['max_length']}"
    return None


def _is_check_argv(loc: tuple[Any, ...]) -> bool:
    """``loc`` is a check's argv (verify.checks.N.argv or agents.X.verify.checks.N.argv)."""
    return loc[-4:-2] == ("verify", "checks") and loc[-1:] == ("argv",)


def _projects_own(loc: tuple[Any, ...]) -> str:
    """For a key of the project's verify section written in an agent's: where it goes."""
    if len(loc) == 4 and loc[0] == "agents" and loc[2] == "verify":
        key = loc[3]
        if any(_alias(VerifySettings, name) == key for name in VerifySettings.model_fields):
            return f"; {key} is the project's: set verify.{key}"
    return ""


def number_text(value: float) -> str:
    return f"{value:g}"


MAX_ECHOED_STRING = 40


def echo_value(value: object, loc: tuple[Any, ...]) -> str:
    """What the file holds at ``loc``, for the message: numbers and booleans as they are,
    other values by their JSON type. A string is echoed (JSON-escaped) only when it is short
    and outside `agents`, whose env values, arguments and commands may carry secrets."""
    if isinstance(value, bool):
        return f" (got {str(value).lower()})"
    if isinstance(value, int):
        return f" (got {value})"
    if isinstance(value, float):
        return f" (got {value!r})"
    if isinstance(value, str):
        if not _may_hold_secrets(loc) and len(value) <= MAX_ECHOED_STRING:
            return f" (got the string {json.dumps(value)})"
        return " (got a string)"
    kinds = {type(None): "null", list: "a list", dict: "an object"}
    kind = kinds.get(type(value))
    return f" (got {kind})" if kind else ""


def _may_hold_secrets(loc: tuple[Any, ...]) -> bool:
    """`agents` (env values, arguments, commands), the notify sinks (URLs carry tokens), the
    checks' argv, the integration command's, completion.remote and serve.publicUrl (where a
    URL, token and all, may be written by mistake), and `sources` (a token written where its
    variable's name goes, or in an apiUrl)."""
    return (
        loc[:1] in (("agents",), ("sources",))
        or loc[:2]
        in (
            ("notify", "urls"),
            ("notify", "command"),
            _INTEGRATE_COMMAND,
            ("completion", "remote"),
            ("serve", "publicUrl"),
        )
        or (loc[:2] == ("verify", "checks") and "argv" in loc[3:4])
    )


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys a model accepts at ``loc``, for 'unknown key' messages."""
    target: Any = WrightyConfig
    for part in loc:
        target = _unwrap_optional(target)
        if isinstance(target, type) and issubclass(target, BaseModel):
            field = next(
                (f for name, f in target.model_fields.items() if _alias(target, name) == part),
                None,
            )
            if field is None:
                return []
            target = field.annotation
        elif typing.get_origin(target) is dict:
            target = typing.get_args(target)[1]
        elif typing.get_origin(target) is list and isinstance(part, int):
            target = typing.get_args(target)[0]
        else:
            return []
    target = _model_in(_unwrap_optional(target))
    if isinstance(target, type) and issubclass(target, BaseModel):
        return [_alias(target, name) for name in target.model_fields]
    return []


def _model_in(annotation: Any) -> Any:
    """The model of a sink entry (a string or a model, told apart by a discriminator)."""
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for option in typing.get_args(annotation):
            inner = typing.get_args(option)[0] if typing.get_origin(option) is Annotated else option
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                return inner
    return annotation


def _alias(model: type[BaseModel], name: str) -> str:
    return model.model_fields[name].alias or name


def _unwrap_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(options) == 1:
            return options[0]
    return annotation
