"""`wrighty providers` and `wrighty providers reset`: the provider circuits as the store holds
them, their state at now, and closing one by hand. The circuits are written straight through
the store, as workers would leave them."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import timedelta
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import create_queued, open_store, start_run
from tests.conftest import FakeClock
from wrighty.domain.circuits import Circuit, closed, opened, probing, take_probe
from wrighty.domain.times import rfc3339
from wrighty.richtext import local_time
from wrighty.store.sqlite import SqliteStore

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07 clip"
OSC52_SHOWN = "\\x1b]52;c;ZWNobyBwd25lZA==\\x07 clip"
TEAM = "account:team"


def move(project: Path, name: str, change, *, at) -> Circuit:  # type: ignore[no-untyped-def]
    """Read the circuit, apply ``change`` to it and write it, as a worker would."""
    store = open_store(project)
    try:
        before = store.get_circuit(name)
        assert store.write_circuit(before, change(before), at=at)
        return store.get_circuit(name)
    finally:
        store.close()


def read(project: Path, name: str) -> Circuit:
    store = open_store(project)
    try:
        return store.get_circuit(name)
    finally:
        store.close()


def open_circuit(
    project: Path, clock: FakeClock, name: str = TEAM, *, minutes: float = 30, reason: str = "r"
) -> Circuit:
    at = clock()
    until = at + timedelta(minutes=minutes)
    return move(project, name, lambda c: opened(c, at=at, until=until, reason=reason), at=at)


def half_open(project: Path, clock: FakeClock, name: str, *, reason: str = "r") -> Circuit:
    """A circuit whose opening has passed already (opened an hour ago until 5 minutes ago)."""
    at = clock() - timedelta(hours=1)
    until = clock() - timedelta(minutes=5)
    return move(project, name, lambda c: opened(c, at=at, until=until, reason=reason), at=at)


def providers(*args: str) -> list[dict]:
    result = wrighty("providers", *args, "--json")
    assert result.exit_code == 0, result.output
    listed: list[dict] = json.loads(result.stdout)
    return listed


def test_no_circuits_lists_nothing(initialised: Path) -> None:
    for args in ((), ("list",)):
        result = wrighty("providers", *args)
        assert (result.exit_code, result.stdout) == (0, "no provider circuits\n")
        assert providers(*args) == []


def test_each_circuit_is_listed_with_its_state_at_now(initialised: Path, clock: FakeClock) -> None:
    team = open_circuit(initialised, clock, reason="rate-limited (item 4)")
    # Half-open, its probe held by w-test, which runs item 1 under its claim.
    probed = half_open(initialised, clock, "agent:claude@inst-a", reason="provider-unavailable")
    item_id = create_queued()
    start_run(initialised, item_id, at=clock())
    lease = clock() + timedelta(seconds=60)
    move(initialised, probed.name,
         lambda c: probing(take_probe(c, now=clock(), worker_id="w-test", lease_until=lease),
                           item_id=item_id),
         at=clock())  # fmt: skip
    # Half-open, taken by a worker whose time to claim has run out: no live probe holds it.
    lapsed = half_open(initialised, clock, "agent:codex@inst-a")
    gone = clock() - timedelta(seconds=1)
    move(initialised, lapsed.name,
         lambda c: take_probe(c, now=clock(), worker_id="w-gone00000000", lease_until=gone)
         or c, at=clock())  # fmt: skip
    # Closed again by a run the provider answered.
    half_open(initialised, clock, "agent:gemini@inst-a")
    move(initialised, "agent:gemini@inst-a", closed, at=clock())

    listed = providers()
    assert providers("list") == listed
    by_name = {entry["name"]: entry for entry in listed}
    assert [entry["name"] for entry in listed] == sorted(by_name)
    assert by_name[TEAM] == {
        "name": TEAM,
        "state": "open",
        "opened_at": rfc3339(clock()),
        "until": rfc3339(team.until),
        "reason": "rate-limited (item 4)",
        "failures": 1,
        "probe": None,
    }
    assert by_name["agent:claude@inst-a"]["state"] == "half-open"
    assert by_name["agent:claude@inst-a"]["probe"] == {
        "worker_id": "w-test",
        "item_id": item_id,
        "expires_at": rfc3339(lease),
        "running": True,
        "held": True,
    }
    assert by_name["agent:codex@inst-a"]["state"] == "half-open"
    assert by_name["agent:codex@inst-a"]["probe"]["held"] is False
    assert by_name["agent:gemini@inst-a"] == {
        "name": "agent:gemini@inst-a",
        "state": "closed",
        "opened_at": None,
        "until": None,
        "reason": None,
        "failures": 0,
        "probe": None,
    }

    text = wrighty("providers")
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "SINCE", "UNTIL", "REASON", "PROBE"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert rows.keys() == by_name.keys()
    team_row = rows[TEAM]
    assert " open " in team_row
    assert local_time(clock()) in team_row
    assert local_time(team.until) in team_row
    assert "rate-limited (item 4)" in team_row
    assert team_row.rstrip().endswith("-")  # no probe
    assert f"item {item_id} by w-test" in rows["agent:claude@inst-a"]
    assert " half-open " in rows["agent:codex@inst-a"]
    assert "w-gone" not in rows["agent:codex@inst-a"]
    assert rows["agent:gemini@inst-a"].split() == ["agent:gemini@inst-a", "closed", *"----"]

    clock.advance(31 * 60)  # past the team's opening: half-open now, with no probe yet
    assert {e["name"]: e["state"] for e in providers()}[TEAM] == "half-open"


def test_a_reason_from_the_store_reaches_the_terminal_neutralised(
    initialised: Path, clock: FakeClock
) -> None:
    planted = f"refused \u202e{OSC52}"
    open_circuit(initialised, clock, "account:\x1b[2Jx", reason=planted)
    text = wrighty("providers").stdout
    assert not re.search("[\x1b\x07\u202e]", text)
    assert OSC52_SHOWN in text
    assert "refused \\u202e" in text
    assert "account:\\x1b[2Jx" in text
    [entry] = providers()
    assert (entry["name"], entry["reason"]) == ("account:\x1b[2Jx", planted)  # exact in JSON
    assert "\x1b" not in wrighty("providers", "--json").stdout  # as a \u escape


def test_reset_closes_an_open_circuit(initialised: Path, clock: FakeClock) -> None:
    before = open_circuit(initialised, clock)
    result = wrighty("providers", "reset", TEAM)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"provider circuit {TEAM} closed (it was open until {local_time(before.until)}); "
        "workers launch its agents again\n"
    )
    after = read(initialised, TEAM)
    assert after == dataclasses.replace(closed(before), version=before.version + 1)
    assert providers()[0]["state"] == "closed"


def test_reset_closes_a_half_open_circuit_and_drops_its_probe(
    initialised: Path, clock: FakeClock
) -> None:
    before = half_open(initialised, clock, TEAM)
    lease = clock() + timedelta(seconds=60)
    move(initialised, TEAM,
         lambda c: take_probe(c, now=clock(), worker_id="w-0123456789ab", lease_until=lease),
         at=clock())  # fmt: skip
    result = wrighty("providers", "reset", TEAM, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "name": TEAM,
        "state": "closed",
        "opened_at": None,
        "until": None,
        "reason": None,
        "failures": 0,
        "probe": None,
    }
    after = read(initialised, TEAM)
    assert (after.until, after.probe_by, after.failures) == (None, None, 0)
    assert after.version == before.version + 2
    text = wrighty("providers", "reset", TEAM)
    assert text.stdout == f"provider circuit {TEAM} was closed already\n"


def test_reset_of_a_closed_circuit_says_so_and_writes_nothing(
    initialised: Path, clock: FakeClock
) -> None:
    half_open(initialised, clock, TEAM)
    before = move(initialised, TEAM, closed, at=clock())
    result = wrighty("providers", "reset", TEAM)
    assert (result.exit_code, result.stdout) == (0, f"provider circuit {TEAM} was closed already\n")
    assert read(initialised, TEAM) == before  # same version: nothing written
    result = wrighty("providers", "reset", TEAM, "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["state"] == "closed"


def test_reset_of_an_unknown_circuit_is_one_line_and_exit_2(
    initialised: Path, clock: FakeClock
) -> None:
    open_circuit(initialised, clock)
    for args in (("agent:nosuch@x",), ("agent:nosuch@x", "--json")):
        result = wrighty("providers", "reset", *args)
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == (
            "wrighty: no provider circuit 'agent:nosuch@x'; "
            "`wrighty providers` lists the circuits there are\n"
        )
    store = open_store(initialised)
    try:
        assert [circuit.name for circuit in store.list_circuits()] == [TEAM]
    finally:
        store.close()


def test_reset_decides_again_when_a_worker_moved_the_circuit_first(
    initialised: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_circuit(initialised, clock, minutes=10)
    write = SqliteStore.write_circuit
    raced: list[int] = []

    def racing(self, before, after, *, at):  # type: ignore[no-untyped-def]
        if not raced:  # a worker opens it again, later, just before the reset writes
            raced.append(before.version)
            later = opened(before, at=at, until=at + timedelta(hours=1), reason="again")
            assert write(self, before, later, at=at)
        return write(self, before, after, at=at)

    monkeypatch.setattr(SqliteStore, "write_circuit", racing)
    result = wrighty("providers", "reset", TEAM)
    assert result.exit_code == 0, result.output
    assert "closed (it was open" in result.stdout
    after = read(initialised, TEAM)
    assert after.until is None
    assert after.version == raced[0] + 2  # the worker's write, then the reset's


def test_reset_gives_up_on_a_circuit_that_keeps_changing(
    initialised: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_circuit(initialised, clock)
    tries: list[int] = []

    def losing(self, before, after, *, at):  # type: ignore[no-untyped-def]
        tries.append(1)
        return False

    monkeypatch.setattr(SqliteStore, "write_circuit", losing)
    result = wrighty("providers", "reset", TEAM)
    assert result.exit_code == 2
    assert result.stderr == (
        f"wrighty: provider circuit '{TEAM}' kept changing while this command ran; try again\n"
    )
    assert len(tries) == 5
    assert read(initialised, TEAM).until is not None


def test_json_goes_after_the_subcommand(initialised: Path) -> None:
    result = wrighty("providers", "--json", "reset", TEAM)
    assert result.exit_code == 2
    assert result.stderr.startswith("wrighty: --json goes after the subcommand")


def under_usage_retry(project: Path, **agent: object) -> None:
    config = project / "wrighty.json"
    document = json.loads(config.read_text())
    document["worker"]["usageFailure"] = {"action": "retry"}
    if agent:
        document["agents"] = {"claude": agent}
    config.write_text(json.dumps(document))


def test_show_says_which_open_circuit_holds_a_waiting_item_back(
    initialised: Path, clock: FakeClock
) -> None:
    from wrighty.installation import installation_id

    under_usage_retry(initialised)
    item_id = create_queued()
    name = f"agent:claude@{installation_id()}"
    assert json.loads(wrighty("show", str(item_id), "--json").stdout)["circuit"] is None
    open_circuit(initialised, clock, name, minutes=30, reason="rate-limited (item 9)")
    shown = json.loads(wrighty("show", str(item_id), "--json").stdout)
    assert shown["circuit"] == {
        "name": name,
        "state": "open",
        "until": rfc3339(clock() + timedelta(minutes=30)),
        "reason": "rate-limited (item 9)",
    }
    text = " ".join(wrighty("show", str(item_id)).stdout.split())
    until = local_time(clock() + timedelta(minutes=30))
    assert f"waits for the provider circuit {name}, open until {until}" in text
    assert "(rate-limited (item 9)); see `wrighty providers`" in text
    clock.advance(31 * 60)
    assert "half-open: the next claim probes the provider" in " ".join(
        wrighty("show", str(item_id)).stdout.split()
    )


def test_a_shared_account_circuit_holds_back_the_agents_that_name_it(
    initialised: Path, clock: FakeClock
) -> None:
    under_usage_retry(initialised, account="team")
    item_id = create_queued()
    open_circuit(initialised, clock, TEAM)
    assert json.loads(wrighty("show", str(item_id), "--json").stdout)["circuit"]["name"] == TEAM


def test_without_the_usage_policy_no_circuit_holds_an_item(
    initialised: Path, clock: FakeClock
) -> None:
    from wrighty.installation import installation_id

    item_id = create_queued()
    open_circuit(initialised, clock, f"agent:claude@{installation_id()}")
    assert json.loads(wrighty("show", str(item_id), "--json").stdout)["circuit"] is None
