"""A check whose program is not found (docs/config.md#verify): `config validate` warns and
passes the file, `worker start` refuses to start, in one line, claiming nothing. An agent whose
failed checks can get no fix turn: `config validate` warns and passes the file."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import wrighty
from tests.helpers import snapshot

DEMO = {"adapter": "command", "command": ["true"], "resumeCommand": ["true"]}


def _configure(project: Path, **sections: object) -> None:
    config = project / "wrighty.json"
    document = json.loads(config.read_text())
    document.update(sections)
    document["worker"]["defaultAgent"] = "demo"
    config.write_text(json.dumps(document))


def _checks(*listed: tuple[str, str]) -> dict[str, object]:
    return {"checks": [{"name": name, "argv": [program, "-q"]} for name, program in listed]}


def test_config_validate_warns_of_a_missing_check_program_and_passes(initialised: Path) -> None:
    _configure(
        initialised,
        verify=_checks(("tests", "true"), ("lint", "no-such-linter")),
        agents={"demo": {**DEMO, "verify": _checks(("types", "/nonexistent/mypy"))}},
    )
    result = wrighty("config", "validate")
    assert result.exit_code == 0, result.output
    assert result.stdout == "ok\n"
    assert result.stderr.splitlines() == [
        "warning: verify.checks.1.argv: check 'lint': program 'no-such-linter' not found on PATH",
        "warning: agents.demo.verify.checks.0.argv: check 'types': program '/nonexistent/mypy' "
        "not found",
    ]
    as_json = wrighty("config", "validate", "--json")
    assert as_json.exit_code == 0
    report = json.loads(as_json.stdout)
    assert (report["valid"], report["problems"]) == (True, [])
    assert report["warnings"] == [
        {
            "path": "verify.checks.1.argv",
            "message": "check 'lint': program 'no-such-linter' not found on PATH",
        },
        {
            "path": "agents.demo.verify.checks.0.argv",
            "message": "check 'types': program '/nonexistent/mypy' not found",
        },
    ]


def test_config_validate_has_no_warnings_when_every_program_is_found(initialised: Path) -> None:
    _configure(
        initialised,
        verify=_checks(("tests", "true"), ("script", "./scripts/check.sh")),
        agents={"demo": DEMO},
    )
    result = wrighty("config", "validate")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "ok\n", "")
    assert json.loads(wrighty("config", "validate", "--json").stdout)["warnings"] == []


def test_worker_start_refuses_a_missing_check_program_and_claims_nothing(
    initialised: Path,
) -> None:
    _configure(initialised, verify=_checks(("lint", "no-such-linter")), agents={"demo": DEMO})
    assert wrighty("create", "--title", "t", "--body", "b", "--queue").exit_code == 0
    before = snapshot(initialised)
    result = wrighty("worker", "start", "--once")
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        "wrighty: check 'lint': program 'no-such-linter' not found on PATH; install it or "
        "change verify.checks.0.argv in wrighty.json"
    ]
    assert snapshot(initialised) == before
    listed = json.loads(wrighty("list", "--json").stdout)
    assert [item["state"] for item in listed] == ["queued"]


def test_worker_start_minds_only_the_checks_its_agent_runs(initialised: Path) -> None:
    _configure(
        initialised,
        verify=_checks(("tests", "true")),
        agents={"demo": DEMO, "other": {**DEMO, "verify": _checks(("lint", "no-such-linter"))}},
    )
    result = wrighty("worker", "start", "--once")
    assert result.exit_code == 0, result.output
    refused = wrighty("worker", "start", "--once", "--agent", "other")
    assert refused.exit_code == 2
    assert "agents.other.verify.checks.0.argv" in refused.stderr


def test_config_validate_warns_of_an_agent_whose_failed_checks_get_no_fix_turn(
    initialised: Path,
) -> None:
    _configure(
        initialised,
        verify=_checks(("tests", "true")),
        agents={
            "demo": {"adapter": "command", "command": ["true"]},
            "resuming": DEMO,
            "frozen": {**DEMO, "resume": False},
        },
    )
    result = wrighty("config", "validate")
    assert result.exit_code == 0, result.output
    assert result.stdout == "ok\n"
    tail = (
        "so a failed check gets no fix turn and waits for a person; set resumeCommand (and "
        "resume true), or verify.maxFixTurns to 0 to say so"
    )
    assert result.stderr.splitlines() == [
        f"warning: agents.demo: its items have checks but a command agent without "
        f"resumeCommand cannot resume, {tail}",
        f"warning: agents.frozen: its items have checks but its resume is false, {tail}",
    ]
    # no fix turns wanted: nothing to warn of
    _configure(initialised, verify={**_checks(("tests", "true")), "maxFixTurns": 0})
    assert wrighty("config", "validate").stderr == ""
