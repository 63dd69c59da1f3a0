"""Races and kills of a landing, on both stores (issue 41, docs/landing.md#exactly-once): the
figures the promise is measured by.

- accept-reject: N items in review, each raced by `wrighty accept` and `wrighty reject`
  started back to back (every other pair the reject first): one winner each.
- accept-accept: N items with completion.integrate command, each raced by two `accept`s: the
  command runs once per item.
- kill <where>: one item, its branch behind main, landed by `wrighty land` killed (SIGKILL of
  its process group) at that step, then landed again once its lease ran out
  (tests/integration/landing_scene.py says how each kill is made).

Counted: merged twice (main's first-parent line holds more commits than items landed),
rejected-and-merged (a rejected item's branch on main), the command run twice after success (a
run beyond the first, but the one retry a kill before wrighty recorded the success gets, told
WRIGHTY_INTEGRATION_ATTEMPT=2), half-merges (git's index lock or changes to tracked files left
in the project's checkout), MERGE_HEADs left (in the checkout or an item's worktree), not
finished (an accept that won, or the lander after a kill, did not bring the item to done; or
the kill did not happen where it was to).

Usage: python bench/landing_races.py [--pairs 50] [--stores sqlite postgresql]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import postgres_schema  # noqa: E402
from tests.integration.landing_scene import KILLS, Scene, make_scene  # noqa: E402


@dataclass
class Row:
    case: str
    store: str
    runs: int = 0
    merged_twice: int = 0
    rejected_and_merged: int = 0
    command_twice: int = 0
    half_merges: int = 0
    merge_heads: int = 0
    not_finished: int = 0  # an item the winner or the next lander did not bring to done


@contextmanager
def _store(name: str) -> Iterator[str | None]:
    with postgres_schema() if name == "postgresql" else nullcontext(None) as url:
        yield url


def _left(scene: Scene, row: Row) -> None:
    left = scene.checkout_left()
    row.merge_heads += sum(1 for thing in left if thing.endswith("MERGE_HEAD"))
    row.half_merges += sum(1 for thing in left if not thing.endswith("MERGE_HEAD"))


def _race(scene: Scene, first: list[str], second: list[str]) -> tuple[int, int]:
    one, two = scene.start(*first), scene.start(*second)
    one.communicate(timeout=300)
    two.communicate(timeout=300)
    return one.returncode, two.returncode


def accept_reject(where: Path, store: str, pairs: int) -> Row:
    row = Row("accept || reject", store)
    with _store(store) as url:
        scene = make_scene(where, url)
        landed = 0
        for n, item_id in enumerate(scene.in_review(pairs)):
            accept, reject = ["accept", str(item_id)], ["reject", str(item_id), "--feedback", "no"]
            if n % 2:
                rejected, accepted = _race(scene, reject, accept)
            else:
                accepted, rejected = _race(scene, accept, reject)
            row.runs += 1
            landed += accepted == 0
            row.not_finished += accepted == 0 and scene.project.get(item_id).state.value != "done"
            if rejected == 0 and scene.on_main(item_id):
                row.rejected_and_merged += 1
        row.merged_twice = max(0, len(scene.first_parent_line()) - landed)
        _left(scene, row)
    return row


def accept_accept(where: Path, store: str, pairs: int) -> Row:
    row = Row("accept || accept, command", store)
    with _store(store) as url:
        scene = make_scene(where, url, integrate="command")
        ids = scene.in_review(pairs)
        for item_id in ids:
            _race(scene, ["accept", str(item_id)], ["accept", str(item_id)])
            row.runs += 1
            row.not_finished += scene.project.get(item_id).state.value != "done"
        runs = scene.command_runs()
        row.command_twice = sum(max(0, [i for i, _ in runs].count(item_id) - 1) for item_id in ids)
        _left(scene, row)
    return row


def killed(where: Path, store: str, kill: str) -> Row:
    row = Row(f"kill {kill}", store, runs=1)
    with _store(store) as url:
        scene = make_scene(
            where, url, integrate="command" if kill == "in command" else "merge",
            hooks=kill == "in post-merge hook", check=kill == "in check",
        )  # fmt: skip
        [item_id] = scene.in_review(1)
        scene.main_moves()
        scene.run("accept", str(item_id), "--wait", "0")
        if scene.killed_landing(item_id, KILLS[kill]) != -9:
            row.not_finished += 1  # it was not killed where it was to be: no figure
        scene.lease_ran_out(item_id)
        scene.run("land", str(item_id))
        scene.run("land", str(item_id))  # a late lander changes nothing
        row.merged_twice = max(0, len(scene.first_parent_line()) - (kill != "in command"))
        row.not_finished += scene.project.get(item_id).state.value != "done"
        # the one run allowed after the success is the retry told it is attempt 2
        allowed = [(item_id, 1), (item_id, 2)] if kill == "in command" else []
        runs = scene.command_runs()
        row.command_twice = sum(1 for n, run in enumerate(runs) if allowed[n : n + 1] != [run])
        _left(scene, row)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument("--kills", nargs="*", default=list(KILLS))
    args = parser.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="landing-races-") as scratch:
        for n, store in enumerate(args.stores):
            here = Path(scratch) / f"{n}-{store}"
            if args.pairs:
                rows.append(accept_reject(here / "reject", store, args.pairs))
                rows.append(accept_accept(here / "accept", store, args.pairs))
            for k, kill in enumerate(args.kills):
                rows.append(killed(here / f"kill-{k}", store, kill))
                print(rows[-1], file=sys.stderr, flush=True)
    heads = ("case", "store", "runs", "merged twice", "rejected-and-merged",
             "command run twice after success", "half-merges", "MERGE_HEADs left",
             "not finished")  # fmt: skip
    print("| " + " | ".join(heads) + " |")
    print("|" + " --- |" * len(heads))
    for row in rows:
        cells = (row.case, row.store, row.runs, row.merged_twice, row.rejected_and_merged,
                 row.command_twice, row.half_merges, row.merge_heads, row.not_finished)  # fmt: skip
        print("| " + " | ".join(str(cell) for cell in cells) + " |")


if __name__ == "__main__":
    main()
