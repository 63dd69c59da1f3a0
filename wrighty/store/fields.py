"""Stored values as the store reads and writes them: times as fixed-width UTC text in both
dialects (so that comparing strings compares times and the same parameters serve both), and
`Fields`, the one check every stored value goes through as it is read (docs/storage.md). The
mappers of `rows.py` and `fleet_rows.py` read each row through it."""

from __future__ import annotations

import json
import math
import re
from dataclasses import KW_ONLY, dataclass
from datetime import UTC, datetime
from decimal import Decimal
from enum import Enum
from typing import Any, TypeVar, cast

from wrighty.domain.model import CHECK_NAME, COMMIT_ID
from wrighty.domain.states import ItemState
from wrighty.domain.text import first_unprintable_in_line, printable_line
from wrighty.errors import UnreadableError

# Before every run: the ledger read from the start.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_E = TypeVar("_E", bound=Enum)


def to_db_time(moment: datetime | None) -> str | None:
    """Fixed-width UTC text (``2026-11-30T09:00:00.000000Z``): comparing strings compares
    times."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        raise ValueError("naive datetime given to the store; use an aware UTC time")
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def from_db_time(text: str | None) -> datetime | None:
    """A stored time; ValueError when ``text`` is not one (an aware time, as to_db_time wrote
    it). Rows are read through Fields, which says which field did not read."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError("not text")
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("no time zone")
    return moment.astimezone(UTC)


# -- the boundary every stored value is read through (docs/storage.md) ----------------------

# Bounds of stored figures: far beyond any real one, so that sums stay finite.
MAX_STORED_COUNT = 10**15
# A worker clock this far from the store's (about 115 days) is a value that does not read.
MAX_CLOCK_OFFSET_SECONDS = 10**7
MAX_STORED_COST_USD = 10.0**9
# A process's exit code or signal number as a check's evidence stores it (a C int).
C_INT = 2**31 - 1
_SHOWN_CHARS = 40
_REASON_CODE = re.compile(r"[^\s]{1,64}")


def shown_value(value: Any) -> str:
    """A stored value as a message may show it: neutralised and shortened."""
    text = repr(value)
    if len(text) > _SHOWN_CHARS:
        text = text[:_SHOWN_CHARS] + "..."
    return printable_line(text)


@dataclass(eq=False)
class Fields:
    """One stored row, each value checked as it is read: times parse, numbers are finite and
    in range, JSON parses, states and codes are known. A value that does not read raises
    UnreadableError naming the row and the field; when ``salvaged`` is given (a set-aside or a
    reset, which must read a poisoned row to write it right), it is noted there instead and a
    safe value stands in for it."""

    row: Any
    what: str
    key: object
    _: KW_ONLY
    item_id: int | None = None
    salvaged: list[UnreadableError] | None = None

    def _bad(self, name: str, problem: str, stand_in: Any) -> Any:
        error = UnreadableError(self.what, self.key, name, problem, item_id=self.item_id)
        if self.salvaged is None:
            raise error
        self.salvaged.append(error)
        return stand_in

    def refuse(self, name: str, problem: str) -> None:
        """A rule across values of the row that they break: the row does not read."""
        self._bad(name, problem, None)

    def raw(self, name: str) -> Any:
        return self.row[name]

    def text(self, name: str, stand_in: str = "") -> str:
        value = self.row[name]
        if not isinstance(value, str):
            return str(self._bad(name, f"{shown_value(value)} is not text", stand_in))
        return value

    def optional_text(self, name: str) -> str | None:
        value = self.row[name]
        return None if value is None else self.text(name)

    def time(self, name: str) -> datetime | None:
        value = self.row[name]
        try:
            return from_db_time(value)
        except (ValueError, TypeError, OverflowError):
            bad: datetime | None = self._bad(name, f"{shown_value(value)} is not a time", None)
            return bad

    def required_time(self, name: str, stand_in: datetime = EPOCH) -> datetime:
        moment = self.time(name)
        if moment is None:
            if self.row[name] is None:
                moment = self._bad(name, "it is empty", stand_in)
            return stand_in if moment is None else moment
        return moment

    def integer(
        self, name: str, low: int = 0, high: int = MAX_STORED_COUNT, stand_in: int = 0
    ) -> int:
        value = self.row[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return int(self._bad(name, f"{shown_value(value)} is not a whole number {low}..{high}",
                                 stand_in))  # fmt: skip
        return value

    def optional_integer(self, name: str, low: int = 0, high: int = MAX_STORED_COUNT) -> int | None:
        return None if self.row[name] is None else self.integer(name, low, high)

    def flag(self, name: str) -> bool:
        """A yes or no: PostgreSQL's boolean, SQLite's 0 or 1."""
        value = self.row[name]
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        return bool(self._bad(name, f"{shown_value(value)} is not a yes or no", False))

    def check_names(self, name: str) -> tuple[str, ...] | None:
        """The verification checks an item chose (docs/verify.md): null follows wrighty.json
        (the stand-in: its checks all run); else a JSON list of check names, [] for none."""
        if self.row[name] is None:
            return None
        found = self._json(name, list, "a JSON list of check names")
        if found is None:
            return None
        if not all(isinstance(item, str) and CHECK_NAME.fullmatch(item) for item in found):
            bad: tuple[str, ...] | None = self._bad(
                name, f"{shown_value(self.row[name])} is not a JSON list of check names", None
            )
            return bad
        return tuple(found)

    def number(self, name: str, high: float, *, low: float = 0.0) -> float | None:
        """A stored figure that may be absent: a number ``low``..``high``, never NaN (and
        finite unless a bound is infinite)."""
        value = self.row[name]
        if value is None:
            return None
        if isinstance(value, Decimal):
            value = float(value)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or math.isnan(value)
            or not low <= value <= high
        ):
            shown = f"{shown_value(value)} is not a number {low:g}..{high:g}"
            bad: float | None = self._bad(name, shown, None)
            return bad
        return float(value)

    def choice(self, name: str, kind: type[_E], stand_in: _E) -> _E:
        value = self.row[name]
        try:
            return kind(value)
        except ValueError:
            known = ", ".join(member.value for member in kind)
            return cast(_E, self._bad(name, f"{shown_value(value)} is none of {known}", stand_in))

    def optional_choice(self, name: str, kind: type[_E]) -> _E | None:
        value = self.row[name]
        if value is None or value == "":
            return None
        return self.choice(name, kind, cast(_E, None))

    def commit(self, name: str) -> str | None:
        """A git commit id (40 or 64 lowercase hex digits), or None."""
        value = self.row[name]
        if value is None or (isinstance(value, str) and COMMIT_ID.fullmatch(value)):
            return value
        bad: str | None = self._bad(name, f"{shown_value(value)} is not a commit id", None)
        return bad

    def code(self, name: str) -> str | None:
        """A reason code: one short word (``internal-error``), nothing a terminal obeys."""
        value = self.row[name]
        if value is None:
            return None
        if (
            not isinstance(value, str)
            or not _REASON_CODE.fullmatch(value)
            or first_unprintable_in_line(value) is not None
        ):
            bad: str | None = self._bad(name, f"{shown_value(value)} is not a reason code", None)
            return bad
        return value

    def json_list(self, name: str, stand_in: list[Any] | None = None) -> list[Any]:
        found = self._json(name, list, "a JSON list")
        return (stand_in or []) if found is None else cast(list[Any], found)

    def json_object(self, name: str) -> dict[str, Any]:
        found = self._json(name, dict, "a JSON object")
        return {} if found is None else cast(dict[str, Any], found)

    def _json(self, name: str, kind: type, what: str) -> Any:
        value = self.row[name]
        try:
            if value == "[]":  # what most rows' lists hold
                found: Any = []
            elif isinstance(value, str):
                found = _DECODER.decode(value)
            else:
                found = json.loads(value, parse_constant=_no_constant)
        except (ValueError, TypeError, RecursionError):
            return self._bad(name, f"{shown_value(value)} is not {what}", None)
        if not isinstance(found, kind):
            return self._bad(name, f"{shown_value(value)} is not {what}", None)
        return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# One decoder for every value read: json.loads given an argument makes one at each call.
_DECODER = json.JSONDecoder(parse_constant=_no_constant)


STATE_NAMES = frozenset(state.value for state in ItemState)


def state_or_none(value: Any) -> ItemState | None:
    """The state of an item depended on; None when there is no such item (or its state is not
    one wrighty knows): such a dependency is never met (docs/scheduling.md)."""
    return ItemState(value) if value in STATE_NAMES else None


def aggregate(row: Any) -> Fields:
    """A row of figures over many rows: a time among them that does not read counts as
    unknown (the rows themselves say which one does not read)."""
    return Fields(row, "figures", "", salvaged=[])
