"""A small strict reader of wrighty.json for the fast read commands (entry.py).

The full load (wrighty/config/) imports pydantic and builds every model: about 135 ms of a
command that needs only the store's URL and a few settings. This reader vouches for one
document only, the one `wrighty init` writes, unchanged but for its layout: the same keys and
the same values of the same JSON types (60 is not 60.0, true is not 1), no key twice, no
constant JSON does not know. Anything else, including a file it cannot read, it leaves to the
full load, so every problem is reported by it, in its words (None here).

INIT_DOCUMENT is `wrighty.config.default_config_document()` written out; StatusDefaults the
settings a document without a `status` or `budgets` section has. tests/cli/test_fast_status.py
keeps both equal to what the pydantic models say.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wrighty.config_file import DEFAULT_STORE_URL, MAX_CONFIG_BYTES, MAX_NUMBER_DIGITS, find_config

if TYPE_CHECKING:
    from wrighty.domain.health import Thresholds
    from wrighty.services.settings import ReadSettings

INIT_DOCUMENT: dict[str, Any] = {
    "$schema": "./.wrighty/wrighty.schema.json",
    "schemaVersion": 1,
    "store": {"url": DEFAULT_STORE_URL},
    "worker": {
        "leaseSeconds": 60,
        "heartbeatSeconds": 20,
        "itemTimeoutMinutes": 60,
        "pollSeconds": 5,
        "wakeUps": True,
        "concurrency": 1,
        "defaultAgent": "claude",
        "maxRequeues": 3,
        "workspaceMode": "current",
        "processCrash": {
            "action": "needs-attention",
            "initialRetryMinutes": 2,
            "backoffMultiplier": 2,
            "maxRetryMinutes": 15,
            "maxAttempts": 2,
        },
        "usageFailure": {
            "action": "needs-attention",
            "initialRetryMinutes": 30,
            "backoffMultiplier": 2,
            "maxRetryMinutes": 360,
            "maxAttempts": 5,
            "resetGraceMinutes": 2,
            "handoffAfterMinutes": None,
            "maxHandoffs": 2,
        },
        "label": None,
        "registryRetentionHours": 24,
        "sandbox": "none",
    },
    "agents": {},
}

# status.workerMaxAgeSeconds when the file has no `status` section (StatusSettings' default).
DEFAULT_WORKER_MAX_AGE_SECONDS = 60


@dataclass(frozen=True)
class QuickConfig:
    """What a fast read command takes from a vouched wrighty.json."""

    root: Path  # the project directory, as LoadedConfig.root
    store_url: str
    default_agent: str
    worker_max_age_seconds: float


class _NotVouchedError(Exception):
    """Something this reader leaves to the full load."""


def vouched_config(path: Path) -> QuickConfig | None:
    """The settings of the wrighty.json at ``path`` if it is the document `wrighty init`
    writes; None for anything else (the full load then reads it, and says what is wrong)."""
    from wrighty.inputs import read_text_file

    try:
        text = read_text_file(path, limit=MAX_CONFIG_BYTES)
        document = json.loads(
            text,
            object_pairs_hook=_refuse_duplicate_keys,
            parse_int=_short_int,
            parse_constant=_refuse_constant,
        )
    except Exception:  # unreadable, not JSON, too long, not UTF-8: the full load says which
        return None
    if not same_json(document, INIT_DOCUMENT):
        return None
    return QuickConfig(
        root=path.resolve().parent,
        store_url=document["store"]["url"],
        default_agent=document["worker"]["defaultAgent"],
        worker_max_age_seconds=DEFAULT_WORKER_MAX_AGE_SECONDS,
    )


def quick_read_settings(cwd: Path, explicit: Path | None) -> ReadSettings | None:
    """The read settings (services/settings.py) of the wrighty.json found from ``cwd`` (or
    ``explicit``, --config) if it is the init document; None for the full load to read it.
    The document's: no limits, no budgets, no status thresholds, retry policies that do not
    retry (so no provider circuit), no checks."""
    path = find_config(cwd, explicit)
    config = vouched_config(path) if path is not None else None
    if config is None:
        return None
    from wrighty.domain.budgets import Budgets
    from wrighty.domain.scheduling import ConcurrencyLimits
    from wrighty.services.settings import ReadSettings

    return ReadSettings(
        root=config.root,
        store_url=config.store_url,
        default_agent=config.default_agent,
        limits=ConcurrencyLimits(),
        budgets=Budgets(),
        worker_max_age_seconds=config.worker_max_age_seconds,
        crash_limit=None,
        usage_limit=None,
        thresholds=_no_thresholds,
        agent_rules=False,
    )


def _no_thresholds() -> Thresholds:
    from wrighty.domain.health import Thresholds

    return Thresholds()


def same_json(value: Any, expected: Any) -> bool:
    """``value`` is ``expected``: the same keys, and values of the same types."""
    if type(value) is not type(expected):
        return False
    if isinstance(expected, dict):
        return value.keys() == expected.keys() and all(
            same_json(value[key], expected[key]) for key in expected
        )
    if isinstance(expected, list):
        return len(value) == len(expected) and all(map(same_json, value, expected))
    return bool(value == expected)


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) != len(pairs):
        raise _NotVouchedError
    return document


def _short_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise _NotVouchedError
    return int(text)


def _refuse_constant(text: str) -> Any:
    raise _NotVouchedError
