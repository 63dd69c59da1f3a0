"""git, as wrighty runs it on an item's workspace or the project (docs/work-product.md):
an argv with no shell, no prompt for credentials, no pager, no editor, no colour, git's
messages in English, a time limit, and the answer as text; and no program that the
repository's config, attributes or hooks folder names (domain/git_programs.py,
docs/work-product.md#what-git-runs), but the hooks of a command that asks for them. git
runs supervised like an agent (supervisor/child.py): at its time limit, at its end, or at the
end of the wrighty process, nothing it started is left behind. Every caller goes through
``run_git``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wrighty.domain.git_programs import listing, overrides, variables
from wrighty.domain.text import printable_line
from wrighty.supervisor.child import TimedOut, run_to_end

# git commands wrighty runs touch one repository on this machine; a network one (a push) has
# its own, longer limit.
LOCAL_SECONDS = 60.0
# How much of git's last line of stderr a message shows.
_WHY_CHARS = 300
# The command that lists the config, every scope, to find the settings that name a program;
# it reads files and runs nothing, so it runs as it is.
_LISTING = ("config", "--list", "--show-scope", "-z")


class GitError(Exception):
    """git could not be run, or ended other than with 0: the message says which command and
    git's own last line, neutralised."""


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def why(self) -> str:
        """git's last line of stderr (or stdout), one neutralised line."""
        lines = (self.stderr.strip() or self.stdout.strip()).splitlines()
        last = lines[-1] if lines else f"git exited with {self.returncode}"
        return printable_line(last)[:_WHY_CHARS]


def identity(name: str | None, email: str | None) -> dict[str, str]:
    """The variables that make ``name`` and ``email`` the author and committer of the commits
    git makes (completion.author); none when either is None: git's own identity."""
    if name is None or email is None:
        return {}
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


def git_program() -> str | None:
    """The git on this process's PATH (None: none)."""
    return shutil.which("git")


def run_git(
    repo: Path,
    *args: str,
    input_text: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = LOCAL_SECONDS,
    hooks: bool = False,
) -> GitResult:
    """``git -C repo ARGS`` and its answer (GitError when git is missing or timed out; a
    non-zero exit is the result's, for the caller to judge). ``env``: variables added.
    ``hooks``: the repository's hooks run (completion.hooks run, for wrighty's own commit,
    merge and push only); no other program the repository names ever does. When the config
    cannot be read, git's answer to that is the result and the command is not run."""
    program = git_program()
    if program is None:
        raise GitError("git is not installed (it is needed for workspaceMode worktree)")
    environ = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_EDITOR": ":",  # git runs no editor at all for ":"
        "GIT_SEQUENCE_EDITOR": ":",
        "LC_ALL": "C",
        "GIT_OPTIONAL_LOCKS": "0",
        **(env or {}),
    }
    if args != _LISTING:
        listed = run_git(repo, *_LISTING, env=env, timeout=timeout)
        if not listed.ok:
            return listed
        settings = listing(listed.stdout)
        environ = _with_settings(environ, overrides(settings, hooks=hooks))
        for name, value in variables(settings).items():
            environ.setdefault(name, value)  # wrighty's own environment's value stands
    try:
        done = run_to_end(
            [program, "-C", str(repo), "-c", "color.ui=false", *args],
            stdin=None if input_text is None else input_text.encode(),
            env=environ,
            timeout=timeout,
        )
    except TimedOut:
        raise GitError(f"git {_command(args)} took longer than {timeout:g}s") from None
    except OSError as error:
        raise GitError(f"cannot run git: {error.strerror or error}") from None
    # Decoded as git wrote it: a carriage return stays one (text mode would make it a newline).
    return GitResult(done.returncode, _decoded(done.stdout), _decoded(done.stderr))


def besides_nested(repo: Path) -> tuple[str, ...]:
    """Pathspecs that keep a `git add` in ``repo`` out of the nested repositories its index
    holds (gitlinks): git would run `git status` in each, under that repository's own config,
    whose drivers are named by whoever made it (docs/work-product.md#what-git-runs). A nested
    repository's new commits are then not recorded; its files never were."""
    listed = run_git(repo, "ls-files", "--stage", "-z")
    if not listed.ok:
        return ()
    return tuple(
        f":(exclude,literal){entry.partition(chr(9))[2]}"
        for entry in listed.stdout.split("\0")
        if entry.startswith("160000 ")
    )


def _with_settings(environ: dict[str, str], settings: list[tuple[str, str]]) -> dict[str, str]:
    """``environ`` with ``settings`` given to git (and the git commands it starts) as
    GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n, after any the environment already gives: unlike
    ``-c NAME=VALUE``, a name with "=" in it (a driver's) cannot be misread."""
    try:
        first = max(0, int(environ.get("GIT_CONFIG_COUNT", "0")))
    except ValueError:
        first = 0
    given = dict(environ)
    for number, (key, value) in enumerate(settings, start=first):
        given[f"GIT_CONFIG_KEY_{number}"] = key
        given[f"GIT_CONFIG_VALUE_{number}"] = value
    given["GIT_CONFIG_COUNT"] = str(first + len(settings))
    return given


def _command(args: tuple[str, ...], *, words: int = 1) -> str:
    """The git command ``args`` runs, as a message names it (its first ``words``), without the
    settings (``-c NAME=VALUE``) before it."""
    while len(args) >= 2 and args[0] == "-c":
        args = args[2:]
    return " ".join(args[:words])


def _decoded(output: bytes) -> str:
    return output.decode("utf-8", errors="replace")


def git_ok(
    repo: Path,
    *args: str,
    input_text: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = LOCAL_SECONDS,
    hooks: bool = False,
) -> str:
    """``run_git``'s stdout when git ended with 0; GitError saying why otherwise."""
    result = run_git(repo, *args, input_text=input_text, env=env, timeout=timeout, hooks=hooks)
    if not result.ok:
        raise GitError(f"git {_command(args, words=2)}: {result.why()}")
    return result.stdout
