"""The disk's side of a sandbox (docs/sandbox.md): which paths exist, and whether bubblewrap
starts on this machine at all. The command line itself is domain/sandbox.py's; git's folders
around a workspace are workproduct/gitdirs.py's."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from wrighty.domain.sandbox import GitPlaces, PathKind, Places, Profile, Sandbox, bubblewrap

PROBE_TIMEOUT_SECONDS = 10


def kind_on_disk(path: PurePosixPath) -> PathKind:
    """What is at ``path`` (a symbolic link counts as what it points to)."""
    try:
        return "dir" if os.path.isdir(path) else ("file" if os.path.lexists(path) else None)
    except (OSError, ValueError):
        return None


def _posix(path: Path) -> PurePosixPath:
    return PurePosixPath(str(path))


@dataclass(frozen=True)
class SandboxMaker:
    """One worker's sandbox, made for each workspace a program of its runs in."""

    profile: Profile
    setting: str  # which setting chose it (worker.sandbox, agents.<name>.sandbox)
    project_root: Path
    state_dir: Path
    home: Path
    read_only: tuple[Path, ...] = ()  # wrighty.json
    hidden: tuple[Path, ...] = ()  # the store's file when it is not in the state folder
    writable: tuple[Path, ...] = ()  # the vendor's state
    # git's folders around a workspace (workproduct/gitdirs.py); None: not in a repository
    git_of: Callable[[Path], GitPlaces | None] = lambda _: None

    def at(self, workspace: Path, passed: Iterable[str] = ()) -> Sandbox:
        places = Places(
            workspace=_posix(workspace.resolve()),
            project_root=_posix(self.project_root.resolve()),
            state_dir=_posix(self.state_dir.resolve()),
            home=_posix(self.home.resolve()),
            git=self.git_of(workspace),
            read_only=tuple(_posix(path.resolve()) for path in self.read_only),
            hidden=tuple(_posix(path.resolve()) for path in self.hidden),
            writable=tuple(_posix(path.resolve()) for path in self.writable),
        )
        return bubblewrap(self.profile, places, kind_on_disk, passed=passed)


def sandbox_problem(program: str) -> str | None:
    """Why bubblewrap cannot run a program here (not installed, user namespaces refused...),
    in words that follow the program's name; None when it can: it starts a sandboxed
    `true`."""
    return _start_problem([program, "--ro-bind", "/", "/", "--unshare-pid", "--", "true"])


def sandboxed_start_problem(sandbox: Sandbox, environ: Mapping[str, str]) -> str | None:
    """Why ``sandbox`` (with every mount of a real run: ``SandboxMaker.at``) cannot start a
    program, in words that follow the bubblewrap program's name; None when a sandboxed
    `true` ends well in it. ``environ`` is filtered as a run's is."""
    return _start_problem(list(sandbox.argv(["true"])), sandbox.environment(environ))


def _start_problem(argv: list[str], env: Mapping[str, str] | None = None) -> str | None:
    program = argv[0]
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
            timeout=PROBE_TIMEOUT_SECONDS, env=None if env is None else dict(env),
        )  # fmt: skip
    except FileNotFoundError:
        return "is not installed" if os.sep not in program else "does not exist"
    except OSError as error:
        return f"cannot be started: {(error.strerror or str(error)).lower()}"
    except subprocess.TimeoutExpired:
        return f"did not start a sandbox within {PROBE_TIMEOUT_SECONDS} s"
    if done.returncode == 0:
        return None
    said = " ".join(done.stderr.split())[:200] or f"exit code {done.returncode}"
    return f"cannot start a sandbox ({said})"
