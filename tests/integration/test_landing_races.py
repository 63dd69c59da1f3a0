"""Races and kills of a landing with real `wrighty` processes, on both stores
(docs/landing.md#exactly-once): an `accept` raced by a `reject` or by a second `accept` is one
winner and one refusal, and a lander killed (SIGKILL of its process group) at any step of a
landing leaves what the next lander finishes once: the target moved once, to the intent,
nothing left in the project's checkout, the integration command not run again after wrighty
recorded its success."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import git
from tests.integration.landing_scene import KILLS, Scene, make_scene, refused_once
from wrighty.domain.states import ItemState

PAIRS = 5


def _race(
    scene: Scene, first: list[str], second: list[str]
) -> tuple[tuple[int, str], tuple[int, str]]:
    """Start two `wrighty` commands back to back; each one's exit status and stderr."""
    one, two = scene.start(*first), scene.start(*second)
    ended = []
    for process in (one, two):
        _, err = process.communicate(timeout=120)
        ended.append((process.returncode, err))
    return ended[0], ended[1]


def test_accept_raced_by_reject_is_one_winner_and_a_rejected_item_never_lands(
    tmp_path: Path, store_url: str | None
) -> None:
    scene = make_scene(tmp_path / "p", store_url)
    ids = scene.in_review(PAIRS)
    accepted: list[int] = []

    for n, item_id in enumerate(ids):
        accept_argv, reject_argv = (
            ["accept", str(item_id)],
            ["reject", str(item_id), "--feedback", "no"],
        )
        if n % 2:  # half the pairs start the reject first
            reject, accept = _race(scene, reject_argv, accept_argv)
        else:
            accept, reject = _race(scene, accept_argv, reject_argv)
        assert sorted((accept[0], reject[0])) == [0, 2], (accept, reject)
        loser = accept if accept[0] == 2 else reject
        assert refused_once(loser), loser
        item = scene.project.get(item_id)
        on_main = scene.on_main(item_id)
        if accept[0] == 0:
            accepted.append(item_id)
            assert item.state is ItemState.DONE, item.reason
            assert on_main
        else:
            assert item.state is not ItemState.DONE
            assert not on_main, f"item {item_id} was rejected and merged"

    # each accepted item landed once: one first-parent commit each on main
    assert len(scene.first_parent_line()) == len(accepted)
    assert scene.checkout_left() == []


def test_accept_raced_by_accept_runs_the_integration_command_once(
    tmp_path: Path, store_url: str | None
) -> None:
    scene = make_scene(tmp_path / "p", store_url, integrate="command")
    ids = scene.in_review(PAIRS)

    for item_id in ids:
        one, two = _race(scene, ["accept", str(item_id)], ["accept", str(item_id)])
        assert sorted((one[0], two[0])) == [0, 2], (one, two)
        assert refused_once(one if one[0] == 2 else two)
        assert scene.project.get(item_id).state is ItemState.DONE

    assert scene.command_runs() == [(item_id, 1) for item_id in ids]


@pytest.mark.parametrize("where", list(KILLS))
def test_a_lander_killed_at_any_step_leaves_what_the_next_one_finishes_once(
    tmp_path: Path, store_url: str | None, where: str
) -> None:
    scene = make_scene(
        tmp_path / "p", store_url, integrate="command" if where == "in command" else "merge",
        hooks=where == "in post-merge hook", check=where == "in check",
    )  # fmt: skip
    [item_id] = scene.in_review(1)
    scene.main_moves()  # the landing brings the branch up to date: every step happens
    assert scene.run("accept", str(item_id), "--wait", "0").returncode == 0

    killed = scene.killed_landing(item_id, KILLS[where])

    assert killed == -9, f"the lander was not killed {where}"
    assert not (scene.marks / KILLS[where]).exists()
    if where == "during update":  # git died half way through the merge in the worktree
        assert list((scene.root / ".git" / "worktrees").glob("*/index.lock"))
    if where == "during move":  # git died half way: its lock held, the first file written
        assert (scene.root / ".git" / "index.lock").exists()
        assert (scene.root / "i0-a.txt").exists()
        assert not (scene.root / "i0-z.txt").exists()
        assert git(scene.root, "rev-parse", "main") == scene.base
    scene.lease_ran_out(item_id)
    finished = scene.run("land", str(item_id))
    assert finished.returncode == 0, finished.stderr
    item = scene.project.get(item_id)
    assert item.state is ItemState.DONE, item.reason
    assert scene.checkout_left() == []
    if where == "in command":
        # the command printed its success, and its lander died before it could record it:
        # the next lander runs it again, told it may be a retry
        assert scene.command_runs() == [(item_id, 1), (item_id, 2)]
        assert scene.first_parent_line() == []
        return
    assert scene.command_runs() == []
    store = scene.project.store()
    try:
        landing = store.get_landing(item_id)
    finally:
        store.close()
    assert landing is not None
    # main moved once, to the intent: one first-parent commit, the branch's checked tree
    assert scene.first_parent_line() == [landing.intent]
    assert git(scene.root, "rev-parse", "main") == scene.branch(item_id)
    assert git(scene.root, "rev-list", "--merges", f"{scene.base}..main").split() == [
        landing.intent
    ]
    assert (scene.root / "i0-z.txt").read_text() == "i0 z\n"
