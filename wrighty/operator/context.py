"""What every command needs: the config it runs under, the store, the clock.

The config module (pydantic and its models) is imported when a command first asks for the
config, so that a command that needs none (`--version`, `--help`) does not pay for it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from wrighty.domain.text import printable_line
from wrighty.domain.times import system_now
from wrighty.errors import ConfigError, UnreadableError
from wrighty.store import Store, StoreTarget, open_store, parse_store_url

if TYPE_CHECKING:
    from wrighty.config import LoadedConfig
    from wrighty.config.models import StoreSettings
    from wrighty.services.clock import StoreClock
    from wrighty.services.sandboxes import ChecksIn
    from wrighty.services.settings import ReadSettings

# Reads the read settings of the wrighty.json that the working directory and --config name
# without the config's models, where it vouches for the file; None where it does not.
QuickSettings = Callable[[Path, "Path | None"], "ReadSettings | None"]


# The clock every command reads; tests replace it to control time.
clock: Callable[[], datetime] = system_now

# How a polling command (`wrighty logs --follow`) waits; tests replace it to drive the polls.
sleep: Callable[[float], None] = time.sleep


@dataclass
class AppContext:
    """Global options, resolved lazily so that commands that need no store open none."""

    config_option: Path | None
    store_option: str | None
    cwd: Path = field(default_factory=Path.cwd)
    # The CLI's quick reader (cli/quick_config.py); without one, settings() loads the config.
    quick_settings: QuickSettings | None = None
    _loaded: LoadedConfig | None = None
    _settings: ReadSettings | None = None
    _clock: StoreClock | None = None

    def now(self) -> datetime:
        """The fleet's time: on PostgreSQL, ``clock`` corrected by this machine's offset from
        the database's clock, measured when the store was opened (docs/fleet.md)."""
        return clock() if self._clock is None else self._clock.now()

    @property
    def store_clock(self) -> StoreClock | None:
        """The clock measured against the store (None until a store was opened): a worker
        measures it again at each heartbeat."""
        return self._clock

    def sleep(self, seconds: float) -> None:
        sleep(seconds)

    def config(self) -> LoadedConfig:
        """The config file found (or named); without one, defaults if --store was given."""
        from wrighty.config import LoadedConfig, WrightyConfig, find_config, load_config

        if self._loaded is None:
            path = find_config(self.cwd, self.config_option)
            if path is not None:
                self._loaded = load_config(path)
            elif self.store_option is not None:
                self._loaded = LoadedConfig(path=None, config=WrightyConfig())
            else:
                raise ConfigError(
                    f"no wrighty.json in {self.cwd} or any parent directory; "
                    "run `wrighty init` here, or pass --config PATH"
                )
        return self._loaded

    def settings(self) -> ReadSettings:
        """What a read command takes from wrighty.json, as plain values: from the quick reader
        where it vouches for the file, else from the config (its errors as config()'s)."""
        settings = self._quick()
        if settings is None:
            from wrighty.services.settings import read_settings_of

            settings = self._settings = read_settings_of(self.config())
        return settings

    def _quick(self) -> ReadSettings | None:
        """The settings read without the config's models, once; None where the quick reader
        does not vouch for the file (or there is none, or the config is loaded already)."""
        if self._settings is None and self.quick_settings is not None and self._loaded is None:
            self._settings = self.quick_settings(self.cwd, self.config_option)
            self.quick_settings = None  # asked once
        return self._settings

    def secrets(self) -> tuple[str, ...]:
        """The values this command never shows (config.known_secrets): its environment's
        credential variables and every `agents.<name>.env` value of the wrighty.json found;
        with none found or readable, the environment's alone (docs/config.md#agents)."""
        import os

        from wrighty.config import WrightyConfig, known_secrets

        try:
            config = self.config().config
        except ConfigError:
            config = WrightyConfig()
        return known_secrets(config, os.environ)

    def check_sandboxes(self) -> ChecksIn:
        """Each agent's checks' sandbox (verify.sandbox, docs/sandbox.md), every configured
        one seen to start on this machine first: WrightyError (exit 2) when one cannot."""
        from wrighty.services.sandboxes import Around, CheckSandboxes

        loaded = self.config()
        target = self.store_target()
        around = Around(loaded.root, loaded.path, target.sqlite_path)
        return CheckSandboxes(loaded.config, around).of

    def store_target(self) -> StoreTarget:
        """The store the options and wrighty.json name, with wrighty.json's store settings
        (its pool, pooler and listen URL; their defaults without a wrighty.json)."""
        if self.store_option is not None:
            target = parse_store_url(self.store_option, base=self.cwd)
            if target.postgres_url is None:  # (SQLite has no such settings)
                return target
            try:
                settings = self.config().config.store
            except ConfigError:
                return target
            return _with_settings(target, settings)
        quick = self._quick()
        if quick is not None:
            return parse_store_url(quick.store_url, base=quick.root)
        loaded = self.config()
        target = parse_store_url(loaded.config.store.url, base=loaded.root)
        return _with_settings(target, loaded.config.store)

    @contextmanager
    def store(self, target: StoreTarget | None = None) -> Iterator[Store]:
        """The store at ``target``, by default the one the options and wrighty.json name;
        each row its reads left out because it does not read is told on stderr."""
        store = open_store(target or self.store_target())
        try:
            self.measure_clock(store)
            yield store
            for error in store.unreadable_rows():
                tell_unreadable(error)  # left out of what the command shows
        finally:
            store.close()

    def measure_clock(self, store: Store) -> None:
        """Measure this machine's clock against ``store``'s now (what `now` then reads): at
        each open, and by a server that keeps its store open, at each request."""
        # A command without a store needs none of this.
        from wrighty.services.clock import MEASURE_ATTEMPTS, StoreClock

        measured = StoreClock(store.store_time, base=_command_clock)
        measured.measure(attempts=MEASURE_ATTEMPTS)
        self._clock = measured


def _command_clock() -> datetime:
    return clock()  # read at each call: tests replace it


def tell_unreadable(error: UnreadableError) -> None:
    """One line on stderr for a row left out because a value of it does not read."""
    sys.stderr.write(f"wrighty: {printable_line(str(error))}; {UNREADABLE_FIX}\n")
    sys.stderr.flush()


# What a person does about a row that does not read (docs/storage.md).
UNREADABLE_FIX = "left out; see docs/storage.md (a row that does not read)"


def _with_settings(target: StoreTarget, settings: StoreSettings) -> StoreTarget:
    import dataclasses

    return dataclasses.replace(
        target, pool_size=settings.pool_size, pooler=settings.pooler,
        listen_url=settings.listen_url,
    )  # fmt: skip
