"""The clock wrighty reads in production, and how times appear in JSON output."""

from datetime import UTC, datetime, tzinfo


def system_now() -> datetime:
    """The current time, in UTC (passed in wherever time matters, so tests replace it)."""
    return datetime.now(UTC)


def rfc3339(moment: datetime | None) -> str | None:
    """RFC 3339, UTC, milliseconds, a trailing Z."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def local_zone(now: datetime) -> tzinfo:
    """This machine's time zone at ``now`` (its offset then, from TZ or /etc/localtime): the
    zone a time a person gives without an offset is read in."""
    zone = now.astimezone().tzinfo
    assert zone is not None  # astimezone() always gives one
    return zone
