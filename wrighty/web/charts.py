"""The geometry of the console's bar charts (the Spend page): one bar per category (a day),
stacked from the parts of its series (the agents), on a scale with round ticks. Pure: numbers
in, rectangles out; a template draws them as inline SVG (no script, no inline style: each
part's colour is a CSS class, ``tone-N``).

Coordinates are SVG user units in a ``width`` x ``height`` view box, y growing downwards.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

WIDTH = 720
HEIGHT = 260
# Room for the scale's labels on the left and the categories' labels below.
LEFT = 64
RIGHT = 8
TOP = 10
BOTTOM = 30
# At most this many intervals on the scale, and this many category labels under the bars.
MAX_TICKS = 4
MAX_LABELS = 16
# The share of each category's slot that its bar takes (the rest is the gap between bars),
# and the widest a bar is (a chart of one or two days).
BAR_SHARE = 0.7
MAX_BAR_WIDTH = 48.0
# How many colours the stylesheet has: series beyond them take the first ones again.
TONES = 8
_DECIMALS = 2  # coordinates are rounded: the page stays small


@dataclass(frozen=True)
class Part:
    """One series' part of a bar."""

    tone: int
    x: float
    y: float
    width: float
    height: float
    title: str  # "2026-12-03, claude-code: $1.2000"


@dataclass(frozen=True)
class Bar:
    """One category: its parts from the bottom up, its label under it (None: left out so
    that labels do not crowd) and the total as its title says it."""

    category: str
    label: str | None
    label_x: float
    total: float
    title: str
    parts: tuple[Part, ...]


@dataclass(frozen=True)
class Tick:
    y: float
    label: str


@dataclass(frozen=True)
class Legend:
    tone: int
    name: str


@dataclass(frozen=True)
class StackedBars:
    width: int
    height: int
    left: float  # the plot's edges
    right: float
    top: float
    bottom: float
    bars: tuple[Bar, ...]
    ticks: tuple[Tick, ...]
    legend: tuple[Legend, ...]
    scale_top: float  # the value at the plot's top edge

    @property
    def empty(self) -> bool:
        """Every bar is zero."""
        return all(bar.total == 0 for bar in self.bars)


def stacked_bars(
    categories: Sequence[tuple[str, str]],
    series: Sequence[str],
    values: Mapping[tuple[str, str], float],
    *,
    describe: Callable[[float], str],
    prefix: str = "",
    whole: bool = False,
) -> StackedBars:
    """A bar for each ``(category, axis label)``, stacked from ``values[(category, name)]`` for
    each name of ``series`` in order (a missing value, a negative one or one that is not
    finite counts as zero). ``describe`` writes a value for the titles; the scale's labels
    are written with ``prefix`` (``$``), and with no fraction when ``whole``."""
    plot_height = HEIGHT - TOP - BOTTOM
    bottom = HEIGHT - BOTTOM
    totals = [
        sum(_amount(values.get((category, name))) for name in series) for category, _ in categories
    ]
    step, scale_top = scale(max(totals, default=0.0), whole=whole)
    slot = (WIDTH - LEFT - RIGHT) / max(len(categories), 1)
    width = min(slot * BAR_SHARE, MAX_BAR_WIDTH)
    every = label_every(len(categories))
    bars = []
    for index, ((category, label), total) in enumerate(zip(categories, totals, strict=True)):
        x = LEFT + slot * index + (slot - width) / 2
        parts = []
        y = float(bottom)
        for tone, name in enumerate(series):
            amount = _amount(values.get((category, name)))
            if amount == 0:
                continue
            height = amount / scale_top * plot_height
            y -= height
            parts.append(
                Part(
                    tone % TONES,
                    _round(x),
                    _round(y),
                    _round(width),
                    _round(height),
                    f"{category}, {name}: {describe(amount)}",
                )
            )
        shown = (len(categories) - 1 - index) % every == 0  # the latest is always labelled
        bars.append(
            Bar(
                category,
                label if shown else None,
                _round(x + width / 2),
                total,
                f"{category}: {describe(total)}",
                tuple(parts),
            )
        )
    ticks = tuple(
        Tick(_round(bottom - value / scale_top * plot_height), tick_label(value, step, prefix))
        for value in (n * step for n in range(round(scale_top / step) + 1))
    )
    legend = tuple(Legend(tone % TONES, name) for tone, name in enumerate(series))
    return StackedBars(
        WIDTH, HEIGHT, LEFT, WIDTH - RIGHT, TOP, bottom, tuple(bars), ticks, legend, scale_top
    )


def scale(maximum: float, *, whole: bool = False) -> tuple[float, float]:
    """The scale for values up to ``maximum``: its step (1, 2 or 5 times a power of ten; at
    least 1 when ``whole``) and its top (the first step at or above the maximum, at most
    MAX_TICKS steps). Nothing to show: a step of 1 up to 1."""
    if not (maximum > 0 and math.isfinite(maximum)):
        return 1.0, 1.0
    step = nice_step(maximum / MAX_TICKS)
    if whole:
        step = max(step, 1.0)
    return step, step * math.ceil(maximum / step - 1e-9)


def nice_step(value: float) -> float:
    """The smallest of 1, 2, 5, 10, 20, 50, ... (and 0.1, 0.2, 0.5, ...) at or above
    ``value`` (> 0)."""
    power = 10.0 ** math.floor(math.log10(value))
    for mantissa in (1.0, 2.0, 5.0, 10.0):
        if mantissa * power >= value * (1 - 1e-9):
            return mantissa * power
    return 10.0 * power  # not reached: value <= 10 * power


def tick_label(value: float, step: float, prefix: str = "") -> str:
    """A scale's value, as short as its step allows: ``$0.25``, ``1.5k``, ``2M``."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if step >= size / 10 and value >= size:
            return f"{prefix}{_plain(value / size, step / size)}{suffix}"
    return f"{prefix}{_plain(value, step)}"


def _plain(value: float, step: float) -> str:
    """``value`` with as many decimals as ``step`` has (none trailing): 0.5, 12, 1,500."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step < 1 else 0
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def label_every(count: int) -> int:
    """Label one category in this many, so that at most MAX_LABELS are labelled."""
    return max(1, math.ceil(count / MAX_LABELS))


def _amount(value: float | None) -> float:
    if value is None or not math.isfinite(value) or value < 0:
        return 0.0
    return float(value)


def _round(value: float) -> float:
    return round(value, _DECIMALS)
