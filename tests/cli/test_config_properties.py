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
    "maxRequeues", "workspaceMode", "processCrash", "action", "initialRetryMinutes",
    "backoffMultiplier", "maxRetryMinutes", "maxAttempts", "label", "registryRetentionHours",
    "maxQueueWaitSeconds", "minWorkers", "workerMaxAgeSeconds", "maxExpiredLeases",
    "maxNeedsAttention", "claude", "codex", "gemini", "command", "adapter", "executable", "args",
    "env", "resumeCommand", "permission", "resume",
]  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**25), max_value=10**25)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.sampled_from(["retry", "needs-attention", "command", "workspace", "sqlite:///x.db"])
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
    for section in ("worker", "status", "store", "agents"):
        (initialised / "wrighty.json").write_text(json.dumps({section: document}))
        result = wrighty("config", "validate")
        assert result.exit_code in (0, 2), result.output
        assert not CONTROL.search(result.stdout + result.stderr)
