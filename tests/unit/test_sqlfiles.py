"""The store's named queries, read from the source: every query the code runs exists in each
dialect that runs it, and a query both dialects run as written is kept once, in
sql/common/queries.sql (docs/storage.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import wrighty.store
from wrighty.store.sqlfiles import COMMON, queries, read_blocks

STORE = Path(wrighty.store.__file__).parent
DIALECTS = ("sqlite", "postgresql")
# The adapters run queries of their own dialect only; every other module runs them on both.
ADAPTERS = {"sqlite.py": ("sqlite",), "postgres.py": ("postgresql",)}


def query_names(path: Path) -> set[str]:
    """The names of the queries ``path`` runs: the text literals in the name argument of
    ``tx.run(...)`` and ``_rows(...)``, and in a subscript of ``_sql[...]``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            named = node.func.attr in ("run", "_rows") and node.args
            where: ast.AST | None = node.args[0] if named else None
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
            where = node.slice if node.value.attr == "_sql" else None
        else:
            continue
        if where is not None:
            found.update(
                leaf.value
                for leaf in ast.walk(where)
                if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str)
            )
    return found


def used_by_dialect() -> dict[str, set[str]]:
    used: dict[str, set[str]] = {dialect: set() for dialect in DIALECTS}
    for path in sorted(STORE.glob("*.py")):
        for dialect in ADAPTERS.get(path.name, DIALECTS):
            used[dialect] |= query_names(path)
    return used


def test_the_reading_finds_the_queries_of_every_aggregate() -> None:
    """A check that the scan sees the code at all: a query of each kind of call."""
    used = used_by_dialect()
    assert {"insert_item", "select_next_claimable", "update_circuit_guarded"} <= used["sqlite"]
    assert {"select_store_time", "notify_work"} <= used["postgresql"] - used["sqlite"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_query_the_code_runs_exists_in_the_dialect(dialect: str) -> None:
    missing = used_by_dialect()[dialect] - set(queries(dialect))
    assert not missing, f"{dialect} has no query named {sorted(missing)}"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_query_of_the_dialect_is_run_by_the_code(dialect: str) -> None:
    unused = set(queries(dialect)) - used_by_dialect()[dialect]
    assert not unused, f"{dialect}: no code runs {sorted(unused)}"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_no_dialect_repeats_a_common_query_as_written(dialect: str) -> None:
    common = read_blocks(COMMON)
    own = read_blocks(dialect)
    repeated = sorted(name for name in own.keys() & common.keys() if own[name] == common[name])
    assert not repeated, f"sql/{dialect}/queries.sql repeats {repeated} from sql/common"


def test_a_query_both_dialects_write_alike_is_common() -> None:
    sqlite, postgresql = (read_blocks(dialect) for dialect in DIALECTS)
    alike = sorted(
        name for name in sqlite.keys() & postgresql.keys() if sqlite[name] == postgresql[name]
    )
    assert not alike, f"the same text in both dialects: move {alike} to sql/common/queries.sql"
