"""The New item page in a real browser (docs/web.md#what-it-shows): the form makes an item
that the command reads back, and a Markdown file chosen on the page is read into the import's
text area by the page's own script (allowed by the console's Content-Security-Policy), then
previewed and imported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.browser.test_console import CONSOLE_PROJECT, console
from tests.integration.worker_process import ProjectOnDisk

__all__ = ["console"]
pytestmark = CONSOLE_PROJECT

PLAN = """# Release

## Add a health endpoint

Add GET /healthz.

## Document the health endpoint

```wrighty
after: Add a health endpoint
```

Describe /healthz.
"""


def test_an_item_is_made_and_a_file_imported_in_a_real_browser(
    project: ProjectOnDisk, console: str, page: Any, tmp_path: Path
) -> None:
    page.goto(console)
    page.get_by_role("link", name="New item").click()
    page.fill('input[name="title"]', "Made in the browser")
    page.fill('textarea[name="body"]', "Line one.\nLine two.")
    page.select_option('select[name="priority"]', "P1")
    page.fill('input[name="labels"]', "web, ui")
    page.check('input[name="queue"]')
    page.get_by_role("button", name="Create").click()
    page.get_by_text("created item 1 (queued, P1, labels ui, web): Made in the browser").wait_for(
        timeout=20_000
    )
    shown = json.loads(project.wrighty("show", "1", "--json"))
    assert (shown["title"], shown["body"], shown["priority"]) == (
        "Made in the browser",
        "Line one.\nLine two.",
        1,
    )
    assert shown["labels"] == ["ui", "web"]

    plan = tmp_path / "plan.md"
    plan.write_text(PLAN)
    page.goto(console.split("?", 1)[0] + "new")
    page.set_input_files("#markdown-file", str(plan))
    page.wait_for_function("document.getElementById('markdown-name').value === 'plan.md'")
    assert page.input_value("#markdown-text") == PLAN
    page.get_by_role("button", name="Preview").click()
    page.get_by_text("2 would create, 0 unchanged, 0 changed").wait_for(timeout=20_000)
    assert len(json.loads(project.wrighty("list", "--json"))) == 1
    page.get_by_role("button", name="Import").click()
    page.get_by_text("2 created, 0 unchanged, 0 changed").wait_for(timeout=20_000)
    listed = json.loads(project.wrighty("list", "--json"))
    assert [item["title"] for item in listed] == [
        "Made in the browser",
        "Add a health endpoint",
        "Document the health endpoint",
    ]
