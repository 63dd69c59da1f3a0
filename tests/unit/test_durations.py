import pytest

from wrighty.domain.durations import format_duration, parse_duration

DAY = 86400.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("1.5h", 5400), ("1h30m", 5400), ("1d", 86400), (" 10M ", 600)],
)
def test_durations_people_type(text: str, seconds: float) -> None:
    assert parse_duration(text, at_most=DAY) == seconds


@pytest.mark.parametrize("text", ["", "30", "m", "10x", "1h 30", "-5m", "5m10", "h1"])
def test_unreadable_durations_explain_the_format(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text, at_most=DAY)


def test_zero_is_not_a_duration() -> None:
    with pytest.raises(ValueError, match="greater than zero"):
        parse_duration("0m", at_most=DAY)


@pytest.mark.parametrize(("seconds", "text"), [(45, "45s"), (1800, "30m"), (5400, "1h30m")])
def test_format_reads_back(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text, at_most=DAY) == seconds


@pytest.mark.parametrize("text", ["1d1s", "2d", "999999999d", "9" * 400 + "d"])
def test_a_duration_past_its_bound_is_refused_with_the_bound(text: str) -> None:
    with pytest.raises(ValueError, match="too long: the limit is 1d"):
        parse_duration(text, at_most=DAY)


@pytest.mark.parametrize("seconds", [float("inf"), float("nan"), 1e300, 10.0**13])
def test_a_value_past_every_bound_is_still_shown(seconds: float) -> None:
    assert format_duration(seconds).endswith("s")
