"""The notifications of a landing (docs/notifications.md#events, docs/landing.md), with real git
and real `wrighty` processes, on both stores: an accepted item that lands tells `landed` (and
`done`) once, with its link; one whose integration fails comes back to review as `not-landed`
(and `ready-for-review`, with what that carries); one whose landing's fix turns are spent goes
to needs-attention as `not-landed` (and `needs-attention`). Whether `wrighty accept` lands it
or a worker does, the notice is in the outbox and reaches a command sink."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import git
from tests.integration.test_landing import AGENT, CHECK
from tests.integration.worker_process import ProjectOnDisk
from tests.integration.worker_process import make_project as new_project
from wrighty.config.loading import load_config
from wrighty.domain.outbox import StoredNotice
from wrighty.domain.states import ItemState
from wrighty.services.landing import land_next, lander_from

PUBLIC_URL = "https://wrighty.example.net:8443"
# Every event a landing's item may count as: the sink gets each of them.
EVENTS = ["ready-for-review", "not-landed", "landed", "done", "needs-attention",
          "retry-scheduled"]  # fmt: skip
ALL = ("pending", "delivered", "given-up")
# The command sink: appends each notification it is told (one JSON document) as a line to
# the file its argument names.
SINK = "import sys; open(sys.argv[1], 'a').write(sys.stdin.read().strip() + '\\n')"


class Project:
    """A git project in worktree mode whose items land on main, telling a command sink."""

    def __init__(self, root: Path, store_url: str | None, **sections: Any) -> None:
        (root / "marks").mkdir(parents=True)
        self.sink = root.parent / "told.jsonl"
        notify = {"events": EVENTS, "command": [sys.executable, "-c", SINK, str(self.sink)]}
        completion = {"review": "person", "integrate": "merge", **sections.pop("completion", {})}
        verify = {**CHECK, **sections.pop("verify", {})}
        self.on_disk: ProjectOnDisk = new_project(
            root, programs={"maker": ("agent.py", AGENT)}, resumable=True,
            worker={"workspaceMode": "worktree"}, store_url=store_url, git=True,
            committed=True, env={"MARKS": str(root / "marks")}, completion=completion,
            verify=verify, notify=notify, **sections,
        )  # fmt: skip
        self.root = root

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.on_disk.command(*args), cwd=self.root, env=self.on_disk.env,
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip

    def in_review(self, *tasks: tuple[str, str]) -> list[int]:
        ids = [self.on_disk.plant(task, title=title) for title, task in tasks]
        for _ in ids:
            assert self.on_disk.worker("--once").returncode == 0
        for item_id in ids:
            item = self.on_disk.get(item_id)
            assert item.state is ItemState.REVIEW, item.reason
        return ids

    def accept(self, item_id: int, *args: str, exit_code: int = 0) -> None:
        done = self.run("accept", str(item_id), *args)
        assert done.returncode == exit_code, done.stderr

    def outbox(self, item_id: int) -> list[StoredNotice]:
        """The notices about ``item_id`` in the outbox, oldest first."""
        store = self.on_disk.store()
        try:
            stored = store.list_notices(ALL)
        finally:
            store.close()
        mine = [one for one in stored if one.notice.item_id == item_id]
        return sorted(mine, key=lambda one: one.notice.at)

    def about_landing(self, item_id: int) -> list[dict[str, Any]]:
        """The payloads of the notices about ``item_id`` that a landing wrote."""
        return [
            one.notice.payload
            for one in self.outbox(item_id)
            if {"landed", "not-landed"} & set(one.notice.events)
        ]

    def told(self) -> list[dict[str, Any]]:
        """What the command sink was told, in order."""
        if not self.sink.exists():
            return []
        return [json.loads(line) for line in self.sink.read_text().splitlines() if line]


def test_an_item_accept_lands_tells_landed_and_done_once_with_its_link(
    tmp_path: Path, store_url: str | None
) -> None:
    project = Project(tmp_path / "p", store_url, serve={"publicUrl": PUBLIC_URL})
    [item_id] = project.in_review(("Only", "FILE a.txt TEXT one"))

    project.accept(item_id)  # lands here, in the accept's own process

    assert project.on_disk.get(item_id).state is ItemState.DONE
    [told] = project.about_landing(item_id)
    assert told["event"] == "landed"
    assert told["events"] == ["landed", "done"]
    assert (told["state"], told["reason_code"]) == ("done", "landed")
    assert told["reason"].startswith("landed on main as ")
    assert told["link"] == f"{PUBLIC_URL}/items/{item_id}"
    assert told["worker_id"] is None  # an operator's command wrote it, not a worker
    assert "failing_checks" not in told
    flushed = project.run("notify", "flush")
    assert flushed.returncode == 0, flushed.stderr
    assert [one for one in project.told() if one["id"] == told["id"]] == [told]


def test_a_worker_lands_an_accepted_item_and_its_notice_reaches_the_command_sink(
    tmp_path: Path, store_url: str | None
) -> None:
    project = Project(tmp_path / "p", store_url)
    [item_id] = project.in_review(("Only", "FILE a.txt TEXT one"))
    project.accept(item_id, "--wait", "0")
    assert project.on_disk.get(item_id).state is ItemState.LANDING
    assert project.about_landing(item_id) == []  # the accept itself tells nobody

    worked = project.on_disk.worker("--once")  # lands it, then delivers what it told

    assert worked.returncode == 0, worked.stderr
    assert project.on_disk.get(item_id).state is ItemState.DONE
    [stored] = [one for one in project.outbox(item_id) if "landed" in one.notice.events]
    assert stored.state == "delivered"
    told = [one for one in project.told() if "landed" in one["events"]]
    assert told == [stored.notice.payload]
    assert told[0]["worker_id"] == worked.named("started")[0]["worker_id"]
    assert "link" not in told[0]  # serve.publicUrl is not set


def test_an_integration_that_fails_comes_back_to_review_as_not_landed(
    tmp_path: Path, store_url: str | None
) -> None:
    command = [sys.executable, "-c", "import sys; print('no pull request today'); sys.exit(1)"]
    project = Project(
        tmp_path / "p", store_url, serve={"publicUrl": PUBLIC_URL},
        completion={"integrate": "command", "integrateCommand": command},
    )  # fmt: skip
    [item_id] = project.in_review(("Only", "FILE a.txt TEXT one"))

    project.accept(item_id, exit_code=1)  # it did not land

    back = project.on_disk.get(item_id)
    assert (back.state, back.reason_code) == (ItemState.REVIEW, "integration-failed")
    [told] = project.about_landing(item_id)
    assert told["event"] == "not-landed"
    assert told["events"] == ["not-landed", "ready-for-review"]
    assert (told["state"], told["reason_code"]) == ("review", "integration-failed")
    assert told["reason"] == back.reason
    assert told["link"] == f"{PUBLIC_URL}/items/{item_id}"
    # it carries what a ready-for-review notification carries
    assert told["branch"] == f"wrighty/{item_id}-only"
    assert "a.txt" in told["diff_stat"]
    assert [check["name"] for check in told["checks"]] == ["markers"]
    assert f"wrighty accept {item_id}" in [one["command"] for one in told["next_actions"]]


def test_a_landing_whose_fix_turns_are_spent_tells_not_landed_and_needs_attention(
    tmp_path: Path, store_url: str | None
) -> None:
    project = Project(tmp_path / "p", store_url, verify={"maxFixTurns": 0})
    first, second = project.in_review(
        ("First", "FILE same.txt TEXT one"), ("Second", "FILE same.txt TEXT two")
    )
    project.accept(first)
    main = git(project.root, "rev-parse", "main")

    project.accept(second, exit_code=1)  # bringing it up to date conflicts: no fix turn left

    gave_up = project.on_disk.get(second)
    assert (gave_up.state, gave_up.reason_code) == (ItemState.NEEDS_ATTENTION, "landing-gave-up")
    assert git(project.root, "rev-parse", "main") == main
    [told] = project.about_landing(second)
    assert told["event"] == "not-landed"
    assert told["events"] == ["not-landed", "needs-attention"]
    assert (told["state"], told["reason_code"]) == ("needs-attention", "landing-gave-up")
    assert "same.txt" in told["reason"]
    [landed] = project.about_landing(first)
    assert landed["events"] == ["landed", "done"]


def test_a_fix_turn_of_a_landing_tells_nobody_and_its_second_landing_tells_landed(
    tmp_path: Path, store_url: str | None
) -> None:
    project = Project(tmp_path / "p", store_url, completion={"reviewAfterFix": "auto"})
    first, second = project.in_review(
        ("First", "FILE same.txt TEXT one"), ("Second", "FILE same.txt TEXT two")
    )
    project.accept(first)

    project.accept(second)  # a conflict: a fix turn of the agent's, nobody's to decide
    assert project.on_disk.get(second).state is ItemState.RETRY_SCHEDULED
    assert project.about_landing(second) == []
    assert project.outbox(second)[-1].notice.events == ("ready-for-review",)

    worked = project.on_disk.worker("--once")  # the fix turn: it passed, it lands (auto)
    assert worked.returncode == 0, worked.stderr
    assert project.on_disk.get(second).state is ItemState.LANDING
    assert project.about_landing(second) == []

    landed = project.run("land", str(second))

    assert landed.returncode == 0, landed.stderr
    assert project.on_disk.get(second).state is ItemState.DONE
    [told] = project.about_landing(second)
    assert told["events"] == ["landed", "done"]


def test_a_workers_lander_names_the_worker_and_wakes_its_deliverer_once_it_told(
    tmp_path: Path, store_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lander runs here, in the test's process (as in a worker's landing thread), its git
    # without global or system settings, as the commands' git is
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    project = Project(tmp_path / "p", store_url)
    [item_id] = project.in_review(("Only", "FILE a.txt TEXT one"))
    project.accept(item_id, "--wait", "0")
    wakes: list[int] = []
    loaded = load_config(project.on_disk.config)
    store = project.on_disk.store()
    try:
        lander = lander_from(
            loaded.config, loaded.root, store, worker_id="w-0123456789ab",
            now=lambda: datetime.now(UTC), worker=True, told=lambda: wakes.append(item_id),
            checks_in=lambda _: None,
        )  # fmt: skip
        landed = land_next(lander)
        assert land_next(lander) is None  # nothing more to land: no move, no wake
    finally:
        store.close()

    assert landed is not None
    assert landed.state is ItemState.DONE, landed.reason
    assert wakes == [item_id]
    [told] = project.about_landing(item_id)
    assert (told["event"], told["worker_id"]) == ("landed", "w-0123456789ab")
