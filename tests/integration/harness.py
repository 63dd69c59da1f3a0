"""The project the worker's in-process integration tests share: a config on disk, its SQLite
store, and a `Worker` run in the test's own process (real agent processes), its events kept
for the test to read. Tests that run `wrighty worker start` as a process of its own use
`worker_process.py` instead."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from wrighty.config import LoadedConfig, check_config_text
from wrighty.domain.model import Item
from wrighty.store.port import Store
from wrighty.store.sqlite import SqliteStore
from wrighty.worker.loop import Worker, WorkerOptions


@dataclass
class WorkerProject:
    root: Path
    store: Store
    loaded: LoadedConfig
    events: list[dict[str, Any]] = field(default_factory=list)
    installation_id: str = "inst-test"
    # The worker's clock; None: the system's.
    now: Callable[[], datetime] | None = None

    def worker(self, installation_id: str | None = None) -> Worker:
        """A worker on this project as ``installation_id`` (the project's own by default),
        whose events go to ``events``."""
        clock: dict[str, Any] = {} if self.now is None else {"now": self.now}
        return Worker(
            self.store,
            self.loaded,
            installation_id=installation_id or self.installation_id,
            output=self.events.append,
            **clock,
        )

    def pass_once(
        self, *, installation_id: str | None = None, stop_grace_seconds: float = 1, **options: Any
    ) -> None:
        """One worker pass (`--once`)."""
        worker = self.worker(installation_id)
        worker.run(WorkerOptions(once=True, stop_grace_seconds=stop_grace_seconds, **options))

    def only_item(self) -> Item:
        [item] = self.store.list_items()
        return item

    def get(self, item_id: int) -> Item:
        item = self.store.get_item(item_id)
        assert item is not None
        return item

    def named(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == name]

    def names(self) -> list[str]:
        return [event["event"] for event in self.events]


P = TypeVar("P", bound=WorkerProject)


def open_project(kind: type[P], root: Path, document: dict[str, Any], **fields: Any) -> P:
    """A project of ``kind`` at ``root`` whose wrighty.json is ``document`` (which must check
    clean), with its store opened: the project's own SQLite file, or the PostgreSQL store the
    document names (its tables made)."""
    config, problems = check_config_text(json.dumps(document))
    assert problems == [], problems
    assert config is not None
    root.mkdir(parents=True, exist_ok=True)
    path = root / "wrighty.json"
    path.write_text(json.dumps(document))
    url = document.get("store", {}).get("url")
    store: Store = SqliteStore.open(root / ".wrighty" / "wrighty.db")
    if url is not None:
        store.close()  # the project's own file, made as before, then the store it names
        from wrighty.store.postgres import PostgresStore

        store = PostgresStore.open(url, create=True)
    return kind(root, store, LoadedConfig(path, config), **fields)
