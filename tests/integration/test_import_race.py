"""Several `wrighty import` of one file at once: each section becomes one item, and every
import exits 0, reporting the sections another import made first as unchanged
(docs/scheduling.md#importing-a-markdown-file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import postgres_schema
from wrighty.domain.importing import parse_markdown
from wrighty.domain.model import Item
from wrighty.services.importing import MarkdownSource, import_sections
from wrighty.store.port import Store

SECTIONS = 60
IMPORTS = 4


def _race_file() -> str:
    """SECTIONS sections, every other one after the one before it."""
    return "".join(
        f"## Task {n}\n\n"
        + (f"```wrighty\nafter: task-{n - 1}\n```\n\n" if n % 2 else "")
        + f"Do thing {n}.\n\n"
        for n in range(SECTIONS)
    )


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}


@contextmanager
def _project(tmp_path: Path, backend: str) -> Iterator[Path]:
    def init(*store: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "wrighty", "init", *store],
            cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    (tmp_path / "race.md").write_text(_race_file())
    if backend == "sqlite":
        init()
        yield tmp_path
        return
    with postgres_schema() as url:
        init("--store", url)
        yield tmp_path


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_imports_of_one_file_at_once_make_each_item_once_and_all_succeed(
    tmp_path: Path, backend: str
) -> None:
    with _project(tmp_path, backend) as root:
        command = [sys.executable, "-m", "wrighty", "import", "race.md", "--json"]
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
        racers = [subprocess.Popen(command, cwd=root, env=_env(), **pipes) for _ in range(IMPORTS)]
        finished = [racer.communicate(timeout=120) for racer in racers]
        for racer, (_, err) in zip(racers, finished, strict=True):
            assert (racer.returncode, err) == (0, ""), err
        reports = [json.loads(out) for out, _ in finished]
        for report in reports:
            assert report["created"] + report["unchanged"] == SECTIONS
            assert report["changed"] == 0
        assert sum(report["created"] for report in reports) == SECTIONS
        # every import names the same item for each section
        ids = {tuple(s["item_id"] for s in report["sections"]) for report in reports}
        assert len(ids) == 1
        listed = subprocess.run(
            [sys.executable, "-m", "wrighty", "list", "--json"],
            cwd=root, env=_env(), capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        items = json.loads(listed.stdout)
        assert sorted(item["title"] for item in items) == sorted(
            f"Task {n}" for n in range(SECTIONS)
        )


class _ReadBeforeTheOtherImport:
    """A store whose first find_imported answers as it stood before another import of the file
    wrote its items: the moment between an import's read and its writes, made certain."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._reads = 0

    def find_imported(self, keys: Collection[str]) -> dict[str, Item]:
        self._reads += 1
        return {} if self._reads == 1 else self._store.find_imported(keys)

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)


def test_an_import_that_lost_the_race_reports_the_sections_as_unchanged(store: Store) -> None:
    sections = parse_markdown(_race_file())
    now = datetime(2025, 1, 1, tzinfo=UTC)
    source = MarkdownSource("race.md", tuple(sections))
    first = import_sections(store, source, agents={"claude"}, queue=False, dry_run=False, now=now)
    late = _ReadBeforeTheOtherImport(store)
    second = import_sections(
        late,  # type: ignore[arg-type]
        source,
        agents={"claude"},
        queue=False,
        dry_run=False,
        now=now,
    )
    assert [r.outcome for r in first] == ["created"] * SECTIONS
    assert [r.outcome for r in second] == ["unchanged"] * SECTIONS
    assert [r.item_id for r in second] == [r.item_id for r in first]
    assert len(store.list_items()) == SECTIONS
