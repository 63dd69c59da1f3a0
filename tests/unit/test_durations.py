import re
from datetime import UTC, datetime, timedelta

import pytest

from wrighty.domain.durations import format_duration, parse_duration, parse_moment

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


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(float("inf"), "infs"), (float("nan"), "nans"), (1e300, "1e+300s"), (10.0**13, "1e+13s")],
)
def test_a_value_past_every_bound_is_still_shown(seconds: float, shown: str) -> None:
    """A value no bound allows (written into a store by hand, say) is shown as it is, in
    seconds, rather than failing or read as days."""
    assert format_duration(seconds) == shown


NOW = datetime(2026, 12, 3, 11, 0, tzinfo=UTC)
MONTH = 31 * DAY


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2h", NOW + timedelta(hours=2)),
        (" 1h30m ", NOW + timedelta(minutes=90)),
        ("2026-12-03T14:00:00Z", datetime(2026, 12, 3, 14, tzinfo=UTC)),
        ("2026-12-03T15:00+01:00", datetime(2026, 12, 3, 14, tzinfo=UTC)),
        ("2026-12-03T10:30:00Z", datetime(2026, 12, 3, 10, 30, tzinfo=UTC)),  # a reset just past
    ],
)
def test_a_moment_is_a_time_with_its_offset_or_a_wait(text: str, moment: datetime) -> None:
    assert parse_moment(text, now=NOW, at_most=MONTH) == moment


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("2026-12-03T14:00", "names no offset"),
        ("2026-12-03", "names no offset"),
        ("soon", "cannot read time 'soon': use RFC 3339 with an offset"),
        ("", "cannot read time"),
        ("\x1b[2J", "cannot read time '\\x1b[2J'"),
        ("40d", "too long: the limit is 31d"),
        ("2027-02-01T00:00:00Z", "more than 31d away"),
        ("2026-12-01T00:00:00Z", "more than a day ago"),
        ("0s", "greater than zero"),
    ],
)
def test_a_bad_moment_says_what_to_give(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        parse_moment(text, now=NOW, at_most=MONTH)


@pytest.mark.parametrize(
    "text", ["2026-12-03T14:00:00+00:00:30", "2026-12-03T14:00:00+0100", "2026-12-03T14:00:00+01"]
)
def test_an_offset_rfc_3339_does_not_allow_is_refused(text: str) -> None:
    """RFC 3339 offsets are Z or ±HH:MM: one with seconds, or without its colon, is refused
    (Python's own reading accepts them)."""
    with pytest.raises(ValueError, match=re.escape("has an offset RFC 3339 does not allow")):
        parse_moment(text, now=NOW, at_most=MONTH)


def test_a_refused_moment_or_duration_quotes_only_the_start_of_a_long_text() -> None:
    for parse in (
        lambda text: parse_moment(text, now=NOW, at_most=MONTH),
        lambda text: parse_duration(text, at_most=MONTH),
    ):
        with pytest.raises(ValueError, match="cannot read") as refused:
            parse("x" * 100_000)
        assert len(str(refused.value)) < 200
