"""Where people look at the usage ledger (docs/usage.md#where-to-look): `wrighty usage`, the
usage and budget of `show`, the totals of `list --json`, and the hold on an agent whose
budget for the day is spent."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.cli.usage_helpers import configure, create, run
from tests.conftest import START, FakeClock
from wrighty.domain.states import ItemState
from wrighty.domain.usage import Usage

CLAUDE_1 = Usage(1000, 200, 5000, 300, 0.05, ("claude-sonnet-4-5",), 3, 1000, True, "reported")
CLAUDE_2 = Usage(500, 100, 0, 0, 0.02, ("claude-sonnet-4-5",), 1, 400, True, "reported")
CODEX = Usage(2000, 400, 1000, 0, 0.01, ("gpt-5",), 2, 900, True, "estimated")
GEMINI = Usage(300, 30, final=True)  # no cost: the vendor reported none, and no price


def report(*args: str) -> dict:
    result = wrighty("usage", "--json", *args)
    assert result.exit_code == 0, result.output
    document: dict = json.loads(result.stdout)
    return document


def seeded(project: Path) -> tuple[int, int, int]:
    """Three items, four runs in the last hours: claude twice, codex (estimated), gemini
    (no cost)."""
    claude = create("--agent", "claude")
    codex = create("--agent", "codex")
    gemini = create("--agent", "gemini")
    run(project, claude, at=START - timedelta(hours=3), agent="claude", usage=CLAUDE_1)
    run(project, claude, at=START - timedelta(hours=2), agent="claude", usage=CLAUDE_2)
    run(project, codex, at=START - timedelta(hours=2), agent="codex", usage=CODEX)
    run(project, gemini, at=START - timedelta(hours=1), agent="gemini", usage=GEMINI)
    return claude, codex, gemini


def tokens(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "tokens": usage.tokens,
    }


def test_usage_by_agent_adds_up_every_run_and_labels_the_estimates(
    initialised: Path, clock: FakeClock
) -> None:
    seeded(initialised)
    document = report()
    assert document["by"] == "agent"
    assert document["since"] == "2026-11-23T09:00:00.000Z"
    assert document["until"] == "2026-11-30T09:00:00.000Z"
    groups = {group["agent"]: group for group in document["groups"]}
    assert list(groups) == ["claude", "codex", "gemini"]
    claude = CLAUDE_1 + CLAUDE_2
    assert groups["claude"] == {
        "agent": "claude",
        "runs": 2,
        **tokens(claude),
        "cost_usd": 0.07,
        "cost_source": "reported",
        "runs_without_cost": 0,
    }
    assert groups["codex"]["cost_source"] == "estimated"
    assert groups["codex"]["cost_usd"] == 0.01
    assert (groups["gemini"]["cost_usd"], groups["gemini"]["cost_source"]) == (None, None)
    assert groups["gemini"]["runs_without_cost"] == 1
    everything = claude + CODEX + GEMINI
    assert document["total"] == {
        "runs": 4,
        **tokens(everything),
        "cost_usd": 0.08,
        "cost_source": "estimated",  # a total with an estimated part is an estimate
        "runs_without_cost": 1,
    }
    text = wrighty("usage")
    assert text.exit_code == 0, text.output
    rows = {line.split()[0]: line for line in text.stdout.splitlines()[2:]}
    assert rows["claude"].split() == ["claude", "2", "1,500", "300", "5,000", "300", "7,100",
                                      "$0.0700"]  # fmt: skip
    assert rows["codex"].endswith("$0.0100 est.")
    assert rows["gemini"].endswith("—")
    assert rows["total"].split()[1:] == ["4", "3,800", "730", "6,000", "300", "10,830",
                                         "$0.0800", "est."]  # fmt: skip
    assert "1 of 4 runs have no cost" in text.stdout


def test_usage_by_item_and_since(initialised: Path, clock: FakeClock) -> None:
    claude, codex, gemini = seeded(initialised)
    old = create("--agent", "claude", title="old")
    run(initialised, old, at=START - timedelta(days=8), agent="claude", usage=CLAUDE_2)
    by_item = report("--by", "item")
    assert [group["item_id"] for group in by_item["groups"]] == [claude, codex, gemini]
    assert by_item["groups"][0]["tokens"] == (CLAUDE_1 + CLAUDE_2).tokens
    longer = report("--by", "item", "--since", "30d")
    assert [group["item_id"] for group in longer["groups"]] == [claude, codex, gemini, old]
    assert longer["total"]["runs"] == 5
    assert report("--since", "30m")["groups"] == []
    assert wrighty("usage", "--since", "30m").stdout.splitlines()[-1] == "no runs"


@pytest.mark.parametrize(
    ("zone", "starts", "days"),
    [
        # 22:30 and 23:30 UTC on Nov 29 are 23:30 on Nov 29 and 00:30 on Nov 30 in Berlin.
        ("Europe/Berlin", "00:00", {"2026-11-29": 1, "2026-11-30": 2}),
        ("UTC", "00:00", {"2026-11-29": 2, "2026-11-30": 1}),
        # A day that starts at 06:00: 05:00 in Berlin on Nov 30 still counts on Nov 29.
        ("Europe/Berlin", "06:00", {"2026-11-29": 3}),
    ],
)
def test_usage_by_day_counts_budget_days_in_the_budgets_time_zone(
    initialised: Path, clock: FakeClock, zone: str, starts: str, days: dict[str, int]
) -> None:
    configure(initialised, timeZone=zone, dayStartsAt=starts)
    item_id = create()
    for moment in ("2026-11-29T22:30", "2026-11-29T23:30", "2026-11-30T04:00"):
        at = datetime.fromisoformat(moment).replace(tzinfo=UTC)
        run(initialised, item_id, at=at, agent="claude", usage=CLAUDE_2)
    document = report("--by", "day")
    assert (document["time_zone"], document["day_starts_at"]) == (zone, starts)
    assert {group["day"]: group["runs"] for group in document["groups"]} == days
    text = wrighty("usage", "--by", "day").stdout
    assert f"by budget day ({zone}, from {starts})" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "10"], "wrighty: --since: cannot read duration '10'"),
        (["--since", "0s"], "wrighty: --since: duration '0s' must be greater than zero"),
        (["--since", "4000d"], "wrighty: --since: duration '4000d' is too long"),
        (["--by", "week"], "wrighty: Invalid value for '--by'"),
    ],
)
def test_bad_usage_options_are_one_line_and_exit_2(
    initialised: Path, args: list[str], message: str
) -> None:
    result = wrighty("usage", *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1


def test_show_gives_each_runs_usage_the_items_total_and_its_budget(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = create("--max-cost-usd", "0.1", "--max-tokens", "10000")
    run(initialised, item_id, at=START - timedelta(hours=3), agent="claude", usage=CLAUDE_1)
    run(initialised, item_id, at=START - timedelta(hours=2), agent="claude", usage=None)
    run(initialised, item_id, at=START - timedelta(hours=1), agent="claude", usage=CLAUDE_2)
    detail = json.loads(wrighty("show", str(item_id), "--json").stdout)
    first, nothing, last = detail["runs"]
    assert first["usage"] == {
        **tokens(CLAUDE_1),
        "cost_usd": 0.05,
        "cost_source": "reported",
        "models": ["claude-sonnet-4-5"],
        "turns": 3,
        "api_ms": 1000,
        "final": True,
    }
    assert nothing["usage"] is None  # nothing was reported
    assert last["usage"]["tokens"] == CLAUDE_2.tokens
    both = CLAUDE_1 + CLAUDE_2
    assert detail["usage"] == {
        **tokens(both),
        "cost_usd": 0.07,
        "cost_source": "reported",
        "models": ["claude-sonnet-4-5"],
        "turns": 4,
        "api_ms": 1400,
        "final": True,  # the run that reported nothing makes no total partial
    }
    assert detail["budget"] == {
        "max_cost_usd": 0.1,
        "max_tokens": 10000,
        "left_cost_usd": 0.03,
        "left_tokens": 10000 - both.tokens,
        "exceeded": False,
    }
    assert detail["hold"] is None
    text = wrighty("show", str(item_id)).stdout
    assert "  usage      $0.0700, 7,100 tokens over 2 runs\n" in text
    assert "  budget     $0.1 / 10,000 tokens, left $0.03 / 2,900 tokens\n" in text
    lines = [line.rstrip() for line in text.splitlines()]
    runs = lines[lines.index("Runs") + 1 :]
    assert runs[0].split()[-2:] == ["TOKENS", "COST"]
    assert runs[1].split()[-2:] == ["6,500", "$0.0500"]
    assert runs[2].split()[-2:] == ["-", "-"]


def test_show_marks_an_open_runs_usage_partial_and_a_spent_budget(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = create("--max-tokens", "1000")
    run(initialised, item_id, at=clock(), agent="codex", usage=CODEX, end=None)
    detail = json.loads(wrighty("show", str(item_id), "--json").stdout)
    assert detail["runs"][0]["usage"]["final"] is False  # as the last heartbeat recorded it
    assert detail["usage"]["final"] is False
    assert detail["budget"]["exceeded"] is True
    assert detail["budget"]["left_tokens"] == 0
    text = wrighty("show", str(item_id)).stdout
    assert "(partial: a run's final figures are not in)" in text
    assert "  budget     1,000 tokens, spent\n" in text
    assert "3,400 (partial) $0.0100 est." in text


def test_an_items_budget_defaults_to_budgets_per_item(initialised: Path, clock: FakeClock) -> None:
    configure(initialised, perItem={"maxCostUsd": 2})
    own = create("--max-cost-usd", "5")
    other = create()
    assert json.loads(wrighty("show", str(own), "--json").stdout)["budget"]["max_cost_usd"] == 5
    budget = json.loads(wrighty("show", str(other), "--json").stdout)["budget"]
    assert (budget["max_cost_usd"], budget["left_cost_usd"], budget["max_tokens"]) == (2, 2, None)


def test_model_names_from_a_vendor_never_reach_the_terminal_raw(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = create()
    hostile = Usage(10, 5, models=("gpt\x1b]52;c;aGk=\x07\u202e",), final=True)
    run(initialised, item_id, at=clock(), agent="claude", usage=hostile)
    text = wrighty("show", str(item_id)).stdout
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "  models     gpt\\x1b]52;c;aGk=\\x07\\u202e\n" in text
    raw = wrighty("show", str(item_id), "--json").stdout
    assert "\x1b" not in raw
    assert "\\u001b" in raw
    assert "\\u202e" in raw
    assert json.loads(raw)["usage"]["models"] == list(hostile.models)


def test_list_json_gives_each_item_its_total(initialised: Path, clock: FakeClock) -> None:
    claude, codex, gemini = seeded(initialised)
    untouched = create()
    listed = {item["id"]: item for item in json.loads(wrighty("list", "--json").stdout)}
    assert listed[claude]["usage"]["tokens"] == (CLAUDE_1 + CLAUDE_2).tokens
    assert listed[claude]["usage"]["cost_usd"] == 0.07
    assert listed[codex]["usage"]["cost_source"] == "estimated"
    assert listed[gemini]["usage"]["cost_usd"] is None
    assert listed[untouched]["usage"] == {
        **tokens(Usage()),
        "cost_usd": None,
        "cost_source": None,
        "models": [],
        "turns": None,
        "api_ms": None,
        "final": True,
    }
    assert all(item["hold"] is None for item in listed.values())
    # --since: the items that moved (claude's last run ended 2 hours ago), each with its whole
    # total (claude's first run began before the time given), read for those items alone
    moved = json.loads(wrighty("list", "--since", "150m", "--json").stdout)
    assert [item["id"] for item in moved] == [claude, codex, gemini, untouched]
    assert [item["usage"] for item in moved] == [listed[item["id"]]["usage"] for item in moved]
    later = json.loads(wrighty("list", "--since", "90m", "--json").stdout)
    assert [(item["id"], item["usage"]["cost_usd"]) for item in later] == [
        (gemini, None),
        (untouched, None),
    ]


def test_list_attention_json_gives_each_item_its_total(initialised: Path, clock: FakeClock) -> None:
    item_id = create()
    run(initialised, item_id, at=clock(), agent="claude", usage=CLAUDE_1)
    run(initialised, item_id, at=clock.advance(1), agent="claude", usage=CLAUDE_2,
        end=ItemState.NEEDS_ATTENTION)  # fmt: skip
    (waiting,) = json.loads(wrighty("list", "--attention", "--json").stdout)
    assert (waiting["id"], waiting["attempts"]) == (item_id, 2)
    assert waiting["usage"]["tokens"] == (CLAUDE_1 + CLAUDE_2).tokens
    assert waiting["usage"]["cost_usd"] == 0.07


def test_an_item_whose_agents_day_budget_is_spent_says_it_is_held_and_why(
    initialised: Path, clock: FakeClock
) -> None:
    configure(initialised, perDay={"claude": {"maxTokens": 5000}})
    spent = create("--agent", "claude")
    run(initialised, spent, at=clock.advance(-3600), agent="claude", usage=CLAUDE_1,
        end=ItemState.DONE)  # fmt: skip
    clock.advance(3600)
    waiting = create("--agent", "claude", title="waits")
    default = create(title="default agent")  # worker.defaultAgent is claude
    other = create("--agent", "codex")
    reason = (
        "claude's budget for the day (5,000 tokens) is spent ($0.0500, 6,500 tokens); new runs "
        "wait until 2026-12-01T00:00:00.000Z (budgets.perDay)"
    )
    detail = json.loads(wrighty("show", str(waiting), "--json").stdout)
    assert detail["hold"] == {
        "agent": "claude",
        "until": "2026-12-01T00:00:00.000Z",
        "reason": reason,
    }
    assert f"  held       {reason}\n" in wrighty("show", str(waiting)).stdout
    listed = {item["id"]: item for item in json.loads(wrighty("list", "--json").stdout)}
    assert listed[waiting]["hold"]["reason"] == reason
    assert listed[default]["hold"]["agent"] == "claude"
    assert listed[other]["hold"] is None
    assert listed[spent]["hold"] is None  # done: nothing waits
    text = wrighty("list").stdout
    assert f"held: items {waiting}, {default}: {reason}" in text.replace("\n", " ")
    # A new budget day lifts the hold.
    clock.advance(15 * 3600)
    assert json.loads(wrighty("show", str(waiting), "--json").stdout)["hold"] is None
    assert "held" not in wrighty("list").stdout


def test_an_agent_name_from_the_store_never_reaches_the_terminal_raw(
    initialised: Path, clock: FakeClock
) -> None:
    """A run recorded by another tool (or an older wrighty) may name any agent."""
    item_id = create()
    hostile = "evil\x1b[2J\u202e"
    run(initialised, item_id, at=clock(), agent=hostile, usage=CLAUDE_2)
    outputs = [
        wrighty("usage").stdout,
        wrighty("status").stdout,
        wrighty("status", "--format", "prometheus").stdout,
    ]
    for output in outputs:
        assert "\x1b" not in output
        assert "\u202e" not in output
    assert "evil\\x1b[2J\\u202e" in outputs[0]
    assert "  spend evil\\x1b[2J\\u202e: budget day 1 run" in outputs[1]
    assert 'wrighty_tokens_total{agent="evil\\\\x1b[2J\\\\u202e",kind="input"} 500' in outputs[2]
    assert report()["groups"][0]["agent"] == hostile
