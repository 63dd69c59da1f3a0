"""The agent of bench/landing_real.py (and of tests/integration/test_landing_history.py): it
replays one upstream commit in the item's worktree, as a `command` agent of wrighty.

Its task names the commit (`Upstream commit: <40 hex digits>`); the commit's objects are in the
project's repository (a clone of the upstream one). By `WRIGHTY_RUN_KIND`:

- fresh (or resume): apply the commit's change to the worktree: `git diff C^1 C | git apply
  --3way`; when that conflicts, the same change with no context lines (`--unidiff-zero`: lines
  removed or added next to lines the base does not have yet); when that fails too, the files
  the commit changed as they are in C.
- landing, with the merge of the target under way (unmerged paths): each conflicting file as
  it is in C (removed when C has no such file), staged; nothing committed (wrighty commits the
  merge).
- landing (a check failed on the updated branch) or fix (a check failed after its own run):
  every file that differs from C made as it is in C.
- rejected: nothing.

Every run appends one JSON line to `$LANDING_AGENT_LOG` (when set): the item, the run's kind,
the commit, what it did and the paths it took from upstream.

Usage (wrighty.json): "command": ["python3", "bench/landing_agent.py"], the same as
"resumeCommand".
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

COMMIT = re.compile(r"Upstream commit: ([0-9a-f]{40})")


def git(
    *args: str, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", *args], input=stdin, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done


def lines(*args: str) -> list[str]:
    return [line for line in git(*args).stdout.splitlines() if line]


def take_from(commit: str, paths: list[str]) -> None:
    """Each path as it is in ``commit`` (removed when it has none), staged."""
    for path in paths:
        if git("cat-file", "-e", f"{commit}:{path}", check=False).returncode == 0:
            git("checkout", commit, "--", path)
        else:
            git("rm", "-q", "-f", "--ignore-unmatch", "--", path)
            if Path(path).exists():  # an unmerged path git rm left as a file
                Path(path).unlink()
            git("add", "-A", "--", path, check=False)


def apply_change(commit: str) -> tuple[str, list[str]]:
    diff = git("diff", "--binary", f"{commit}^1", commit).stdout
    if not diff:
        return "empty", []
    if git("apply", "--3way", stdin=diff, check=False).returncode == 0:
        return "applied", []
    git("reset", "-q", "--hard", "HEAD")
    git("clean", "-q", "-f", "-d")
    zero = git("diff", "--binary", "-U0", f"{commit}^1", commit).stdout
    if git("apply", "--unidiff-zero", stdin=zero, check=False).returncode == 0:
        return "applied-without-context", []
    git("reset", "-q", "--hard", "HEAD")
    git("clean", "-q", "-f", "-d")
    paths = lines("diff", "--name-only", "--no-renames", f"{commit}^1", commit)
    take_from(commit, paths)
    return "took-files", paths


def commit_of(task: str) -> str:
    found = COMMIT.search(task)
    if found:
        return found.group(1)
    mapping = os.environ.get("LANDING_AGENT_COMMITS")  # item id -> commit, for a resumed run
    if mapping:
        commits = json.loads(Path(mapping).read_text())
        return str(commits[os.environ["WRIGHTY_ITEM_ID"]])
    raise SystemExit("no `Upstream commit: <sha>` in the task and no LANDING_AGENT_COMMITS")


def main() -> None:
    began = time.time()
    task = sys.stdin.read()
    kind = os.environ.get("WRIGHTY_RUN_KIND", "fresh")
    commit = commit_of(task)
    taken: list[str] = []
    if kind in ("fresh", "resume", "handoff"):
        did, taken = apply_change(commit)
    elif kind == "landing" and (unmerged := lines("diff", "--name-only", "--diff-filter=U")):
        take_from(commit, unmerged)
        did, taken = "resolved-conflict", unmerged
    elif kind in ("landing", "fix"):
        taken = lines("diff", "--name-only", "--no-renames", commit)
        take_from(commit, taken)
        did = "took-differing-files"
    else:
        did = "nothing"
    log = os.environ.get("LANDING_AGENT_LOG")
    if log:
        entry = {
            "item": os.environ.get("WRIGHTY_ITEM_ID"), "kind": kind, "commit": commit[:12],
            "did": did, "paths": taken, "seconds": round(time.time() - began, 3),
            "prompt": task[:300],
        }  # fmt: skip
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


if __name__ == "__main__":
    main()
