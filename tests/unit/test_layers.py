"""The package's layers, read from the source: which part of wrighty/ may import which
(`LAYERS`), and where each library from outside may be imported (`OUTSIDE`). Every import is
walked (inside functions and TYPE_CHECKING blocks too); one the tables do not allow is a climb,
and modules that import each other, however far round, are a circle. Both fail, but for the
ones already known (`KNOWN_CLIMBS`, `KNOWN_CIRCLES`), which must still be real: the sets only
shrink. docs/architecture.md's diagram is drawn from the tables: run this file to redraw it
(``python tests/unit/test_layers.py``); a test fails while the page's drawing differs."""

from __future__ import annotations

import ast
import functools
import sys
import textwrap
from collections.abc import Iterator, Mapping, Set
from pathlib import Path

import wrighty

PACKAGE = Path(wrighty.__file__).parent
PAGE = PACKAGE.parent / "docs" / "architecture.md"
# `python -m wrighty` runs the command line: the one module outside it that may name it.
ENTRY_POINT = PACKAGE / "__main__.py"

# A part of the package is a folder (`cli/`) or a module of the package's own (`agents.py`).
# Each may import what its row names: a part, or one module of a part (`web/app.py`). A part's
# modules import each other freely (but in no circle).
# A new part (`operator/`, `workproduct/`) is one more row here, and a name in the rows of the
# parts that import it; then run this file to redraw the page.
LAYERS: dict[str, set[str]] = {
    "__main__.py": {"cli/"},
    "cli/": {
        "config_file.py",
        "operator/",
        "web/app.py",  # `wrighty serve` serves the console
        "web/security.py",
        "inbox/",
        "worker/",
        "services/",
        "notify/",
        "agents.py",
        "project.py",
        "runenv.py",
        "config/",
        "store/",
        "supervisor/",
        "domain/",
        "richtext.py",
        "styles.py",
        "installation.py",
        "inputs.py",
        "errors.py",
        "__init__.py",
    },
    "web/": {"operator/", "services/", "domain/", "inputs.py", "errors.py"},
    "inbox/": {"operator/", "services/", "domain/", "richtext.py", "styles.py", "errors.py"},
    "worker/": {
        "workproduct/",
        "services/",
        "notify/",
        "agents.py",
        "runenv.py",
        "config/",
        "store/",
        "supervisor/",
        "vendors/",
        "domain/",
        "errors.py",
        "__init__.py",
    },
    "services/": {
        "config_file.py",
        "sources/",
        "workproduct/",
        "notify/",
        "agents.py",
        "config/",
        "store/",
        "supervisor/",
        "domain/",
        "installation.py",
        "errors.py",
    },
    "operator/": {
        "services/",
        "workproduct/",
        "agents.py",
        "config/",
        "store/",
        "domain/",
        "richtext.py",
        "installation.py",
        "errors.py",
    },
    "workproduct/": {"supervisor/", "domain/", "files.py", "errors.py"},
    "notify/": {"config/", "store/", "supervisor/", "domain/", "errors.py"},
    "agents.py": {"config/", "supervisor/", "vendors/", "domain/", "errors.py"},
    "project.py": {"config/", "workproduct/", "files.py", "errors.py"},
    "runenv.py": {"config/", "store/", "domain/", "errors.py"},
    "config_file.py": {"inputs.py"},
    "plugins.py": {"errors.py"},
    "config/": {
        "plugins.py",
        "config_file.py",
        "store/",
        "supervisor/",
        "domain/",
        "inputs.py",
        "errors.py",
    },
    "sources/": {"domain/", "errors.py"},
    "store/": {"domain/", "files.py", "errors.py"},
    "supervisor/": {"domain/", "files.py"},
    "vendors/": {"plugins.py", "domain/"},
    "richtext.py": {"domain/"},
    "styles.py": {"domain/"},
    "installation.py": {"files.py", "errors.py"},
    "domain/": {"errors.py"},
    "inputs.py": set(),
    "files.py": set(),
    "errors.py": set(),
    "example_agent.py": set(),
    "__init__.py": set(),
}

# Where each library from outside the standard library may be imported (a part, or one
# module), and the standard library's modules that only the edges may use.
OUTSIDE: dict[str, set[str]] = {
    "psutil": {"supervisor/"},
    "ctypes": {"supervisor/"},
    "subprocess": {
        "supervisor/",
        "agents.py",  # `wrighty agents --probe` asks each program its version
        "notify/",  # the command sink
        "cli/diff.py",  # the pager
        "example_agent.py",
    },
    "sqlite3": {"store/"},
    "psycopg": {"store/"},
    "psycopg_pool": {"store/"},
    "pydantic": {"config/", "cli/numbers.py"},  # numbers.py: typer reads numbers with pydantic
    "pydantic_core": {"cli/numbers.py", "config/adapter_names.py"},
    "typer": {"cli/"},
    "click": {"cli/"},
    "uvicorn": {"cli/"},
    "rich": {"cli/", "inbox/", "richtext.py"},
    "textual": {"inbox/"},
    "starlette": {"web/"},
    "jinja2": {"web/"},
    "markupsafe": {"web/"},
    "apprise": {"notify/", "config/"},  # config/: whether Apprise can use each URL
    "filelock": {"workproduct/worktree.py"},
    "platformdirs": {"installation.py"},
}

# The domain is pure (docs/architecture.md): whatever OUTSIDE says, never these.
DOMAIN_NEVER = {"subprocess", "sqlite3", "psycopg", "psutil", "typer", "rich"}

# Imports the tables do not allow that are there today: (module, module or library imported).
KNOWN_CLIMBS: set[tuple[str, str]] = set()

# Modules that import each other today, however far round: each circle as its modules.
KNOWN_CIRCLES: set[str] = set()


def _import_statements(path: Path, package_dir: Path) -> Iterator[tuple[str, list[str]]]:
    """Each import in ``path`` (a file under ``package_dir``), anywhere in it: the module it
    names, relative imports resolved, and the names a ``from`` import takes from it."""
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    package = parts[:-1]  # the package a relative import starts from
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            yield base, [alias.name for alias in node.names]


def imported_modules(path: Path, package_dir: Path = PACKAGE) -> set[str]:
    """Every module ``path`` (a file under ``package_dir``) imports, anywhere in it (inside
    functions and TYPE_CHECKING blocks too), relative imports resolved; ``from a import b``
    counts as ``a.b`` as well."""
    found: set[str] = set()
    for base, names in _import_statements(path, package_dir):
        found.add(base)
        found.update(f"{base}.{name}" for name in names)
    return found


def package_modules(package_dir: Path = PACKAGE) -> dict[str, str]:
    """Each module of the package by its dotted name, as its path below the package."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir)
        dotted = relative.with_suffix("").parts
        if dotted[-1] == "__init__":
            dotted = dotted[:-1]
        modules[".".join((package_dir.name, *dotted))] = relative.as_posix()
    return modules


def part_of(module: str) -> str:
    """The part a module (its path below the package) belongs to."""
    folder, slash, _ = module.partition("/")
    return folder + "/" if slash else module


def _top(name: str) -> str:
    return name.split(".")[0]


def _outside(name: str) -> bool:
    top = _top(name)
    return top in OUTSIDE or (top not in sys.stdlib_module_names and top not in {"wrighty", ""})


def imports_of(path: Path, modules: Mapping[str, str]) -> tuple[set[str], set[str]]:
    """The package's modules ``path`` imports (``from a import b`` is ``a.b`` when that is a
    module, else ``a``), as paths below the package, and the outside libraries it imports."""
    own: set[str] = set()
    libraries: set[str] = set()
    for base, names in _import_statements(path, PACKAGE):
        if _outside(base):
            libraries.add(_top(base))
            continue
        submodules = {modules[f"{base}.{n}"] for n in names if f"{base}.{n}" in modules}
        if submodules:
            own |= submodules
        elif base in modules:
            own.add(modules[base])
    return own, libraries


@functools.cache
def _import_map() -> dict[str, tuple[set[str], set[str]]]:
    modules = package_modules()
    return {module: imports_of(PACKAGE / module, modules) for module in sorted(modules.values())}


def _allowed(module: str, imported: str) -> bool:
    if part_of(module) == part_of(imported):
        return True
    allowed = LAYERS.get(part_of(module), set())
    return part_of(imported) in allowed or imported in allowed


def _may_use(module: str, library: str) -> bool:
    where = OUTSIDE.get(library, set())
    return part_of(module) in where or module in where


def climbs(import_map: Mapping[str, tuple[set[str], set[str]]]) -> set[tuple[str, str]]:
    """Every import the tables do not allow: (module, module or library it imports)."""
    found = set()
    for module, (own, libraries) in import_map.items():
        found |= {(module, other) for other in own if not _allowed(module, other)}
        found |= {(module, lib) for lib in libraries if not _may_use(module, lib)}
    return found


def circles(graph: Mapping[str, Set[str]]) -> set[frozenset[str]]:
    """The strongly connected parts of ``graph`` with more than one module (Tarjan's walk,
    without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in graph:
                    continue
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        part.add(member)
                        if member == node:
                            break
                    if len(part) > 1:
                        found.add(frozenset(part))
    return found


def _circle(text: str) -> frozenset[str]:
    return frozenset(text.split(", "))


def test_every_part_of_the_package_has_a_row() -> None:
    parts = {part_of(module) for module in package_modules().values()}
    assert len(package_modules()) > 50  # the whole package was walked
    assert set(LAYERS) == parts
    named = {entry for allowed in LAYERS.values() for entry in allowed}
    named |= {entry for where in OUTSIDE.values() for entry in where}
    modules = set(package_modules().values())
    assert {entry for entry in named if entry not in parts and entry not in modules} == set()


def test_no_import_climbs_beyond_the_known_ones() -> None:
    found = climbs(_import_map())
    assert found - KNOWN_CLIMBS == set(), "an import the layers do not allow: see LAYERS"
    assert KNOWN_CLIMBS - found == set(), "a known climb is gone: take it out of KNOWN_CLIMBS"


def test_every_outside_library_has_its_places() -> None:
    used = {lib for _, libraries in _import_map().values() for lib in libraries}
    assert used - set(OUTSIDE) == set(), "say in OUTSIDE where the new library may be imported"


def test_every_allowed_import_is_one_the_code_makes() -> None:
    """The tables draw the page's diagram, so an arrow no import makes is taken out."""
    import_map = _import_map()
    made = {
        (part_of(module), entry)
        for module, (own, _) in import_map.items()
        for other in own
        for entry in (part_of(other), other)
    }
    used = {(part_of(module), lib) for module, (_, libs) in import_map.items() for lib in libs}
    used |= {(module, lib) for module, (_, libs) in import_map.items() for lib in libs}
    unmade = {(part, entry) for part, allowed in LAYERS.items() for entry in allowed} - made
    unused = {(place, lib) for lib, where in OUTSIDE.items() for place in where} - used
    assert (unmade, unused) == (set(), set())


def test_no_import_circles_beyond_the_known_ones() -> None:
    graph = {module: own for module, (own, _) in _import_map().items()}
    found = circles(graph)
    known = {_circle(text) for text in KNOWN_CIRCLES}
    assert found - known == set(), "modules that import each other: break the circle"
    assert known - found == set(), "a known circle is gone: take it out of KNOWN_CIRCLES"


def test_the_domain_is_pure() -> None:
    assert LAYERS["domain/"] <= {"errors.py"}
    assert {lib for lib in DOMAIN_NEVER if "domain/" in OUTSIDE.get(lib, set())} == set()
    used = {
        lib for m, (_, libs) in _import_map().items() if m.startswith("domain/") for lib in libs
    }
    assert used & DOMAIN_NEVER == set()
    assert {lib for lib in DOMAIN_NEVER if not _outside(lib)} == set()


def test_nothing_outside_the_cli_imports_the_cli() -> None:
    assert [part for part, allowed in LAYERS.items() if "cli/" in allowed] == ["__main__.py"]
    offenders = {
        module: sorted(other for other in own if other.startswith("cli/"))
        for module, (own, _) in _import_map().items()
        if not module.startswith("cli/") and module != "__main__.py"
    }
    assert {module: names for module, names in offenders.items() if names} == {}, (
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


def test_a_climb_and_a_circle_are_found() -> None:
    import_map = {
        "supervisor/checks.py": ({"services/runlogs.py"}, {"psutil"}),
        "domain/model.py": ({"domain/notices.py"}, {"sqlite3"}),
        "domain/notices.py": ({"domain/model.py"}, set()),
        "store/items.py": ({"domain/model.py"}, {"sqlite3"}),
    }
    assert climbs(import_map) == {
        ("supervisor/checks.py", "services/runlogs.py"),
        ("domain/model.py", "sqlite3"),
    }
    graph = {module: own for module, (own, _) in import_map.items()}
    graph["services/runlogs.py"] = {"supervisor/checks.py"}
    assert circles(graph) == {
        frozenset({"domain/model.py", "domain/notices.py"}),
        frozenset({"supervisor/checks.py", "services/runlogs.py"}),
    }


# The drawing on docs/architecture.md.

BEGIN = "<!-- layers: drawn from tests/unit/test_layers.py (run it to redraw) -->"
END = "<!-- /layers -->"
WIDTH = 100
NAME = 17  # the width of the first column


def _depths() -> dict[str, int]:
    """Each part's height: 0 for a part that imports none, else one above the highest part
    it may import."""
    depths: dict[str, int] = {}

    def depth(part: str) -> int:
        if part not in depths:
            below = {part_of(entry) for entry in LAYERS[part]} - {part}
            depths[part] = 1 + max((depth(other) for other in below), default=-1)
        return depths[part]

    for part in LAYERS:
        depth(part)
    return depths


def drawing() -> str:
    """The layers as the page draws them: each part, highest first, with the parts it may
    import; where each outside library may be imported; the climbs and circles left."""
    depths = _depths()

    def order(entries: Set[str]) -> list[str]:
        return sorted(entries, key=lambda e: (-depths[part_of(e)], part_of(e), e))

    lines = [f"{'part':<{NAME}}    may import (every arrow points down the page)"]
    for part in order(set(LAYERS)):
        allowed = " ".join(order(LAYERS[part])) or "(nothing of wrighty's)"
        lines += textwrap.wrap(
            allowed,
            WIDTH,
            initial_indent=f"{part:<{NAME}}──► ",
            subsequent_indent=" " * (NAME + 4),
            break_on_hyphens=False,
        )
    lines += ["", f"{'library':<{NAME}}    may be imported only by"]
    for library in sorted(OUTSIDE):
        lines.append(f"{library:<{NAME}}    {' '.join(order(OUTSIDE[library]))}")
    if KNOWN_CLIMBS:
        lines += ["", "climbs still to mend"]
        lines += [f"  {module} ──► {other}" for module, other in sorted(KNOWN_CLIMBS)]
    if KNOWN_CIRCLES:
        lines += ["", "circles still to break (modules that import each other, however far round)"]
        for circle in sorted(KNOWN_CIRCLES):
            lines += textwrap.wrap(
                circle, WIDTH, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False
            )
    return "\n".join([BEGIN, "```", *lines, "```", END])


def drawn_on(page: str) -> str:
    """The drawing between the page's markers."""
    start = page.index(BEGIN)
    return page[start : page.index(END, start) + len(END)]


def test_the_pages_diagram_is_drawn_from_the_tables() -> None:
    assert drawn_on(PAGE.read_text(encoding="utf-8")) == drawing(), (
        "redraw it: python tests/unit/test_layers.py"
    )


def test_the_drawing_names_every_part() -> None:
    drawn = drawing()
    for part in ("web/", "config/", "notify/", "vendors/", "store/", "domain/", "services/"):
        assert f"\n{part:<{NAME}}──► " in drawn
    for part in ("worker/", "supervisor/", "cli/", "inbox/"):
        assert f"\n{part:<{NAME}}──► " in drawn


def redraw() -> None:
    page = PAGE.read_text(encoding="utf-8")
    PAGE.write_text(page.replace(drawn_on(page), drawing()), encoding="utf-8")
    print(drawing())


if __name__ == "__main__":
    redraw()
