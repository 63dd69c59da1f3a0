"""Finding, reading and loading wrighty.json; what `wrighty init` writes; the JSON Schema."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wrighty.config.checks import check_config_text
from wrighty.config.models import (
    SCHEMA_VERSION,
    WorkerSettings,
    WrightyConfig,
)
from wrighty.config_file import (
    DEFAULT_STORE_URL,
    MAX_CONFIG_BYTES,
    SCHEMA_FILENAME,
    STATE_DIRNAME,
)
from wrighty.errors import ConfigError
from wrighty.inputs import InputError, read_text_file


@dataclass(frozen=True)
class LoadedConfig:
    path: Path | None
    config: WrightyConfig

    @property
    def root(self) -> Path:
        """The project directory: where wrighty.json lives (or the cwd without one)."""
        return self.path.parent if self.path else Path.cwd()


def config_json_schema() -> dict[str, Any]:
    schema = WrightyConfig.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://wrighty.invalid/schemas/wrighty.schema.json",
        **schema,
    }


def read_config_text(path: Path) -> str:
    """The text of the config file at ``path``; ConfigError saying why it cannot be read."""
    try:
        return read_text_file(path, limit=MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file; create one with `wrighty init`") from None
    except PermissionError:
        raise ConfigError(
            f"{path}: cannot read config (permission denied); fix its permissions"
        ) from None
    except OSError as error:
        why = (error.strerror or type(error).__name__).lower()
        raise ConfigError(f"{path}: cannot read config ({why})") from None
    except InputError as error:
        raise ConfigError(f"{path}: {error}") from None


def load_config(path: Path) -> LoadedConfig:
    """The validated config at ``path``; ConfigError naming the file and first problem."""
    config, problems = check_config_text(read_config_text(path))
    if config is None:
        more = len(problems) - 1
        suffix = f" (and {more} more; `wrighty config validate` lists them)" if more else ""
        raise ConfigError(f"{path}: {problems[0]}{suffix}")
    return LoadedConfig(path=path.resolve(), config=config)


def default_config_document() -> dict[str, Any]:
    """What `wrighty init` writes: the schema hint, the version and the default sections."""
    return {
        "$schema": f"./{STATE_DIRNAME}/{SCHEMA_FILENAME}",
        "schemaVersion": SCHEMA_VERSION,
        "store": {"url": DEFAULT_STORE_URL},
        "worker": _whole_numbers_as_int(WorkerSettings().model_dump(by_alias=True, mode="json")),
        "agents": {},
    }


def _whole_numbers_as_int(value: Any) -> Any:
    """60.0 -> 60, recursively, so that the written file reads as a person would write it."""
    if isinstance(value, dict):
        return {key: _whole_numbers_as_int(item) for key, item in value.items()}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
