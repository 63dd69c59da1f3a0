"""Landing with real git and real wrighty processes (docs/landing.md), on both stores: items
made from one base land one after the other, each brought up to date with the target, checked
there and fast-forwarded onto it; a conflict goes back to the agent as a fix turn in its
session; an accept is one guarded move."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.helpers import git
from tests.integration.test_work_product_processes import make_project
from wrighty.domain.states import ItemState

# An agent that writes the file its task names (FILE name / TEXT words): `FILE a.txt TEXT x`.
# Told that bringing its branch up to date conflicts, it resolves each conflicting file by
# keeping both sides' lines, without the markers; it counts its fix turns in MARKS.
AGENT = textwrap.dedent(
    """\
    import os, pathlib, sys
    task = sys.stdin.read()
    marks = pathlib.Path(os.environ["MARKS"])
    if "conflicts in these files" in task:
        (marks / f"resolved-{len(list(marks.glob('resolved-*')))}").write_text(task)
        for line in task.splitlines():
            if line.startswith("- ") and pathlib.Path(line[2:]).is_file():
                path = pathlib.Path(line[2:])
                kept = [x for x in path.read_text().splitlines()
                        if not x.startswith(("<<<<<<<", "=======", ">>>>>>>"))]
                path.write_text("\\n".join(kept) + "\\n")
    else:
        words = task.split()
        name, text = words[words.index("FILE") + 1], words[words.index("TEXT") + 1]
        pathlib.Path(name).write_text(text + "\\n")
    """
)
# The check: no file of the worktree holds a conflict marker.
CHECK = {
    "checks": [
        {"name": "markers", "argv": ["sh", "-c", "! grep -rq '^<<<<<<<' --exclude-dir=.git ."]}
    ]
}


def _project(tmp_path: Path, store_url: str | None, **completion: object) -> Any:
    return make_project(
        tmp_path / "p", store_url, agent=AGENT, verify=CHECK,
        completion={"review": "person", "integrate": "merge", **completion},
    )  # fmt: skip


def _run(project: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        project.command(*args), cwd=project.root, env=project.env, capture_output=True,
        text=True, check=False,
    )  # fmt: skip


def _in_review(project: Any, *tasks: tuple[str, str]) -> list[int]:
    ids = [project.plant(task, title=title) for title, task in tasks]
    for _ in ids:
        assert project.worker("--once").returncode == 0
    for item_id in ids:
        assert project.get(item_id).state is ItemState.REVIEW, project.get(item_id).reason
    return ids


def test_items_from_one_base_land_one_after_the_other_each_checked_on_the_target(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url)
    base = git(project.root, "rev-parse", "main")
    first, second = _in_review(
        project, ("First", "FILE a.txt TEXT one"), ("Second", "FILE b.txt TEXT two")
    )

    for item_id in (first, second):
        accepted = _run(project, "accept", str(item_id))
        assert accepted.returncode == 0, accepted.stderr
        assert project.get(item_id).state is ItemState.DONE, project.get(item_id).reason

    assert (project.root / "a.txt").read_text() == "one\n"
    assert (project.root / "b.txt").read_text() == "two\n"
    assert git(project.root, "status", "--porcelain", "--untracked-files=no") == ""
    # every commit the landings put on main's first parent line passed its checks: main only
    # moved by fast-forwards, the second onto its branch brought up to date with the first
    line = git(project.root, "rev-list", "--first-parent", f"{base}..main").split()
    branch_two = git(project.root, "rev-parse", f"wrighty/{second}-second")
    assert line[0] == branch_two
    assert git(project.root, "rev-parse", f"wrighty/{first}-first") in line
    store = project.store()
    try:
        landing = store.get_landing(second)
        session = store.get_session(second)
        checks = store.list_checks(second)
        notices = store.list_notices(("pending", "delivered", "given-up"))
    finally:
        store.close()
    assert notices == []  # no sink in notify: a landing tells nobody
    assert landing is not None
    assert session is not None
    after_first = git(project.root, "rev-parse", f"wrighty/{first}-first")
    # its base is now what it landed on, and its checks ran there, recorded under the landing
    assert session.base_commit == after_first == landing.target_commit
    assert landing.checked_commit is not None  # the tree the checks passed on is main's
    assert git(project.root, "rev-parse", f"{landing.checked_commit}^{{tree}}") == git(
        project.root, "rev-parse", "main^{tree}"
    )
    assert checks[-1].verification_id.startswith("land-")
    assert checks[-1].evidence.passed
    diffstat = project.wrighty("diff", str(second), "--stat")
    assert "b.txt" in diffstat
    assert "a.txt" not in diffstat
    shown = json.loads(project.wrighty("show", str(second), "--json"))
    moves = [(e["from_state"], e["to_state"], e["reason_code"]) for e in shown["events"]]
    assert moves[-3:] == [
        ("review", "landing", "accepted"),
        ("landing", "landing", "landing-started"),
        ("landing", "done", "landed"),
    ]


def test_a_conflict_goes_back_to_the_agent_and_its_resolution_lands_after_review(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url)
    first, second = _in_review(
        project, ("First", "FILE same.txt TEXT one"), ("Second", "FILE same.txt TEXT two")
    )
    assert _run(project, "accept", str(first)).returncode == 0

    sent_back = _run(project, "accept", str(second))

    assert sent_back.returncode == 0, sent_back.stderr
    waiting = project.get(second)
    assert (waiting.state, waiting.reason_code) == (ItemState.RETRY_SCHEDULED, "landing-conflict")
    assert "same.txt" in (waiting.reason or "")
    assert git(project.root, "rev-parse", "main") == git(
        project.root, "rev-parse", f"wrighty/{first}-first"
    )
    assert project.worker("--once").returncode == 0  # the fix turn, in the same session
    prompts = sorted((project.root / "marks").glob("resolved-*"))
    assert len(prompts) == 1
    assert "same.txt" in prompts[0].read_text()
    fixed = project.get(second)
    assert fixed.state is ItemState.REVIEW, fixed.reason  # completion.reviewAfterFix person
    assert fixed.fix_turns == 1

    landed = _run(project, "accept", str(second))

    assert landed.returncode == 0, landed.stderr
    assert project.get(second).state is ItemState.DONE
    assert sorted((project.root / "same.txt").read_text().splitlines()) == ["one", "two"]
    assert "<<<<<<<" not in (project.root / "same.txt").read_text()


def test_a_reject_after_an_accept_is_refused_with_one_line(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url)
    [item_id] = _in_review(project, ("Only", "FILE a.txt TEXT one"))
    assert _run(project, "accept", str(item_id), "--wait", "0").returncode == 0
    assert project.get(item_id).state is ItemState.LANDING

    for late in (["reject", str(item_id), "--feedback", "no"], ["accept", str(item_id)],
                 ["cancel", str(item_id)]):  # fmt: skip
        refused = _run(project, *late)
        assert refused.returncode == 2, (late, refused.stdout, refused.stderr)
        assert len(refused.stderr.strip().splitlines()) == 1
    assert project.get(item_id).state is ItemState.LANDING


def test_a_worker_lands_what_was_accepted_between_its_claims_in_the_order_accepted(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url)
    first, second = _in_review(
        project, ("First", "FILE a.txt TEXT one"), ("Second", "FILE b.txt TEXT two")
    )
    for item_id in (second, first):  # accepted the other way round
        assert _run(project, "accept", str(item_id), "--wait", "0").returncode == 0
    assert project.get(first).state is ItemState.LANDING

    assert project.worker("--once").returncode == 0

    assert project.get(first).state is ItemState.DONE
    assert project.get(second).state is ItemState.DONE
    line = git(project.root, "rev-list", "--first-parent", "--max-count=2", "main").split()
    assert line[1] == git(project.root, "rev-parse", f"wrighty/{second}-second")
    assert _run(project, "land").stdout.startswith("nothing to land")


def test_a_check_that_fails_on_the_target_too_is_not_the_agents_and_the_item_lands(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(
        tmp_path / "p", store_url, agent=AGENT,
        verify={"checks": [{"name": "tidy", "argv": ["test", "!", "-f", "litter.txt"]}]},
        completion={"review": "person", "integrate": "merge"},
    )  # fmt: skip
    (project.root / "litter.txt").write_text("the project's own mess\n")
    git(project.root, "add", "litter.txt")
    git(project.root, "commit", "-qm", "litter")
    first, second = _in_review(
        project, ("First", "FILE a.txt TEXT one"), ("Second", "FILE b.txt TEXT two")
    )
    assert _run(project, "accept", str(first)).returncode == 0

    landed = _run(project, "accept", str(second))  # brought up to date: its checks run again

    assert landed.returncode == 0, landed.stderr
    done = project.get(second)
    assert done.state is ItemState.DONE, done.reason
    assert done.fix_turns == 0
    store = project.store()
    try:
        checks = [r for r in store.list_checks(second) if r.verification_id.startswith("land-")]
    finally:
        store.close()
    assert [r.evidence.fails_on_base for r in checks] == [True]


def test_rebase_replays_the_branch_on_the_target_and_refuses_a_pushed_branch(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url, update="rebase")
    first, second, third = _in_review(
        project,
        ("First", "FILE a.txt TEXT one"),
        ("Second", "FILE b.txt TEXT two"),
        ("Third", "FILE c.txt TEXT three"),
    )
    assert _run(project, "accept", str(first)).returncode == 0
    assert _run(project, "accept", str(second)).returncode == 0
    # rebased: main's history is a line, no merge commit
    assert git(project.root, "rev-list", "--merges", "main") == ""
    assert (project.root / "b.txt").read_text() == "two\n"
    # a branch that was pushed is not rewritten: refused before anything is recorded
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(project.root, "remote", "add", "origin", str(remote))
    git(project.root, "push", "-q", "origin", f"wrighty/{third}-third")
    refused = _run(project, "accept", str(third))
    assert refused.returncode == 2
    assert "was pushed (origin/" in refused.stderr
    assert project.get(third).state is ItemState.REVIEW


def test_a_target_that_moved_while_the_checks_ran_is_caught_up_with_and_checked_again(
    tmp_path: Path, store_url: str | None
) -> None:
    # The check commits to the project's main once, the first time it runs during a landing
    # (WRIGHTY_RUN_ID is unset there): the target moves on while the landing checks.
    script = textwrap.dedent(
        """\
        import os, pathlib, subprocess, sys
        root = pathlib.Path(os.environ["PROJECT_ROOT"])
        mark = root / "marks" / "moved"
        if "WRIGHTY_RUN_ID" not in os.environ and not mark.exists():
            mark.write_text("x")
            (root / "late.txt").write_text("late\\n")
            subprocess.run(["git", "-C", str(root), "add", "late.txt"], check=True)
            subprocess.run(["git", "-C", str(root), "commit", "-qm", "late"], check=True)
        """
    )
    project = make_project(
        tmp_path / "p", store_url, agent=AGENT,
        verify={"checks": [{"name": "mover", "argv": [sys.executable, "-c", script]}]},
        completion={"review": "person", "integrate": "merge"},
    )  # fmt: skip
    project.env["PROJECT_ROOT"] = str(project.root)
    first, second = _in_review(
        project, ("First", "FILE a.txt TEXT one"), ("Second", "FILE b.txt TEXT two")
    )
    assert _run(project, "accept", str(first)).returncode == 0
    assert _run(project, "accept", str(second)).returncode == 0

    assert project.get(second).state is ItemState.DONE
    assert (project.root / "late.txt").read_text() == "late\n"
    assert (project.root / "b.txt").read_text() == "two\n"
    store = project.store()
    try:
        landing = store.get_landing(second)
        runs = {r.verification_id for r in store.list_checks(second)}
    finally:
        store.close()
    assert landing is not None
    assert landing.catch_ups == 1
    assert len([v for v in runs if v.startswith("land-")]) == 2  # checked again after it


def test_squash_lands_a_fixed_branch_as_one_commit_with_the_checked_tree_and_its_words(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url, squash=True)
    first, second = _in_review(
        project,
        ("First", "FILE same.txt TEXT one"),
        ("Second thing", "FILE same.txt TEXT two\nKeep both lines.\nMore detail."),
    )
    assert _run(project, "accept", str(first)).returncode == 0
    assert _run(project, "accept", str(second)).returncode == 0  # a conflict: a fix turn
    assert project.worker("--once").returncode == 0
    assert project.get(second).state is ItemState.REVIEW
    branch = f"wrighty/{second}-second-thing"
    before = git(project.root, "rev-parse", "main")
    assert len(git(project.root, "rev-list", f"{before}..{branch}").split()) >= 2

    landed = _run(project, "accept", str(second))

    assert landed.returncode == 0, landed.stderr
    assert project.get(second).state is ItemState.DONE, project.get(second).reason
    assert git(project.root, "rev-list", f"{before}..main").split() == [
        git(project.root, "rev-parse", "main")
    ]  # one commit
    assert git(project.root, "rev-list", "--parents", "-1", "main").split()[1:] == [before]
    # the fix turn's resolution held main already: its run's checks, which passed, are the
    # landing's (not run again), and main's tree is exactly the tree they ran on
    store = project.store()
    try:
        checks = store.list_checks(second)
    finally:
        store.close()
    assert checks[-1].evidence.passed
    assert not checks[-1].verification_id.startswith("land-")
    assert git(project.root, "rev-parse", "main^{tree}") == git(
        project.root, "rev-parse", f"{branch}^{{tree}}"
    )
    assert git(project.root, "log", "-1", "--format=%B", "main").strip().split("\n\n") == [
        "Second thing",
        "FILE same.txt TEXT two",
        "Checks passed: markers",
        f"Wrighty-Item: {second}",
    ]
    assert sorted((project.root / "same.txt").read_text().splitlines()) == ["one", "two"]
    assert git(project.root, "status", "--porcelain", "--untracked-files=no") == ""


def test_no_ff_lands_a_merge_commit_whose_tree_is_exactly_the_checked_tree(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url, merge="no-ff")
    first, second = _in_review(
        project, ("First", "FILE a.txt TEXT one"), ("Second", "FILE b.txt TEXT two")
    )
    assert _run(project, "accept", str(first)).returncode == 0
    before = git(project.root, "rev-parse", "main")

    landed = _run(project, "accept", str(second))

    assert landed.returncode == 0, landed.stderr
    assert project.get(second).state is ItemState.DONE, project.get(second).reason
    parents = git(project.root, "rev-list", "--parents", "-1", "main").split()[1:]
    branch_tip = git(project.root, "rev-parse", f"wrighty/{second}-second")
    assert parents == [before, branch_tip]  # a merge: main's previous tip first
    store = project.store()
    try:
        landing = store.get_landing(second)
    finally:
        store.close()
    assert landing is not None
    assert landing.checked_commit is not None
    assert git(project.root, "rev-parse", "main^{tree}") == git(
        project.root, "rev-parse", f"{landing.checked_commit}^{{tree}}"
    )
    message = git(project.root, "log", "-1", "--format=%B", "main")
    assert message.startswith(f"Merge item {second}: Second")
    assert f"Wrighty-Item: {second}" in message
    assert (project.root / "a.txt").is_file()
    assert (project.root / "b.txt").is_file()


def test_accept_refuses_up_front_a_target_checkout_with_changes_or_a_detached_head(
    tmp_path: Path, store_url: str | None
) -> None:
    project = _project(tmp_path, store_url)
    [item_id] = _in_review(project, ("Only", "FILE a.txt TEXT one"))
    tracked = git(project.root, "ls-files").split()[0]
    (project.root / tracked).write_text("a person's edit\n")
    main_before = git(project.root, "rev-parse", "main")

    dirty = _run(project, "accept", str(item_id))

    assert dirty.returncode == 2
    assert dirty.stderr.strip().splitlines() == [
        f"wrighty: item {item_id} was not accepted: the project's checkout of main has "
        f"uncommitted changes to tracked files ({tracked}): commit or stash them, then accept "
        "again"
    ]
    assert project.get(item_id).state is ItemState.REVIEW  # nothing recorded
    store = project.store()
    try:
        assert store.get_landing(item_id) is None
    finally:
        store.close()
    assert (project.root / tracked).read_text() == "a person's edit\n"
    git(project.root, "checkout", "--", tracked)
    git(project.root, "checkout", "-q", "--detach", "main")

    detached = _run(project, "accept", str(item_id), "--wait", "0")

    assert detached.returncode == 2
    assert len(detached.stderr.strip().splitlines()) == 1
    assert "has a detached HEAD" in detached.stderr
    assert project.get(item_id).state is ItemState.REVIEW
    assert git(project.root, "rev-parse", "main") == main_before
    git(project.root, "checkout", "-q", "main")

    assert _run(project, "accept", str(item_id)).returncode == 0
    assert project.get(item_id).state is ItemState.DONE
