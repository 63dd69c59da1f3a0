"""Text from outside reaches the screen with its control characters shown, not obeyed, and
piped output keeps each row whole on one line."""

from __future__ import annotations

import dataclasses
import io
import json
import unicodedata
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rich.console import Console

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import open_store, settle, start_run
from tests.conftest import START, FakeClock
from wrighty.cli.prometheus import status_prometheus
from wrighty.cli.render import attention_table, items_table, print_item_detail
from wrighty.cli.status_views import held_lines, providers_table, status_view, workers_table
from wrighty.cli.worker import _print_event_line
from wrighty.domain.circuits import Circuit
from wrighty.domain.health import (
    Liveness,
    QueueFigures,
    Thresholds,
    Unserved,
    WorkerCounts,
    WorkerRow,
    WorkerState,
    concerns,
)
from wrighty.domain.model import NewItem
from wrighty.domain.states import ItemState
from wrighty.domain.suggestions import Standing
from wrighty.services.circuits import circuit_view
from wrighty.services.items import ItemDetail, WaitingItem, item_detail
from wrighty.services.status import StatusReport, WorkerView

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07 clip"
OSC52_SHOWN = "\\x1b]52;c;ZWNobyBwd25lZA==\\x07 clip"
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def unsafe(text: str) -> list[str]:
    """The characters of ``text`` a terminal would obey or that hide text; newline is fine."""
    return [
        c
        for c in text
        if c != "\n" and (unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") or c in BIDI)
    ]


def plant(project: Path, title: str, *, body: str = "b") -> int:
    """An item written straight to the store, as another tool or an older wrighty could."""
    new = NewItem(title, body, None, None, None, ItemState.QUEUED)
    store = open_store(project)
    try:
        return store.create_item(new, at=FakeClock()(), actor="operator").id
    finally:
        store.close()


def failed(project: Path, clock: FakeClock, title: str, *, reason: str, diagnostic: str) -> int:
    """A planted item whose one run failed with ``reason`` and ``diagnostic``."""
    item_id = plant(project, title)
    started = start_run(project, item_id, at=clock.advance(1))
    settle(
        project,
        started,
        ItemState.NEEDS_ATTENTION,
        at=clock.advance(1),
        reason=reason,
        diagnostic=diagnostic,
    )
    return item_id


def test_create_refuses_a_title_with_a_control_character(initialised: Path) -> None:
    result = wrighty("create", "--title", OSC52, "--body", "b")
    assert result.exit_code == 2
    assert result.stderr == (
        "wrighty: title holds an invisible or control character (U+001B): "
        "a title is one line of plain text\n"
    )
    assert json.loads(wrighty("list", "--json").stdout) == []


@pytest.mark.parametrize("character", ["\t", "\x7f", "\x85", "\u202e", "\u200b"])
def test_create_refuses_other_invisible_characters_in_a_title(
    initialised: Path, character: str
) -> None:
    result = wrighty("create", "--title", f"fix{character}bug", "--body", "b")
    assert result.exit_code == 2
    assert f"(U+{ord(character):04X})" in result.stderr


def test_a_body_keeps_any_text(initialised: Path) -> None:
    body = f"step 1\n\tthen {OSC52}\n"
    result = wrighty("create", "--title", "t", "--body", body, "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(wrighty("show", "1", "--json").stdout)
    assert shown["body"] == body
    assert f"then {OSC52_SHOWN}" in wrighty("show", "1").stdout


def test_list_and_show_print_a_planted_title_neutralised(initialised: Path) -> None:
    item_id = plant(initialised, f"{OSC52} \u202eevil\r\nsecond line")
    expected = f"{OSC52_SHOWN} \\u202eevil\\r\\nsecond line"
    for args in (["list"], ["show", str(item_id)]):
        result = wrighty(*args)
        assert result.exit_code == 0, result.output
        assert expected in result.stdout
        assert unsafe(result.stdout) == []
    # JSON keeps the exact text (escaped as JSON)
    listed = wrighty("list", "--json").stdout
    assert json.loads(listed)[0]["title"] == f"{OSC52} \u202eevil\r\nsecond line"
    assert unsafe(listed) == []


def test_show_prints_a_diagnostic_and_a_reason_neutralised(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = failed(
        initialised, clock, "t", reason="agent said \x1b[31mred\x1b[0m", diagnostic="\x1b[2J"
    )
    result = wrighty("show", str(item_id))
    assert result.exit_code == 0, result.output
    assert "  \\x1b[2J" in result.stdout.splitlines()
    assert "agent said \\x1b[31mred\\x1b[0m" in result.stdout
    assert unsafe(result.stdout) == []


def test_worker_event_lines_show_outside_values_neutralised(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _print_event_line(
        {
            "event": "settled",
            "at": "2026-11-30T09:00:00.000Z",
            "worker_id": "w-1",
            "item": 3,
            "reason": "exit 1\n\x1b[2Jfake line",
            "session_id": "\u202eabc",
        }
    )
    assert capsys.readouterr().out == (
        "09:00:00 settled        item=3 reason=exit 1\\n\\x1b[2Jfake line session_id=\\u202eabc\n"
    )


# -- piped output --------------------------------------------------------------------------

LONG_TITLE = " ".join(f"w{index:02d}" for index in range(25)) + "!"  # 100 characters
LONG_REASON = "the agent failed because " + "it could not find the file it was told about " * 5


def test_list_prints_each_item_on_one_whole_line_when_piped(initialised: Path) -> None:
    assert len(LONG_TITLE) == 100
    plant(initialised, LONG_TITLE)
    plant(initialised, "short")
    lines = wrighty("list").stdout.splitlines()
    assert len(lines) == 3  # the header and one line per item
    assert LONG_TITLE in lines[1]
    assert lines[2].split()[:4] == ["2", "queued", "P2", "claude"]


def test_show_prints_long_fields_and_history_rows_whole_when_piped(
    initialised: Path, clock: FakeClock
) -> None:
    item_id = failed(initialised, clock, LONG_TITLE, reason=LONG_REASON, diagnostic="d")
    lines = wrighty("show", str(item_id)).stdout.splitlines()
    assert LONG_TITLE in lines
    assert f"  reason     agent-failure: {LONG_REASON.rstrip()}" in lines
    by_worker = [line for line in lines if line.split()[2:3] == ["worker:w-test"]]
    assert len(by_worker) == 2  # claimed it, then settled it: one line each
    assert by_worker[-1].rstrip().endswith(LONG_REASON.rstrip())
    assert [line for line in lines if LONG_REASON.rstrip() in line and "│" in line]  # the panel


# -- any text at all -----------------------------------------------------------------------


def rendered(show: Callable[[Console], object]) -> str:
    """What ``show`` prints on a console with no colour: the text alone, no styling escapes."""
    out = io.StringIO()
    show(Console(file=out, color_system=None, width=80))
    return out.getvalue()


@pytest.fixture
def sample(initialised: Path, clock: FakeClock) -> ItemDetail:
    """A failed item with a session, a run and its history, to fill with any text."""
    item_id = plant(initialised, "t")
    started = start_run(initialised, item_id, at=clock.advance(1), session_id="s")
    settle(initialised, started, ItemState.NEEDS_ATTENTION, at=clock.advance(1), diagnostic="d")
    store = open_store(initialised)
    try:
        return item_detail(store, item_id)
    finally:
        store.close()


def filled(sample: ItemDetail, title: str, reason: str, diagnostic: str, other: str) -> ItemDetail:
    """``sample`` with every field that holds outside text set to the given text."""
    assert sample.session is not None
    item = dataclasses.replace(
        sample.item,
        title=title,
        body=diagnostic,
        reason=reason,
        agent=other,
        workspace=other,
        claimed_by=other,
        next_action=other,
        reason_code=other,
    )
    return ItemDetail(
        item=item,
        session=dataclasses.replace(sample.session, vendor=other, session_id=other),
        runs=[dataclasses.replace(run, diagnostic=diagnostic, run_id=other) for run in sample.runs],
        events=[dataclasses.replace(event, actor=other, reason=reason) for event in sample.events],
    )


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=st.text(), reason=st.text(), diagnostic=st.text(), other=st.text())
def test_any_text_renders_with_no_control_character_left(
    sample: ItemDetail, title: str, reason: str, diagnostic: str, other: str
) -> None:
    detail = filled(sample, title, reason, diagnostic, other)
    running = dataclasses.replace(
        detail, item=dataclasses.replace(detail.item, state=ItemState.RUNNING)
    )
    standing = Standing(resumable=False, has_logs=True, lease_expired=False)
    row = WorkerRow(other, other, other, 1, 0.0, other, WorkerState.IDLE, (1,), START, START,
                    agent=other, held_reason=other or "x", waiting_for=other or "x")  # fmt: skip
    outputs = [
        rendered(lambda console: console.print(items_table([detail.item]))),
        rendered(
            lambda console: console.print(attention_table([WaitingItem(detail.item, START, 1)]))
        ),
        rendered(lambda console: print_item_detail(console, detail, standing)),
        rendered(lambda console: print_item_detail(console, running, standing)),
        rendered(
            lambda console: console.print(workers_table([WorkerView(row, Liveness.LIVE, 1.0)]))
        ),
        # Why a worker holds, and what it waits for, read back from its row (`wrighty workers`).
        rendered(lambda console: console.print(*held_lines([WorkerView(row, Liveness.LIVE, 1.0)]))),
    ]
    # A provider circuit whose name, reason and probe holder are outside text, half-open with
    # its probe running, and open.
    probed = Circuit(other, 2, START, START, reason, 1, other, 1, None, probe_running=True)
    circuits = [
        circuit_view(probed, START + timedelta(hours=1)),
        circuit_view(dataclasses.replace(probed, until=START + timedelta(hours=2)), START),
    ]
    figures = QueueFigures({}, 0, None, 0, 0, None)
    # An agent's name, read back from an item or a worker's row, in a warning and a label.
    unserved = [Unserved(other, 2)]
    warned = concerns(figures, workers=WorkerCounts(live=1), thresholds=Thresholds(),
                      unserved=unserved, held=[row])  # fmt: skip
    report = StatusReport(START, figures, [], Thresholds(), 60.0, [], warned, circuits,
                          unserved=unserved)  # fmt: skip
    outputs += [
        rendered(lambda console: console.print(providers_table(circuits))),
        rendered(lambda console: console.print(status_view(report))),
    ]
    for output in outputs:
        assert unsafe(output) == []
    prometheus = status_prometheus(report)
    assert unsafe(prometheus) == []
    samples = [line for line in prometheus.splitlines() if "circuit_open{" in line]
    assert len(samples) == len(circuits)  # a newline in a name split no sample
    assert len([line for line in prometheus.splitlines() if "unserved_items{" in line]) == 1


# Each example runs the CLI three times: few examples, and no shrinking, which would run it
# hundreds of times more.
@settings(
    max_examples=20,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(title=st.text(min_size=1), reason=st.text(), diagnostic=st.text(min_size=1))
def test_any_text_in_the_store_leaves_no_control_character_in_list_and_show(
    initialised: Path, title: str, reason: str, diagnostic: str
) -> None:
    item_id = failed(initialised, FakeClock(), title, reason=reason, diagnostic=diagnostic)
    for args in (["list"], ["show", str(item_id)], ["show", str(item_id), "--json"]):
        result = wrighty(*args)
        assert result.exit_code == 0, result.output
        assert unsafe(result.stdout) == []
