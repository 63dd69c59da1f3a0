from __future__ import annotations

import json
from pathlib import Path

import pytest

from wrighty.config import (
    WrightyConfig,
    check_config_text,
    config_json_schema,
    default_config_document,
    find_config,
    load_config,
    sandbox_of,
)
from wrighty.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def problems_of(document: object) -> list[str]:
    _, problems = check_config_text(json.dumps(document))
    return [str(p) for p in problems]


def test_the_default_document_is_valid_and_has_the_design_defaults() -> None:
    config, problems = check_config_text(json.dumps(default_config_document()))
    assert problems == []
    assert config is not None
    crash = config.worker.process_crash
    assert (crash.action, crash.initial_retry_minutes, crash.backoff_multiplier) == (
        "needs-attention",
        2,
        2,
    )
    assert (crash.max_retry_minutes, crash.max_attempts) == (15, 2)
    usage = config.worker.usage_failure
    assert (usage.action, usage.initial_retry_minutes, usage.backoff_multiplier) == (
        "needs-attention",
        30,
        2,
    )
    assert (usage.max_retry_minutes, usage.max_attempts, usage.reset_grace_minutes) == (360, 5, 2)
    assert config.worker.max_requeues == 3
    assert config.store.url == "sqlite:///.wrighty/wrighty.db"


def test_a_usage_failure_policy_is_read_by_its_attribute_names() -> None:
    config, problems = check_config_text(
        json.dumps(
            {
                "worker": {
                    "usageFailure": {
                        "action": "retry",
                        "initialRetryMinutes": 0.5,
                        "backoffMultiplier": 1,
                        "maxRetryMinutes": 10080,
                        "maxAttempts": 50,
                        "resetGraceMinutes": 0,
                    }
                }
            }
        )
    )
    assert problems == []
    assert config is not None
    usage = config.worker.usage_failure
    assert (usage.action, usage.initial_retry_minutes, usage.backoff_multiplier) == (
        "retry",
        0.5,
        1,
    )
    assert (usage.max_retry_minutes, usage.max_attempts, usage.reset_grace_minutes) == (
        10080,
        50,
        0,
    )
    assert config.worker.process_crash.action == "needs-attention"


def test_an_empty_object_means_every_default() -> None:
    config, problems = check_config_text("{}")
    assert problems == []
    assert config is not None
    assert config.worker.lease_seconds == 60


def test_minutes_accept_fractions() -> None:
    config, problems = check_config_text(
        json.dumps(
            {
                "worker": {
                    "itemTimeoutMinutes": 0.05,
                    "processCrash": {
                        "action": "retry",
                        "initialRetryMinutes": 0.05,
                        "maxRetryMinutes": 0.1,
                    },
                }
            }
        )
    )
    assert problems == []
    assert config is not None
    assert config.worker.item_timeout_minutes * 60 == pytest.approx(3)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            {"worker": {"processCrash": {"backoffMultiplier": 0.5}}},
            "worker.processCrash.backoffMultiplier: must be >= 1 (got 0.5)",
        ),
        (
            {"worker": {"processCrash": {"initialRetryMinutes": 0}}},
            "worker.processCrash.initialRetryMinutes: must be > 0 (got 0)",
        ),
        (
            {"worker": {"processCrash": {"maxAttempts": 0}}},
            "worker.processCrash.maxAttempts: must be >= 1 (got 0)",
        ),
        (
            {"worker": {"processCrash": {"maxAttempts": 21}}},
            "worker.processCrash.maxAttempts: must be <= 20 (got 21)",
        ),
        (
            {"worker": {"processCrash": {"maxAttempts": 1.5}}},
            "worker.processCrash.maxAttempts: must be a valid integer (got 1.5)",
        ),
        (
            {"worker": {"usageFailure": {"action": "wait"}}},
            "worker.usageFailure.action: must be 'needs-attention' or 'retry' "
            '(got the string "wait")',
        ),
        (
            {"worker": {"usageFailure": {"initialRetryMinutes": 0}}},
            "worker.usageFailure.initialRetryMinutes: must be > 0 (got 0)",
        ),
        (
            {"worker": {"usageFailure": {"initialRetryMinutes": 1441}}},
            "worker.usageFailure.initialRetryMinutes: must be <= 1440 (got 1441)",
        ),
        (
            {"worker": {"usageFailure": {"backoffMultiplier": 0.5}}},
            "worker.usageFailure.backoffMultiplier: must be >= 1 (got 0.5)",
        ),
        (
            {"worker": {"usageFailure": {"backoffMultiplier": 101}}},
            "worker.usageFailure.backoffMultiplier: must be <= 100 (got 101)",
        ),
        (
            {"worker": {"usageFailure": {"maxRetryMinutes": 0}}},
            "worker.usageFailure.maxRetryMinutes: must be > 0 (got 0)",
        ),
        (
            {"worker": {"usageFailure": {"maxRetryMinutes": 10081}}},
            "worker.usageFailure.maxRetryMinutes: must be <= 10080 (got 10081)",
        ),
        (
            {"worker": {"usageFailure": {"maxAttempts": 0}}},
            "worker.usageFailure.maxAttempts: must be >= 1 (got 0)",
        ),
        (
            {"worker": {"usageFailure": {"maxAttempts": 51}}},
            "worker.usageFailure.maxAttempts: must be <= 50 (got 51)",
        ),
        (
            {"worker": {"usageFailure": {"maxAttempts": 5.0}}},
            "worker.usageFailure.maxAttempts: must be a valid integer (got 5.0)",
        ),
        (
            {"worker": {"usageFailure": {"resetGraceMinutes": -1}}},
            "worker.usageFailure.resetGraceMinutes: must be >= 0 (got -1)",
        ),
        (
            {"worker": {"usageFailure": {"resetGraceMinutes": 61}}},
            "worker.usageFailure.resetGraceMinutes: must be <= 60 (got 61)",
        ),
        (
            {"worker": {"usageFailure": {"initialRetryMinutes": 60, "maxRetryMinutes": 30}}},
            "worker.usageFailure.maxRetryMinutes: must be >= initialRetryMinutes (60) (got 30)",
        ),
        (
            {"worker": {"usageFailure": {"resetGrace": 2}}},
            "worker.usageFailure.resetGrace: unknown key (allowed here: action, "
            "initialRetryMinutes, backoffMultiplier, maxRetryMinutes, maxAttempts, "
            "resetGraceMinutes, handoffAfterMinutes, maxHandoffs)",
        ),
        (
            {"worker": {"usageFailure": "retry"}},
            'worker.usageFailure: must be an object (got the string "retry")',
        ),
        (
            {"worker": {"concurrency": 2.0}},
            "worker.concurrency: must be a valid integer (got 2.0)",
        ),
        (
            {"worker": {"processCrash": {"initialRetryMinutes": 10, "maxRetryMinutes": 5}}},
            "worker.processCrash.maxRetryMinutes: must be >= initialRetryMinutes (10) (got 5)",
        ),
        (
            {"worker": {"processCrash": {"action": "explode"}}},
            "worker.processCrash.action: must be 'needs-attention' or 'retry' "
            '(got the string "explode")',
        ),
        (
            {"worker": {"leaseSeconds": "60"}},
            'worker.leaseSeconds: must be a valid number (got the string "60")',
        ),
        (
            {"worker": {"leaseSeconds": 10, "heartbeatSeconds": 10}},
            "worker.heartbeatSeconds: must be < 7.5: worker.leaseSeconds (10) less the lease "
            "guard's margin (2.5, docs/claims.md) (got 10)",
        ),
        (
            {"worker": {"leaseSeconds": 60, "heartbeatSeconds": 50}},
            "worker.heartbeatSeconds: must be < 50: worker.leaseSeconds (60) less the lease "
            "guard's margin (10, docs/claims.md) (got 50)",
        ),
        (
            {"worker": {"leaseSeconds": 1, "heartbeatSeconds": 0.8}},
            "worker.heartbeatSeconds: must be < 0.75: worker.leaseSeconds (1) less the lease "
            "guard's margin (0.25, docs/claims.md) (got 0.8)",
        ),
        (
            {"worker": {"concurrency": True}},
            "worker.concurrency: must be a valid integer (got true)",
        ),
        ({"worker": "fast"}, 'worker: must be an object (got the string "fast")'),
        (
            {"worker": {"leaseSecs": 30}},
            "worker.leaseSecs: unknown key (allowed here: leaseSeconds, heartbeatSeconds, "
            "itemTimeoutMinutes, pollSeconds, wakeUps, concurrency, defaultAgent, maxRequeues, "
            "workspaceMode, processCrash, usageFailure, label, registryRetentionHours, sandbox)",
        ),
        (
            {"worker": {"processCrash": {"retries": 3}}},
            "worker.processCrash.retries: unknown key (allowed here: action, "
            "initialRetryMinutes, backoffMultiplier, maxRetryMinutes, maxAttempts)",
        ),
        (
            {"color": "blue"},
            "color: unknown key (allowed here: $schema, schemaVersion, store, worker, status, "
            "agents, budgets, limits, notify, serve, verify, completion, sources, pricing)",
        ),
        (
            {"agents": {"helper": {}}},
            "agents.helper.adapter: is required for an agent not named "
            "after an adapter (claude, codex, gemini, command)",
        ),
        (
            {"agents": {"claude": {"flavour": 1}}},
            "agents.claude.flavour: unknown key (allowed here: adapter, executable, args, env, "
            "command, resumeCommand, permission, resume, account, fallback, maxConcurrent, verify, "
            "sandbox)",
        ),
        (
            {"agents": {"claude": {"command": ["claude"]}}},
            "agents.claude.command: applies only to the command adapter",
        ),
        (
            {"agents": {"tool": {"adapter": "command", "command": ["t"], "permission": "full"}}},
            "agents.tool.permission: applies only to the vendor adapters (claude, codex, gemini)",
        ),
        (
            {"agents": {"codex": {"permission": "root"}}},
            "agents.codex.permission: must be 'workspace' or 'full' (got a string)",
        ),
        (
            {"agents": {"Bad Name": {"adapter": "claude"}}},
            'agents["Bad Name"]: agent names use '
            "lowercase letters, digits, '-' and '_', starting with a letter",
        ),
        (
            {"worker": {"defaultAgent": "robot"}},
            "worker.defaultAgent: unknown agent 'robot' (known: claude, codex, command, gemini)",
        ),
        (
            {"worker": {"sandbox": "bwrap"}},
            "worker.sandbox: must be 'none' (got the string \"bwrap\")",
        ),
        (
            {"worker": {"sandbox": 5}},
            'worker.sandbox: must be "none" or an object with kind "bubblewrap" (got 5)',
        ),
        ({"worker": {"sandbox": {}}}, "worker.sandbox.kind: is required"),
        (
            {"verify": {"sandbox": "bwrap"}},
            "verify.sandbox: must be 'agent' or 'none' (got the string \"bwrap\")",
        ),
        (
            {"verify": {"sandbox": ["none"]}},
            'verify.sandbox: must be "agent", "none" or an object with kind "bubblewrap" (got a '
            "list)",
        ),
        (
            {"verify": {"sandbox": {"kind": "bubblewrap", "network": "lan"}}},
            "verify.sandbox.network: must be 'host' or 'none' (got the string \"lan\")",
        ),
        (
            {"worker": {"sandbox": {"kind": "docker"}}},
            "worker.sandbox.kind: must be 'bubblewrap' (got the string \"docker\")",
        ),
        (
            {"agents": {"claude": {"sandbox": {"kind": "bubblewrap", "network": "lan"}}}},
            "agents.claude.sandbox.network: must be 'host' or 'none' (got a string)",
        ),
        (
            {"agents": {"codex": {"sandbox": {"kind": "bubblewrap", "hide": ["secrets"]}}}},
            "agents.codex.sandbox.hide.0: must be an absolute path or start with ~/ (the home "
            "folder) (got a string)",
        ),
        (
            {"worker": {"sandbox": {"kind": "bubblewrap", "writable": ["/a\u0000b"]}}},
            "worker.sandbox.writable.0: must be an absolute path or start with ~/ (the home "
            'folder) (got the string "/a\\u0000b")',
        ),
        (
            {"worker": {"sandbox": {"kind": "bubblewrap", "env": ["A B"]}}},
            "worker.sandbox.env.0: must be a variable name: letters, digits and '_', not "
            'starting with a digit (got the string "A B")',
        ),
        (
            {"worker": {"sandbox": {"kind": "bubblewrap", "mounts": []}}},
            "worker.sandbox.mounts: unknown key (allowed here: kind, program, network, hide, "
            "writable, env)",
        ),
        (
            {"schemaVersion": 2},
            "schemaVersion: this wrighty understands version 1 (got 2); "
            "upgrade wrighty or fix the file",
        ),
    ],
)
def test_each_problem_names_its_json_path_and_the_rule(document: object, expected: str) -> None:
    assert expected in problems_of(document)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            {"budgets": {"perDay": {"robot": {"maxTokens": 5}}}},
            "budgets.perDay.robot: unknown agent 'robot' "
            '(known: claude, codex, command, gemini, or "*")',
        ),
        (
            {"budgets": {"timeZone": "Mars/Olympus_Mons"}},
            'budgets.timeZone: unknown time zone (got the string "Mars/Olympus_Mons"); '
            "use an IANA name such as Europe/Berlin",
        ),
        (
            {"budgets": {"timeZone": "../../etc/passwd"}},
            'budgets.timeZone: unknown time zone (got the string "../../etc/passwd"); '
            "use an IANA name such as Europe/Berlin",
        ),
        (
            {"budgets": {"timeZone": "Europe"}},  # a folder of zones, not a zone
            'budgets.timeZone: unknown time zone (got the string "Europe"); '
            "use an IANA name such as Europe/Berlin",
        ),
        ({"budgets": {"timeZone": 1}}, "budgets.timeZone: must be a valid string (got 1)"),
        (
            {"budgets": {"dayStartsAt": "24:00"}},
            "budgets.dayStartsAt: String should match pattern "
            "'^([01][0-9]|2[0-3]):[0-5][0-9]$' (got the string \"24:00\")",
        ),
        (
            {"budgets": {"dayStartsAt": "6:00"}},
            "budgets.dayStartsAt: String should match pattern "
            "'^([01][0-9]|2[0-3]):[0-5][0-9]$' (got the string \"6:00\")",
        ),
        (
            {"budgets": {"perItem": {"maxCostUsd": -1}}},
            "budgets.perItem.maxCostUsd: must be > 0 (got -1)",
        ),
        (
            {"budgets": {"perItem": {"maxCostUsd": 0}}},
            "budgets.perItem.maxCostUsd: must be > 0 (got 0)",
        ),
        (
            {"budgets": {"perDay": {"codex": {"maxCostUsd": "5"}}}},
            'budgets.perDay.codex.maxCostUsd: must be a valid number (got the string "5")',
        ),
        (
            {"budgets": {"perItem": {"maxTokens": 0}}},
            "budgets.perItem.maxTokens: must be > 0 (got 0)",
        ),
        (
            {"budgets": {"perDay": {"*": {"maxTokens": 2.5}}}},
            'budgets.perDay["*"].maxTokens: must be a valid integer (got 2.5)',
        ),
        (
            {"budgets": {"perItem": {"maxTokens": 10**12 + 1}}},
            "budgets.perItem.maxTokens: must be <= 1e+12 (got 1000000000001)",
        ),
        (
            {"pricing": {"gpt-5": {"inputPerMtok": 1.25}}},
            "pricing.gpt-5.outputPerMtok: is required",
        ),
        (
            {"pricing": {"gpt-5": {"inputPerMtok": -1, "outputPerMtok": 10}}},
            "pricing.gpt-5.inputPerMtok: must be >= 0 (got -1)",
        ),
        (
            {"pricing": {"gpt-5": {"inputPerMtok": 1, "outputPerMtok": 10, "cachedPerMtok": 1}}},
            "pricing.gpt-5.cachedPerMtok: unknown key (allowed here: inputPerMtok, "
            "outputPerMtok, cacheReadPerMtok, cacheWritePerMtok)",
        ),
        (
            {"pricing": {"": {"inputPerMtok": 1, "outputPerMtok": 10}}},
            'pricing[""]: a model name has 1 to 200 characters',
        ),
        (
            {"budgets": {"perWeek": {"*": {"maxTokens": 5}}}},
            "budgets.perWeek: unknown key (allowed here: perItem, perDay, dayStartsAt, timeZone)",
        ),
        (
            {"budgets": {"perDay": {"codex": {"maxCost": 5}}}},
            "budgets.perDay.codex.maxCost: unknown key (allowed here: maxCostUsd, maxTokens)",
        ),
    ],
)
def test_each_budget_or_pricing_problem_is_one_line_with_its_json_path(
    document: object, expected: str
) -> None:
    assert problems_of(document) == [expected]


def test_budgets_and_pricing_are_read_as_the_domain_reads_them() -> None:
    from datetime import time
    from zoneinfo import ZoneInfo

    from wrighty.config import budgets_of, pricing_of
    from wrighty.domain.usage import Limit, Price

    config, problems = check_config_text(
        json.dumps(
            {
                "agents": {"helper": {"adapter": "command", "command": ["h"]}},
                "budgets": {
                    "perItem": {"maxCostUsd": 2.5},
                    "perDay": {"*": {"maxTokens": 10**6}, "helper": {"maxCostUsd": 20}},
                    "dayStartsAt": "06:30",
                    "timeZone": "Europe/Berlin",
                },
                "pricing": {
                    "gpt-5": {"inputPerMtok": 1.25, "outputPerMtok": 10},
                    "*": {"inputPerMtok": 3, "outputPerMtok": 15, "cacheReadPerMtok": 0.3,
                          "cacheWritePerMtok": 3.75},
                },
            }
        )
    )  # fmt: skip
    assert problems == []
    assert config is not None
    budgets = budgets_of(config)
    assert budgets.per_item == Limit(2.5, None)
    assert dict(budgets.per_day) == {"*": Limit(None, 10**6), "helper": Limit(20, None)}
    assert (budgets.day_starts_at, budgets.time_zone) == (time(6, 30), ZoneInfo("Europe/Berlin"))
    assert pricing_of(config) == {
        "gpt-5": Price(1.25, 10.0, 0.0, 0.0),
        "*": Price(3.0, 15.0, 0.3, 3.75),
    }


def test_without_budgets_nothing_is_bounded_and_the_day_is_utc() -> None:
    from datetime import UTC, time

    from wrighty.config import budgets_of, pricing_of

    config, _ = check_config_text("{}")
    assert config is not None
    budgets = budgets_of(config)
    assert budgets.per_item.unbounded
    assert dict(budgets.per_day) == {}
    assert (budgets.day_starts_at, budgets.time_zone) == (time(0, 0), UTC)
    assert pricing_of(config) == {}


def test_a_pricing_model_name_is_checked_as_the_schema_checks_it() -> None:
    price = {"inputPerMtok": 1, "outputPerMtok": 2}
    assert problems_of({"pricing": {"m" * 200: price, "*": price}}) == []
    assert problems_of({"pricing": {"m" * 201: price}}) == [
        f"pricing.{'m' * 201}: a model name has 1 to 200 characters"
    ]
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(config_json_schema())
    for name in ("", "m" * 201):
        assert list(validator.iter_errors({"pricing": {name: price}}))


def test_a_long_time_zone_is_not_echoed() -> None:
    assert problems_of({"budgets": {"timeZone": "x" * 300}}) == [
        "budgets.timeZone: unknown time zone (got a string); use an IANA name such as Europe/Berlin"
    ]


def test_agent_arguments_are_a_list_of_strings() -> None:
    config, problems = check_config_text(
        json.dumps({"agents": {"claude": {"args": ["--model", "opus"], "env": {"A": "b"}}}})
    )
    assert problems == []
    assert config is not None
    assert config.agents["claude"].args == ["--model", "opus"]
    assert "agents.claude.args.1: must be a valid string (got 3)" in problems_of(
        {"agents": {"claude": {"args": ["--model", 3]}}}
    )


def test_every_problem_is_reported_not_just_the_first() -> None:
    found = problems_of(
        {"worker": {"leaseSeconds": -1, "pollSeconds": 0, "processCrash": {"maxAttempts": 0}}}
    )
    assert len(found) == 3


def test_malformed_json_names_line_and_column() -> None:
    _, problems = check_config_text('{\n  "worker": {\n    "leaseSeconds": 60,\n  }\n}')
    assert [str(p) for p in problems] == [
        "invalid JSON at line 4, column 3: Expecting property name enclosed in double quotes"
    ]


def test_duplicate_keys_are_refused_rather_than_silently_merged() -> None:
    _, problems = check_config_text('{"worker": {}, "worker": {"concurrency": 2}}')
    assert [str(p) for p in problems] == ['duplicate key "worker"']


def test_string_values_are_never_echoed_in_problems() -> None:
    text = json.dumps(
        {
            "agents": {"claude": {"env": {"ANTHROPIC_API_KEY": 12345}}},
            "store": {"url": ["sk-ant-secret-value"]},
        }
    )
    _, problems = check_config_text(text)
    assert problems
    assert all("sk-ant-secret-value" not in str(p) for p in problems)


def test_load_reports_the_file_and_how_many_more_problems(tmp_path: Path) -> None:
    path = tmp_path / "wrighty.json"
    path.write_text(json.dumps({"worker": {"leaseSeconds": 0, "pollSeconds": 0}}))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: worker.leaseSeconds: must be > 0")
    assert "and 1 more; `wrighty config validate` lists them" in message
    assert "\n" not in message


def test_config_is_found_upward_like_git(tmp_path: Path) -> None:
    (tmp_path / "wrighty.json").write_text("{}")
    deep = tmp_path / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_config(deep) == (tmp_path / "wrighty.json").resolve()
    explicit = tmp_path / "other.json"
    assert find_config(deep, explicit) == explicit


def test_no_config_anywhere_is_none(tmp_path: Path) -> None:
    lonely = tmp_path / "a"
    lonely.mkdir()
    assert find_config(lonely) is None


def test_the_checked_in_schema_is_the_generated_one() -> None:
    checked_in = json.loads((REPO / "schemas" / "wrighty.schema.json").read_text())
    assert checked_in == config_json_schema(), (
        "schemas/wrighty.schema.json is stale: run `wrighty config schema > "
        "schemas/wrighty.schema.json`"
    )


def test_the_schema_refuses_what_the_models_refuse() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(config_json_schema())
    assert list(validator.iter_errors(default_config_document())) == []
    bad = {"worker": {"processCrash": {"backoffMultiplier": 0.5, "extra": 1}}}
    assert len(list(validator.iter_errors(bad))) == 2
    bad = {"worker": {"usageFailure": {"maxAttempts": 51, "resetGraceMinutes": -1, "extra": 1}}}
    assert len(list(validator.iter_errors(bad))) == 3


def test_every_spelling_of_the_adapters_follows_the_one_list() -> None:
    """wrighty/domain/adapters.py names the adapters; the vendor adapters that exist, the
    schema's choices, the agents known without a config and the messages follow it."""
    from wrighty.domain.adapters import ADAPTERS, COMMAND_ADAPTER, VENDOR_ADAPTERS
    from wrighty.vendors.registry import VENDORS

    assert sorted(VENDORS) == sorted(VENDOR_ADAPTERS)
    assert set(ADAPTERS) == {*VENDOR_ADAPTERS, COMMAND_ADAPTER}
    agent = config_json_schema()["$defs"]["AgentSettings"]["properties"]["adapter"]
    assert [option.get("enum") for option in agent["anyOf"]] == [list(ADAPTERS), None]
    config, _ = check_config_text("{}")
    assert config is not None
    assert config.agent_names() == sorted(ADAPTERS)
    assert problems_of({"agents": {"helper": {}}}) == [
        "agents.helper.adapter: is required for an agent not named after an adapter "
        f"({', '.join(ADAPTERS)})"
    ]
    tool = {"adapter": COMMAND_ADAPTER, "command": ["t"], "permission": "full"}
    assert problems_of({"agents": {"tool": tool}}) == [
        "agents.tool.permission: applies only to the vendor adapters "
        f"({', '.join(VENDOR_ADAPTERS)})"
    ]


def test_the_worker_settings_become_the_policies_and_terms_it_runs_under() -> None:
    """Minutes in the file, seconds in the domain (docs/config.md#worker)."""
    from wrighty.config import crash_policy_of, lease_terms_of, usage_policy_of
    from wrighty.domain.claims import LeaseTerms
    from wrighty.domain.retry import CrashPolicy, UsagePolicy

    config, problems = check_config_text(
        json.dumps(
            {
                "worker": {
                    "leaseSeconds": 90,
                    "heartbeatSeconds": 20,
                    "itemTimeoutMinutes": 45,
                    "processCrash": {"action": "retry", "initialRetryMinutes": 1.5,
                                     "backoffMultiplier": 3, "maxRetryMinutes": 20,
                                     "maxAttempts": 4},
                    "usageFailure": {"action": "retry", "initialRetryMinutes": 10,
                                     "backoffMultiplier": 2.5, "maxRetryMinutes": 120,
                                     "maxAttempts": 7, "resetGraceMinutes": 0.5},
                }
            }
        )
    )  # fmt: skip
    assert problems == []
    assert config is not None
    assert crash_policy_of(config) == CrashPolicy(
        action="retry", initial_seconds=90, multiplier=3, max_seconds=1200, max_attempts=4
    )
    assert usage_policy_of(config) == UsagePolicy(
        action="retry", initial_seconds=600, multiplier=2.5, max_seconds=7200, max_attempts=7,
        reset_grace_seconds=30,
    )  # fmt: skip
    assert lease_terms_of(config) == LeaseTerms(lease_seconds=90, default_timeout_seconds=2700)
    defaults, _ = check_config_text("{}")
    assert defaults is not None  # the domain's defaults are the file's
    assert (crash_policy_of(defaults), usage_policy_of(defaults)) == (CrashPolicy(), UsagePolicy())


def test_an_agent_has_a_provider_circuit_only_under_a_usage_policy_that_retries() -> None:
    from wrighty.config import agent_circuit

    def circuits(usage: str) -> tuple[str | None, str | None]:
        document = {
            "worker": {"usageFailure": {"action": usage}},
            "agents": {"claude": {"account": "team"}},
        }
        config, _ = check_config_text(json.dumps(document))
        assert config is not None
        return (
            agent_circuit(config, "claude", installation_id="inst"),
            agent_circuit(config, "codex", installation_id="inst"),
        )

    assert circuits("retry") == ("account:team", "agent:codex@inst")
    assert circuits("needs-attention") == (None, None)


def test_an_agents_sandbox_overrides_the_workers_and_none_is_the_default() -> None:
    assert sandbox_of(WrightyConfig(), "claude") is None
    profile = {"kind": "bubblewrap", "network": "none", "hide": ["~/notes"]}
    config = WrightyConfig.model_validate(
        {"worker": {"sandbox": profile}, "agents": {"codex": {"sandbox": "none"}}}
    )
    chosen = sandbox_of(config, "claude")
    assert chosen is not None
    assert (chosen.network, chosen.hide, chosen.program) == ("none", ["~/notes"], "bwrap")
    assert sandbox_of(config, "codex") is None
