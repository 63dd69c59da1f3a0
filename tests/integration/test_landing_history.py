"""A project's history replayed in parallel and landed (issue 41's measure, small): three
upstream commits of a toy repository, two of which change the same lines, queued without
`--after` from one base, run by two worker processes, each accepted as soon as it is in review
(in the queue's order). The project's branch must end with upstream's tree, the items must
land in the order accepted, every commit the landing put on its first-parent line must pass the
checks, and no item may need a person but for its review. The agent is
bench/landing_agent.py, as in bench/landing_real.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import git
from tests.integration.worker_process import LiveWorker, ProjectOnDisk
from tests.integration.worker_process import make_project as new_project
from wrighty.domain.states import ItemState

AGENT = Path(__file__).resolve().parents[2] / "bench" / "landing_agent.py"
CHECK = [sys.executable, "-m", "unittest", "-q"]
CALC = "def add(a, b):\n    return a + b\n"
TEST = (
    "import unittest\n\nimport calc\n\n\nclass TestCalc(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n"
)


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def _upstream(root: Path) -> tuple[str, list[str]]:
    """A toy project's history: its base, then three commits. The first and the second both
    add to the end of calc.py and of test_calc.py (from one base, they conflict); the third
    changes the README alone."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Upstream")
    git(root, "config", "user.email", "upstream@example.invalid")
    base = _commit(root, {".gitignore": "__pycache__/\n", "calc.py": CALC, "test_calc.py": TEST,
                          "README": "calc\n"}, "The project")  # fmt: skip
    double = "\n\ndef double(a):\n    return 2 * a\n"
    test_double = "\n    def test_double(self):\n        self.assertEqual(calc.double(4), 8)\n"
    square = "\n\ndef square(a):\n    return a * a\n"
    test_square = "\n    def test_square(self):\n        self.assertEqual(calc.square(3), 9)\n"
    first = _commit(root, {"calc.py": CALC + double, "test_calc.py": TEST + test_double},
                    "Add double")  # fmt: skip
    second = _commit(
        root, {"calc.py": CALC + double + square, "test_calc.py": TEST + test_double + test_square},
        "Add square",
    )  # fmt: skip
    third = _commit(root, {"README": "calc: add, double, square\n"}, "Say what calc does")
    return base, [first, second, third]


def _project(tmp_path: Path, upstream: Path, base: str) -> ProjectOnDisk:
    root = tmp_path / "project"
    git(tmp_path, "clone", "-q", str(upstream), str(root))
    git(root, "checkout", "-q", "-B", "main", base)
    git(root, "config", "user.name", "Test Person")
    git(root, "config", "user.email", "test@example.invalid")
    project = new_project(
        root, programs={"replay": ("agent.py", AGENT.read_text())}, resumable=True,
        worker={"workspaceMode": "worktree"},
        verify={"checks": [{"name": "tests", "argv": CHECK}]},
        completion={"review": "person", "integrate": "merge", "reviewAfterFix": "auto"},
        env={"LANDING_AGENT_COMMITS": str(tmp_path / "commits.json"),
             "LANDING_AGENT_LOG": str(tmp_path / "agent.jsonl"), "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    with open(root / ".git" / "info" / "exclude", "a", encoding="utf-8") as exclude:
        exclude.write(".wrighty/\nwrighty.json\nagent.py\n")
    return project


def _accepted(project: ProjectOnDisk, item_id: int) -> bool:
    store = project.store()
    try:
        return store.get_landing(item_id) is not None
    finally:
        store.close()


def _accept(project: ProjectOnDisk, item_id: int) -> None:
    subprocess.run(
        project.command("accept", str(item_id), "--wait", "60"), cwd=project.root,
        env=project.env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_three_upstream_commits_from_one_base_land_as_upstream_made_them(tmp_path: Path) -> None:
    base, commits = _upstream(tmp_path / "upstream")
    project = _project(tmp_path, tmp_path / "upstream", base)
    ids = []
    for commit in commits:
        title = git(project.root, "log", "-1", "--format=%s", commit)
        made = project.wrighty("create", "--title", title, "--body",
                               f"Upstream commit: {commit}", "--queue", "--json")  # fmt: skip
        ids.append(int(json.loads(made)["id"]))
    (tmp_path / "commits.json").write_text(
        json.dumps(dict(zip(map(str, ids), commits, strict=True)))
    )

    workers = [LiveWorker(project), LiveWorker(project)]
    accepted: dict[int, threading.Thread] = {}
    went_to_a_person: set[int] = set()
    ends = time.monotonic() + 60
    try:
        while time.monotonic() < ends:
            states = {item_id: project.get(item_id).state for item_id in ids}
            went_to_a_person |= {i for i, s in states.items() if s is ItemState.NEEDS_ATTENTION}
            if all(s in (ItemState.DONE, ItemState.NEEDS_ATTENTION) for s in states.values()):
                break
            for position, item_id in enumerate(ids):  # in review, and the ones before accepted
                waiting = item_id in accepted and accepted[item_id].is_alive()
                if states[item_id] is not ItemState.REVIEW or waiting:
                    continue
                if any(not _accepted(project, earlier) for earlier in ids[:position]):
                    continue  # an earlier item's acceptance is not recorded yet
                accepted[item_id] = threading.Thread(target=_accept, args=(project, item_id))
                accepted[item_id].start()
            time.sleep(0.1)
    finally:
        for worker in workers:
            worker.process.send_signal(2)  # SIGINT: the worker stops between claims
        for worker in workers:
            worker.finish()
        for thread in accepted.values():
            thread.join(timeout=120)

    ended = {item_id: project.get(item_id) for item_id in ids}
    told = {i: f"{item.state}: {item.reason}" for i, item in ended.items()}
    assert not went_to_a_person, told
    assert all(item.state is ItemState.DONE for item in ended.values()), told
    # they landed in the order accepted (the queue's), the one in a fix turn holding its place
    landed_at = {}
    store = project.store()
    try:
        for item_id in ids:
            events = store.list_events(item_id)
            landed_at[item_id] = max(e.at for e in events if e.reason_code == "landed")
    finally:
        store.close()
    assert sorted(ids, key=landed_at.__getitem__) == ids, landed_at
    # the landing's fix turns: the second commit's branch conflicted with the first's landing
    turns = [json.loads(line) for line in (tmp_path / "agent.jsonl").read_text().splitlines()]
    assert any(turn["did"] == "resolved-conflict" for turn in turns), turns
    assert git(project.root, "rev-parse", "main^{tree}") == git(
        project.root, "rev-parse", f"{commits[-1]}^{{tree}}"
    )
    line = git(project.root, "rev-list", "--first-parent", "--reverse", f"{base}..main").split()
    assert len(line) >= len(commits)
    place = tmp_path / "line"
    git(project.root, "worktree", "add", "-q", "--detach", str(place), base)
    for commit in line:
        git(place, "checkout", "-q", "--detach", commit)
        checked = subprocess.run(CHECK, cwd=place, capture_output=True, text=True, check=False)
        assert checked.returncode == 0, (commit, checked.stderr)
