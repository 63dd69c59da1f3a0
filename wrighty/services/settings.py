"""What the read commands (`list`, `show`, `status`) take from wrighty.json, as plain domain
values: `ReadSettings`.

The CLI's `AppContext.settings()` gives them from the whole config (``read_settings_of``,
pydantic's models), or, for the document `wrighty init` writes, from cli/quick_config.py's
strict reader without loading the models. The services read these values, not the config's
models, so that a read command pays for the models only when the file is not that document.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wrighty.config import LoadedConfig
    from wrighty.domain.budgets import Budgets
    from wrighty.domain.health import Thresholds
    from wrighty.domain.scheduling import ConcurrencyLimits


@dataclass(frozen=True)
class ReadSettings:
    """The settings a read command uses."""

    root: Path  # the project directory (LoadedConfig.root)
    store_url: str  # store.url, relative to ``root``
    default_agent: str  # worker.defaultAgent
    limits: ConcurrencyLimits
    budgets: Budgets
    worker_max_age_seconds: float  # status.workerMaxAgeSeconds
    # worker.processCrash's and worker.usageFailure's maxAttempts, each when its policy
    # retries; None otherwise.
    crash_limit: int | None
    usage_limit: int | None
    # status.*'s health thresholds, made when asked for (only `status` loads domain/health).
    thresholds: Callable[[], Thresholds]
    # False: wrighty.json sets nothing for one agent that `show` reads (no provider circuit, as
    # the usage policy does not retry; no checks, so no fix turns). True: ask the whole config.
    agent_rules: bool = True


def read_settings_of(loaded: LoadedConfig) -> ReadSettings:
    """The read settings of a config loaded by pydantic's models."""
    from wrighty.config import budgets_of, limits_of, thresholds_of

    config = loaded.config
    crash, usage = config.worker.process_crash, config.worker.usage_failure
    return ReadSettings(
        root=loaded.root,
        store_url=config.store.url,
        default_agent=config.worker.default_agent,
        limits=limits_of(config),
        budgets=budgets_of(config),
        worker_max_age_seconds=config.status.worker_max_age_seconds,
        crash_limit=crash.max_attempts if crash.action == "retry" else None,
        usage_limit=usage.max_attempts if usage.action == "retry" else None,
        thresholds=partial(thresholds_of, config),
    )
