"""How many git commands one accept's integration runs, merge by merge.

Makes a scratch project on branch main and an item's worktree on its branch, as the worker
makes them, then integrates the branch (workproduct/integrate.integrate, completion.integrate
merge) with a `git` first on PATH that logs each command before it runs the real one. Two
accepts: a fast-forward (main has not moved) and a merge commit (main moved on, no conflict).
Each line says how many git processes ran, and how many of them were the commands themselves
rather than the config listing that runner.py reads before each one (the listing keeps every
program the repository names from running: docs/work-product.md#what-git-runs).

Usage: python bench/accept_git_commands.py [--show]  (--show: the commands, one a line)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wrighty.domain.integration import Integration
from wrighty.workproduct.integrate import IntegrationTarget, integrate

BRANCH = "wrighty/1-fix"
LISTING = "config --list --show-scope -z"

LOGGING_GIT = """#!/bin/sh
printf '%s\\n' "$*" >> "{log}"
exec "{git}" "$@"
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    done.check_returncode()
    return done.stdout.strip()


def scratch_project(top: Path, *, main_moves: bool) -> IntegrationTarget:
    root = top / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".wrighty/\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-qm", "first")
    base = git(root, "rev-parse", "HEAD")
    worktree = root / ".wrighty" / "worktrees" / "1"
    git(root, "worktree", "add", "-q", "-b", BRANCH, str(worktree), base)
    (worktree / "fix.py").write_text("fixed\n")
    git(worktree, "add", "-A")
    git(worktree, "commit", "-qm", "Fix")
    if main_moves:
        (root / "other.py").write_text("other\n")
        git(root, "add", "other.py")
        git(root, "commit", "-qm", "main moves on")
    return IntegrationTarget(1, "Fix", BRANCH, base, worktree, "Item 1: Fix\n")


@contextmanager
def logged_git(top: Path) -> Iterator[Path]:
    """A `git` first on PATH that logs its arguments; yields the log."""
    real = shutil.which("git")
    assert real is not None, "git is not installed"
    log = top / "git.log"
    folder = top / "bin"
    folder.mkdir()
    (folder / "git").write_text(LOGGING_GIT.format(log=log, git=real))
    (folder / "git").chmod(0o755)
    before = os.environ["PATH"]
    os.environ["PATH"] = f"{folder}{os.pathsep}{before}"
    try:
        yield log
    finally:
        os.environ["PATH"] = before


def count(*, main_moves: bool, show: bool) -> str:
    with tempfile.TemporaryDirectory(prefix="wrighty-bench-") as scratch:
        top = Path(scratch)
        target = scratch_project(top, main_moves=main_moves)
        with logged_git(top) as log:
            done = integrate(top / "project", Integration(kind="merge"), target)
            commands = log.read_text().splitlines()
    own = [line for line in commands if LISTING not in line]
    if show:
        print("\n".join(f"    {line}" for line in own))
    return f"{len(commands)} git processes, {len(own)} commands: {done.words}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print the commands")
    options = parser.parse_args()
    os.environ["GIT_CONFIG_GLOBAL"] = os.devnull
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    for role in ("AUTHOR", "COMMITTER"):
        os.environ[f"GIT_{role}_NAME"] = "Bench"
        os.environ[f"GIT_{role}_EMAIL"] = "bench@example.invalid"
    for name, main_moves in (("fast-forward", False), ("merge commit", True)):
        print(f"{name}: {count(main_moves=main_moves, show=options.show)}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
