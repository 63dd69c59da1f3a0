"""docs/architecture.md's code map names every module of the package, so that a reader new to
the code finds each file there, and a change that adds or moves a module changes the page; and
every path it names exists."""

from __future__ import annotations

import re
from pathlib import Path

import wrighty

PACKAGE = Path(wrighty.__file__).parent
PAGE = PACKAGE.parent / "docs" / "architecture.md"
_CODE = re.compile(r"`([^`]+)`")


def map_rows(text: str) -> list[tuple[list[str], str]]:
    """The code map's rows: the paths its first cell names (a bare file name beside a path
    is in that path's folder), and the whole row."""
    rows = []
    for line in text.splitlines():
        if line.startswith("| `wrighty/"):
            first, *rest = _CODE.findall(line.split("|")[1])
            folder = first if first.endswith("/") else first.rpartition("/")[0] + "/"
            rows.append(([first, *(n if "/" in n else folder + n for n in rest)], line))
    return rows


def unnamed_modules(text: str, package: Path = PACKAGE) -> list[str]:
    """Modules the map does not name: a module is named when a row's first cell is its path,
    or the row of its folder (``wrighty/a/``) names its file (``b.py``, or ``sub/b.py``
    below that folder) in backquotes."""
    rows = map_rows(text)
    missing = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        module = path.relative_to(package.parent).as_posix()
        named = False
        for paths, row in rows:
            if module in paths:
                named = True
                break
            for folder in paths:
                if folder.endswith("/") and module.startswith(folder):
                    below = module[len(folder) :]
                    if f"`{below}`" in row:
                        named = True
                        break
            if named:
                break
        if not named:
            missing.append(module)
    return missing


def test_the_code_map_names_every_module() -> None:
    assert len(list(PACKAGE.rglob("*.py"))) > 50  # the whole package was walked
    assert unnamed_modules(PAGE.read_text(encoding="utf-8")) == []


def test_a_module_the_map_leaves_out_is_found(tmp_path: Path) -> None:
    package = tmp_path / "wrighty"
    (package / "store").mkdir(parents=True)
    for name in ("store/port.py", "store/rows.py", "agents.py", "files.py", "store/__init__.py"):
        (package / name).write_text("")
    page = (
        "| `wrighty/store/` | The port (`port.py`); rows.py in plain text. | |\n"
        "| `wrighty/agents.py`, `files.py` | Agents. | |\n"
    )
    assert unnamed_modules(page, package) == ["wrighty/store/rows.py"]


def _looks_like_a_path(name: str) -> bool:
    return " " not in name and "<" not in name and name.endswith((".py", "/", ".sql"))


def missing_paths(text: str, package: Path = PACKAGE) -> list[str]:
    """Paths the map names that do not exist: each row's first cell, and every path in
    backquotes in a row (a module of the row's folder, of the package, or of the project)."""
    missing = []
    for paths, row in map_rows(text):
        folder = paths[0] if paths[0].endswith("/") else paths[0].rpartition("/")[0] + "/"
        named = [p.removeprefix("wrighty/") for p in paths]
        named += [n for n in _CODE.findall(row) if _looks_like_a_path(n) and n not in paths]
        for name in named:
            places = (package.parent / folder / name, package / name, package.parent / name)
            if not any(place.exists() for place in places):
                missing.append(name)
    return missing


def test_every_path_the_code_map_names_exists() -> None:
    assert missing_paths(PAGE.read_text(encoding="utf-8")) == []


def test_a_path_the_map_names_that_is_gone_is_found(tmp_path: Path) -> None:
    package = tmp_path / "wrighty"
    (package / "store").mkdir(parents=True)
    (package / "store" / "port.py").write_text("")
    (package / "agents.py").write_text("")
    page = (
        "| `wrighty/store/` | The port (`port.py`), the rows (`rows.py`), `agents.py`. | |\n"
        "| `wrighty/worker.py` | The worker. | |\n"
    )
    assert missing_paths(page, package) == ["rows.py", "worker.py"]
