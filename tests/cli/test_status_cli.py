"""`wrighty status` and `wrighty workers`: the document, thresholds, exit codes, liveness."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import jsonschema
import psutil
import pytest
from rich.console import Console

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import create_queued, start_run
from tests.cli.test_verify_cli import PASSING, with_checks
from tests.cli.test_verify_display import LINT, TESTS, checked_then_waiting
from tests.conftest import FakeClock
from tests.helpers import snapshot
from wrighty.cli.status_views import watch_status
from wrighty.domain.check_evidence import CheckEvidence
from wrighty.domain.health import WorkerRow, WorkerState
from wrighty.domain.outcomes import RunKind
from wrighty.installation import installation_id
from wrighty.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "status.schema.json").read_text())
SECRET = "sk-ant-" + "q9w8e7r6" * 6


def create(*extra: str) -> int:
    result = wrighty("create", "--title", "t", "--body", f"fix it with {SECRET}", "--json", *extra)
    assert result.exit_code == 0, result.output
    return int(json.loads(result.stdout)["id"])


def status(*args: str) -> tuple[int, dict]:
    result = wrighty("status", "--json", *args)
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    return result.exit_code, document


def register(project: Path, clock: FakeClock, **changes: object) -> WorkerRow:
    """A registry row: this installation's by default, with a fresh heartbeat."""
    fields: dict[str, object] = {
        "worker_id": "w-0123456789ab",
        "label": None,
        "installation_id": installation_id(),
        "pid": 1,
        "process_started_at": 0.0,
        "version": "0.0.0",
        "state": WorkerState.IDLE,
        "items": (),
        "started_at": clock(),
        "last_heartbeat_at": clock(),
        **changes,
    }
    row = WorkerRow(**fields)  # type: ignore[arg-type]
    store = SqliteStore.open(project / ".wrighty" / "wrighty.db")
    store.upsert_worker(row)
    store.close()
    return row


def test_status_counts_every_state_and_validates_against_its_schema(
    initialised: Path, clock: FakeClock
) -> None:
    create("--queue")
    create()
    clock.advance(90)
    code, document = status("--min-workers", "0")
    assert code == 0
    assert document["healthy"] is True
    assert document["counts"] == {
        "todo": 1, "queued": 1, "running": 0, "retry-scheduled": 0,
        "needs-attention": 0, "review": 0, "landing": 0, "done": 0, "cancelled": 0,
    }  # fmt: skip
    assert (document["waiting"], document["oldest_queue_wait_seconds"]) == (1, 90.0)
    assert document["retry_scheduled_next_due"] is None
    assert SECRET not in json.dumps(document)
    text = wrighty("status", "--min-workers", "0").stdout
    prometheus = wrighty("status", "--format", "prometheus", "--min-workers", "0").stdout
    for output in (text, prometheus):
        assert SECRET not in output
        assert "fix it" not in output
    assert 'wrighty_items{state="queued"} 1' in prometheus
    assert 'wrighty_items{state="review"} 0' in prometheus
    assert "wrighty_oldest_queue_wait_seconds 90.0" in prometheus
    samples = [line for line in prometheus.splitlines() if not line.startswith("#")]
    assert all(re.fullmatch(r'wrighty_[a-z_]+(\{[a-z]+="[a-z_-]+"\})? (\d+(\.\d+)?|NaN)', s)
               for s in samples)  # fmt: skip


def test_waiting_items_with_no_live_worker_are_never_called_healthy(
    initialised: Path, clock: FakeClock
) -> None:
    assert status()[0] == 0  # nothing waits: nothing to judge
    create("--queue")
    code, document = status()
    assert code == 0  # only a threshold that was set makes an unhealthy exit
    assert document["problems"] == []
    assert document["warnings"] == [
        {"check": "no_live_worker", "message": "1 items wait and no worker is live"}
    ]
    text = wrighty("status")
    assert text.exit_code == 0
    assert "wrighty status: no thresholds set" in text.stdout
    assert "healthy" not in text.stdout
    assert "warning: 1 items wait and no worker is live" in text.stdout
    code, document = status("--min-workers", "1")
    assert code == 1
    assert [p["check"] for p in document["problems"]] == ["min_workers"]
    assert document["warnings"] == []  # the threshold reports it


def test_a_dead_worker_and_its_expired_lease_are_warned_about(
    initialised: Path, clock: FakeClock
) -> None:
    from tests.cli.run_helpers import TERMS, start_run

    item_id = create("--queue")
    start_run(initialised, item_id, at=clock())
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    register(initialised, clock, pid=int(gone.stdout), process_started_at=1.0, items=(item_id,))
    clock.advance(TERMS.lease_seconds + 1)  # SIGKILLed: nobody renews the claim
    code, document = status()
    assert code == 0
    assert [w["check"] for w in document["warnings"]] == ["expired_leases", "dead_workers"]
    text = wrighty("status").stdout
    assert "no thresholds set" in text
    assert "healthy" not in text
    assert "warning: 1 running items have an expired lease" in text
    assert "warning: 1 registered workers are dead" in text
    prometheus = wrighty("status", "--format", "prometheus").stdout
    assert 'wrighty_warnings{check="expired_leases"} 1' in prometheus
    assert 'wrighty_warnings{check="no_live_worker"} 0' in prometheus
    code, document = status("--max-expired-leases", "0")
    assert code == 1
    assert [w["check"] for w in document["warnings"]] == ["dead_workers"]


@pytest.mark.parametrize(
    ("args", "healthy"),
    [
        (["--max-queue-wait", "60s"], True),  # exactly at the limit passes
        (["--max-queue-wait", "59s"], False),
        (["--max-needs-attention", "1"], True),
        (["--max-needs-attention", "0"], False),
        (["--min-workers", "0"], True),
        (["--min-workers", "1"], True),  # a heartbeat exactly --worker-max-age old is live
        (["--min-workers", "2"], False),
        (["--max-expired-leases", "0"], True),
    ],
)
def test_thresholds_turn_figures_into_exit_codes(
    initialised: Path, clock: FakeClock, args: list[str], healthy: bool
) -> None:
    create("--queue")
    item = create("--queue")
    wrighty("cancel", str(item))
    attention = create("--queue")
    store = SqliteStore.open(initialised / ".wrighty" / "wrighty.db")
    store._connection.execute(
        "UPDATE items SET state = 'needs-attention' WHERE id = ?", (attention,)
    )
    store.close()
    register(initialised, clock, pid=1, process_started_at=0.0, installation_id="inst-other")
    clock.advance(60)
    code, document = status("--worker-max-age", "60s", *args)
    assert document["healthy"] is healthy
    assert code == (0 if healthy else 1)
    if not healthy:
        [problem] = document["problems"]
        assert problem["value"] > problem["limit"] or problem["check"] == "min_workers"


def test_unknown_queue_entry_times_are_reported_not_invented(
    initialised: Path, clock: FakeClock
) -> None:
    item = create("--queue")
    database = initialised / ".wrighty" / "wrighty.db"
    with sqlite3.connect(database) as connection:  # a legacy row without its entry time
        connection.execute("UPDATE items SET queued_at = NULL WHERE id = ?", (item,))
    _, document = status("--min-workers", "0")
    assert (document["unknown_queue_wait"], document["oldest_queue_wait_seconds"]) == (1, None)


def test_malformed_options_exit_2_without_opening_the_store(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "wrighty.db"
    for args in (
        ["--max-queue-wait", "soon"],
        ["--format", "xml"],
        ["--min-workers", "-1"],
        ["--max-open-circuits", "-1"],
        ["--max-open-circuits", "many"],
        ["--max-open-circuits", "10001"],
        ["--max-review-wait", "soon"],
        ["--max-review-wait", "0s"],
    ):
        result = wrighty("--store", str(missing), "status", *args)
        assert result.exit_code == 2, args
        assert "store" not in result.output.lower()
    assert not missing.parent.exists()


def test_a_store_that_cannot_be_read_is_exit_2_not_healthy(initialised: Path) -> None:
    database = initialised / ".wrighty" / "wrighty.db"
    database.write_bytes(b"this is not a database" * 100)
    for path in database.parent.glob("wrighty.db-*"):
        path.unlink()
    before = snapshot(initialised)
    result = wrighty("status", "--json")
    assert result.exit_code == 2
    assert result.output.startswith("wrighty: ")
    assert len(result.output.strip().splitlines()) == 1
    assert snapshot(initialised) == before


def test_workers_are_live_stale_or_dead(initialised: Path, clock: FakeClock) -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    me = psutil.Process()
    register(initialised, clock, worker_id="w-00000000a11e", pid=me.pid,
             process_started_at=me.create_time(), label="ci-box")  # fmt: skip
    register(initialised, clock, worker_id="w-00000000dead", pid=int(ended.stdout),
             process_started_at=1.0)  # fmt: skip
    register(initialised, clock, worker_id="w-0000000057a1", installation_id="inst-elsewhere",
             last_heartbeat_at=clock() - timedelta(seconds=61), pid=4242)  # fmt: skip
    result = wrighty("workers", "--json")
    assert result.exit_code == 0, result.output
    by_id = {row["worker_id"]: row for row in json.loads(result.stdout)}
    assert by_id["w-00000000a11e"]["liveness"] == "live"
    assert by_id["w-00000000a11e"]["label"] == "ci-box"
    assert by_id["w-00000000dead"]["liveness"] == "dead"  # heartbeat fresh, process gone
    assert by_id["w-0000000057a1"]["liveness"] == "stale"
    _, document = status()
    assert document["live_workers"] == 1


def test_status_and_workers_name_a_live_worker_whose_clock_is_off(
    initialised: Path, clock: FakeClock
) -> None:
    """docs/fleet.md#one-time-for-the-fleet: beyond 2 s from the store's clock; a stale worker's
    offset is old news, and one within the bound is no warning."""
    elsewhere = {"installation_id": "inst-elsewhere", "pid": 4242}
    register(initialised, clock, worker_id="w-0000000000fa", clock_offset_seconds=600.25,
             **elsewhere)  # fmt: skip
    register(initialised, clock, worker_id="w-000000000510", clock_offset_seconds=-1.5,
             **elsewhere)  # fmt: skip
    register(initialised, clock, worker_id="w-0000000057a1", clock_offset_seconds=-900.0,
             last_heartbeat_at=clock() - timedelta(seconds=61), **elsewhere)  # fmt: skip
    code, document = status()
    assert code == 0  # a warning, never an exit code
    warned = [w["message"] for w in document["warnings"] if w["check"] == "clock_skew"]
    assert warned == [
        "worker w-0000000000fa's clock is 600.2 s ahead of the store's, more than 2 s: it uses "
        "the store's time, but fix its machine's clock (NTP)"
    ]
    by_id = {row["worker_id"]: row for row in document["workers"]}
    assert {
        key: (row["clock_offset_seconds"], row["clock_skewed"]) for key, row in by_id.items()
    } == {
        "w-0000000000fa": (600.25, True),
        "w-000000000510": (-1.5, False),
        "w-0000000057a1": (-900.0, False),
    }
    table = wrighty("workers").stdout
    assert re.search(r"w-0000000000fa .* \+600\.2 s *\n", table)
    assert re.search(r"w-000000000510 .* -1\.5 s *\n", table)
    assert "warning: worker w-0000000000fa's clock is 600.2 s ahead" in wrighty("status").stdout


def test_workers_say_what_a_worker_waits_for(initialised: Path, clock: FakeClock) -> None:
    """docs/scale.md#what-a-worker-waits-for: below the table, in `--json` and in
    `status --json`; nothing for a worker that waits for nothing."""
    waits = "its wake-up line (too many clients already): it polls meanwhile, and opens it again"
    register(initialised, clock, worker_id="w-00000000a1e5", waiting_for=waits)
    register(initialised, clock, worker_id="w-0000000000c0")
    table = wrighty("workers").stdout
    assert f"waiting w-00000000a1e5: {waits}" in " ".join(table.split())
    assert "waiting w-0000000000c0" not in table
    listed = json.loads(wrighty("workers", "--json").stdout)
    assert {row["worker_id"]: row["waiting_for"] for row in listed} == {
        "w-00000000a1e5": waits,
        "w-0000000000c0": None,
    }
    _, document = status()
    assert [row["waiting_for"] for row in document["workers"]].count(waits) == 1


def test_watch_redraws_until_stopped(initialised: Path, clock: FakeClock) -> None:
    drawn: list[int] = []
    console = Console(record=True, width=100)

    def frame():  # type: ignore[no-untyped-def]
        from rich.console import Group
        from rich.text import Text

        drawn.append(1)
        return Group(Text(f"frame {len(drawn)}"))

    watch_status(console, frame, frames=2, sleep=lambda _: None)
    assert len(drawn) == 3  # the first view and two refreshes
    assert "frame 3" in console.export_text()


# -- provider circuits ------------------------------------------------------------------------


def write_circuit(project: Path, clock: FakeClock, name: str, *, minutes: float, reason: str):  # type: ignore[no-untyped-def]
    """A circuit a worker opened now for ``minutes`` (negative: its opening has passed, so it
    is half-open), written straight through the store."""
    from wrighty.domain.circuits import opened

    store = SqliteStore.open(project / ".wrighty" / "wrighty.db")
    try:
        before = store.get_circuit(name)
        at = clock() - timedelta(hours=1) if minutes < 0 else clock()
        until = clock() + timedelta(minutes=minutes)
        assert store.write_circuit(before, opened(before, at=at, until=until, reason=reason), at=at)
        return store.get_circuit(name)
    finally:
        store.close()


def close_circuit(project: Path, name: str, clock: FakeClock) -> None:
    from wrighty.domain.circuits import closed

    store = SqliteStore.open(project / ".wrighty" / "wrighty.db")
    try:
        before = store.get_circuit(name)
        assert store.write_circuit(before, closed(before), at=clock())
    finally:
        store.close()


def three_circuits(project: Path, clock: FakeClock) -> None:
    """account:team open for 30 minutes, agent:claude@inst-a half-open, agent:codex@inst-a
    closed again."""
    write_circuit(project, clock, "account:team", minutes=30, reason="rate-limited (item 4)")
    write_circuit(project, clock, "agent:claude@inst-a", minutes=-5, reason="overloaded")
    write_circuit(project, clock, "agent:codex@inst-a", minutes=-5, reason="old")
    close_circuit(project, "agent:codex@inst-a", clock)


def test_status_with_no_circuit_says_nothing_of_them(initialised: Path, clock: FakeClock) -> None:
    code, document = status("--max-open-circuits", "0")
    assert code == 0
    assert (document["open_circuits"], document["circuits"]) == (0, [])
    assert document["thresholds"]["max_open_circuits"] == 0
    prometheus = wrighty("status", "--format", "prometheus").stdout
    assert "wrighty_open_provider_circuits 0\n" in prometheus
    assert "wrighty_provider_circuit_open{" not in prometheus
    assert 'wrighty_problems{check="max_open_circuits"} 0' in prometheus
    assert "provider circuit" not in wrighty("status").stdout


def test_status_shows_the_circuits_that_are_not_closed(initialised: Path, clock: FakeClock) -> None:
    from wrighty.richtext import local_time

    three_circuits(initialised, clock)
    code, document = status()
    assert code == 0  # no threshold set: an open circuit alone is not unhealthy
    assert (document["problems"], document["warnings"]) == ([], [])
    assert document["open_circuits"] == 2
    assert document["circuits"] == [
        {"name": "account:team", "state": "open",
         "until": "2026-11-30T09:30:00.000Z", "reason": "rate-limited (item 4)"},
        {"name": "agent:claude@inst-a", "state": "half-open",
         "until": "2026-11-30T08:55:00.000Z", "reason": "overloaded"},
        {"name": "agent:codex@inst-a", "state": "closed", "until": None, "reason": None},
    ]  # fmt: skip

    prometheus = wrighty("status", "--format", "prometheus").stdout
    assert "wrighty_open_provider_circuits 2\n" in prometheus
    samples = [s for s in prometheus.splitlines() if s.startswith("wrighty_provider_circuit_open")]
    assert samples == [
        'wrighty_provider_circuit_open{name="account:team"} 1',
        'wrighty_provider_circuit_open{name="agent:claude@inst-a"} 1',
        'wrighty_provider_circuit_open{name="agent:codex@inst-a"} 0',
    ]
    assert "# TYPE wrighty_provider_circuit_open gauge" in prometheus

    text = wrighty("status").stdout
    lines = [line for line in text.splitlines() if "provider circuit" in line]
    assert lines == [
        f"  provider circuit account:team open until {local_time(clock() + timedelta(minutes=30))}"
        ", reason: rate-limited (item 4)",
        f"  provider circuit agent:claude@inst-a half-open since "
        f"{local_time(clock() - timedelta(minutes=5))}, reason: overloaded",
    ]

    clock.advance(31 * 60)  # the team's opening passed: half-open too
    _, document = status()
    assert [c["state"] for c in document["circuits"]] == ["half-open", "half-open", "closed"]


@pytest.mark.parametrize(
    ("limit", "healthy"),
    [("2", True), ("1", False), ("0", False)],  # the closed circuit never counts
)
def test_max_open_circuits_turns_open_circuits_into_an_exit_code(
    initialised: Path, clock: FakeClock, limit: str, healthy: bool
) -> None:
    three_circuits(initialised, clock)
    code, document = status("--max-open-circuits", limit)
    assert (code, document["healthy"]) == ((0, True) if healthy else (1, False))
    assert document["thresholds"]["max_open_circuits"] == int(limit)
    prometheus = wrighty("status", "--format", "prometheus", "--max-open-circuits", limit)
    assert prometheus.exit_code == code
    assert f'wrighty_problems{{check="max_open_circuits"}} {int(not healthy)}' in prometheus.stdout
    text = wrighty("status", "--max-open-circuits", limit)
    assert text.exit_code == code
    if healthy:
        assert document["problems"] == []
        assert "wrighty status: healthy" in text.stdout
    else:
        assert document["problems"] == [
            {"check": "max_open_circuits", "value": 2, "limit": int(limit),
             "message": f"2 provider circuits are open or half-open, more than {limit}"}
        ]  # fmt: skip
        assert "wrighty status: unhealthy" in text.stdout
        assert f"problem: 2 provider circuits are open or half-open, more than {limit}" in (
            text.stdout
        )


def test_a_reset_circuit_makes_status_healthy_again(initialised: Path, clock: FakeClock) -> None:
    write_circuit(initialised, clock, "account:team", minutes=30, reason="rate-limited")
    assert status("--max-open-circuits", "0")[0] == 1
    assert wrighty("providers", "reset", "account:team").exit_code == 0
    code, document = status("--max-open-circuits", "0")
    assert (code, document["open_circuits"]) == (0, 0)


def test_circuit_names_and_reasons_reach_status_neutralised(
    initialised: Path, clock: FakeClock
) -> None:
    name = 'account:"a\\b\x1b[2J\nx'
    write_circuit(initialised, clock, name, minutes=30, reason="\x1b]52;c;eA==\x07 \u202eok")
    text = wrighty("status").stdout
    prometheus = wrighty("status", "--format", "prometheus").stdout
    for output in (text, prometheus):
        assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", output), output
    assert 'provider circuit account:"a\\b\\x1b[2J\\nx open' in text
    assert "reason: \\x1b]52;c;eA==\\x07 \\u202eok" in text
    [sample] = [s for s in prometheus.splitlines() if s.startswith("wrighty_provider_circuit_op")]
    label = re.fullmatch(r'wrighty_provider_circuit_open\{name="((?:[^"\\]|\\.)*)"\} 1', sample)
    assert label is not None, sample
    unescaped = re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m[1], m[1]), label[1])
    assert unescaped == 'account:"a\\b\\x1b[2J\\nx'  # as the terminal view shows it
    _, document = status()
    assert document["circuits"][0]["name"] == name  # exact in JSON


def test_the_open_circuit_threshold_can_live_in_wrighty_json(
    initialised: Path, clock: FakeClock
) -> None:
    config = initialised / "wrighty.json"
    document = json.loads(config.read_text())
    document["status"] = {**document.get("status", {}), "maxOpenCircuits": 0}
    config.write_text(json.dumps(document))
    assert status()[0] == 0
    write_circuit(initialised, clock, "account:team", minutes=30, reason="rate-limited")
    code, shown = status()
    assert code == 1
    assert shown["thresholds"]["max_open_circuits"] == 0
    assert status("--max-open-circuits", "1")[0] == 0  # the option overrides the file


# -- the usage ledger: each agent's spend (docs/usage.md#where-to-look) -----------------------


def test_status_gives_each_agents_spend_for_the_budget_day_and_the_last_24_hours(
    initialised: Path, clock: FakeClock
) -> None:
    from tests.cli.usage_helpers import configure, run
    from wrighty.domain.usage import Usage
    from wrighty.richtext import local_time

    configure(initialised, perDay={"claude": {"maxTokens": 1000}, "gemini": {"maxCostUsd": 5}})
    today = Usage(600, 100, 200, 100, 0.03, ("claude-opus",), final=True, cost_source="reported")
    yesterday = Usage(50, 50, cost_usd=0.01, final=True, cost_source="reported")
    estimated = Usage(2000, 400, cost_usd=0.002, final=True, cost_source="estimated")
    old = Usage(7, 3, cost_usd=1.0, final=True, cost_source="reported")
    claude = create("--queue", "--agent", "claude")
    codex = create("--queue", "--agent", "codex")
    # START is 09:00 UTC: the budget day (UTC, from 00:00) began 9 hours ago.
    run(initialised, claude, at=clock() - timedelta(days=3), agent="claude", usage=old)
    run(initialised, claude, at=clock() - timedelta(hours=13), agent="claude", usage=yesterday)
    run(initialised, claude, at=clock() - timedelta(hours=1), agent="claude", usage=today)
    run(initialised, codex, at=clock() - timedelta(hours=2), agent="codex", usage=estimated)
    code, document = status()
    assert code == 0
    spend = document["spend"]
    assert (spend["period_start"], spend["period_end"]) == (
        "2026-11-30T00:00:00.000Z",
        "2026-12-01T00:00:00.000Z",
    )
    agents = {row["agent"]: row for row in spend["agents"]}
    assert list(agents) == ["claude", "codex", "gemini"]  # gemini: a budget of its own
    assert agents["claude"]["period"]["runs"] == 1
    assert agents["claude"]["period"]["tokens"] == today.tokens == 1000
    assert agents["claude"]["period"]["cost_usd"] == 0.03
    assert agents["claude"]["last_24h"]["runs"] == 2
    assert agents["claude"]["last_24h"]["tokens"] == today.tokens + yesterday.tokens
    assert agents["claude"]["last_24h"]["cost_usd"] == 0.04
    assert agents["claude"]["limit"] == {"max_cost_usd": None, "max_tokens": 1000}
    assert agents["claude"]["held"] is True
    assert agents["claude"]["hold_reason"].startswith(
        "claude's budget for the day (1,000 tokens) is spent ($0.0300, 1,000 tokens)"
    )
    assert agents["codex"]["period"]["cost_source"] == "estimated"
    assert (agents["codex"]["limit"], agents["codex"]["held"]) == (None, False)
    assert agents["gemini"]["period"]["runs"] == 0
    assert agents["gemini"]["limit"] == {"max_cost_usd": 5, "max_tokens": None}
    assert spend["held_agents"] == 1
    text = wrighty("status").stdout
    start, end = (datetime.fromisoformat(spend[key]) for key in ("period_start", "period_end"))
    assert f"  budget day {local_time(start)} to {local_time(end)}" in text  # local times
    assert (
        "  spend claude: budget day 1 run, $0.0300, 1,000 tokens of 1,000 tokens; "
        "last 24 h 2 runs, $0.0400, 1,100 tokens"
    ) in text
    assert "  spend codex: budget day 1 run, $0.0020 est., 2,400 tokens;" in text
    assert "  held claude's budget for the day (1,000 tokens) is spent" in text

    prometheus = wrighty("status", "--format", "prometheus").stdout
    lines = set(prometheus.splitlines())
    # The counters add up every run, the one of three days ago too.
    everything = old + yesterday + today
    assert f'wrighty_tokens_total{{agent="claude",kind="input"}} {everything.input_tokens}' in lines
    assert 'wrighty_tokens_total{agent="claude",kind="cache_write"} 100' in lines
    assert 'wrighty_tokens_total{agent="codex",kind="output"} 400' in lines
    assert 'wrighty_cost_usd_total{agent="claude",source="reported"} 1.04' in lines
    assert 'wrighty_cost_usd_total{agent="claude",source="estimated"} 0.0' in lines
    assert 'wrighty_cost_usd_total{agent="codex",source="estimated"} 0.002' in lines
    assert "# TYPE wrighty_tokens_total counter" in lines
    assert "# TYPE wrighty_cost_usd_total counter" in lines
    # The gauges are the budget day's.
    assert 'wrighty_budget_period_tokens{agent="claude"} 1000' in lines
    assert 'wrighty_budget_period_cost_usd{agent="claude"} 0.03' in lines
    assert 'wrighty_budget_period_cost_usd{agent="gemini"} 0' in lines
    assert 'wrighty_budget_period_limit_tokens{agent="claude"} 1000' in lines
    assert 'wrighty_budget_period_limit_cost_usd{agent="gemini"} 5.0' in lines
    assert not any(line.startswith('wrighty_budget_period_limit_tokens{agent="codex"')
                   for line in lines)  # fmt: skip
    assert 'wrighty_budget_agent_held{agent="claude"} 1' in lines
    assert 'wrighty_budget_agent_held{agent="codex"} 0' in lines
    assert "wrighty_budget_period_end_timestamp_seconds 1796083200.0" in lines
    samples = [line for line in prometheus.splitlines() if not line.startswith("#")]
    assert all(re.fullmatch(r'wrighty_[a-z_]+(\{[a-z]+="[a-z_-]+"(,[a-z]+="[a-z_-]+")?\})? '
                            r"(\d+(\.\d+)?|NaN)", s) for s in samples)  # fmt: skip


def test_status_reads_the_ledger_once_whatever_the_number_of_items(
    initialised: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.cli.usage_helpers import run
    from wrighty.domain.usage import Usage

    for _ in range(3):
        run(initialised, create("--queue"), at=clock(), agent="claude", usage=Usage(1, 1))
    calls: list[str] = []
    for name in ("list_ledger", "agent_spend", "list_runs", "get_item", "list_items"):
        original = getattr(SqliteStore, name)

        def counted(self: SqliteStore, *args: object, _f=original, _n=name, **kw: object) -> object:
            calls.append(_n)
            return _f(self, *args, **kw)

        monkeypatch.setattr(SqliteStore, name, counted)
    code, document = status()
    assert code == 0
    assert calls == ["list_ledger"]
    assert document["spend"]["agents"][0]["period"]["runs"] == 3
    calls.clear()
    assert wrighty("status", "--format", "prometheus").exit_code == 0
    assert calls == ["list_ledger"]


# -- the notification outbox (docs/notifications.md) ------------------------------------------


def add_notice(project: Path, clock: FakeClock, number: int) -> None:
    from wrighty.domain.outbox import Notice

    payload = {"id": f"ntc-{number}", "event": "needs-attention", "item": {"id": number}}
    notice = Notice(f"ntc-{number}", "needs-attention", ("needs-attention",), clock(), number,
                    "agent-failure", payload)  # fmt: skip
    store = SqliteStore.open(project / ".wrighty" / "wrighty.db")
    assert store.add_notice_once(notice)
    store.close()


def test_status_shows_the_notifications_not_delivered_yet(
    initialised: Path, clock: FakeClock
) -> None:
    code, document = status()
    assert document["notify"] == {"pending": 0, "oldest_pending_at": None,
                                  "oldest_pending_age_seconds": None, "given_up": 0}  # fmt: skip
    assert document["thresholds"]["max_notify_age_seconds"] is None
    assert "notifications" not in wrighty("status").stdout  # nothing to say
    add_notice(initialised, clock, 1)
    clock.advance(90)
    add_notice(initialised, clock, 2)
    clock.advance(30)
    code, document = status()
    assert code == 0  # no threshold set: figures only
    assert document["notify"] == {"pending": 2, "oldest_pending_at": "2026-11-30T09:00:00.000Z",
                                  "oldest_pending_age_seconds": 120.0, "given_up": 0}  # fmt: skip
    text = wrighty("status").stdout
    assert "notifications 2 not delivered yet, oldest 120 s, given up 0" in text
    prometheus = wrighty("status", "--format", "prometheus").stdout
    assert "wrighty_notify_pending 2\n" in prometheus
    assert "wrighty_notify_oldest_pending_age_seconds 120.0\n" in prometheus
    assert "wrighty_notify_given_up 0\n" in prometheus
    assert 'wrighty_problems{check="max_notify_age"} 0' in prometheus


def test_max_notify_age_turns_a_stuck_outbox_into_an_exit_code(
    initialised: Path, clock: FakeClock
) -> None:
    assert status("--max-notify-age", "1m")[0] == 0  # nothing waits
    add_notice(initialised, clock, 1)
    clock.advance(60)
    assert status("--max-notify-age", "1m")[0] == 0  # exactly the threshold passes
    clock.advance(1)
    code, document = status("--max-notify-age", "1m")
    assert code == 1
    assert document["problems"] == [{
        "check": "max_notify_age", "value": 61.0, "limit": 60.0,
        "message": "a notification has waited 61 s to be delivered, more than 60 s",
    }]  # fmt: skip
    assert document["thresholds"]["max_notify_age_seconds"] == 60
    assert "problem: a notification has waited 61 s" in wrighty("status", "--max-notify-age",
                                                                "1m").stdout  # fmt: skip


def test_the_notify_age_threshold_can_live_in_wrighty_json(
    initialised: Path, clock: FakeClock
) -> None:
    config = initialised / "wrighty.json"
    document = json.loads(config.read_text())
    document["status"] = {**document.get("status", {}), "maxNotifyAgeSeconds": 30}
    config.write_text(json.dumps(document))
    add_notice(initialised, clock, 1)
    clock.advance(31)
    code, shown = status()
    assert code == 1
    assert shown["thresholds"]["max_notify_age_seconds"] == 30
    assert "notifications 1 not delivered yet" in wrighty("status").stdout
    assert status("--max-notify-age", "1h")[0] == 0  # the option overrides the file


def test_status_names_the_agents_whose_items_no_live_worker_runs(
    initialised: Path, clock: FakeClock
) -> None:
    """The default agent's worker is live; three items wait for codex, which none runs."""
    default = json.loads((initialised / "wrighty.json").read_text())["worker"]["defaultAgent"]
    create("--queue")
    for _ in range(3):
        create("--queue", "--agent", "codex")
    register(initialised, clock, installation_id="inst-elsewhere", agent=default)
    code, document = status()
    assert code == 0  # a warning, not a threshold
    assert document["unserved"] == [{"agent": "codex", "waiting": 3}]
    assert {
        "check": "unserved_agent",
        "message": "3 items wait for agent codex; no live worker runs it",
    } in document["warnings"]
    assert [w["agent"] for w in document["workers"]] == [default]
    text = wrighty("status").stdout
    assert "  warning: 3 items wait for agent codex; no live worker runs it" in text
    prometheus = wrighty("status", "--format", "prometheus").stdout
    assert 'wrighty_unserved_items{agent="codex"} 3' in prometheus
    assert 'wrighty_warnings{check="unserved_agent"} 1' in prometheus
    assert f" {default} " in wrighty("workers").stdout  # the AGENT column
    register(initialised, clock, worker_id="w-0123456789ac", installation_id="inst-elsewhere",
             agent="codex")  # fmt: skip
    code, document = status()
    assert document["unserved"] == []
    assert "unserved_agent" not in {w["check"] for w in document["warnings"]}
    assert (
        'wrighty_warnings{check="unserved_agent"} 0'
        in wrighty("status", "--format", "prometheus").stdout
    )


def test_status_counts_the_checks_by_result_and_the_fix_turns(
    initialised: Path, clock: FakeClock
) -> None:
    """Verification's totals (docs/verify.md): the checks a worker ran after a run and those
    run by hand (`wrighty verify`), by result, and the fix turns; zeros before any."""
    _, before = status()
    nothing = {"checks_passed": 0, "checks_failed": 0, "checks_not_started": 0, "fix_turns": 0}
    assert before["verification"] == nothing
    with_checks(initialised, PASSING)
    types = CheckEvidence("types", ("mypy", "."), 3.0, "Success\n", exit_code=0)
    slow = CheckEvidence("slow", ("sleep", "99"), 60.0, "", signal=9, timed_out=True)
    gone = CheckEvidence("docs", ("no-such-program",), 0.0, start_failure="not found")
    item_id = checked_then_waiting(initialised, clock, [LINT, types, TESTS, slow, gone])
    assert wrighty("verify", str(item_id)).exit_code == 0  # by hand: passes, and it is done
    start_run(initialised, create_queued(), at=clock(), session_id="s-2", kind=RunKind.FIX)
    _, document = status()
    assert document["verification"] == {
        "checks_passed": 3, "checks_failed": 2, "checks_not_started": 1, "fix_turns": 1,
    }  # fmt: skip
    prometheus = wrighty("status", "--format", "prometheus").stdout
    assert "# TYPE wrighty_checks_total counter\n" in prometheus
    assert "# TYPE wrighty_fix_turns_total counter\n" in prometheus
    samples = [line for line in prometheus.splitlines() if line.startswith("wrighty_checks_total")]
    assert samples == [
        'wrighty_checks_total{result="passed"} 3',
        'wrighty_checks_total{result="failed"} 2',
        'wrighty_checks_total{result="not-started"} 1',
    ]
    assert "\nwrighty_fix_turns_total 1\n" in prometheus


# -- the wait for review (docs/states.md#review) ----------------------------------------------


def in_review(project: Path, clock: FakeClock) -> int:
    """A new item, claimed, run and settled to review now, as a worker does under
    completion.review person."""
    from wrighty.domain.claims import ClaimRequest, LeaseTerms, Settlement, settle
    from wrighty.domain.model import NewRun, RunEnd
    from wrighty.domain.outcomes import Confidence, OutcomeClass
    from wrighty.domain.states import ItemState

    item_id = create("--queue")
    store = SqliteStore.open(project / ".wrighty" / "wrighty.db")
    terms = LeaseTerms(lease_seconds=60, default_timeout_seconds=600)
    held = store.acquire(
        ClaimRequest("w-1", "inst-a", terms, "claude", item_id=item_id), now=clock()
    )
    assert held is not None
    run = NewRun(f"r-{item_id}", RunKind.FRESH, "w-1", "inst-a", clock(), None)
    assert store.start_run(held.item, run) is not None
    end = RunEnd(clock(), OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, exit_code=0)
    plan = Settlement(ItemState.REVIEW, process_started=True, run_end=end)
    assert store.write_transition(settle(held.item, plan, at=clock()))
    store.close()
    return item_id


def test_status_shows_the_oldest_review_wait(initialised: Path, clock: FakeClock) -> None:
    code, document = status()
    assert (document["oldest_review_wait_seconds"], code) == (None, 0)
    assert document["thresholds"]["max_review_wait_seconds"] is None
    assert "in review" not in wrighty("status").stdout  # nothing to say
    assert (
        "wrighty_oldest_review_wait_seconds NaN\n"
        in wrighty("status", "--format", "prometheus").stdout
    )
    in_review(initialised, clock)
    clock.advance(600)
    in_review(initialised, clock)
    clock.advance(45)
    code, document = status()
    assert code == 0  # no threshold set: figures only
    assert (document["counts"]["review"], document["oldest_review_wait_seconds"]) == (2, 645.0)
    assert "in review 2, oldest review wait 645 s" in wrighty("status").stdout
    prometheus = wrighty("status", "--format", "prometheus").stdout
    assert "wrighty_oldest_review_wait_seconds 645.0\n" in prometheus
    assert 'wrighty_problems{check="max_review_wait"} 0' in prometheus


def test_max_review_wait_turns_a_forgotten_review_into_an_exit_code(
    initialised: Path, clock: FakeClock
) -> None:
    assert status("--max-review-wait", "1h")[0] == 0  # nothing in review
    quiet = wrighty("status", "--max-review-wait", "1h").stdout
    assert "in review 0, oldest review wait -" in quiet
    assert "wrighty status: healthy" in quiet  # a threshold was set, and checked
    in_review(initialised, clock)
    clock.advance(3600)
    assert status("--max-review-wait", "1h")[0] == 0  # exactly the threshold passes
    clock.advance(1)
    code, document = status("--max-review-wait", "1h")
    assert code == 1
    assert document["healthy"] is False
    assert document["problems"] == [{
        "check": "max_review_wait", "value": 3601.0, "limit": 3600.0,
        "message": "an item has waited 3601 s for review, more than 3600 s",
    }]  # fmt: skip
    assert document["thresholds"]["max_review_wait_seconds"] == 3600
    text = wrighty("status", "--max-review-wait", "1h")
    assert text.exit_code == 1
    assert "wrighty status: unhealthy" in text.stdout
    assert "problem: an item has waited 3601 s for review, more than 3600 s" in text.stdout
    prometheus = wrighty("status", "--format", "prometheus", "--max-review-wait", "1h")
    assert prometheus.exit_code == 1
    assert 'wrighty_problems{check="max_review_wait"} 1' in prometheus.stdout
    assert "wrighty_healthy 0\n" in prometheus.stdout


def test_the_review_wait_threshold_can_live_in_wrighty_json(
    initialised: Path, clock: FakeClock
) -> None:
    config = initialised / "wrighty.json"
    document = json.loads(config.read_text())
    document["status"] = {**document.get("status", {}), "maxReviewWaitSeconds": 300}
    config.write_text(json.dumps(document))
    in_review(initialised, clock)
    clock.advance(301)
    code, shown = status()
    assert code == 1
    assert shown["thresholds"]["max_review_wait_seconds"] == 300
    assert [p["check"] for p in shown["problems"]] == ["max_review_wait"]
    assert status("--max-review-wait", "1h")[0] == 0  # the option overrides the file


def test_the_review_wait_on_postgresql(project: Path) -> None:
    """The same figure and threshold through the command on a PostgreSQL store, whose clock is
    the database's (the item entered review two hours before it, by that clock)."""
    from tests.conftest import open_postgres, postgres_schema
    from tests.store.test_contract import new_item
    from tests.store.test_review_wait import to_review

    with postgres_schema() as url:
        store = open_postgres(url)
        try:
            now = store.store_time()
            assert now is not None
            clock = FakeClock(now - timedelta(hours=2))
            made = store.create_item(new_item(queued=True), at=clock(), actor="op")
            to_review(store, clock, made)
        finally:
            store.close()
        result = wrighty("--store", url, "status", "--json", "--max-review-wait", "1h")
        assert result.exit_code == 1, result.output
        document = json.loads(result.stdout)
        jsonschema.validate(document, SCHEMA)
        assert document["counts"]["review"] == 1
        assert 7200 <= document["oldest_review_wait_seconds"] < 7200 + 600
        assert [p["check"] for p in document["problems"]] == ["max_review_wait"]
        assert wrighty("--store", url, "status", "--max-review-wait", "3h").exit_code == 0


# -- the landing items (docs/landing.md#where-it-shows) ----------------------------------------


def accept_in_store(project: Path, clock: FakeClock, item_id: int) -> None:
    """``item_id`` (in review) accepted now: in landing, waiting in line for a lander."""
    from wrighty.domain import landing

    store = SqliteStore.open(project / ".wrighty" / "wrighty.db")
    try:
        item = store.get_item(item_id)
        assert item is not None
        move = landing.accept(item, at=clock(), actor="op", accepted_commit="a" * 40,
                              installation_id="inst-a", target="main")  # fmt: skip
        assert store.write_landing(move)
    finally:
        store.close()


def test_status_counts_the_landing_items_and_the_oldest_landing_wait(
    initialised: Path, clock: FakeClock
) -> None:
    code, document = status()
    assert (document["counts"]["landing"], document["oldest_landing_wait_seconds"]) == (0, None)
    assert "oldest landing wait" not in wrighty("status").stdout  # nothing to say
    accept_in_store(initialised, clock, in_review(initialised, clock))
    clock.advance(300)
    accept_in_store(initialised, clock, in_review(initialised, clock))
    clock.advance(20)
    code, document = status()
    assert code == 0  # a figure, not a threshold
    assert (document["counts"]["landing"], document["oldest_landing_wait_seconds"]) == (2, 320.0)
    assert (document["counts"]["review"], document["oldest_review_wait_seconds"]) == (0, None)
    assert "  landing 2, oldest landing wait 320 s" in wrighty("status").stdout
    prometheus = wrighty("status", "--format", "prometheus").stdout
    assert "wrighty_oldest_landing_wait_seconds 320.0\n" in prometheus
    assert 'wrighty_items{state="landing"} 2\n' in prometheus
