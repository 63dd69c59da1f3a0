"""A project whose landings are raced and killed with real `wrighty` processes
(docs/landing.md#exactly-once), for tests/integration/test_landing_races.py and
bench/landing_races.py.

A lander is killed at a chosen step, deterministically, by SIGKILL of its process group: a git
of the test's own first on PATH (the real git, but armed for one step, it kills the lander
before or after running it, or, for the move, while the real git is writing the project's
checkout: a smudge filter of its own holds git with the index locked and the first file of the
move written), a check, a `post-merge` hook or the integration command that kill it. Each one
fires once: it is armed by a file in MARKS that it removes.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import textwrap
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.helpers import git, git_env, wait_for
from tests.integration.worker_process import ProjectOnDisk
from tests.integration.worker_process import make_project as new_project
from wrighty.domain.states import ItemState

# An agent that writes two files named after its task's first word: NAME-a.txt and NAME-z.txt
# (a move into the project's checkout writes them in that order).
AGENT = textwrap.dedent(
    """\
    import pathlib, sys
    name = sys.stdin.read().split()[0]
    pathlib.Path(f"{name}-a.txt").write_text(f"{name} a\\n")
    pathlib.Path(f"{name}-z.txt").write_text(f"{name} z\\n")
    """
)

# The lander's process group is the pid the test wrote to MARKS/lander.pid.
_KILL = 'while [ ! -s "$M/lander.pid" ]; do sleep 0.02; done; kill -KILL -"$(cat "$M/lander.pid")"'

# git's steps in a landing, as the wrapper tells them from git's arguments.
GIT_STEPS = {
    "update": "merge --no-ff",
    "commit-tree": "commit-tree",
    "update-ref": "update-ref",
    "move": "merge --ff-only",
}

GIT_OF_THE_TEST = """#!/bin/sh
M={marks}
real={real}
step=""
case " $* " in
  *" merge --no-ff "*) step=update ;;
  *" commit-tree "*) step=commit-tree ;;
  *" update-ref "*) step=update-ref ;;
  *" merge --ff-only "*) step=move ;;
esac
[ -n "$step" ] || exec "$real" "$@"
if [ -e "$M/kill-before-$step" ]; then
  rm -f "$M/kill-before-$step"; {kill}; kill -KILL 0
fi
if [ -e "$M/kill-during-$step" ]; then
  rm -f "$M/kill-during-$step"
  "$real" -c core.attributesFile="$M/attributes" \\
    -c filter.slow.smudge="sh -c 'touch $M/smudging; sleep 600'" "$@" &
  while [ ! -e "$M/smudging" ]; do sleep 0.02; done
  {kill}; kill -KILL 0
fi
"$real" "$@"
status=$?
if [ -e "$M/kill-after-$step" ]; then
  rm -f "$M/kill-after-$step"; {kill}; kill -KILL 0
fi
exit $status
"""

# A check that kills its lander while the checks run (armed), and passes otherwise.
CHECK = """#!/bin/sh
M={marks}
if [ -e "$M/kill-in-check" ] && [ -z "$WRIGHTY_RUN_ID" ]; then
  rm -f "$M/kill-in-check"; {kill}; exec sleep 600
fi
exit 0
"""

# A post-merge hook that kills its lander once the target moved in the project's checkout.
POST_MERGE = """#!/bin/sh
M={marks}
if [ -e "$M/kill-in-hook" ] && [ "$(pwd -P)" = "{root}" ]; then
  rm -f "$M/kill-in-hook"; {kill}
fi
exit 0
"""

# The integration command: one line per run (the item and the attempt it was told), a URL;
# armed, it kills its lander after it printed its success.
COMMAND = """#!/bin/sh
M={marks}
echo "$WRIGHTY_ITEM_ID $WRIGHTY_INTEGRATION_ATTEMPT" >> "$M/command-runs"
echo "https://example.invalid/pr/$WRIGHTY_ITEM_ID"
if [ -e "$M/kill-in-command" ]; then
  rm -f "$M/kill-in-command"; {kill}
fi
exit 0
"""

# Where a landing is killed: (the mark that arms it, what it needs of the project).
KILLS: dict[str, str] = {
    **{
        f"{when} {step}": f"kill-{when}-{step}"
        for step in GIT_STEPS
        for when in ("before", "after")
    },
    "during update": "kill-during-update",
    "during move": "kill-during-move",
    "in check": "kill-in-check",
    "in post-merge hook": "kill-in-hook",
    "in command": "kill-in-command",
}


def _script(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


@dataclass
class Scene:
    """A project on a store, its marks, and what its landers did."""

    project: ProjectOnDisk
    marks: Path
    base: str = ""
    items: list[int] = field(default_factory=list)

    @property
    def root(self) -> Path:
        return self.project.root

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.project.command(*args), cwd=self.root, env=self.project.env,
            capture_output=True, text=True, check=False, timeout=timeout,
        )  # fmt: skip

    def start(self, *args: str) -> subprocess.Popen[str]:
        """`wrighty ARGS` started in a process group of its own (its id: the group's)."""
        return subprocess.Popen(
            self.project.command(*args), cwd=self.root, env=self.project.env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip

    def in_review(self, count: int) -> list[int]:
        """``count`` items worked by a worker, in review, each on its branch from one base."""
        ids = [self.project.plant(f"i{n} please", title=f"item {n}") for n in range(count)]
        for item_id in ids:
            ran = self.project.worker("--once", "--item", str(item_id))
            assert ran.returncode == 0, ran.stderr
            item = self.project.get(item_id)
            assert item.state is ItemState.REVIEW, item.reason
        self.items.extend(ids)
        return ids

    def main_moves(self) -> None:
        """main gains a commit of its own: a landing then brings the branch up to date."""
        for name in ("theirs-a.txt", "theirs-z.txt"):
            (self.root / name).write_text(f"{datetime.now(UTC).isoformat()}\n")
            git(self.root, "add", name)
        git(self.root, "commit", "-qm", "main moves on")
        self.base = git(self.root, "rev-parse", "main")

    def branch(self, item_id: int) -> str:
        return git(self.root, "rev-parse", f"wrighty/{item_id}-item-{self.items.index(item_id)}")

    def on_main(self, item_id: int) -> bool:
        """Whether ``item_id``'s branch (as it is now) is in main's history."""
        asked = subprocess.run(
            ["git", "-C", str(self.root), "merge-base", "--is-ancestor", self.branch(item_id),
             "main"], env=git_env(), check=False,
        )  # fmt: skip
        return asked.returncode == 0

    def killed_landing(self, item_id: int, mark: str) -> int:
        """Land ``item_id`` with ``mark`` armed; the killed lander's exit status (-9)."""
        (self.marks / mark).touch()
        lander = self.start("land", str(item_id))
        (self.marks / "lander.tmp").write_text(str(lander.pid))
        (self.marks / "lander.tmp").rename(self.marks / "lander.pid")
        try:
            lander.communicate(timeout=120)
        finally:
            (self.marks / "lander.pid").unlink()
            if lander.poll() is None:
                os.killpg(lander.pid, signal.SIGKILL)
                lander.communicate()
        return lander.returncode

    def lease_ran_out(self, item_id: int) -> None:
        def expired() -> bool:
            item = self.project.get(item_id)
            until = item.lease_expires_at
            return item.state is not ItemState.LANDING or until is None or until < datetime.now(UTC)

        wait_for(expired, timeout=60, what=f"item {item_id}'s landing lease to run out")

    def command_runs(self) -> list[tuple[int, int]]:
        path = self.marks / "command-runs"
        lines = path.read_text().split("\n") if path.exists() else []
        return [(int(a), int(b)) for a, b in (line.split() for line in lines if line)]

    def first_parent_line(self) -> list[str]:
        return git(self.root, "rev-list", "--first-parent", f"{self.base}..main").split()

    def checkout_left(self) -> list[str]:
        """What a dead lander left in the project's checkout: a merge under way, git's index
        lock, changes to tracked files (named)."""
        left: list[str] = []
        git_dir = self.root / ".git"
        for name in ("MERGE_HEAD", "index.lock"):
            if (git_dir / name).exists():
                left.append(name)
        for worktrees in (git_dir / "worktrees").glob("*"):
            for name in ("MERGE_HEAD", "index.lock"):
                if (worktrees / name).exists():
                    left.append(f"{worktrees.name}/{name}")
        changed = git(self.root, "status", "--porcelain", "--untracked-files=no")
        left.extend(line for line in changed.splitlines() if line)
        return left


def make_scene(
    root: Path,
    store_url: str | None,
    *,
    integrate: str = "merge",
    hooks: bool = False,
    check: bool = False,
) -> Scene:
    """A project at ``root`` on ``store_url``'s store whose landers may be killed: short
    leases, its git of the test's own first on PATH, and (``check``) a check that may kill,
    (``hooks``) a post-merge hook that may, (``integrate`` command) a command that may."""
    completion: dict[str, Any] = {"review": "person", "integrate": integrate}
    if hooks:
        completion["hooks"] = "run"
    tools = root.parent / f"{root.name}-tools"
    marks = tools / "marks"
    marks.mkdir(parents=True)
    kill = _KILL
    if integrate == "command":
        program = _script(tools / "integrate", COMMAND.format(marks=marks, kill=kill))
        completion["integrateCommand"] = [str(program)]
    verify: dict[str, Any] | None = None
    if check:
        program = _script(tools / "check", CHECK.format(marks=marks, kill=kill))
        verify = {"checks": [{"name": "killer", "argv": [str(program)]}]}
    project = new_project(
        root, programs={"maker": ("agent.py", AGENT)}, resumable=True,
        worker={"workspaceMode": "worktree", "leaseSeconds": 4, "heartbeatSeconds": 0.4},
        store_url=store_url, git=True, committed=True, env={"MARKS": str(marks)},
        completion=completion, **({"verify": verify} if verify else {}),
    )  # fmt: skip
    real = shutil.which("git")
    assert real is not None
    bin_dir = tools / "bin"
    bin_dir.mkdir()
    _script(bin_dir / "git", GIT_OF_THE_TEST.format(marks=marks, real=real, kill=kill))
    (marks / "attributes").write_text("*-z.txt filter=slow\n")
    if hooks:
        hook = POST_MERGE.format(marks=marks, kill=kill, root=root.resolve())
        _script(root / ".git" / "hooks" / "post-merge", hook)
    project.env = {**(project.env or dict(os.environ)), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    scene = Scene(project, marks)
    scene.base = git(root, "rev-parse", "main")
    return scene


def refused_once(done: subprocess.CompletedProcess[str] | tuple[int, str]) -> bool:
    """Whether a command was refused as a loser is: exit 2, one line on stderr."""
    code, err = (done.returncode, done.stderr) if not isinstance(done, tuple) else done
    return code == 2 and len(err.strip().splitlines()) == 1
