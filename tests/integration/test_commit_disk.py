"""The commit step (wrighty/workproduct/commit.py) when git cannot write its objects: a full disk (a
real small tmpfs) and a read-only object store (a read-only bind mount): the item's reason
says, in wrighty's words, which step failed and what it left, then git's own last line
(docs/work-product.md#commits). Root only: mounting needs it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import git, git_env
from tests.integration.test_commit_step import ITEM
from tests.integration.test_disk_full_store import fill, small_file_system
from wrighty.domain.work_product import Completion, Ending
from wrighty.workproduct.commit import complete


@pytest.fixture(autouse=True)
def plain_git(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in git_env().items():
        monkeypatch.setenv(name, value)


def repository(root: Path) -> Path:
    root.mkdir()
    for args in (("init", "-q"), ("config", "user.name", "T"),
                 ("config", "user.email", "t@example.invalid"),
                 ("commit", "-q", "--allow-empty", "-m", "start")):  # fmt: skip
        git(root, *args)
    return root


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` read-only for everyone, root too (a read-only bind mount of itself)."""
    for args in (["--bind", str(folder), str(folder)], ["-o", "remount,bind,ro", str(folder)]):
        mounted = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
        if mounted.returncode != 0:
            pytest.skip(f"cannot mount {folder} read-only: {mounted.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_full_disk_while_staging_says_nothing_was_staged_and_gits_line(tmp_path: Path) -> None:
    with small_file_system(tmp_path / "disk", "1m") as disk:
        repo = repository(disk / "repo")
        (repo / "answer.txt").write_bytes(os.urandom(64 * 1024))
        fill(disk)
        done = complete(repo, Completion(), item=ITEM, run_id="run-1")
        status = git(repo, "status", "--porcelain")
        (disk / "filler").unlink()
    assert done.ending is Ending.FAILED
    assert done.why is not None
    said, _, gits = done.why.partition(": ")
    assert said == "git could not stage the changes (git add -A; nothing was staged)"
    assert gits  # git's own last line follows, as git said it
    assert status == "?? answer.txt"  # as the docs say: nothing staged, the file still there


def test_a_read_only_object_store_says_nothing_was_staged(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    repo = repository(tmp_path / "repo")
    (repo / "answer.txt").write_text("42\n")
    with read_only(repo / ".git" / "objects"):
        done = complete(repo, Completion(), item=ITEM, run_id="run-1")
    assert done.ending is Ending.FAILED
    assert done.why is not None
    assert done.why.startswith("git could not stage the changes (git add -A; nothing was staged): ")
    assert git(repo, "status", "--porcelain") == "?? answer.txt"
