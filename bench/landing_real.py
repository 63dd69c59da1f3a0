"""A real project's history, in parallel (issue 41): consecutive upstream commits of an
open-source repository replayed as wrighty items from one base, landed by wrighty.

In one run, in a scratch directory:

- by hand: a clone at the base; each commit's change applied in order (`git apply`, then a
  commit) and the project's checks run once each. The baseline.
- wrighty: a clone at the same base, `wrighty init`, worktree mode, review by a person,
  integrate merge, the checks as `verify.checks`; one item per commit (title: its subject,
  body: which commit), queued without `--after`; the agent is bench/landing_agent.py (it
  applies the commit's change; on a landing's fix turn it takes the files as of that commit).
  Two `wrighty worker start` processes start together; a loop accepts each item as soon as it
  is in review (by default in the queue's order: an item once every item before it was
  accepted, `--accept queue`), until every item is done or needs a person.

Then it checks and reports: the target's tree against upstream's at the last commit; the
project's checks at every first-parent commit the landing made on the target (n passed of n);
the items that needed a person beyond their review (needs-attention at any time); the fix
turns the landing gave; the wall time against the same work by hand; and wrighty's landing
overhead per item outside the checks: the time its landings held it (from each
`landing-started` to the move that ended that landing) less the time its landing's checks ran.

Usage: python bench/landing_real.py [--mirror DIR] [--base SHA] [--last SHA] [--workers 2]
       [--accept queue|arrival|landed] [--accept-wait SECONDS] [--review-after-fix auto|person]
       [--keep DIR] [--sandbox]

With ``--sandbox`` the project's `worker.sandbox` is bubblewrap (network host; the agent's log
and its commits file writable, its two variables passed): every agent run and every check of
the workers runs sandboxed (the landing's own checks run as the worker, docs/sandbox.md).

The default repository is hukkin/tomli (its mirror from `fetch github:hukkin/tomli`), the 12
first-parent commits after 0724e2a up to 0b15882 (tomli 2.2.1 to 2.3.0), checked with
`python -m unittest` (its tox command) on src/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
AGENT = HERE / "landing_agent.py"
WRIGHTY = str(Path(sys.executable).with_name("wrighty"))
MIRROR = "/work/.mirror/hukkin+tomli/repo"
BASE = "0724e2a"
LAST = "0b15882"
CHECK = ["env", "PYTHONPATH=src", "PYTHONDONTWRITEBYTECODE=1", sys.executable, "-m", "unittest"]
IDENTITY = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}  # fmt: skip


def git(cwd: Path | str, *args: str, stdin: str | None = None, raw: bool = False) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, check=False,
        env={**os.environ, **IDENTITY},
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {cwd}: {done.stderr.strip()}")
    return done.stdout if raw else done.stdout.strip()


def run_checks(cwd: Path, check: list[str]) -> tuple[bool, float]:
    began = time.perf_counter()
    done = subprocess.run(check, cwd=cwd, capture_output=True, check=False)
    return done.returncode == 0, time.perf_counter() - began


def clone_at(mirror: str, base: str, where: Path) -> None:
    git(where.parent, "clone", "-q", "--no-checkout", mirror, where.name)
    git(where, "checkout", "-q", "-B", "main", base)
    git(where, "config", "user.name", "Bench")
    git(where, "config", "user.email", "bench@example.com")


@dataclass
class ByHand:
    seconds: float
    check_seconds: float
    all_passed: bool
    same_tree: bool


def by_hand(mirror: str, base: str, commits: list[str], check: list[str], where: Path) -> ByHand:
    """Each change applied in order and checked once: the same work with no wrighty."""
    clone_at(mirror, base, where)
    began = time.perf_counter()
    checks, passed = 0.0, True
    for commit in commits:
        diff = git(where, "diff", "--binary", f"{commit}^1", commit, raw=True)
        git(where, "apply", "--index", stdin=diff)
        git(
            where,
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            git(where, "log", "-1", "--format=%s", commit),
        )
        ok, seconds = run_checks(where, check)
        checks += seconds
        passed = passed and ok
    seconds = time.perf_counter() - began
    same = git(where, "rev-parse", "HEAD^{tree}") == git(
        where, "rev-parse", f"{commits[-1]}^{{tree}}"
    )
    return ByHand(seconds, checks, passed, same)


def wrighty(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [WRIGHTY, *args], cwd=project, capture_output=True, text=True, check=False,
        env=project_env(project),
    )  # fmt: skip


def project_env(project: Path) -> dict[str, str]:
    return {**os.environ, **IDENTITY, "LANDING_AGENT_LOG": str(project.parent / "agent.jsonl"),
            "LANDING_AGENT_COMMITS": str(project.parent / "commits.json")}  # fmt: skip


def make_project(
    mirror: str, base: str, commits: list[str], check: list[str], where: Path, args: Any
) -> list[int]:
    """The scratch project, initialised, with one queued item per commit; their ids."""
    clone_at(mirror, base, where)
    init = wrighty(where, "init")
    if init.returncode != 0:
        raise RuntimeError(init.stderr)
    settings = json.loads((where / "wrighty.json").read_text())
    agent = [sys.executable, str(AGENT)]
    settings["worker"].update(
        {"workspaceMode": "worktree", "defaultAgent": "replay", "pollSeconds": 1}
    )
    settings["agents"] = {"replay": {"adapter": "command", "command": agent,
                                     "resumeCommand": agent}}  # fmt: skip
    settings["verify"] = {"checks": [{"name": "tests", "argv": check, "timeoutMinutes": 5}],
                          "maxFixTurns": 2}  # fmt: skip
    settings["completion"] = {"review": "person", "integrate": "merge",
                              "reviewAfterFix": args.review_after_fix}  # fmt: skip
    if args.sandbox:  # every agent run and worker check under bubblewrap (docs/sandbox.md)
        # The agent's log and its commits (the sandbox's /tmp is its own): each must exist
        # when a run starts; commits.json is written below.
        (where.parent / "agent.jsonl").touch()
        shown = [str(where.parent / name) for name in ("agent.jsonl", "commits.json")]
        settings["worker"]["sandbox"] = {
            "kind": "bubblewrap", "writable": shown,
            "env": ["LANDING_AGENT_LOG", "LANDING_AGENT_COMMITS"],
        }  # fmt: skip
    (where / "wrighty.json").write_text(json.dumps(settings, indent=2) + "\n")
    with open(where / ".git" / "info" / "exclude", "a", encoding="utf-8") as exclude:
        exclude.write("wrighty.json\n")
    ids: list[int] = []
    for commit in commits:
        subject = git(where, "log", "-1", "--format=%s", commit)
        body = f"Upstream commit: {commit}\n\nReplay this upstream change of the project."
        made = wrighty(where, "create", "--title", subject, "--body", body, "--queue", "--json")
        if made.returncode != 0:
            raise RuntimeError(made.stderr)
        ids.append(int(json.loads(made.stdout)["id"]))
    (where.parent / "commits.json").write_text(
        json.dumps(dict(zip(map(str, ids), commits, strict=True)))
    )
    return ids


@dataclass
class Acceptor:
    """Accepts each item once it is in review, as --accept says; each accept in a thread of
    its own (`wrighty accept ID --wait W`: W seconds landing it there, 0 for a worker to)."""

    project: Path
    ids: list[int]
    policy: str
    wait: float
    accepts: dict[int, int] = field(default_factory=dict)  # item -> accepts made
    failures: list[str] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)

    def states(self, store: Any) -> dict[int, str]:
        """Every item's state, read from the store in this process (a `wrighty list --json`
        every tenth of a second would load the machine the workers share)."""
        return {item.id: str(item.state) for item in store.list_items()}

    def step(self, states: dict[int, str], store: Any) -> None:
        for position, item_id in enumerate(self.ids):
            if states.get(item_id) != "review" or self._pending(item_id):
                continue
            earlier = self.ids[:position]
            if self.policy == "queue" and any(store.get_landing(e) is None for e in earlier):
                continue  # an earlier item's acceptance is not recorded yet
            if self.policy == "landed" and any(states.get(e) != "done" for e in earlier):
                continue
            self.accepts[item_id] = self.accepts.get(item_id, 0) + 1
            thread = threading.Thread(target=self._accept, args=(item_id,), daemon=True)
            thread.name = f"accept-{item_id}"
            self.threads.append(thread)
            thread.start()

    def _pending(self, item_id: int) -> bool:
        return any(t.name == f"accept-{item_id}" and t.is_alive() for t in self.threads)

    def _accept(self, item_id: int) -> None:
        done = wrighty(self.project, "accept", str(item_id), "--wait", str(self.wait))
        if done.returncode not in (0, 1):
            self.failures.append(f"accept {item_id}: exit {done.returncode}: {done.stderr.strip()}")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass
class ItemFigures:
    item_id: int
    landing_seconds: float  # held by its landings: landing-started to the move that ended it
    check_seconds: float  # its landing's checks
    line_seconds: float  # accepted to its first landing-started
    fix_turns: int
    needed_person: bool
    accepts: int

    @property
    def outside(self) -> float:
        return max(self.landing_seconds - self.check_seconds, 0.0)


def item_figures(project: Path, item_id: int, accepts: int) -> ItemFigures:
    from wrighty.store.sqlite import SqliteStore

    shown = json.loads(wrighty(project, "show", str(item_id), "--json").stdout)
    events = shown["events"]
    held = 0.0
    line = None
    accepted_at = None
    for position, event in enumerate(events):
        if event["reason_code"] == "accepted" and accepted_at is None:
            accepted_at = at(event["at"])
        if event["reason_code"] == "landing-started":
            if line is None and accepted_at is not None:
                line = (at(event["at"]) - accepted_at).total_seconds()
            ends = events[position + 1] if position + 1 < len(events) else None
            if ends is not None:
                held += (at(ends["at"]) - at(event["at"])).total_seconds()
    needed = any(event["to_state"] == "needs-attention" for event in events)
    fixes = sum(
        1 for e in events if e["reason_code"] in ("landing-conflict", "landing-checks-failed")
    )
    store = SqliteStore.open(project / ".wrighty" / "wrighty.db", create=False)
    try:
        checks = [r for r in store.list_checks(item_id) if r.verification_id.startswith("land-")]
    finally:
        store.close()
    check_seconds = sum(record.evidence.duration_seconds for record in checks)
    return ItemFigures(item_id, held, check_seconds, line or 0.0, fixes, needed, accepts)


def check_line(
    project: Path, base: str, check: list[str], scratch: Path
) -> tuple[int, int, list[str]]:
    """The project's checks at every first-parent commit the landing put on main."""
    line = git(project, "rev-list", "--first-parent", "--reverse", f"{base}..main").split()
    place = scratch / "line-checks"
    git(project, "worktree", "add", "-q", "--detach", str(place), base)
    failed: list[str] = []
    try:
        for commit in line:
            git(place, "checkout", "-q", "--detach", commit)
            if not run_checks(place, check)[0]:
                failed.append(commit[:12])
    finally:
        git(project, "worktree", "remove", "--force", str(place))
    return len(line) - len(failed), len(line), failed


def stop(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGINT)
    for worker in workers:
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", default=MIRROR, help="the upstream repository (a git dir)")
    parser.add_argument("--base", default=BASE, help="the commit the items start from")
    parser.add_argument("--last", default=LAST, help="the last upstream commit replayed")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--accept", choices=["queue", "arrival", "landed"], default="queue",
                        help="queue: in the queue's order, each once the ones before it were "
                        "accepted; arrival: each as soon as it is in review; landed: each once "
                        "the ones before it are done")  # fmt: skip
    parser.add_argument("--accept-wait", type=float, default=0.0,
                        help="`wrighty accept --wait`: 0, a worker lands it")  # fmt: skip
    parser.add_argument("--review-after-fix", choices=["auto", "person"], default="auto")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--sandbox", action="store_true",
                        help="run every agent and worker check under bubblewrap "
                        "(worker.sandbox)")  # fmt: skip
    parser.add_argument("--keep", type=Path, help="make the scratch directory here and keep it")
    args = parser.parse_args()
    check = CHECK
    mirror = args.mirror
    base = git(mirror, "rev-parse", f"{args.base}^{{commit}}")
    commits = git(mirror, "rev-list", "--first-parent", "--reverse", f"{base}..{args.last}").split()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="wrighty-landing-real-"))
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        report(args, mirror, base, commits, check, scratch)
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)


def report(
    args: Any, mirror: str, base: str, commits: list[str], check: list[str], scratch: Path
) -> None:
    hand = by_hand(mirror, base, commits, check, scratch / "hand")
    project = scratch / "project"
    ids = make_project(mirror, base, commits, check, project, args)
    acceptor = Acceptor(project, ids, args.accept, args.accept_wait)
    began = time.perf_counter()
    workers = [start_worker(project, scratch / f"worker-{n}") for n in range(args.workers)]
    states: dict[int, str] = {}
    reasons: dict[int, str | None] = {}
    person: set[int] = set()
    from wrighty.store.sqlite import SqliteStore

    store = SqliteStore.open(project / ".wrighty" / "wrighty.db", create=False)
    try:
        while time.perf_counter() - began < args.timeout:
            states = acceptor.states(store)
            reasons = {item.id: item.reason for item in store.list_items()}
            person |= {i for i, s in states.items() if s == "needs-attention"}
            if all(states.get(i) in ("done", "needs-attention", "cancelled") for i in ids):
                break
            acceptor.step(states, store)
            time.sleep(0.2)
        wall = time.perf_counter() - began
    finally:
        store.close()
        stop(workers)
        for thread in acceptor.threads:
            thread.join(timeout=60)
    figures = [item_figures(project, i, acceptor.accepts.get(i, 0)) for i in ids]
    last = commits[-1]
    same = git(project, "rev-parse", "main^{tree}") == git(mirror, "rev-parse", f"{last}^{{tree}}")
    passed, line, failed = check_line(project, base, check, scratch)
    done = sum(1 for i in ids if states.get(i) == "done")
    needed = sorted(person | {f.item_id for f in figures if f.needed_person})
    outside = [f.outside for f in figures if f.landing_seconds]
    log = project.parent / "agent.jsonl"
    runs = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    shown = " ".join(check[3:] if check[0] == "env" else check)
    failed_at = f" (failed at {', '.join(failed)})" if failed else ""
    print(f"repository {mirror}: {len(commits)} first-parent commits {base[:12]}..{last[:12]}")
    print(f"checks: {shown}; workers {args.workers}; accept {args.accept} "
          f"(--wait {args.accept_wait:g}); reviewAfterFix {args.review_after_fix}")  # fmt: skip
    print(f"items done {done} of {len(ids)}; needing a person beyond review: {len(needed)} "
          f"{needed or ''}")  # fmt: skip
    print(f"target's tree equals upstream's at {last[:12]}: {'yes' if same else 'NO'}")
    print(f"checks at each first-parent commit the landing made on main: {passed} passed of "
          f"{line}{failed_at}")  # fmt: skip
    print(f"landing fix turns: {sum(f.fix_turns for f in figures)} (agent runs: {kinds(runs)}); "
          f"accepts: {sum(acceptor.accepts.values())}")  # fmt: skip
    print(f"wall time: wrighty {wall:.2f} s, by hand {hand.seconds:.2f} s (its checks "
          f"{hand.check_seconds:.2f} s, all passed: {hand.all_passed}, same tree: "
          f"{hand.same_tree}); ratio {wall / hand.seconds:.2f}x")  # fmt: skip
    if outside:
        print(f"landing overhead per item outside the checks: median "
              f"{statistics.median(outside):.3f} s, max {max(outside):.3f} s, mean "
              f"{statistics.mean(outside):.3f} s (goal: under 2 s)")  # fmt: skip
    print("item  accepts  line wait  landing  its checks  outside  fix turns  person")
    for f in figures:
        print(f"{f.item_id:>4}  {f.accepts:>7}  {f.line_seconds:>8.2f}s  "
              f"{f.landing_seconds:>6.2f}s  {f.check_seconds:>9.2f}s  {f.outside:>6.2f}s  "
              f"{f.fix_turns:>9}  {'yes' if f.needed_person else 'no'}")  # fmt: skip
    for item_id in ids:
        if states.get(item_id) != "done":
            print(f"item {item_id} ended {states.get(item_id)}: {reasons.get(item_id)}")
    for failure in acceptor.failures:
        print(f"accept failed: {failure}")


def start_worker(project: Path, logs: Path) -> subprocess.Popen[bytes]:
    """`wrighty worker start --json`, its output in logs.jsonl and logs.err."""
    with open(f"{logs}.jsonl", "wb") as out, open(f"{logs}.err", "wb") as err:
        return subprocess.Popen(
            [WRIGHTY, "worker", "start", "--json"], cwd=project, env=project_env(project),
            stdout=out, stderr=err,
        )  # fmt: skip


def kinds(runs: list[dict[str, Any]]) -> str:
    counted: dict[str, int] = {}
    for run in runs:
        key = f"{run['kind']}:{run['did']}"
        counted[key] = counted.get(key, 0) + 1
    return ", ".join(f"{k} {n}" for k, n in sorted(counted.items())) or "none"


if __name__ == "__main__":
    main()
