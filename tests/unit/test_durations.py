import pytest

from wrighty.domain.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("1.5h", 5400), ("1h30m", 5400), ("2d", 172800), (" 10M ", 600)],
)
def test_durations_people_type(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "30", "m", "10x", "1h 30", "-5m", "5m10", "h1"])
def test_unreadable_durations_explain_the_format(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_zero_is_not_a_duration() -> None:
    with pytest.raises(ValueError, match="greater than zero"):
        parse_duration("0m")


@pytest.mark.parametrize(("seconds", "text"), [(45, "45s"), (1800, "30m"), (5400, "1h30m")])
def test_format_reads_back(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds
