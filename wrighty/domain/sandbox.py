"""The bubblewrap command line that runs an agent or a check in a sandbox (docs/sandbox.md).

Pure: from the profile, the places (workspace, project, home, git's folders...) and what
exists on disk (asked through ``kind_of``), the argv that starts bubblewrap and the
environment the program gets. Nothing here touches the disk or starts anything.

The mounts follow one rule: the most specific path decides. Every mount is sorted by its
depth, so a path inside another is mounted after it, over it; on the same path, hiding beats
read-only beats writable. The whole system is read-only (``--ro-bind / /``), /tmp is a fresh
tmpfs, and then, in depth order: the project and the home folder shown read-only (they may
live under /tmp), wrighty's state folder hidden (the store, its logs, other items'
worktrees), the workspace writable, git's shared files read-only, the secrets hidden.

The environment is not given with ``--clearenv`` and ``--setenv``: values on a command line
are visible to every process on the machine (``ps``). wrighty hands bubblewrap an
environment already filtered to the allowed names instead, which bubblewrap passes on.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

# What is at a path on the disk: a folder, a file (anything else that is not a folder), or
# nothing.
PathKind = Literal["dir", "file"] | None

# The person's secrets under the home folder, hidden whatever the profile says.
HOME_SECRETS = (
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".gnupg",
    ".docker",
    ".kube",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".config/gh",
    ".config/wrighty",  # wrighty's own: the installation id, a person's console tokens
)

# Variables every sandboxed program gets (when the worker has them); LC_* too.
BASE_VARIABLES = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
)
_LOCALE_PREFIX = "LC_"


@dataclass(frozen=True)
class Profile:
    """A bubblewrap profile (wrighty.json's ``sandbox``)."""

    program: str = "bwrap"
    network: Literal["host", "none"] = "host"
    hide: tuple[str, ...] = ()  # absolute, or ~/...
    writable: tuple[str, ...] = ()
    env: tuple[str, ...] = ()  # more variable names passed in


@dataclass(frozen=True)
class SandboxStatus:
    """An agent's sandbox as `wrighty agents` tells it: the setting that chose it, its
    profile, and whether it starts on this machine."""

    setting: str  # worker.sandbox, agents.<name>.sandbox
    profile: Profile
    problem: str | None  # why it cannot start here, after the program's name; None: it starts
    checked: bool = False  # started with every mount of a run (`wrighty agents --check`)

    def describe(self) -> str:
        return f"bubblewrap (network {self.profile.network})"


@dataclass(frozen=True)
class GitPlaces:
    """git's folders around a workspace: what a commit in it needs, and what it must not
    change."""

    common_dir: PurePosixPath  # the project's .git: config, hooks, objects, refs
    # worktree mode: the worktree's own admin folder (.git/worktrees/<name>: HEAD, index)
    admin_dir: PurePosixPath | None = None
    branch: str | None = None  # the worktree's branch, without refs/heads/


@dataclass(frozen=True)
class Places:
    workspace: PurePosixPath
    project_root: PurePosixPath
    state_dir: PurePosixPath  # .wrighty: the store, logs, worktrees
    home: PurePosixPath
    git: GitPlaces | None = None
    read_only: tuple[PurePosixPath, ...] = ()  # wrighty.json
    hidden: tuple[PurePosixPath, ...] = ()  # a store file elsewhere
    writable: tuple[PurePosixPath, ...] = ()  # the vendor's state (worker/preflight.vendor_state)


class _Mount(enum.IntEnum):
    """On the same path, the higher wins (it is mounted last)."""

    SHOW = 0  # read-only, where a tmpfs above (/tmp) would hide it
    WRITABLE = 1
    READ_ONLY = 2
    HIDDEN = 3


@dataclass(frozen=True)
class Sandbox:
    """How to start a program in the sandbox: the argv before the program's own, and the
    variables it may have."""

    prefix: tuple[str, ...]
    allowed: frozenset[str] = field(default_factory=frozenset)

    def argv(self, command: Iterable[str]) -> tuple[str, ...]:
        return (*self.prefix, "--", *command)

    def environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        """``environ`` with only the allowed variables (and the locale's LC_*)."""
        return {
            name: value
            for name, value in environ.items()
            if name in self.allowed or name.startswith(_LOCALE_PREFIX)
        }


def expand(path: str, home: PurePosixPath) -> PurePosixPath:
    """A profile's path: ``~/x`` is in the home folder."""
    return home / path[2:] if path.startswith("~/") else PurePosixPath(path)


def _depth(path: PurePosixPath) -> int:
    return len(path.parts)


def _git_mounts(git: GitPlaces, workspace: PurePosixPath) -> list[tuple[PurePosixPath, _Mount]]:
    """What a commit in the workspace needs writable, and what stays read-only.

    Bind mounts work on whole files and folders: a ref is updated by writing
    ``<ref>.lock`` beside it and renaming it, so the folder that holds the branch's ref
    must be writable, and with it every branch in that folder (``wrighty/`` holds every
    item's branch). The project's own branches (refs/heads/main) stay read-only, as do
    config, hooks, info and packed-refs. objects/ is writable: a commit adds objects.
    """
    common = git.common_dir
    mounts: list[tuple[PurePosixPath, _Mount]] = []
    if git.admin_dir is not None:
        mounts.append((git.admin_dir, _Mount.WRITABLE))
        mounts.append((common / "objects", _Mount.WRITABLE))
        if git.branch is not None:
            folder = PurePosixPath(git.branch).parent
            if folder != PurePosixPath("."):  # a branch at the top: refs/heads/ stays read-only
                mounts.append((common / "refs" / "heads" / folder, _Mount.WRITABLE))
                mounts.append((common / "logs" / "refs" / "heads" / folder, _Mount.WRITABLE))
    for shared in ("config", "hooks", "info", "packed-refs"):
        mounts.append((common / shared, _Mount.READ_ONLY))
    if not _inside(common, workspace):
        mounts.append((common, _Mount.SHOW))
    return mounts


def _inside(path: PurePosixPath, folder: PurePosixPath) -> bool:
    return path == folder or folder in path.parents


def bubblewrap(
    profile: Profile,
    places: Places,
    kind_of: Callable[[PurePosixPath], PathKind],
    *,
    passed: Iterable[str] = (),
) -> Sandbox:
    """The sandbox of one program: ``passed`` names the variables its caller gives it (its
    agent's env, the run's own); ``kind_of`` says what is on the disk at a path."""
    home = places.home
    mounts: list[tuple[PurePosixPath, _Mount]] = [
        (places.project_root, _Mount.SHOW),
        (home, _Mount.SHOW),
        (places.state_dir, _Mount.HIDDEN),
        (places.workspace, _Mount.WRITABLE),
        *((path, _Mount.WRITABLE) for path in places.writable),
        *((expand(path, home), _Mount.WRITABLE) for path in profile.writable),
        *((path, _Mount.READ_ONLY) for path in places.read_only),
        *((home / secret, _Mount.HIDDEN) for secret in HOME_SECRETS),
        *((path, _Mount.HIDDEN) for path in places.hidden),
        *((expand(path, home), _Mount.HIDDEN) for path in profile.hide),
    ]
    if places.git is not None:
        mounts += _git_mounts(places.git, places.workspace)
    options: list[str] = [profile.program, "--ro-bind", "/", "/", "--dev", "/dev"]
    options += ["--proc", "/proc", "--tmpfs", "/tmp"]  # noqa: S108 (the sandbox's own /tmp)
    seen: set[PurePosixPath] = set()
    hidden_folders: list[str] = []
    for path, mount in sorted(mounts, key=lambda pair: (_depth(pair[0]), -pair[1])):
        if path in seen or path == PurePosixPath("/"):
            continue  # the same path again: the first (the strongest) decides
        seen.add(path)
        kind = kind_of(path)
        options += _mount_options(path, mount, kind)
        if mount is _Mount.HIDDEN and kind == "dir":
            hidden_folders.append(str(path))
    # Made read-only last: a mount inside one (a worktree in .wrighty) needs its mount point.
    for folder in hidden_folders:
        options += ["--remount-ro", folder]
    options += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
    if profile.network == "none":
        options.append("--unshare-net")
    options += ["--chdir", str(places.workspace)]
    allowed = frozenset((*BASE_VARIABLES, *profile.env, *passed))
    return Sandbox(tuple(options), allowed)


def _mount_options(path: PurePosixPath, mount: _Mount, kind: PathKind) -> list[str]:
    """The options of one mount; none for a path that does not exist (nothing to hide, and
    bubblewrap cannot bind it)."""
    text = str(path)
    if kind is None:
        return []
    if mount is _Mount.HIDDEN:
        if kind == "dir":
            return ["--tmpfs", text]
        return ["--ro-bind", "/dev/null", text]
    if mount is _Mount.WRITABLE:
        return ["--bind", text, text]
    return ["--ro-bind", text, text]
