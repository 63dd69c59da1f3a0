"""The notify section of wrighty.json (docs/config.md#notify): its forms, its checks, and
messages that never echo a URL (it may carry a token) or an argument."""

from __future__ import annotations

import json
from typing import get_args

import pytest

from wrighty.config import (
    CommandSink,
    NotifyEvent,
    NotifySettings,
    UrlSink,
    apprise_url_problem,
    check_config_text,
    config_json_schema,
)
from wrighty.domain.notices import DEFAULT_EVENTS, EVENTS

SECRET = "Hunter2Secret"


def problems(notify: object) -> list[str]:
    config, found = check_config_text(json.dumps({"notify": notify}), deep=True)
    assert (config is None) == bool(found)
    return [str(problem) for problem in found]


def test_the_defaults_send_nothing() -> None:
    settings = NotifySettings()
    assert not settings.enabled
    assert settings.events == ["needs-attention", "retries-exhausted", "budget-exceeded",
                               "circuit-open", "worker-lost", "ready-for-review",
                               "not-landed", "digest"]  # fmt: skip
    assert settings.digest is None  # and so no digest is made
    assert tuple(settings.events) == DEFAULT_EVENTS
    assert (settings.max_attempts, settings.retention_hours) == (8, 168)


def test_the_events_the_file_names_are_the_notices_events() -> None:
    """models.py spells the events out (a Literal): they are notices.py's, in its order."""
    assert get_args(NotifyEvent) == EVENTS
    config, found = check_config_text(
        json.dumps(
            {
                "notify": {
                    "urls": [
                        {"url": "json://h/a", "events": ["ready-for-review"]},
                        {"url": "json://h/b", "events": ["not-landed", "landed"]},
                    ]
                }
            }
        )
    )
    assert found == []
    assert config is not None


def test_every_form_of_sink_is_read() -> None:
    config, found = check_config_text(
        json.dumps(
            {
                "notify": {
                    "urls": [
                        "json://127.0.0.1:9/hook",
                        {"env": "WRIGHTY_SLACK_URL", "events": ["needs-attention"]},
                        {"url": "ntfy://wrighty-alerts", "reasonCodes": ["billing", "auth"]},
                    ],
                    "command": {"argv": ["notify-me", "--json"], "timeoutSeconds": 5},
                    "events": ["needs-attention", "worker-quiet"],
                    "maxAttempts": 3,
                    "retentionHours": 24,
                },
                "status": {"maxNotifyAgeSeconds": 600},
            }
        )
    )
    assert found == []
    assert config is not None
    notify = config.notify
    assert notify.enabled
    assert notify.urls[0] == "json://127.0.0.1:9/hook"
    assert notify.urls[1] == UrlSink.model_validate({"env": "WRIGHTY_SLACK_URL",
                                                     "events": ["needs-attention"]})  # fmt: skip
    assert isinstance(notify.command, CommandSink)
    assert notify.command.timeout_seconds == 5
    assert config.status.max_notify_age_seconds == 600
    assert check_config_text(json.dumps({"notify": {"command": ["notify-me"]}}))[1] == []


BOTH = "notify.urls.0: give url or env, one of the two"
A_URL_OR_OBJECT = "must be an Apprise URL (a string) or an object with url or env"
AN_ARGV_OR_OBJECT = "must be an argv (a list of strings) or an object with argv"


@pytest.mark.parametrize(
    ("notify", "expected"),
    [
        ({"urls": [{"url": "json://h/a", "env": "X"}]}, BOTH),
        ({"urls": [{"events": ["done"]}]}, BOTH),
        ({"urls": [5]}, f"notify.urls.0: {A_URL_OR_OBJECT} (got 5)"),
        ({"urls": f"slack://{SECRET}"}, "notify.urls: must be a valid list (got a string)"),
        (
            {"urls": [{"url": "json://h/a", "event": ["done"]}]},
            "notify.urls.0.event: unknown key (allowed here: events, reasonCodes, url, env)",
        ),
        ({"urls": [{"env": "1BAD"}]}, "notify.urls.0.env: must be a variable name"),
        (
            {"urls": [{"url": f"json://h/{SECRET}", "events": ["nope"]}]},
            "notify.urls.0.events.0: must be 'needs-attention'",
        ),
        ({"command": "notify-send"}, f"notify.command: {AN_ARGV_OR_OBJECT} (got a string)"),
        ({"command": {"argv": []}}, "notify.command.argv: is empty: name the program to run"),
        ({"command": []}, "notify.command: is empty: name the program to run"),
        (
            {"command": {"argv": ["x"], "timeout": 3}},
            "notify.command.timeout: unknown key (allowed here: events, reasonCodes, argv, "
            "timeoutSeconds)",
        ),
        (
            {"command": {"argv": ["x"], "timeoutSeconds": 601}},
            "notify.command.timeoutSeconds: must be <= 600 (got 601)",
        ),
        ({"command": [""]}, "notify.command.0: is empty: name the program to run"),
        ({"command": {"argv": ["x", "a\x00b"]}}, "notify.command.argv.1: holds a NUL byte"),
        ({"command": [SECRET, 5]}, "notify.command.1: must be a valid string (got 5)"),
        ({"events": ["needs-attention", "sometimes"]}, "notify.events.1: must be"),
        ({"maxAttempts": 0}, "notify.maxAttempts: must be >= 1 (got 0)"),
        ({"retentionHours": 0}, "notify.retentionHours: must be > 0 (got 0)"),
        (
            {"sinks": []},
            "notify.sinks: unknown key (allowed here: urls, command, events, maxAttempts, "
            "retentionHours, digest)",
        ),
    ],
)
def test_a_bad_notify_section_is_refused_by_its_path(notify: object, expected: str) -> None:
    found = problems(notify)
    assert len(found) == 1, found
    assert found[0].startswith(expected)
    assert SECRET not in found[0]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"slack://{SECRET}", "Apprise cannot use this slack:// URL: "),
        (f"bogus://{SECRET}/x", "Apprise cannot read this bogus:// URL"),
        (SECRET, "is not an Apprise URL: it needs a scheme"),
        ("", "is not an Apprise URL"),
        (f"json://{SECRET}/a json://other/b", "holds more than one URL"),
        (f"mailto://user:{SECRET}@", "Apprise cannot use this mailto:// URL"),
        ("json://", "Apprise cannot read this json:// URL"),
    ],
)
def test_a_url_apprise_cannot_use_is_refused_naming_its_scheme_only(
    url: str, expected: str
) -> None:
    [found] = problems({"urls": ["json://127.0.0.1/ok", url]})
    assert found.startswith(f"notify.urls.1: {expected}")
    assert SECRET not in found
    assert apprise_url_problem(url) is not None


def test_a_slack_problem_points_to_apprises_page() -> None:
    problem = apprise_url_problem(f"slack://T1JJ3T3L2/{SECRET}")
    assert problem is not None
    assert problem == (
        "Apprise cannot use this slack:// URL: it refused a token or an option; "
        "see https://appriseit.com/services/slack/"
    )


@pytest.mark.parametrize(
    "url",
    [
        "json://127.0.0.1:8080/hook",
        "jsons://hooks.example.com/x",
        "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ",
        "ntfy://wrighty-alerts",
        "ntfys://ntfy.example.com/wrighty",
        "mailtos://me:app-password@gmail.com",
        # Desktops: Apprise knows them; this machine may lack their libraries, the one that
        # delivers may not.
        "dbus://",
        "gnome://",
        "macosx://",
        "windows://",
    ],
)
def test_urls_apprise_can_use_pass(url: str) -> None:
    assert apprise_url_problem(url) is None
    assert problems({"urls": [url]}) == []


def test_a_url_from_the_environment_is_not_checked_when_the_file_is() -> None:
    assert problems({"urls": [{"env": "WRIGHTY_NOT_SET_ANYWHERE"}]}) == []


def test_the_notify_age_threshold_is_bounded() -> None:
    for value, ok in ((0, False), (-1, False), (1, True), (31_536_000, True), (31_536_001, False)):
        _config, found = check_config_text(json.dumps({"status": {"maxNotifyAgeSeconds": value}}))
        assert (found == []) == ok, (value, found)


def test_the_schema_describes_the_sinks() -> None:
    schema = config_json_schema()
    notify = schema["$defs"]["NotifySettings"]["properties"]
    assert set(notify) == {"urls", "command", "events", "maxAttempts", "retentionHours",
                           "digest"}  # fmt: skip
    assert notify["urls"]["items"]["oneOf"][0] == {"type": "string"}
    assert set(schema["$defs"]["UrlSink"]["properties"]) == {"url", "env", "events",
                                                            "reasonCodes"}  # fmt: skip
    assert "maxNotifyAgeSeconds" in schema["$defs"]["StatusSettings"]["properties"]


def test_only_a_deep_check_asks_apprise_about_urls() -> None:
    # Every command loads the file; only `config validate` and a worker's start pay for
    # Apprise (a URL from the environment is checked when it is used).
    document = json.dumps({"notify": {"urls": [f"bogus://{SECRET}/x"]}})
    assert check_config_text(document)[1] == []
    [found] = check_config_text(document, deep=True)[1]
    assert str(found).startswith("notify.urls.0: Apprise cannot read this bogus:// URL")
