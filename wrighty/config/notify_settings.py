"""wrighty.json's notify section: its sinks (Apprise URLs, a command), their filters, the
events, the outbox's bounds and the morning digest (docs/notifications.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, Tag, field_validator

from wrighty.config.section import ENV_NAME_PATTERN
from wrighty.config.section import Section as _Section
from wrighty.domain.morning import DIGEST_PATTERN, parse_digest_time

# As domain/notices.py's EVENTS and DEFAULT_EVENTS (tests/unit/test_notify_config.py).
NotifyEvent = Literal[
    "needs-attention", "retries-exhausted", "budget-exceeded", "circuit-open", "worker-lost",
    "ready-for-review", "not-landed", "retry-scheduled", "done", "landed", "worker-quiet",
    "digest",
]  # fmt: skip
_DEFAULT_NOTIFY_EVENTS: tuple[NotifyEvent, ...] = (
    "needs-attention", "retries-exhausted", "budget-exceeded", "circuit-open", "worker-lost",
    "ready-for-review", "not-landed", "digest",
)  # fmt: skip
DEFAULT_COMMAND_TIMEOUT_SECONDS = 30
MAX_COMMAND_TIMEOUT_SECONDS = 600


class _SinkFilter(_Section):
    events: list[NotifyEvent] | None = Field(
        None, description="The events this sink gets (default: notify.events)."
    )
    reason_codes: list[str] | None = Field(
        None,
        description="Only items with one of these reason codes (events without an item, such "
        "as circuit-open, always pass).",
    )


class UrlSink(_SinkFilter):
    url: str | None = Field(
        None, description="An Apprise URL (slack://, ntfy://, mailto://, json://, ...)."
    )
    env: str | None = Field(
        None,
        pattern=ENV_NAME_PATTERN,
        description="The environment variable that holds the URL (keeps tokens out of the file).",
    )


class CommandSink(_SinkFilter):
    argv: list[str] = Field(
        ..., min_length=1, description="The program and its arguments; the event as JSON on stdin."
    )
    timeout_seconds: float = Field(
        DEFAULT_COMMAND_TIMEOUT_SECONDS,
        gt=0,
        le=MAX_COMMAND_TIMEOUT_SECONDS,
        description="How long one delivery may take before it counts as failed.",
    )


def _entry_kind(value: Any) -> str | None:
    """Which form a sink entry takes (None: neither, refused as such)."""
    if isinstance(value, dict | BaseModel):
        return "object"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return None


# A sink is written as a string (an argv: a list) or as an object with a filter; the form is
# chosen by the JSON type, so that a mistake is reported against the form that was written.
UrlEntry = Annotated[
    Annotated[str, Tag("string")] | Annotated[UrlSink, Tag("object")],
    Discriminator(
        _entry_kind,
        custom_error_type="sink_form",
        custom_error_message="must be an Apprise URL (a string) or an object with url or env",
    ),
]
CommandEntry = Annotated[
    Annotated[list[str], Field(min_length=1), Tag("list")] | Annotated[CommandSink, Tag("object")],
    Discriminator(
        _entry_kind,
        custom_error_type="sink_form",
        custom_error_message="must be an argv (a list of strings) or an object with argv",
    ),
]


class NotifySettings(_Section):
    urls: list[UrlEntry] = Field(
        default_factory=list,
        description="Apprise URLs, as strings or objects with url (or env) and a filter.",
    )
    command: CommandEntry | None = Field(
        None, description="A program (argv, no shell) that gets each event as JSON on stdin."
    )
    events: list[NotifyEvent] = Field(
        default_factory=lambda: list(_DEFAULT_NOTIFY_EVENTS),
        description="The events a sink gets unless it names its own.",
    )
    max_attempts: int = Field(
        8, ge=1, le=50, description="Delivery attempts of one event before it is given up."
    )
    retention_hours: float = Field(
        168, gt=0, le=24 * 365, description="How long delivered events are kept."
    )
    digest: str | None = Field(
        None,
        description='A morning digest once a day at this time of day, "HH:MM" (UTC) or '
        '"HH:MM+01:00": what finished, landed, failed and waits for a person over the last '
        "24 hours (docs/notifications.md#the-morning-digest). Off when absent.",
        json_schema_extra={"pattern": DIGEST_PATTERN},
    )

    @field_validator("digest")
    @classmethod
    def _digest_reads(cls, value: str | None) -> str | None:
        if value is not None:
            parse_digest_time(value)
        return value

    @property
    def enabled(self) -> bool:
        """Whether any sink is configured (otherwise nothing is written to the outbox)."""
        return bool(self.urls) or self.command is not None
