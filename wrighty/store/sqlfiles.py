"""SQL kept in .sql files: named query blocks (written once where both dialects run the same
text) and numbered migrations."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_NAME_LINE = re.compile(r"^-- name: ([a-z_]+)\s*$", re.MULTILINE)
_MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


# The .sql files, beside this module in the installed package (read as files: importlib's
# resources would cost a read command 5-10 ms of imports, zipfile among them).
SQL_DIR = Path(__file__).parent / "sql"


def read_sql(dialect: str, filename: str) -> str:
    return (SQL_DIR / dialect / filename).read_text("utf-8")


# The folder of the queries both dialects run as written.
COMMON = "common"


def read_blocks(folder: str) -> dict[str, str]:
    """The named blocks of ``sql/<folder>/queries.sql``, as written there."""
    text = read_sql(folder, "queries.sql")
    parts = _NAME_LINE.split(text)
    # parts = [preamble, name1, body1, name2, body2, ...]
    blocks = {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}
    if len(blocks) != len(parts[1::2]):
        raise ValueError(f"duplicate query name in sql/{folder}/queries.sql")
    return blocks


@cache
def queries(dialect: str) -> dict[str, str]:
    """The named queries of ``dialect``: the blocks of ``sql/common/queries.sql``, and those of
    ``sql/<dialect>/queries.sql``, which hold the text only that dialect runs (a name in both
    takes the dialect's block)."""
    return {**read_blocks(COMMON), **read_blocks(dialect)}


@cache
def migrations(dialect: str) -> tuple[Migration, ...]:
    """The numbered migrations of ``sql/<dialect>/migrations``, in order, gap-free."""
    folder = SQL_DIR / dialect / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            found.append(
                Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8"))
            )
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise ValueError(f"sql/{dialect}/migrations must be numbered 0001, 0002, ... without gaps")
    return tuple(found)
