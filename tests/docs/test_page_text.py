"""What a page's text must not do, whatever it says: a numbered list's item that runs on from
the line before it (Markdown then shows two items as one)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*`{3,}")
# "...none;6. the latest checks": an item's number after the end of the one before.
RUN_ON_ITEM = re.compile(r"[;:,)]\d{1,2}\. [a-z`]")


def test_every_numbered_item_starts_a_line_of_its_own() -> None:
    found = []
    for page in PAGES:
        fenced = False
        for number, line in enumerate((ROOT / page).read_text().splitlines(), start=1):
            if FENCE.match(line):
                fenced = not fenced
            elif not fenced and RUN_ON_ITEM.search(line):
                found.append(f"{page}:{number}: {line.strip()}")
    assert found == []
