"""Every command a user can type is documented (docs/cli.md) and every config key too."""

from __future__ import annotations

from pathlib import Path

import typer

from wrighty.cli.app import app
from wrighty.config import config_json_schema

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _command_paths(group: typer.Typer, prefix: str = "") -> list[str]:
    paths = [f"{prefix}{c.name or c.callback.__name__}" for c in group.registered_commands]  # type: ignore[union-attr]
    for sub in group.registered_groups:
        assert sub.typer_instance is not None
        paths += _command_paths(sub.typer_instance, f"{prefix}{sub.name} ")
    return paths


def test_every_command_has_a_section_in_the_cli_docs() -> None:
    text = (DOCS / "cli.md").read_text()
    missing = [p for p in _command_paths(app) if f"## wrighty {p}\n" not in text]
    assert missing == [], f"undocumented commands: {missing}"


def _schema_keys(schema: dict, node: dict, prefix: str = "") -> list[str]:
    if "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    keys = []
    for name, child in node.get("properties", {}).items():
        keys.append(f"{prefix}{name}")
        keys += _schema_keys(schema, child, f"{prefix}{name}.")
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        keys += _schema_keys(schema, extra, f"{prefix}<name>.")
    return keys


def test_every_config_key_is_documented() -> None:
    schema = config_json_schema()
    text = (DOCS / "config.md").read_text()
    missing = sorted(
        key
        for key in _schema_keys(schema, schema)
        if f"`{key}`" not in text and f"`{key.rsplit('.', 1)[-1]}`" not in text
    )
    assert missing == [], f"config keys missing from docs/config.md: {missing}"
