"""Any JSON document as wrighty.json: `config validate` and `list` answer with exit 0 or 2 and
never raise; whatever they print has no raw control character."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.conftest import wrighty

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

# Keys wrighty knows, so that documents reach past "unknown key" into every section's rules.
KEYS = [
    "$schema", "schemaVersion", "store", "url", "worker", "status", "agents", "leaseSeconds",
    "heartbeatSeconds", "itemTimeoutMinutes", "pollSeconds", "concurrency", "defaultAgent",
    "maxRequeues", "workspaceMode", "processCrash", "usageFailure", "action",
    "initialRetryMinutes", "backoffMultiplier", "maxRetryMinutes", "maxAttempts",
    "resetGraceMinutes", "label", "registryRetentionHours", "maxQueueWaitSeconds", "minWorkers",
    "workerMaxAgeSeconds", "maxExpiredLeases", "maxNeedsAttention", "maxOpenCircuits", "claude",
    "codex", "gemini",
    "command", "adapter", "executable", "args", "env", "resumeCommand", "permission", "resume",
    "account", "notify", "urls", "events", "reasonCodes", "argv", "timeoutSeconds",
    "retentionHours", "maxNotifyAgeSeconds", "maxReviewWaitSeconds",
]  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**25), max_value=10**25)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.sampled_from(
        [
            "retry",
            "needs-attention",
            "command",
            "workspace",
            "sqlite:///x.db",
            "json://127.0.0.1:9/hook",
            "slack://T1/A1/b",
            "done",
        ]
    )
)
keys = st.sampled_from(KEYS) | st.text()
documents = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=6),
    max_leaves=30,
)


@pytest.mark.parametrize("command", [["config", "validate"], ["list"]])
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document=documents)
def test_any_json_document_is_answered_without_raising(
    initialised: Path, command: list[str], document: object
) -> None:
    (initialised / "wrighty.json").write_text(json.dumps(document))
    result = wrighty(*command)  # an exception would propagate and fail the test
    assert result.exit_code in (0, 2), result.output
    assert not CONTROL.search(result.stdout + result.stderr)
    if result.exit_code == 2:
        assert result.stderr.startswith("wrighty: ")
        assert len(result.stderr.splitlines()) == 1


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document=st.dictionaries(keys, documents, max_size=4))
def test_any_section_under_a_known_key_is_answered_without_raising(
    initialised: Path, document: dict[str, object]
) -> None:
    for section in ("worker", "status", "store", "agents", "notify"):
        (initialised / "wrighty.json").write_text(json.dumps({section: document}))
        result = wrighty("config", "validate")
        assert result.exit_code in (0, 2), result.output
        assert not CONTROL.search(result.stdout + result.stderr)


# worker.usageFailure's bounds, as docs/config.md lists them: (lowest, lowest allowed, highest).
USAGE_BOUNDS = {
    "initialRetryMinutes": (0, False, 1440),
    "backoffMultiplier": (1, True, 100),
    "maxRetryMinutes": (0, False, 10080),
    "maxAttempts": (1, True, 50),
    "resetGraceMinutes": (0, True, 60),
}
usage_numbers = st.integers(min_value=-5, max_value=20000) | st.floats(
    min_value=-5, max_value=20000, allow_nan=False
)


def _usage_value_ok(key: str, value: float) -> bool:
    low, low_allowed, high = USAGE_BOUNDS[key]
    if key == "maxAttempts" and not isinstance(value, int):
        return False
    return (value >= low if low_allowed else value > low) and value <= high


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(policy=st.dictionaries(st.sampled_from(sorted(USAGE_BOUNDS)), usage_numbers))
def test_a_usage_failure_policy_is_accepted_exactly_within_its_bounds(
    initialised: Path, policy: dict[str, float]
) -> None:
    document = {"worker": {"usageFailure": {"action": "retry", **policy}}}
    (initialised / "wrighty.json").write_text(json.dumps(document))
    result = wrighty("config", "validate")
    whole = {"initialRetryMinutes": 30, "maxRetryMinutes": 360, **policy}
    expected = all(_usage_value_ok(key, value) for key, value in policy.items()) and (
        whole["initialRetryMinutes"] <= whole["maxRetryMinutes"]
    )
    assert result.exit_code == (0 if expected else 2), result.output
    if not expected:
        lines = result.stdout.splitlines()
        assert lines
        assert all(line.startswith("worker.usageFailure.") for line in lines), lines
