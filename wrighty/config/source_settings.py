"""wrighty.json's sources section: the trackers items come from, and how often a worker syncs
them (docs/sources.md)."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from wrighty.config.section import ENV_NAME_PATTERN
from wrighty.config.section import Section as _Section
from wrighty.domain.conversation import LOGIN, REPO

REPO_PATTERN = f"^{REPO}$"
SOURCE_NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,39}$"
# A GitHub label: any text but a comma (the issues list takes them comma-separated).
LABEL_TEXT_PATTERN = r"^[^,\x00-\x1f]{1,50}$"
PRIORITY_NAME_PATTERN = r"^P[0-3]$"
LOGIN_PATTERN = f"^{LOGIN}$"
DEFAULT_POLL_SECONDS = 300
DEFAULT_API_URL = "https://api.github.com"


class GitHubSourceSettings(_Section):
    kind: Literal["github"] = Field(..., description="The tracker: github.")
    name: str | None = Field(
        None,
        pattern=SOURCE_NAME_PATTERN,
        description="How `wrighty sources` names it (default: the repository, owner/name).",
    )
    repo: str = Field(..., pattern=REPO_PATTERN, description="The repository, owner/name.")
    labels: list[str] = Field(
        ...,
        min_length=1,
        max_length=10,
        description="An open issue with all these labels is an item; at least one, so that "
        "nobody's issue becomes an agent's task without a person's label.",
        json_schema_extra={"items": {"pattern": LABEL_TEXT_PATTERN}},
    )
    token_env: str = Field(
        "GITHUB_TOKEN",
        pattern=ENV_NAME_PATTERN,
        description="The environment variable holding the token (it is read from there only, "
        "never stored or shown).",
    )
    api_url: str = Field(
        DEFAULT_API_URL,
        max_length=300,
        description="The REST API's base URL (GitHub Enterprise: https://HOST/api/v3); https, "
        "or http to this machine only.",
    )
    priority_labels: dict[str, str] = Field(
        default_factory=dict,
        description='Labels that set the item\'s priority, {"urgent": "P0"}; the highest wins.',
        json_schema_extra={
            "propertyNames": {"pattern": LABEL_TEXT_PATTERN},
            "additionalProperties": {"pattern": PRIORITY_NAME_PATTERN},
        },
    )
    agent: str | None = Field(None, description="The agent its items go to (default: worker's).")
    queue: bool = Field(True, description="Whether its new items are queued (else todo).")
    timeout_seconds: float = Field(
        30, gt=0, le=300, description="How long one request to the API may take."
    )
    status_comments: bool = Field(
        True,
        description="Whether each item keeps one comment on its issue saying where it stands "
        "(edited in place as it moves).",
    )
    answers: bool = Field(
        True,
        description="Whether `/wrighty accept|reject|retry|handoff|cancel|priority` comments "
        "by trusted authors act on the issue's item.",
    )
    trusted_authors: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="GitHub logins whose answers act, besides the people with write access.",
        json_schema_extra={"items": {"pattern": LOGIN_PATTERN}},
    )
    trust_collaborators: bool = Field(
        True,
        description="Whether people with write access to the repository (GitHub is asked, "
        "and believed for 10 minutes) may answer.",
    )

    @field_validator("trusted_authors")
    @classmethod
    def _logins_read(cls, value: list[str]) -> list[str]:
        for login in value:
            if not re.fullmatch(LOGIN_PATTERN, login):
                raise ValueError(
                    f"{login[:60]!r} is not a GitHub login: letters, digits and -, at most 39"
                )
        return value

    @field_validator("labels")
    @classmethod
    def _labels_read(cls, value: list[str]) -> list[str]:
        for label in value:
            _label(label)
        if len(set(value)) != len(value):
            raise ValueError("names a label twice")
        return value

    @field_validator("priority_labels")
    @classmethod
    def _priorities_read(cls, value: dict[str, str]) -> dict[str, str]:
        for label, priority in value.items():
            _label(label)
            if priority not in ("P0", "P1", "P2", "P3"):
                raise ValueError(f"{label!r}: {priority!r} is not a priority: give P0 to P3")
        return value

    @field_validator("api_url")
    @classmethod
    def _api_url_reads(cls, value: str) -> str:
        check_api_url(value)
        return value.rstrip("/")

    @property
    def shown_name(self) -> str:
        return self.name or self.repo


class PullRequestSettings(_Section):
    """completion.pullRequest: where completion.integrate github-pr opens pull requests."""

    repo: str = Field(..., pattern=REPO_PATTERN, description="The repository, owner/name.")
    token_env: str = Field(
        "GITHUB_TOKEN",
        pattern=ENV_NAME_PATTERN,
        description="The environment variable holding a token that may open pull requests.",
    )
    api_url: str = Field(DEFAULT_API_URL, max_length=300, description="The REST API's base URL.")
    draft: bool = Field(False, description="Whether pull requests are opened as drafts.")
    timeout_seconds: float = Field(
        30, gt=0, le=300, description="How long one request to the API may take."
    )

    @field_validator("api_url")
    @classmethod
    def _api_url_reads(cls, value: str) -> str:
        check_api_url(value)
        return value.rstrip("/")


class SourcesSettings(_Section):
    poll_seconds: float = Field(
        DEFAULT_POLL_SECONDS,
        ge=1,
        le=86400,
        description="How often a worker syncs each source (a failing one backs off).",
    )
    trackers: list[GitHubSourceSettings] = Field(
        default_factory=list, max_length=50, description="The trackers items come from."
    )


def _label(label: str) -> None:
    if not label.strip() or "," in label or len(label) > 50 or not label.isprintable():
        raise ValueError(
            f"{label[:60]!r} is not a label: 1 to 50 printable characters without a comma"
        )


def check_api_url(text: str) -> None:
    """ValueError saying what to change when ``text`` is not an API base URL a token may be
    sent to: https (http only to this machine: a token must not cross a network in clear),
    a host, no user name, password, query or fragment."""
    if any(not char.isprintable() or char.isspace() for char in text):
        raise ValueError("holds a space or a control character")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - ValueError for a port that is not a number in range
    except ValueError:
        raise ValueError("is not a URL: give one like https://api.github.com") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an https:// URL with a host, as https://api.github.com")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not hold a user name or password: the token comes from tokenEnv")
    if parts.query or parts.fragment or "?" in text or "#" in text:
        raise ValueError("must not hold a query or a fragment")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise ValueError(
            "must be https:// (http only to this machine, 127.0.0.1 or localhost): the token "
            "would cross the network in clear"
        )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def source_problems(sources: SourcesSettings, agents: list[str]) -> list[tuple[str, str]]:
    """(JSON path, message) for what relates one source to another or to the agents: two
    sources with one name or one repository, an unknown agent."""
    problems = []
    names: dict[str, int] = {}
    repos: dict[tuple[str, str], int] = {}
    for index, tracker in enumerate(sources.trackers):
        where = f"sources.trackers[{index}]"
        name = tracker.shown_name
        if name in names:
            problems.append(
                (f"{where}.name", f"{name!r} is also sources.trackers[{names[name]}]'s name")
            )
        names.setdefault(name, index)
        place = (tracker.api_url, tracker.repo.lower())
        if place in repos:
            problems.append(
                (
                    f"{where}.repo",
                    f"{tracker.repo} is also sources.trackers[{repos[place]}]'s: one source per "
                    "repository (its issues' items are keyed by it)",
                )
            )
        repos.setdefault(place, index)
        if tracker.agent is not None and tracker.agent not in agents:
            problems.append(
                (f"{where}.agent", f"unknown agent {tracker.agent!r} (known: {', '.join(agents)})")
            )
    return problems
