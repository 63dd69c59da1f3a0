"""The worker's periodic sync of the sources (docs/sources.md): a thread of its own that syncs
each tracker when it is due, `sources.pollSeconds` after its last attempt (longer while it
fails, never before a spent rate limit's reset), through the same `sync_source` the command
runs, so that a labelled issue becomes a queued item without anyone typing a command.

A sync's failure is said once (`source-failed`), until the source syncs again (`source-synced`
says each sync that changed items); the source's state keeps the error for `wrighty sources`.
Nothing a source does stops the worker: an error of the store or the machine is said and the
thread tries again at the next turn."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from wrighty.config import WrightyConfig, sources_of
from wrighty.config.translate import pull_request_of
from wrighty.domain.sources import SourceSettings, SourceState, next_sync_at
from wrighty.domain.worker_events import Emit, WorkerEvent
from wrighty.errors import WrightyError
from wrighty.services.conversation import Act, Conversation, TalkReport, Viewer, conversation_of
from wrighty.services.pulls import pull_watch
from wrighty.services.sources import sync_source
from wrighty.store.port import Store

MIN_WAIT_SECONDS = 0.05


class SourceSync:
    """Syncs ``sources`` into ``store`` in a thread, each when due; ``woke`` is called after a
    sync that created or changed items (the claim loop looks again at once)."""

    def __init__(
        self,
        store: Store,
        sources: tuple[SourceSettings, ...],
        *,
        poll_seconds: float,
        default_agent: str,
        now: Callable[[], datetime],
        emit: Emit,
        woke: Callable[[], None],
        talk: Callable[[SourceSettings], Conversation] | None = None,
    ) -> None:
        self._store = store
        self._talk = talk  # a source's conversation (its status comments, answers, pulls)
        self._conversations: dict[str, Conversation] = {}
        self._sources = sources
        self._poll = poll_seconds
        self._default_agent = default_agent
        self._now = now
        self._emit = emit
        self._woke = woke
        self._said: dict[str, str] = {}  # each failing source's error, said once
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sources", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, *, timeout: float) -> None:
        """Ask the thread to stop, and wait for a sync under way to end (at most ``timeout``)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._stop.wait(self.turn())

    def turn(self) -> float:
        """Sync every source that is due; the seconds until the next one is."""
        wait = self._poll
        for settings in self._sources:
            if self._stop.is_set():
                break
            try:
                state = self._store.get_source(settings.name) or SourceState(settings.name)
            except (WrightyError, OSError) as error:
                self._failed(settings, str(error))
                continue
            due = next_sync_at(state, self._poll)
            now = self._now()
            if due is not None and due > now:
                wait = min(wait, (due - now).total_seconds())
                continue
            self._sync(settings)
        return max(wait, MIN_WAIT_SECONDS)

    def _sync(self, settings: SourceSettings) -> None:
        """The source's sync (its new items said, and the claim loop woken, at once), then its
        conversation."""
        try:
            if settings.labels:  # (a pull requests' watch has none: it lists no issues)
                report = sync_source(
                    self._store, settings, environ=os.environ, now=self._now(),
                    default_agent=self._default_agent,
                )  # fmt: skip
                if report.created or report.updated or report.cancelled:
                    self._emit(
                        WorkerEvent.SOURCE_SYNCED, source=settings.name,
                        created=len(report.created), updated=len(report.updated),
                        cancelled=len(report.cancelled),
                    )  # fmt: skip
                    self._woke()
            talked = self._conversation(settings)
        except (WrightyError, OSError) as error:
            self._failed(settings, str(error))
            return
        self._said.pop(settings.name, None)
        if talked is not None and (talked.answered or talked.pulls):
            self._emit(
                WorkerEvent.SOURCE_ANSWERED, source=settings.name, answered=talked.answered,
                pulls=talked.pulls,
            )  # fmt: skip
            self._woke()

    def _conversation(self, settings: SourceSettings) -> TalkReport | None:
        """One pass of the source's conversation, when it has one."""
        if self._talk is None:
            return None
        conversation = self._conversations.get(settings.name)
        if conversation is None:
            conversation = self._conversations[settings.name] = self._talk(settings)
        return conversation.turn(now=self._now())

    def _failed(self, settings: SourceSettings, error: str) -> None:
        if self._said.get(settings.name) == error:
            return
        self._said[settings.name] = error
        self._emit(WorkerEvent.SOURCE_FAILED, source=settings.name, error=error)


def source_sync(
    config: WrightyConfig,
    store: Store,
    now: Callable[[], datetime],
    emit: Emit,
    *,
    woke: Callable[[], None],
    wanted: bool = True,
    act: Act | None = None,
    root: Path | None = None,
    installation_id: str = "",
) -> SourceSync | None:
    """The worker's periodic sync of wrighty.json's sources, started, with their
    conversations (their status comments, the answers ``act`` acts on, the pull requests of
    completion.integrate github-pr); None without any, or when not ``wanted`` (a worker
    started for one item syncs nothing)."""
    sources = sources_of(config)
    place = pull_request_of(config)
    if place is not None and all(source.repo != place.repo for source in sources):
        sources = (*sources, pull_watch(place))
    if not sources or not wanted:
        return None
    talk = None
    if root is not None:
        viewer = Viewer(store, root, installation_id, config.worker.default_agent,
                        config.serve.public_url)  # fmt: skip

        def talk(settings: SourceSettings) -> Conversation:
            return conversation_of(
                store, settings, os.environ, view_of=viewer, act=act, clock=time.monotonic
            )

    syncing = SourceSync(
        store, sources, poll_seconds=config.sources.poll_seconds,
        default_agent=config.worker.default_agent, now=now, emit=emit, woke=woke, talk=talk,
    )  # fmt: skip
    syncing.start()
    return syncing


__all__ = ["Act", "SourceSync", "source_sync"]
