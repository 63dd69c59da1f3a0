"""How times appear in JSON output: RFC 3339, UTC, milliseconds, a trailing Z."""

from datetime import UTC, datetime


def rfc3339(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
