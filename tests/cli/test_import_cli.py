"""`wrighty import FILE.md`: one item per second-level heading, idempotent, refused whole with
the line of the problem."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.cli.conftest import wrighty
from tests.helpers import snapshot

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tasks.md"


def _items() -> list[dict]:
    result = wrighty("list", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_example_file_makes_an_item_per_section_with_its_settings(initialised: Path) -> None:
    shutil.copy(EXAMPLE, initialised / "tasks.md")
    result = wrighty("import", "tasks.md", "--queue", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["created"], report["unchanged"], report["changed"]) == (3, 0, 0)
    health, flaky, docs = (wrighty("show", str(s["item_id"]), "--json") for s in report["sections"])
    health, flaky, docs = (json.loads(r.output) for r in (health, flaky, docs))
    assert health["title"] == "Add a health endpoint"
    assert health["body"].startswith("Add `GET /healthz`")
    assert health["state"] == "queued"
    assert (flaky["priority"], flaky["labels"], flaky["timeout_seconds"]) == (1, ["payments"], 2700)
    assert "```wrighty" not in flaky["body"]
    assert docs["priority"] == 3
    assert docs["after"] == [{"id": health["id"], "state": "queued"}]


def test_importing_again_changes_nothing_and_a_changed_section_is_reported(
    initialised: Path,
) -> None:
    tasks = initialised / "tasks.md"
    shutil.copy(EXAMPLE, tasks)
    assert wrighty("import", "tasks.md").exit_code == 0
    before = _items()
    again = wrighty("import", "tasks.md")
    assert again.exit_code == 0, again.output
    assert again.output.splitlines()[-1] == "0 created, 3 unchanged, 0 changed"
    assert _items() == before
    tasks.write_text(tasks.read_text().replace("one run in ten", "one run in five"))
    edited = wrighty("import", "tasks.md")
    assert edited.exit_code == 0, edited.output
    assert "Fix the flaky payment test: changed in the file, not updated" in edited.output
    assert edited.output.splitlines()[-1] == "0 created, 2 unchanged, 1 changed"
    assert _items() == before


def test_a_dry_run_writes_nothing(initialised: Path) -> None:
    shutil.copy(EXAMPLE, initialised / "tasks.md")
    on_disk = snapshot(initialised / ".wrighty")
    result = wrighty("import", "tasks.md", "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "3 would create, 0 unchanged, 0 changed"
    assert snapshot(initialised / ".wrighty") == on_disk


def test_a_malformed_file_is_one_line_with_its_line_number_and_changes_nothing(
    initialised: Path,
) -> None:
    bad = initialised / "bad.md"
    bad.write_text("## Fine\n\ntext\n\n## Broken\n\n```wrighty\npriority: 9\n```\n\ntext\n")
    on_disk = snapshot(initialised / ".wrighty")
    result = wrighty("import", "bad.md")
    assert result.exit_code == 2
    assert result.output == "wrighty: bad.md: line 8: priority '9': use 0 to 3 (or P0 to P3)\n"
    assert snapshot(initialised / ".wrighty") == on_disk


def test_a_section_that_cannot_be_created_refuses_the_whole_file(initialised: Path) -> None:
    bad = initialised / "bad.md"
    bad.write_text("## Fine\n\ntext\n\n## Unknown agent\n\n```wrighty\nagent: nosuch\n```\n\nx\n")
    result = wrighty("import", "bad.md")
    assert result.exit_code == 2
    assert result.output.startswith("wrighty: bad.md: line 5 ('Unknown agent'): unknown agent")
    assert _items() == []


def test_a_missing_file_is_one_line(initialised: Path) -> None:
    result = wrighty("import", "nowhere.md")
    assert result.exit_code == 2
    assert result.output == "wrighty: nowhere.md: No such file or directory\n"


def test_a_dry_run_of_the_longest_chain_a_file_may_hold_works(initialised: Path) -> None:
    from wrighty.domain.importing import MAX_SECTIONS

    chain = initialised / "chain.md"
    chain.write_text(
        "".join(
            f"## S{n}\n\n"
            + (f"```wrighty\nafter: s{n + 1}\n```\n\n" if n + 1 < MAX_SECTIONS else "")
            + f"text {n}\n\n"
            for n in range(MAX_SECTIONS)
        )
    )
    result = wrighty("import", "chain.md", "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == f"{MAX_SECTIONS} would create, 0 unchanged, 0 changed"
