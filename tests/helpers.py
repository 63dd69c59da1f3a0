from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest


def snapshot(directory: Path) -> dict[str, tuple[int, bytes]]:
    """Every file and directory under ``directory`` with its mode and bytes: 'nothing changed'."""
    state: dict[str, tuple[int, bytes]] = {}
    for path in sorted(directory.rglob("*")):
        mode = stat.S_IMODE(path.lstat().st_mode)
        content = path.read_bytes() if path.is_file() else b""
        state[str(path.relative_to(directory))] = (mode, content)
    return state


T = TypeVar("T")


def poll(condition: Callable[[], T], *, timeout: float, every: float = 0.02) -> T | None:
    """``condition``'s first truthy answer, asked every ``every`` seconds until ``timeout``
    seconds have passed; None when it never gave one. For a test that asks *whether*
    something happens in time; one that needs it to happen calls `wait_for`."""
    deadline = time.monotonic() + timeout
    while True:
        answer = condition()
        if answer:
            return answer
        if time.monotonic() >= deadline:
            return None
        time.sleep(every)


def wait_for(condition: Callable[[], T], *, timeout: float, what: str, every: float = 0.02) -> T:
    """Wait until ``condition`` gives a truthy answer, and return it; fail naming ``what`` when
    ``timeout`` seconds pass first. The one way a test waits for something (docs/testing.md):
    the deadline only ends a test that went wrong, so make it generous; never sleep instead."""
    answer = poll(condition, timeout=timeout, every=every)
    if not answer:
        raise AssertionError(f"waited {timeout:g} s for {what}, in vain")
    return answer


def file_appears(path: Path, *, timeout: float = 30.0) -> None:
    """Wait until ``path`` exists."""
    wait_for(path.exists, timeout=timeout, what=f"{path} to appear")


def read_pid(path: Path, *, timeout: float = 30.0) -> int:
    """The pid a process wrote to ``path``, once the file holds a whole number."""

    def written() -> int | None:
        text = path.read_text().strip() if path.exists() else ""
        return int(text) if text.isdigit() else None

    return wait_for(written, timeout=timeout, what=f"a pid in {path}")


def process_ended(pid: int, within: float = 10.0) -> bool:
    """Whether ``pid`` ends within ``within`` seconds (an unreaped zombie has ended)."""

    def ended() -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    return poll(ended, timeout=within) is not None


def installed_wrighty() -> str:
    """The `wrighty` command that `pip install` made (beside this interpreter, or on PATH)."""
    beside_python = Path(sys.executable).parent / "wrighty"
    found = str(beside_python) if beside_python.exists() else shutil.which("wrighty")
    if found is None:
        pytest.fail("the wrighty executable is not installed; run `pip install -e '.[test]'`")
    return found


def run_installed(
    cwd: Path,
    *args: str | bytes,
    stdin: str | bytes = "",
    text: bool = True,
    prefix: Sequence[str] = (),
    timeout: float = 60,
    command: str | None = None,
) -> subprocess.CompletedProcess[Any]:
    """Run the installed command as a user would: in ``cwd``, no ambient WRIGHTY_ variable,
    and wrighty's commands on PATH, as in an activated virtual environment. ``command``, when
    given, runs in place of the executable (the fork server's shim, `fork_server`)."""
    if command is None:
        command = installed_wrighty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    env["PATH"] = f"{Path(installed_wrighty()).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        [*prefix, command, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=text,
        env=env,
        timeout=timeout,
        check=False,
        umask=0o022,
    )


@contextmanager
def fork_server(folder: Path) -> Iterator[Path]:
    """A `wrighty` that starts without an interpreter start-up of its own: the shim of the fork
    server (tests/docs/zygote.py), which has imported wrighty once and forks each command's
    process from there, running the executable's entry point with the shim's argv, folder,
    environment and standard streams. Its path; the server and whatever it started end after."""
    from tests.docs.zygote import SHIM

    root = Path(__file__).resolve().parents[1]
    socket_path = str(folder / "socket")
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.docs.zygote", socket_path],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
        umask=0o022,  # as run_installed's commands have
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline() == "ready\n"
        shim = folder / "bin" / "wrighty"
        shim.parent.mkdir()
        shim.write_text(SHIM.format(python=sys.executable, socket_path=socket_path))
        shim.chmod(0o700)
        yield shim
    finally:
        # The server and every command it started (one stopped by a timeout may be left).
        family = psutil.Process(server.pid).children(recursive=True)
        server.kill()
        server.wait()
        for process in family:
            with suppress(psutil.NoSuchProcess):
                process.kill()


def git_env() -> dict[str, str]:
    """The environment a test's own git commands run in: no global or system git settings (the
    test repository's identity alone), no WRIGHTY_ or GIT_ variables from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WRIGHTY_", "GIT_"))}
    return {**env, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``'s standard output, stripped (CalledProcessError if it fails)."""
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=git_env()
    )
    return done.stdout.strip()


def git_repo(root: Path, *, name: str = "Test", email: str = "test@example.com") -> Path:
    """A git repository at ``root`` (made if missing) on branch main, with that identity and one
    commit (a README)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", name)
    git(root, "config", "user.email", email)
    (root / "README").write_text("hello\n")
    git(root, "add", "README")
    git(root, "commit", "-q", "-m", "first")
    return root
