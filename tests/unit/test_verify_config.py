"""wrighty.json's verify section (docs/config.md#verify, docs/verify.md): what the worker and
`wrighty verify` are given (translate.verify_policy, agent_checks), the rules that relate the
checks, and the programs `config validate` and `worker start` look for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wrighty.config import (
    WrightyConfig,
    agent_checks,
    check_config_text,
    check_program_problems,
    verify_policy,
)
from wrighty.domain.verify import Check, VerifyPolicy

COMMAND_AGENT = {"adapter": "command", "command": ["true"]}


def check(name: str, *argv: str, **more: object) -> dict[str, object]:
    return {"name": name, "argv": list(argv or ("true",)), **more}


def valid(document: object) -> WrightyConfig:
    config, problems = check_config_text(json.dumps(document))
    assert problems == []
    assert config is not None
    return config


def problems_of(document: object) -> list[str]:
    _, problems = check_config_text(json.dumps(document))
    return [str(problem) for problem in problems]


# -- what the worker is given -------------------------------------------------------------------


def test_an_agents_checks_are_the_projects_then_its_own_in_the_order_written() -> None:
    config = valid(
        {
            "verify": {"checks": [check("tests", "pytest", "-q"), check("lint", "ruff", ".")]},
            "agents": {
                "fast": {**COMMAND_AGENT, "verify": {"checks": [check("types", "mypy", ".")]}},
                "slow": {**COMMAND_AGENT, "verify": {"checks": [check("docs")]}},
            },
        }
    )
    assert [c.name for c in agent_checks(config, "fast")] == ["tests", "lint", "types"]
    assert [c.name for c in agent_checks(config, "slow")] == ["tests", "lint", "docs"]
    # An agent with no entry, or no checks of its own, runs the project's.
    assert [c.name for c in agent_checks(config, "claude")] == ["tests", "lint"]
    assert agent_checks(config, "fast")[0] == Check("tests", ("pytest", "-q"), 20 * 60.0)


def test_timeout_minutes_become_seconds() -> None:
    config = valid({"verify": {"checks": [check("quick", timeoutMinutes=1.5)]}})
    assert agent_checks(config, "claude") == (Check("quick", ("true",), 90.0),)
    policy = verify_policy(config, "claude")
    assert policy is not None
    # twice: a failing check may run on the item's base too (verify.checks[].onBase)
    assert policy.checks_seconds == 180.0
    once = valid({"verify": {"checks": [check("quick", timeoutMinutes=1.5, onBase=False)]}})
    assert agent_checks(once, "claude") == (Check("quick", ("true",), 90.0, on_base=False),)
    assert (policy := verify_policy(once, "claude")) is not None
    assert policy.checks_seconds == 90.0


def test_the_policy_carries_fix_turns_and_feedback_bytes() -> None:
    config = valid(
        {"verify": {"checks": [check("tests")], "maxFixTurns": 0, "feedbackBytes": 1000}}
    )
    assert verify_policy(config, "codex") == VerifyPolicy(
        (Check("tests", ("true",)),), max_fix_turns=0, feedback_bytes=1000
    )


def test_an_agents_own_checks_alone_take_the_default_fix_loop() -> None:
    config = valid({"agents": {"fast": {**COMMAND_AGENT, "verify": {"checks": [check("t")]}}}})
    assert verify_policy(config, "fast") == VerifyPolicy((Check("t", ("true",)),))
    assert verify_policy(config, "claude") is None


FAST = {"fast": COMMAND_AGENT}


@pytest.mark.parametrize(
    "document",
    [
        {"agents": FAST},
        {"agents": FAST, "verify": {}},
        {"agents": FAST, "verify": {"checks": [], "maxFixTurns": 5}},
        {"agents": {"fast": {**COMMAND_AGENT, "verify": {"checks": []}}}},
        {"agents": {**FAST, "slow": {**COMMAND_AGENT, "verify": {"checks": [check("t")]}}}},
    ],
    ids=["no-section", "empty-section", "no-checks", "agent-none", "another-agents"],
)
def test_an_agent_without_checks_has_no_policy(document: object) -> None:
    config = valid(document)
    assert agent_checks(config, "fast") == ()
    assert verify_policy(config, "fast") is None


# -- the rules that relate the checks -------------------------------------------------------------


def twenty(prefix: str, count: int) -> list[dict[str, object]]:
    return [check(f"{prefix}{n}") for n in range(count)]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            {"verify": {"checks": [check("tests"), check("lint"), check("tests")]}},
            "verify.checks.2.name: 'tests' is already the name of verify.checks.0; give each "
            "check its own (an agent's checks run with verify.checks)",
        ),
        (
            {
                "verify": {"checks": [check("lint"), check("tests")]},
                "agents": {"fast": {**COMMAND_AGENT, "verify": {"checks": [check("tests")]}}},
            },
            "agents.fast.verify.checks.0.name: 'tests' is already the name of verify.checks.1; "
            "give each check its own (an agent's checks run with verify.checks)",
        ),
        (
            {"agents": {"fast": {**COMMAND_AGENT, "verify": {"checks": [check("t"), check("t")]}}}},
            "agents.fast.verify.checks.1.name: 't' is already the name of "
            "agents.fast.verify.checks.0; give each check its own",
        ),
        (
            {"verify": {"checks": [check("tests", "")]}},
            'verify.checks.0.argv.0: is empty: name the program to run, as in ["python", "-m", '
            '"pytest", "-q"]',
        ),
        (
            {"agents": {"fast": {**COMMAND_AGENT, "verify": {"checks": [check("t", "")]}}}},
            "agents.fast.verify.checks.0.argv.0: is empty: name the program to run",
        ),
        (
            {"verify": {"checks": [check("tests", "pytest", "-k", "a\x00b")]}},
            "verify.checks.0.argv.2: holds a NUL byte",
        ),
        (
            {"verify": {"checks": [check("tests", "py\x00test")]}},
            "verify.checks.0.argv.0: holds a NUL byte",
        ),
        (
            {
                "verify": {"checks": twenty("p", 15)},
                "agents": {"fast": {**COMMAND_AGENT, "verify": {"checks": twenty("a", 6)}}},
            },
            "agents.fast.verify.checks: with the 15 of verify.checks, the agent's items would "
            "run 21 checks: at most 20",
        ),
    ],
    ids=[
        "name-twice-in-the-project",
        "name-of-the-project-in-an-agent",
        "name-twice-in-an-agent",
        "empty-program",
        "empty-program-of-an-agent",
        "nul-in-an-argument",
        "nul-in-the-program",
        "more-than-20-with-the-project",
    ],
)
def test_a_rule_across_checks_is_refused_by_its_path(document: object, expected: str) -> None:
    found = problems_of(document)
    assert any(problem.startswith(expected) for problem in found), found


def test_what_the_rules_let_through() -> None:
    # Two agents may each have a check of the same name; 20 checks in all is the limit.
    valid(
        {
            "verify": {"checks": twenty("p", 14)},
            "agents": {
                "fast": {**COMMAND_AGENT, "verify": {"checks": twenty("a", 6)}},
                "slow": {**COMMAND_AGENT, "verify": {"checks": twenty("a", 6)}},
            },
        }
    )
    # An empty argument after the program is an argument.
    valid({"verify": {"checks": [check("tests", "pytest", "")]}})


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            {"verify": {"checks": [check("two words")]}},
            "verify.checks.0.name: must be 1 to 64 letters, digits, '.', '_' or '-', starting "
            'with a letter or digit (got the string "two words")',
        ),
        (
            {"verify": {"checks": [{"name": "tests", "argv": []}]}},
            'verify.checks.0.argv: is empty: name the program to run, as in ["python", "-m", '
            '"pytest", "-q"]',
        ),
        ({"verify": {"checks": twenty("c", 21)}}, "verify.checks: has 21 checks: at most 20"),
        (
            {"verify": {"checks": [check("t", timeoutMinutes=0)]}},
            "verify.checks.0.timeoutMinutes: must be >= 1/60 (one second) (got 0)",
        ),
        (
            {"agents": {"fast": {**COMMAND_AGENT, "verify": {"maxFixTurns": 1}}}},
            "agents.fast.verify.maxFixTurns: unknown key (allowed here: checks); maxFixTurns is "
            "the project's: set verify.maxFixTurns",
        ),
        (
            {"verify": {"checks": [{"name": "t", "argv": "curl -H 'token: Hunter2'"}]}},
            "verify.checks.0.argv: must be a valid list (got a string)",
        ),
    ],
    ids=["name", "argv-empty", "too-many", "timeout-zero", "agents-fix-turns", "argv-unechoed"],
)
def test_a_bad_value_says_what_the_key_takes(document: object, expected: str) -> None:
    assert problems_of(document) == [expected]


# -- the programs looked for --------------------------------------------------------------------


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH is one folder, holding the executable `present`."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "present").write_text("#!/bin/sh\nexit 0\n")
    (folder / "present").chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    return folder


def missing(config: WrightyConfig, agent: str | None = None) -> list[str]:
    return [str(problem) for problem in check_program_problems(config, agent=agent)]


def test_a_program_found_is_no_problem(bin_dir: Path) -> None:
    config = valid(
        {
            "verify": {
                "checks": [check("bare", "present", "-q"), check("abs", str(bin_dir / "present"))]
            }
        }
    )
    assert missing(config) == []


def test_a_program_not_found_is_told_by_its_check_and_path(bin_dir: Path, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    config = valid(
        {
            "verify": {"checks": [check("ok", "present"), check("lint", "no-such-linter", ".")]},
            "agents": {"fast": {**COMMAND_AGENT, "verify": {"checks": [check("abs", str(gone))]}}},
        }
    )
    assert missing(config) == [
        "verify.checks.1.argv: check 'lint': program 'no-such-linter' not found on PATH",
        f"agents.fast.verify.checks.0.argv: check 'abs': program '{gone}' not found",
    ]


def test_an_agent_is_told_only_of_the_checks_its_items_run(bin_dir: Path) -> None:
    config = valid(
        {
            "verify": {"checks": [check("tests", "no-such-tester")]},
            "agents": {
                "fast": {**COMMAND_AGENT, "verify": {"checks": [check("a", "no-such-a")]}},
                "slow": {**COMMAND_AGENT, "verify": {"checks": [check("b", "no-such-b")]}},
            },
        }
    )
    assert [p.split(":")[0] for p in missing(config, "fast")] == [
        "verify.checks.0.argv",
        "agents.fast.verify.checks.0.argv",
    ]
    assert [p.split(":")[0] for p in missing(config, "claude")] == ["verify.checks.0.argv"]


def test_a_relative_program_is_left_to_the_run(bin_dir: Path) -> None:
    # It names a file in the item's workspace, which only a run has.
    config = valid(
        {"verify": {"checks": [check("a", "./scripts/check.sh"), check("b", "bin/lint")]}}
    )
    assert missing(config) == []


def test_a_program_that_cannot_run_says_how_to_fix_it(bin_dir: Path) -> None:
    (bin_dir / "plain").write_text("not a program")
    (bin_dir / "plain").chmod(0o644)
    config = valid({"verify": {"checks": [check("p", str(bin_dir / "plain"))]}})
    assert missing(config) == [
        f"verify.checks.0.argv: check 'p': program '{bin_dir / 'plain'}' is not executable "
        f"(chmod +x {bin_dir / 'plain'})"
    ]
