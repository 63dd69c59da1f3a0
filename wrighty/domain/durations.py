"""Durations as people type them: 90s, 30m, 1.5h, 1h30m."""

import re

_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def parse_duration(text: str) -> float:
    """Seconds in ``text``; ValueError with an example when it is not a positive duration."""
    compact = text.strip().lower().replace(" ", "")
    if not compact:
        raise ValueError("empty duration: use for example 90s, 30m or 1h30m")
    position = 0
    total = 0.0
    for match in _PART.finditer(compact):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(compact):
        raise ValueError(
            f"cannot read duration {text!r}: use a number with a unit s, m, h or d "
            "(for example 90s, 30m or 1h30m)"
        )
    if total <= 0:
        raise ValueError(f"duration {text!r} must be greater than zero")
    return total


def format_duration(seconds: float) -> str:
    """A compact human form of ``seconds`` (the inverse of parse_duration for whole units)."""
    remaining = round(seconds)
    if remaining < 60:
        return f"{seconds:g}s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
