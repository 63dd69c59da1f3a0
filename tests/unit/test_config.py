from __future__ import annotations

import json
from pathlib import Path

import pytest

from wrighty.config import (
    check_config_text,
    config_json_schema,
    default_config_document,
    find_config,
    load_config,
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
            "resetGraceMinutes)",
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
            "worker.heartbeatSeconds: must be < worker.leaseSeconds (10) (got 10)",
        ),
        (
            {"worker": {"concurrency": True}},
            "worker.concurrency: must be a valid integer (got true)",
        ),
        ({"worker": "fast"}, 'worker: must be an object (got the string "fast")'),
        (
            {"worker": {"leaseSecs": 30}},
            "worker.leaseSecs: unknown key (allowed here: leaseSeconds, heartbeatSeconds, "
            "itemTimeoutMinutes, pollSeconds, concurrency, defaultAgent, maxRequeues, "
            "workspaceMode, processCrash, usageFailure, label, registryRetentionHours)",
        ),
        (
            {"worker": {"processCrash": {"retries": 3}}},
            "worker.processCrash.retries: unknown key (allowed here: action, "
            "initialRetryMinutes, backoffMultiplier, maxRetryMinutes, maxAttempts)",
        ),
        (
            {"color": "blue"},
            "color: unknown key (allowed here: $schema, schemaVersion, store, worker, status, "
            "agents, budgets, pricing)",
        ),
        (
            {"agents": {"helper": {}}},
            "agents.helper.adapter: is required for an agent not named "
            "after an adapter (claude, codex, gemini, command)",
        ),
        (
            {"agents": {"claude": {"flavour": 1}}},
            "agents.claude.flavour: unknown key (allowed here: adapter, executable, args, env, "
            "command, resumeCommand, permission, resume, account)",
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
            {"schemaVersion": 2},
            "schemaVersion: this wrighty understands version 1 (got 2); "
            "upgrade wrighty or fix the file",
        ),
    ],
)
def test_each_problem_names_its_json_path_and_the_rule(document: object, expected: str) -> None:
    assert expected in problems_of(document)


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
