"""Checks that fail on the base (docs/verify.md#checks-that-fail-on-the-base) with real git and
real `wrighty worker start` processes, on both stores: a check that fails after an agent's run
is run on the item's base, and one that fails there too spends no fix turn; its result on a
base is run once and kept."""

from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path

from tests.helpers import git
from tests.integration.test_work_product_processes import make_project
from tests.integration.worker_process import ProjectOnDisk
from wrighty.domain.states import ItemState

# An agent that makes a change lint does not look at (answer.txt), and breaks lint too when its
# task says BREAK.
AGENT = textwrap.dedent(
    """\
    import pathlib, sys
    task = sys.stdin.read()
    pathlib.Path("answer.txt").write_text("42\\n")
    if "BREAK" in task:
        pathlib.Path("lint.txt").write_text("dirty\\n")
    """
)


def lint(**more: object) -> dict[str, object]:
    """A lint check that passes when lint.txt says clean, and notes each folder it ran in."""
    script = 'echo "$PWD" >> "$MARKS/lint-runs"; echo "lint says: $(cat lint.txt)"; '
    return {"name": "lint", "argv": ["sh", "-c", script + "grep -q clean lint.txt"], **more}


def project_on(
    tmp_path: Path, store_url: str | None, base_lint: str, **check: object
) -> ProjectOnDisk:
    """A project in worktree mode whose base commit's lint.txt says ``base_lint``; its items
    wait for a person's review, at most one fix turn each."""
    verify = {"checks": [lint(**check)], "maxFixTurns": 1}
    project = make_project(
        tmp_path / "p", store_url, completion={"review": "person"}, agent=AGENT, verify=verify
    )
    (project.root / "lint.txt").write_text(base_lint + "\n")
    git(project.root, "add", "lint.txt")
    git(project.root, "commit", "-qm", "lint as it is")
    return project


def lint_runs(project: ProjectOnDisk) -> tuple[int, int]:
    """How many times lint ran in an item's worktree, and on a base checked out on its own."""
    runs = project.root / "marks" / "lint-runs"
    folders = runs.read_text().splitlines() if runs.exists() else []
    on_base = [folder for folder in folders if "/base-checks/" in folder]
    return len(folders) - len(on_base), len(on_base)


def no_base_left(project: ProjectOnDisk) -> None:
    """Every base checked out for a check is removed, and git has forgotten it."""
    listed = git(project.root, "worktree", "list", "--porcelain")
    assert "base-checks" not in listed
    under = project.root / ".wrighty" / "base-checks"
    assert not under.exists() or not any(under.iterdir())


def test_a_check_failing_on_the_base_too_spends_no_fix_turn_and_goes_to_review(
    tmp_path: Path, store_url: str | None
) -> None:
    project = project_on(tmp_path, store_url, "dirty")
    base = git(project.root, "rev-parse", "HEAD")
    item_id = project.plant("Write the answer.", title="Answer")

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    waiting = project.get(item_id)
    assert (waiting.state, waiting.reason_code) == (ItemState.REVIEW, "ready-for-review")
    assert waiting.fix_turns == 0
    assert waiting.reason == (
        "every check passed but lint, which fails on the base too (1 check); it waits for a "
        "person's review"
    )
    [failed] = finished.named("check-failed")
    assert (failed["check"], failed["fails_on_base"]) == ("lint", True)
    assert not finished.named("fix-scheduled")
    assert lint_runs(project) == (1, 1)
    no_base_left(project)
    shown = project.wrighty("show", str(item_id))
    assert "  checks     passed\n" in shown  # its latest verification: the base's failure alone
    assert "failed  lint: exit code 1, fails on the base too (" in shown
    store = project.store()
    try:
        [record] = store.list_checks(item_id)
        kept = store.base_check(base, "lint", _key(project))
    finally:
        store.close()
    assert record.evidence.fails_on_base
    assert kept is not None
    assert kept.failed
    assert "lint says: dirty" in kept.output_tail
    assert '"fails_on_base": true' in project.wrighty("show", str(item_id), "--json")


def test_a_check_that_passes_on_the_base_and_fails_after_the_run_is_the_agents(
    tmp_path: Path, store_url: str | None
) -> None:
    project = project_on(tmp_path, store_url, "clean")
    item_id = project.plant("Write the answer. BREAK lint.", title="Answer")

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    scheduled = project.get(item_id)
    assert (scheduled.state, scheduled.reason_code) == (
        ItemState.RETRY_SCHEDULED, "verification-failed")  # fmt: skip
    assert scheduled.fix_turns == 1
    [failed] = finished.named("check-failed")
    assert failed["fails_on_base"] is False
    assert lint_runs(project) == (1, 1)
    no_base_left(project)


def test_on_base_false_keeps_the_failure_the_agents(tmp_path: Path, store_url: str | None) -> None:
    project = project_on(tmp_path, store_url, "dirty", onBase=False)
    item_id = project.plant("Write the answer.", title="Answer")

    assert project.worker("--once").returncode == 0

    scheduled = project.get(item_id)
    assert (scheduled.state, scheduled.fix_turns) == (ItemState.RETRY_SCHEDULED, 1)
    assert lint_runs(project) == (1, 0)  # never run on the base


def test_a_checks_result_on_a_base_is_run_once_for_every_item_on_it(
    tmp_path: Path, store_url: str | None
) -> None:
    project = project_on(tmp_path, store_url, "dirty")
    first = project.plant("Write the answer.", title="First")
    second = project.plant("Write the answer.", title="Second")

    assert project.worker("--once").returncode == 0
    assert project.worker("--once").returncode == 0

    for item_id in (first, second):
        waiting = project.get(item_id)
        assert (waiting.state, waiting.fix_turns) == (ItemState.REVIEW, 0)
    assert lint_runs(project) == (2, 1)  # each item's own run, and the base's once
    no_base_left(project)


def _key(project: ProjectOnDisk) -> str:
    from wrighty.domain.verify import Check, check_key

    [check] = [lint()]
    argv = check["argv"]
    assert isinstance(argv, list)
    return check_key(Check("lint", tuple(argv)))


def test_a_kept_result_on_a_base_that_does_not_read_is_told_and_run_again(tmp_path: Path) -> None:
    project = project_on(tmp_path, None, "dirty")
    first = project.plant("Write the answer.", title="First")
    assert project.worker("--once").returncode == 0
    connection = sqlite3.connect(project.root / ".wrighty" / "wrighty.db")
    connection.execute("PRAGMA ignore_check_constraints = ON")
    connection.execute("UPDATE base_checks SET failed = 2")
    connection.commit()
    connection.close()
    second = project.plant("Write the answer.", title="Second")

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    [told] = finished.named("base-check-unreadable")
    assert (told["item_id"], told["check"]) == (second, "lint")
    assert "failed" in told["cause"]
    assert lint_runs(project) == (2, 2)  # run on the base again
    for item_id in (first, second):
        assert project.get(item_id).state is ItemState.REVIEW
