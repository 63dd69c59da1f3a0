"""One tap from a notice to the change (docs/web.md#links-from-notices), in a real Chromium
at phone size: a real worker's ready-for-review notice, delivered by a real command sink with
serve.publicUrl set to a real `wrighty serve`, links to the item's page; followed in a browser
that has never logged in, it asks for the token once, then shows the item and its Accept
button. The token is in no address the browser visits."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.browser.screen import sideways
from tests.browser.test_console import CONSOLE_PROJECT, console  # noqa: F401 (a fixture)
from tests.integration.worker_process import ProjectOnDisk

pytestmark = CONSOLE_PROJECT
TITLE = "Answer <b>me</b> \x1b[31m"
# A notification command sink: appends each notice (JSON on stdin) to the file it is given.
SINK = (
    "import sys\n"
    "with open(sys.argv[1], 'a') as out:\n"
    "    out.write(sys.stdin.read().strip() + '\\n')\n"
)


def told_link(project: ProjectOnDisk, base: str, tmp_path: Path) -> tuple[int, str]:
    """An item a real worker leaves in review with serve.publicUrl set to ``base``, and the
    link its ready-for-review notice carried to a command sink."""
    sink, told = tmp_path / "sink.py", tmp_path / "notices.jsonl"
    sink.write_text(SINK)
    document = json.loads(project.config.read_text())
    document["notify"] = {"command": {"argv": [sys.executable, str(sink), str(told)]}}
    document["serve"] = {"publicUrl": base}
    project.config.write_text(json.dumps(document))
    item_id = project.plant("Write the answer.", title=TITLE)
    assert project.worker("--once").returncode == 0
    project.wrighty("notify", "flush")
    notices = [json.loads(line) for line in told.read_text().splitlines()]
    [ready] = [n for n in notices if n["event"] == "ready-for-review"]
    assert ready["item"]["id"] == item_id
    return item_id, ready["link"]


def fits(page: Any, selector: str) -> None:
    """``selector``'s element: a target of at least 44x44 px, inside a 390 px wide screen."""
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    assert box["width"] >= 44, selector
    assert box["height"] >= 44, selector
    assert box["x"] >= 0, selector
    assert box["x"] + box["width"] <= 390, selector


def test_a_notice_s_link_opens_the_item_after_the_token_on_a_phone(
    project: ProjectOnDisk,
    console: str,  # noqa: F811
    chromium: Any,
    tmp_path: Path,
) -> None:
    base, token = console.split("/?token=")
    item_id, link = told_link(project, base, tmp_path)
    assert link == f"{base}/items/{item_id}"
    assert token not in link

    context = chromium.new_context(viewport={"width": 390, "height": 844}, has_touch=True)
    try:
        page = context.new_page()
        visited: list[str] = []
        page.on("request", lambda request: visited.append(request.url))
        refused: list[str] = []
        page.on("console", lambda message: refused.append(message.text))
        answer = page.goto(link)
        assert answer is not None
        assert answer.status == 401  # the login page: nothing of the item
        assert page.locator("h1").inner_text() == "Log in"
        assert "Answer" not in page.content()
        assert sideways(page) == ""
        fits(page, "input[name=token]")  # the console's stylesheet, loaded without a session
        fits(page, "button[type=submit]")

        page.get_by_label("token").fill(token)
        page.get_by_role("button", name="Log in").tap()
        page.wait_for_url(link)
        assert page.locator("p.title").inner_text() == "Answer <b>me</b> \\x1b[31m"
        page.get_by_role("button", name="Accept").wait_for()
        assert sideways(page) == ""
        cookies = {cookie["name"]: cookie for cookie in context.cookies()}
        assert cookies["wrighty_token"]["httpOnly"]
        assert cookies["wrighty_token"]["sameSite"] == "Strict"
        assert f"{base}/login" in visited  # the form was posted, not put in an address
        assert [url for url in visited if token in url] == []
        # nothing the Content-Security-Policy refused, no complaint but the login page's 401
        assert [text for text in refused if "status of 401" not in text] == []

        # a second tap on the link: no token asked for again
        assert page.goto(link).status == 200  # type: ignore[union-attr]
    finally:
        context.close()
