"""A store on a file system that is full: the installed command says so, naming the store, and a
`wrighty init` that cannot finish leaves nothing behind. Real small tmpfs mounts (root only)."""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.test_executable import run

STORE = Path(".wrighty") / "wrighty.db"


@contextmanager
def small_file_system(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path``; skips (saying why) where it cannot be mounted."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs at {path}: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def fill(directory: Path) -> None:
    """Take every byte left on the file system."""
    descriptor = os.open(directory / "filler", os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        while True:
            os.write(descriptor, bytes(4096))
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
    finally:
        os.close(descriptor)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_an_init_that_runs_out_of_space_leaves_nothing_behind(tmp_path: Path) -> None:
    # 64 KiB cannot hold a new store (about 80 KiB)
    with small_file_system(tmp_path / "small", "64k") as project:
        line = one_line(run(project, "init"))
        assert line.startswith(f"wrighty: {project / STORE}: ")
        assert "no space left on device" in line
        assert list(project.iterdir()) == []  # no wrighty.db, -wal, -shm, nor .wrighty/


@pytest.mark.parametrize("held_open", [False, True], ids=["closed", "open-elsewhere"])
def test_commands_on_a_full_disk_say_no_space_left(tmp_path: Path, held_open: bool) -> None:
    with small_file_system(tmp_path / "full", "512k") as project:
        assert run(project, "init").returncode == 0
        assert run(project, "create", "--title", "t", "--body", "b").returncode == 0
        commands = [["create", "--title", "t2", "--body", "b"], ["queue", "1"]]
        other = None
        if held_open:
            # A worker has the store open: its -shm exists, reads work, writes fail (SQLITE_FULL)
            other = sqlite3.connect(project / STORE)
            other.execute("SELECT count(*) FROM items").fetchone()
        else:
            commands.append(["list"])  # even reading needs SQLite's -shm file, which cannot grow
        fill(project)
        try:
            for command in commands:
                line = one_line(run(project, *command))
                assert line.startswith(f"wrighty: {project / STORE}: no space left on device")
        finally:
            if other is not None:
                other.close()
