"""wrighty.json: one package, a module per job.

- models: the sections as pydantic models (the JSON Schema is generated from them);
- loading: finding the file, reading it, loading it, what `wrighty init` writes;
- problems: strict JSON reading and problem reports by JSON path;
- checks: the rules across settings, the store URL, the Apprise URLs;
- translate: every translation into the domain's objects (budgets, prices, limits, retry
  policies, circuits).

``from wrighty.config import X`` names the public names of each. The package loads pydantic:
commands that need no config import it lazily (wrighty/operator/context.py).
"""

from __future__ import annotations

from wrighty.config.checks import (
    apprise_url_problem,
    check_config_text,
    check_program_problems,
    config_warnings,
    notify_url_problems,
    url_scheme,
)
from wrighty.config.loading import (
    LoadedConfig,
    config_json_schema,
    default_config_document,
    load_config,
    read_config_text,
)
from wrighty.config.models import (
    AGENT_NAME_PATTERN,
    MAX_BUDGET_TOKENS,
    MAX_BUDGET_USD,
    MAX_CONCURRENT,
    MAX_CONFIG_DEPTH,
    MAX_CRASH_RETRY_ATTEMPTS,
    MAX_MODEL_NAME,
    MAX_PRICE_PER_MTOK,
    MAX_USAGE_RETRY_ATTEMPTS,
    SCHEMA_VERSION,
    AgentSettings,
    AgentVerifySettings,
    BudgetLimit,
    BudgetSettings,
    CheckSettings,
    LabelLimit,
    LimitSettings,
    ModelPrice,
    ProcessCrashPolicy,
    StatusSettings,
    StoreSettings,
    UsageFailurePolicy,
    VerifySettings,
    WorkerSettings,
    WrightyConfig,
    sandbox_of,
)
from wrighty.config.notify_settings import (
    DEFAULT_COMMAND_TIMEOUT_SECONDS,
    MAX_COMMAND_TIMEOUT_SECONDS,
    CommandEntry,
    CommandSink,
    NotifyEvent,
    NotifySettings,
    UrlEntry,
    UrlSink,
)
from wrighty.config.problems import (
    EMPTY_PROGRAM,
    MAX_ECHOED_STRING,
    Problem,
    json_path,
    problems_from,
    read_json,
)
from wrighty.config.sandbox_settings import (
    BubblewrapProfile,
)
from wrighty.config.section import (
    ENV_NAME_PATTERN,
)
from wrighty.config.source_settings import SourcesSettings
from wrighty.config.translate import (
    agent_checks,
    agent_circuit,
    budgets_of,
    completion_of,
    crash_policy_of,
    known_secrets,
    lease_terms_of,
    limits_of,
    pricing_of,
    sandbox_profile,
    sources_of,
    thresholds_of,
    usage_policy_of,
    verify_policy,
    zone_named,
)
from wrighty.config_file import (
    CONFIG_FILENAME,
    DEFAULT_STORE_URL,
    MAX_CONFIG_BYTES,
    MAX_NUMBER_DIGITS,
    SCHEMA_FILENAME,
    STATE_DIRNAME,
    find_config,
)

__all__ = [
    "AGENT_NAME_PATTERN",
    "CONFIG_FILENAME",
    "DEFAULT_COMMAND_TIMEOUT_SECONDS",
    "DEFAULT_STORE_URL",
    "EMPTY_PROGRAM",
    "ENV_NAME_PATTERN",
    "MAX_BUDGET_TOKENS",
    "MAX_BUDGET_USD",
    "MAX_COMMAND_TIMEOUT_SECONDS",
    "MAX_CONCURRENT",
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "MAX_CRASH_RETRY_ATTEMPTS",
    "MAX_ECHOED_STRING",
    "MAX_MODEL_NAME",
    "MAX_NUMBER_DIGITS",
    "MAX_PRICE_PER_MTOK",
    "MAX_USAGE_RETRY_ATTEMPTS",
    "SCHEMA_FILENAME",
    "SCHEMA_VERSION",
    "STATE_DIRNAME",
    "AgentSettings",
    "AgentVerifySettings",
    "BubblewrapProfile",
    "BudgetLimit",
    "BudgetSettings",
    "CheckSettings",
    "CommandEntry",
    "CommandSink",
    "LabelLimit",
    "LimitSettings",
    "LoadedConfig",
    "ModelPrice",
    "NotifyEvent",
    "NotifySettings",
    "Problem",
    "ProcessCrashPolicy",
    "SourcesSettings",
    "StatusSettings",
    "StoreSettings",
    "UrlEntry",
    "UrlSink",
    "UsageFailurePolicy",
    "VerifySettings",
    "WorkerSettings",
    "WrightyConfig",
    "agent_checks",
    "agent_circuit",
    "apprise_url_problem",
    "budgets_of",
    "check_config_text",
    "check_program_problems",
    "completion_of",
    "config_json_schema",
    "config_warnings",
    "crash_policy_of",
    "default_config_document",
    "find_config",
    "json_path",
    "known_secrets",
    "lease_terms_of",
    "limits_of",
    "load_config",
    "notify_url_problems",
    "pricing_of",
    "problems_from",
    "read_config_text",
    "read_json",
    "sandbox_of",
    "sandbox_profile",
    "sources_of",
    "thresholds_of",
    "url_scheme",
    "usage_policy_of",
    "verify_policy",
    "zone_named",
]
