"""The bar charts' geometry (wrighty/web/charts.py): pure, no page."""

from __future__ import annotations

import math

import pytest

from wrighty.web import charts
from wrighty.web.charts import (
    HEIGHT,
    StackedBars,
    label_every,
    nice_step,
    scale,
    stacked_bars,
    tick_label,
)

DAYS = [("2026-12-01", "12-01"), ("2026-12-02", "12-02"), ("2026-12-03", "12-03")]


def dollars(value: float) -> str:
    return f"${value:.2f}"


def chart(
    values: dict[tuple[str, str], float], series: tuple[str, ...] = ("a", "b")
) -> StackedBars:
    return stacked_bars(DAYS, series, values, describe=dollars, prefix="$")


@pytest.mark.parametrize(
    ("value", "step"),
    [(0.3, 0.5), (1, 1), (1.01, 2), (3, 5), (7, 10), (0.0012, 0.002), (2500, 5000), (10, 10)],
)
def test_a_step_is_one_two_or_five_times_a_power_of_ten_at_or_above(value: float, step: float):
    assert nice_step(value) == pytest.approx(step)


@pytest.mark.parametrize(
    ("maximum", "step", "top"),
    [(0, 1, 1), (-3, 1, 1), (math.nan, 1, 1), (math.inf, 1, 1), (1, 0.5, 1), (7, 2, 8),
     (8, 2, 8), (1.01, 0.5, 1.5), (12_345, 5000, 15_000), (0.003, 0.001, 0.003)],
)  # fmt: skip
def test_the_scale_reaches_the_maximum_in_at_most_four_steps(maximum, step, top):
    assert scale(maximum) == pytest.approx((step, top))
    if maximum > 0 and math.isfinite(maximum):
        found_step, found_top = scale(maximum)
        assert found_top >= maximum
        assert found_top / found_step <= charts.MAX_TICKS + 1e-9


def test_a_whole_scale_never_steps_below_one():
    assert scale(2, whole=True) == (1.0, 2.0)
    assert scale(0.5, whole=True) == (1.0, 1.0)


@pytest.mark.parametrize(
    ("value", "step", "label"),
    [(0, 0.5, "$0"), (1.5, 0.5, "$1.5"), (2, 0.5, "$2"), (0.003, 0.001, "$0.003"),
     (800, 200, "$800"), (1000, 200, "$1k"), (1500, 500, "$1.5k"), (2e6, 5e5, "$2M"),
     (12_000, 5000, "$12k"), (50, 10, "$50")],
)  # fmt: skip
def test_tick_labels_are_as_short_as_the_step_allows(value, step, label):
    assert tick_label(value, step, "$") == label


def test_bars_stack_each_series_in_order_with_heights_in_proportion():
    drawn = chart({("2026-12-01", "a"): 1.0, ("2026-12-01", "b"): 3.0, ("2026-12-03", "b"): 2.0})
    assert drawn.scale_top == 4
    first, second, third = drawn.bars
    plot = drawn.bottom - drawn.top
    a, b = first.parts
    assert (a.tone, b.tone) == (0, 1)
    assert a.height == pytest.approx(plot / 4)
    assert b.height == pytest.approx(plot * 3 / 4)
    assert a.y + a.height == pytest.approx(drawn.bottom)  # the first series sits on the axis
    assert b.y + b.height == pytest.approx(a.y)  # the next one on top of it
    assert b.y == pytest.approx(drawn.top)  # the tallest bar reaches the top
    assert second.parts == ()  # nothing that day: no part, a bar of zero
    assert second.total == 0
    assert [part.tone for part in third.parts] == [1]  # b keeps its colour with a missing
    assert first.title == "2026-12-01: $4.00"
    assert a.title == "2026-12-01, a: $1.00"
    assert [bar.label for bar in drawn.bars] == ["12-01", "12-02", "12-03"]
    assert [entry.name for entry in drawn.legend] == ["a", "b"]


def test_bars_keep_to_their_slots_in_order():
    drawn = chart({(day, "a"): 1.0 for day, _ in DAYS})
    xs = [bar.parts[0].x for bar in drawn.bars]
    assert xs == sorted(xs)
    for bar in drawn.bars:
        part = bar.parts[0]
        assert drawn.left <= part.x
        assert part.x + part.width <= drawn.right
        assert part.width <= charts.MAX_BAR_WIDTH
        assert bar.label_x == pytest.approx(part.x + part.width / 2)


def test_ticks_run_from_zero_at_the_axis_to_the_top():
    drawn = chart({("2026-12-01", "a"): 7.0})
    assert [tick.label for tick in drawn.ticks] == ["$0", "$2", "$4", "$6", "$8"]
    assert drawn.ticks[0].y == drawn.bottom == HEIGHT - charts.BOTTOM
    assert drawn.ticks[-1].y == drawn.top


def test_nothing_to_show_is_an_empty_chart_of_zero_bars():
    drawn = chart({})
    assert drawn.empty
    assert [bar.parts for bar in drawn.bars] == [(), (), ()]
    assert [tick.label for tick in drawn.ticks] == ["$0", "$1"]


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, -math.inf])
def test_a_value_that_is_not_a_finite_amount_counts_as_zero(bad: float):
    drawn = chart({("2026-12-01", "a"): bad, ("2026-12-01", "b"): 2.0})
    first = drawn.bars[0]
    assert first.total == 2.0
    assert [part.tone for part in first.parts] == [1]


def test_more_series_than_colours_take_the_first_colours_again():
    series = tuple(f"agent-{n}" for n in range(charts.TONES + 2))
    drawn = stacked_bars(DAYS, series, {}, describe=dollars)
    assert [entry.tone for entry in drawn.legend][-3:] == [charts.TONES - 1, 0, 1]


@pytest.mark.parametrize(
    ("count", "every"), [(1, 1), (14, 1), (16, 1), (17, 2), (90, 6), (366, 23)]
)
def test_labels_thin_out_to_at_most_sixteen(count: int, every: int):
    assert label_every(count) == every
    days = [(f"d{n}", f"l{n}") for n in range(count)]
    drawn = stacked_bars(days, ("a",), {}, describe=dollars)
    labelled = [bar.label for bar in drawn.bars if bar.label is not None]
    assert len(labelled) <= charts.MAX_LABELS
    assert drawn.bars[-1].label == f"l{count - 1}"  # the latest day is always labelled
