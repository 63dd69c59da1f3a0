"""The cost of a sandboxed start (issue 43): a no-op started as the worker starts an agent and
as it runs a check, under bubblewrap and without, side by side in the same run.

In a scratch folder: a git project with `wrighty.json` (worker.sandbox bubblewrap, network
host), its `.wrighty` state folder and SQLite store, an item's worktree in
`.wrighty/worktrees/1` on branch `wrighty/1-bench`, and a home folder with `~/.ssh`. The
sandbox is the worker's own: `preflight.sandbox_maker` for that config, made again for each
start with `SandboxMaker.at(worktree)` (what the worker does before each run and each check).

Contenders, in turns (agent plain, agent sandboxed, check plain, check sandboxed, ...), each
``--runs`` times:

- agent: `supervisor.process.launch` of `true` in the worktree (the argv, environment, logs,
  marker and parent-death signal of a run), waited for, its tree stopped and its pumps
  drained; sandboxed, `SandboxMaker.at` is inside the timed part;
- check: `supervisor.checks.run_check` of a `CheckSpec` whose argv is `true`.

It prints each contender's median and p90 in ms, and for each pair the difference of the
medians and their ratio; then where a sandboxed start's extra time goes: wrighty's part
(`SandboxMaker.at`: the paths looked up on disk, git's folders around the worktree from
`workproduct/gitdirs.py`), and bubblewrap's (its prepared command line run by hand, against
`true` run by hand).

Usage: python bench/sandbox_start.py [--runs 50] [--program bwrap]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from wrighty.agents import plan_agent
from wrighty.config import load_config
from wrighty.domain.verify import Check
from wrighty.services.sandboxes import Around
from wrighty.supervisor.checks import CheckSpec, run_check
from wrighty.supervisor.process import LaunchSpec, launch
from wrighty.supervisor.sandboxing import SandboxMaker, sandbox_problem
from wrighty.worker.preflight import sandbox_maker
from wrighty.workproduct.gitdirs import git_places

CHECK_VARIABLES = ("WRIGHTY_ITEM_ID", "WRIGHTY_RUN_ID", "WRIGHTY_CHECK_NAME")  # worker/checks.py


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


def make_project(scratch: Path, program: str) -> tuple[Path, Path, SandboxMaker]:
    """The project, its item's worktree, and the worker's sandbox for it."""
    home = scratch / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("machine example.com password bench\n")
    os.environ["HOME"] = str(home)  # the sandbox's home folder (preflight reads HOME)
    root = scratch / "project"
    root.mkdir()
    document = {
        "worker": {"defaultAgent": "noop", "workspaceMode": "worktree",
                   "sandbox": {"kind": "bubblewrap", "program": program}},
        "agents": {"noop": {"adapter": "command", "command": ["true"]}},
    }  # fmt: skip
    (root / "wrighty.json").write_text(json.dumps(document))
    (root / ".gitignore").write_text(".wrighty/\n")
    (root / "README").write_text("bench\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.name=b", "-c", "user.email=b@example.invalid", "add", "-A")
    git(root, "-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-qm", "p")
    state = root / ".wrighty"
    (state / "worktrees").mkdir(parents=True)
    (state / "wrighty.db").write_bytes(b"")
    worktree = state / "worktrees" / "1"
    git(root, "worktree", "add", "-q", "-b", "wrighty/1-bench", str(worktree))
    loaded = load_config(root / "wrighty.json")
    plan = plan_agent(loaded.config, "noop", project_root=root)
    maker = sandbox_maker(loaded.config, plan, Around(root, loaded.path, state / "wrighty.db"))
    assert maker is not None
    return root, worktree, maker


def agent_start(worktree: Path, logs: Path, maker: SandboxMaker | None) -> Callable[[], None]:
    def start() -> None:
        given = {"WRIGHTY_ITEM_ID": "1", "WRIGHTY_RUN_ID": "r"}
        spec = LaunchSpec(
            argv=("true",), cwd=worktree, env={**os.environ, **given}, task="bench\n",
            log_dir=Path(tempfile.mkdtemp(dir=logs)), marker=("WRIGHTY_RUN_ID", "r"),
            sandbox=maker.at(worktree, passed=given) if maker is not None else None,
        )  # fmt: skip
        process = launch(spec)
        status = process.wait(30)
        process.stop(grace_seconds=5)
        process.close()
        assert status is not None, "the no-op did not end"
        assert status.exit_code == 0, status

    return start


def check_start(worktree: Path, logs: Path, maker: SandboxMaker | None) -> Callable[[], None]:
    def start() -> None:
        env = {**os.environ, "WRIGHTY_ITEM_ID": "1", "WRIGHTY_RUN_ID": "r"}
        spec = CheckSpec(
            Check("noop", ("true",)), cwd=worktree, log_dir=Path(tempfile.mkdtemp(dir=logs)),
            env={**env, "WRIGHTY_CHECK_NAME": "noop"},
            sandbox=maker.at(worktree, passed=CHECK_VARIABLES) if maker is not None else None,
        )  # fmt: skip
        evidence = run_check(spec)
        assert evidence is not None, "the check was stopped"
        assert evidence.exit_code == 0, evidence

    return start


def timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return (time.perf_counter() - began) * 1000


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--program", default="bwrap", help="the bubblewrap program")
    args = parser.parse_args()
    problem = sandbox_problem(args.program)
    if problem is not None:
        sys.exit(f"bubblewrap {args.program!r} {problem}")
    scratch = Path(tempfile.mkdtemp(prefix="wrighty-bench-sandbox-"))
    try:
        _, worktree, maker = make_project(scratch, args.program)
        logs = scratch / "logs"
        logs.mkdir()
        contenders = {
            "agent plain": agent_start(worktree, logs, None),
            "agent sandboxed": agent_start(worktree, logs, maker),
            "check plain": check_start(worktree, logs, None),
            "check sandboxed": check_start(worktree, logs, maker),
        }
        for action in contenders.values():
            action()  # warm up: imports, caches
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.runs):
            for name, action in contenders.items():
                times[name].append(timed(action))
        # Where a sandboxed start's time goes: wrighty's preparation, bubblewrap's own.
        prep = [timed(lambda: maker.at(worktree)) for _ in range(args.runs)]
        git_part = [timed(lambda: git_places(worktree)) for _ in range(args.runs)]
        argv = list(maker.at(worktree).argv(["true"]))
        env = maker.at(worktree).environment(os.environ)
        bare: list[float] = []
        boxed: list[float] = []
        for _ in range(args.runs):
            bare.append(timed(lambda: subprocess.run(["true"], cwd=worktree, check=True)))
            boxed.append(timed(lambda: subprocess.run(argv, env=env, cwd=worktree, check=True)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{args.runs} starts each, interleaved; bubblewrap {shutil.which(args.program)}")
    for name, values in times.items():
        print(f"{name:16} median {statistics.median(values):6.1f} ms  p90 {p90(values):6.1f} ms")
    for kind in ("agent", "check"):
        plain = statistics.median(times[f"{kind} plain"])
        sandboxed = statistics.median(times[f"{kind} sandboxed"])
        print(
            f"{kind}: sandboxed - plain {sandboxed - plain:+6.1f} ms per start  "
            f"(sandboxed/plain {sandboxed / plain:.2f}x)"
        )
    by_hand, alone = statistics.median(boxed), statistics.median(bare)
    print(
        f"of which wrighty's SandboxMaker.at {statistics.median(prep):.1f} ms "
        f"(git's folders {statistics.median(git_part):.1f} ms); bubblewrap by hand "
        f"{by_hand:.1f} ms against true by hand {alone:.1f} ms (+{by_hand - alone:.1f} ms)"
    )


if __name__ == "__main__":
    main()
