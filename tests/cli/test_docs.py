"""Every command a user can type is documented (docs/cli.md) and every config key too."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer.main

from wrighty.cli.app import COMMANDS, app
from wrighty.config import config_json_schema

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _command_paths() -> list[tuple[str, bool]]:
    """Every command path a user can type, as the root builds it from COMMANDS (the root has
    no registered commands of its own: it builds each when asked), with whether it is a
    subcommand of a group that also runs alone (`wrighty providers` lists, as `providers list`
    does)."""
    root: Any = typer.main.get_command(app)
    paths: list[tuple[str, bool]] = []
    for name in COMMANDS:
        command = root.get_command(None, name)
        subcommands = getattr(command, "commands", None)
        if subcommands is None or command.invoke_without_command:
            paths.append((name, False))
        for sub in subcommands or {}:
            paths.append((f"{name} {sub}", bool(command.invoke_without_command)))
    return paths


def test_the_command_paths_are_all_found() -> None:
    paths = [path for path, _ in _command_paths()]
    assert {"list", "worker start", "config schema", "providers", "providers reset"} <= set(paths)


def test_every_command_has_a_section_in_the_cli_docs() -> None:
    text = (DOCS / "cli.md").read_text()

    def documented(path: str, in_parents_usage: bool) -> bool:
        if f"## wrighty {path}\n" in text:
            return True
        # A subcommand of a group that runs alone may be documented in the group's usage.
        usage = re.search(rf"^wrighty {re.escape(path)}( |$)", text, re.M)
        return in_parents_usage and usage is not None

    missing = [p for p, in_usage in _command_paths() if not documented(p, in_usage)]
    assert missing == [], f"undocumented commands: {missing}"


def test_the_command_table_lists_every_command() -> None:
    text = (DOCS / "cli.md").read_text()
    table = text[text.index("| command | what it does |") :].split("\n\n", 1)[0]
    listed = set(re.findall(r"^\| \[`([a-z -]+)`\]\(#wrighty-", table, re.M))
    # A subcommand that its group runs alone (`providers list`) is listed as the group.
    missing = [
        path
        for path, in_group in _command_paths()
        if path not in listed and not (in_group and path.split()[0] in listed)
    ]
    assert missing == [], f"commands missing from the table in docs/cli.md: {missing}"


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


REPOSITORY = DOCS.parent
# The design contract the project was built from is not part of the repository: users do not
# have it, so nothing may send them to it. Spelled in two parts so this file does not cite it.
UNSHIPPED = ("DESIGN" + ".md").encode()


def _repository_files() -> list[Path]:
    """Every file of the repository: all but .git and what .gitignore leaves out (a venv,
    caches, build output)."""
    import fnmatch

    ignored = [".git"] + [
        line.strip().rstrip("/")
        for line in (REPOSITORY / ".gitignore").read_text().splitlines()
        if line.strip().endswith("/")
    ]
    found = []
    for path in REPOSITORY.rglob("*"):
        parts = path.relative_to(REPOSITORY).parts
        if any(fnmatch.fnmatch(part, pattern) for part in parts for pattern in ignored):
            continue
        if path.is_file():
            found.append(path)
    return found


def test_no_file_cites_a_design_file_users_do_not_have() -> None:
    files = _repository_files()
    names = {path.relative_to(REPOSITORY).as_posix() for path in files}
    assert {"README.md", "docs/architecture.md", "wrighty/worker/run.py"} <= names
    citing = sorted(
        path.relative_to(REPOSITORY).as_posix() for path in files if UNSHIPPED in path.read_bytes()
    )
    assert citing == [], "cite the docs/ page that holds the rule instead"
