from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty

SHOW_KEYS = {
    "pull_request",
    "id", "title", "state", "agent", "generation", "reason_code", "queued_at", "not_before",
    "created_at", "updated_at", "body", "timeout_seconds", "workspace", "claimed_by",
    "lease_expires_at", "reason", "next_action", "crash_retries", "crash_retry", "requeues",
    "usage_retries", "usage_retry", "session", "runs", "events", "circuit", "usage", "budget",
    "hold", "priority", "labels", "after", "before", "waits", "fix_turns", "max_fix_turns",
    "verify_checks", "verified", "hand_verifications", "rejections", "feedback",
    "reviewed_commit", "handoffs", "handoff_note", "landing",
}  # fmt: skip


def create(*args: str, input: str | None = None) -> dict:
    result = wrighty("create", *args, "--json", input=input)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def show(item_id: int) -> dict:
    result = wrighty("show", str(item_id), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_create_queue_show_cancel_round_trip(initialised: Path) -> None:
    item = create("--title", "Fix the login bug", "--body", "Users cannot log in.")
    assert item["state"] == "todo"
    assert item["queued_at"] is None
    queued = json.loads(wrighty("queue", str(item["id"]), "--json").stdout)
    assert queued["state"] == "queued"
    assert queued["queued_at"] is not None
    cancelled = json.loads(wrighty("cancel", str(item["id"]), "--json").stdout)
    assert cancelled["state"] == "cancelled"
    detail = show(item["id"])
    assert set(detail) == SHOW_KEYS
    assert detail["body"] == "Users cannot log in."
    assert detail["session"] is None
    assert detail["runs"] == []
    assert [(e["from_state"], e["to_state"]) for e in detail["events"]] == [
        (None, "todo"),
        ("todo", "queued"),
        ("queued", "cancelled"),
    ]
    assert detail["events"][-1]["reason_code"] == "operator-cancelled"
    assert all(e["actor"] == "operator" for e in detail["events"])


def test_create_with_queue_agent_timeout_and_workspace(initialised: Path) -> None:
    workspace = initialised / "service"
    workspace.mkdir()
    item = create(
        "--title", "Add a health endpoint", "--body", "GET /healthz returns 200.",
        "--agent", "codex", "--timeout", "1h30m", "--workspace", str(workspace), "--queue",
    )  # fmt: skip
    assert (item["state"], item["agent"]) == ("queued", "codex")
    detail = show(item["id"])
    assert detail["timeout_seconds"] == 5400
    assert detail["workspace"] == str(workspace)


def test_an_unpinned_item_leaves_its_workspace_to_the_worker(initialised: Path) -> None:
    item = create("--title", "t", "--body", "b")
    assert show(item["id"])["workspace"] is None  # chosen by worker.workspaceMode at its run


def test_the_body_can_come_from_a_file_or_standard_input(initialised: Path) -> None:
    task = initialised / "task.md"
    task.write_text("Refactor the parser.\n\nKeep the public API.\n")
    from_file = create("--title", "From a file", "--body-file", str(task))
    from_stdin = create("--title", "From stdin", input="Write the changelog.\n")
    from_dash = create("--title", "From dash", "--body-file", "-", input="Dash body")
    assert show(from_file["id"])["body"] == task.read_text()
    assert show(from_stdin["id"])["body"] == "Write the changelog.\n"
    assert show(from_dash["id"])["body"] == "Dash body"


def test_list_filters_by_state_and_prints_a_table(initialised: Path) -> None:
    create("--title", "first todo", "--body", "x")
    create("--title", "first queued", "--body", "x", "--queue")
    create("--title", "second todo", "--body", "x")
    listed = json.loads(wrighty("list", "--json", "--state", "todo").stdout)
    assert [i["title"] for i in listed] == ["first todo", "second todo"]
    both = json.loads(wrighty("list", "--json", "--state", "todo", "--state", "queued").stdout)
    assert len(both) == 3
    table = wrighty("list").stdout
    assert "first queued" in table
    assert "STATE" in table
    assert "queued" in table
    assert wrighty("list", "--state", "done").stdout.strip() == "no items in state done"


def test_show_for_people_has_state_history_and_task(initialised: Path) -> None:
    item = create("--title", "Write docs", "--body", "Explain the queue.", "--queue")
    text = wrighty("show", str(item["id"])).stdout
    assert f"Item {item['id']}" in text
    assert "queued" in text
    assert "created -> queued" in text
    assert "Explain the queue." in text


def test_store_override_by_option_and_environment(initialised: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "other" / "queue.db"
    assert wrighty("--store", str(elsewhere), "init").exit_code == 0
    result = wrighty("--store", str(elsewhere), "create", "--title", "elsewhere", "--body", "x")
    assert result.exit_code == 0, result.output
    assert elsewhere.exists()
    assert wrighty("list", "--json").stdout.strip() == "[]"
    via_env = wrighty("list", "--json", env={"WRIGHTY_STORE": f"sqlite:///{elsewhere}"})
    assert [i["title"] for i in json.loads(via_env.stdout)] == ["elsewhere"]


def test_config_is_found_from_a_subdirectory_and_by_environment(
    initialised: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    create("--title", "root item", "--body", "x")
    deep = initialised / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert len(json.loads(wrighty("list", "--json").stdout)) == 1
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    env = {"WRIGHTY_CONFIG": str(initialised / "wrighty.json")}
    assert len(json.loads(wrighty("list", "--json", env=env).stdout)) == 1


def test_config_validate_and_schema(initialised: Path) -> None:
    assert wrighty("config", "validate").stdout.strip() == "ok"
    config = initialised / "wrighty.json"
    config.write_text('{"worker": {"processCrash": {"backoffMultiplier": 0.5, "maxAttempts": 0}}}')
    result = wrighty("config", "validate")
    assert result.exit_code == 2
    assert result.stdout.splitlines() == [
        "worker.processCrash.backoffMultiplier: must be >= 1 (got 0.5)",
        "worker.processCrash.maxAttempts: must be >= 1 (got 0)",
    ]
    as_json = json.loads(wrighty("config", "validate", "--json").stdout)
    assert as_json["valid"] is False
    assert as_json["problems"][0]["path"] == "worker.processCrash.backoffMultiplier"
    schema_output = json.loads(wrighty("config", "schema").stdout)
    checked_in = Path(__file__).resolve().parents[2] / "schemas" / "wrighty.schema.json"
    assert schema_output == json.loads(checked_in.read_text())


def test_help_and_version(project: Path) -> None:
    assert wrighty("--version").stdout.startswith("wrighty ")
    for command in (["init"], ["create"], ["list"], ["show"], ["queue"], ["cancel"],
                    ["config", "validate"], ["config", "schema"]):  # fmt: skip
        result = wrighty(*command, "--help")
        assert result.exit_code == 0, command
        assert "Usage" in result.stdout


def _help_row(help_text: str, option: str) -> list[str]:
    """The words of the help's row for ``option``, box characters left out."""
    [row] = [line for line in help_text.splitlines() if f" {option} " in line]
    return [word for word in row.split() if word != "│"]


@pytest.mark.parametrize(
    ("command", "flag", "valued", "value"),
    [
        ([], "--version", "--store", "URL"),
        ([], "--help", "--config", "PATH"),
        (["worker", "start"], "--once", "--concurrency", "N"),
        (["worker", "start"], "--json", "--agent", "NAME"),
        (["logs"], "--raw", "--run", "N"),
    ],
)
def test_help_shows_flags_without_a_value(
    project: Path, command: list[str], flag: str, valued: str, value: str
) -> None:
    help_text = wrighty(*command, "--help").stdout
    assert _help_row(help_text, flag)[1][0].isupper()  # the description follows the name
    assert _help_row(help_text, valued)[1] == value  # an option with a value still shows it


def test_titles_and_reasons_are_printed_as_written_never_as_markup(initialised: Path) -> None:
    created = wrighty("create", "--title", "fix [/bold] and [red]this[/red]", "--body", "b")
    assert created.exit_code == 0, created.output
    listed = wrighty("list")
    assert listed.exit_code == 0, listed.output
    assert "fix [/bold] and [red]this[/red]" in listed.output
    cancelled = wrighty("cancel", "1")
    assert cancelled.exit_code == 0, cancelled.output
    shown = wrighty("show", "1")
    assert shown.exit_code == 0, shown.output


def test_show_and_list_name_the_default_agent(initialised: Path) -> None:
    default = json.loads((initialised / "wrighty.json").read_text())["worker"]["defaultAgent"]
    create("--title", "default agent", "--body", "x")
    create("--title", "own agent", "--body", "x", "--agent", "codex")
    assert "  agent      " + f"{default} (default)" in wrighty("show", "1").stdout.splitlines()
    assert "  agent      codex" in wrighty("show", "2").stdout.splitlines()
    # `list` names it too, as `show` does
    rows = {line.split()[0]: line for line in wrighty("list").stdout.splitlines()[1:]}
    assert f" {default} (default) " in rows["1"]
    assert rows["2"].split()[3] == "codex"


def test_show_never_runs_a_long_label_into_its_value() -> None:
    """`usage retries` and `last refusal` are longer than the other labels: every label still
    ends in a space, and every value starts in one column."""
    from datetime import UTC, datetime

    from rich.console import Console

    from tests.factories import make_item
    from wrighty.cli.render import print_item_detail
    from wrighty.domain.model import Run
    from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
    from wrighty.domain.states import ItemState
    from wrighty.domain.suggestions import Standing
    from wrighty.services.items import ItemDetail
    from wrighty.services.show import usage_standing

    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    refused = Run(
        "run-1", 1, 1, 1, RunKind.FRESH, "w-1", "inst", at, at, 1, 1.0, 1, None,
        OutcomeClass.RATE_LIMITED, Confidence.AUTHORITATIVE, None, "claude: usage limit reached",
    )  # fmt: skip
    item = make_item(
        ItemState.NEEDS_ATTENTION, usage_retries=1, reason_code="retries-exhausted", reason="r"
    )
    console = Console(record=True, width=120)
    detail = ItemDetail(item, None, [refused], [])
    print_item_detail(
        console,
        detail,
        Standing(resumable=False, has_logs=False, lease_expired=False),
        usage_retry=usage_standing(detail, 5),
        default_agent="claude",
    )
    fields = console.export_text().splitlines()[2:]
    fields = fields[: next(i for i, line in enumerate(fields) if not line.startswith("  "))]
    value_column = len("  usage retries ")  # the longest label and one space
    assert all(line[value_column - 1] == " " != line[value_column] for line in fields), fields
    assert "  usage retries 1 of 5" in fields
    assert "  last refusal  claude: usage limit reached (run-1)" in fields
    assert "  agent         claude (default)" in fields
