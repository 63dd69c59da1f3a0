"""A project on a file system mounted read-only: every command says "read-only file system",
naming the store, never "permission denied ... chmod". Real tmpfs mounts, remounted read-only
(root only)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.test_executable import run
from tests.integration.test_disk_full_store import STORE, one_line, small_file_system

COMMANDS = [
    ("list",),
    ("status",),
    ("show", "1"),
    ("create", "--title", "t2", "--body", "b"),
    ("queue", "1"),
    ("worker", "start", "--once"),
    ("init",),
]


def remount(path: Path, how: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{how}", str(path)], check=True)


def test_every_command_on_a_read_only_mount_says_so(tmp_path: Path) -> None:
    with small_file_system(tmp_path / "ro", "4m") as project:
        (project / ".git").mkdir()
        assert run(project, "init").returncode == 0
        assert run(project, "create", "--title", "t", "--body", "b").returncode == 0
        remount(project, "ro")
        try:
            lines = {command: one_line(run(project, *command)) for command in COMMANDS}
        finally:
            remount(project, "rw")  # as it was mounted, for the fixture to unmount
    expected = f"wrighty: {project / STORE}: read-only file system"
    wrong = {c: line for c, line in lines.items() if not line.startswith(expected)}
    assert wrong == {}
    assert not any("permission denied" in line or "chmod" in line for line in lines.values())


def test_init_on_a_read_only_mount_says_so(tmp_path: Path) -> None:
    with small_file_system(tmp_path / "ro", "4m") as project:
        remount(project, "ro")
        try:
            line = one_line(run(project, "init"))
        finally:
            remount(project, "rw")
        assert "read-only file system" in line
        assert list(project.iterdir()) == []
