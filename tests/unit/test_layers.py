"""The entry points' layering, read from the source: nothing outside wrighty/cli/ imports
wrighty.cli, so that the inbox, the worker and the services (and a next entry point) ask the
services, never the command line's modules (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import wrighty

PACKAGE = Path(wrighty.__file__).parent
# `python -m wrighty` runs the command line: the one module outside it that may name it.
ENTRY_POINT = PACKAGE / "__main__.py"


def imported_modules(path: Path, package_dir: Path = PACKAGE) -> set[str]:
    """Every module ``path`` (a file under ``package_dir``) imports, anywhere in it (inside
    functions and TYPE_CHECKING blocks too), relative imports resolved; ``from a import b``
    counts as ``a.b`` as well."""
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    package = parts[:-1]  # the package a relative import starts from
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _is_cli(module: str) -> bool:
    return module == "wrighty.cli" or module.startswith("wrighty.cli.")


def test_nothing_outside_the_cli_imports_the_cli() -> None:
    cli = PACKAGE / "cli"
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if not p.is_relative_to(cli)]
    assert len(outside) > 50  # the whole package was walked
    offenders = {
        str(path.relative_to(PACKAGE.parent)): sorted(filter(_is_cli, imported_modules(path)))
        for path in outside
        if path != ENTRY_POINT
    }
    assert {path: names for path, names in offenders.items() if names} == {}, (
        "ask a service, or take what every renderer shares from wrighty/richtext.py"
    )


def test_the_walk_finds_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    assert "wrighty.cli.entry" in imported_modules(ENTRY_POINT)
    # entry.py imports the typer app only inside main, for what it does not answer itself.
    assert "wrighty.cli.app" in imported_modules(PACKAGE / "cli" / "entry.py")
    # items.py imports render only inside its commands.
    assert "wrighty.cli.render" in imported_modules(PACKAGE / "cli" / "items.py")
    views = tmp_path / "wrighty" / "inbox" / "views.py"
    views.parent.mkdir(parents=True)
    views.write_text("def f() -> None:\n    from ..cli import render\n    from . import app\n")
    found = imported_modules(views, tmp_path / "wrighty")
    assert {"wrighty.cli", "wrighty.cli.render", "wrighty.inbox.app"} <= found
