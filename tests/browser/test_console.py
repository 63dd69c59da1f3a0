"""The web console in a real browser (docs/web.md): Chromium, driven by Playwright, against a
real `wrighty serve` and real `wrighty worker start` processes on a git project. Log in with
the printed URL, see an item a worker settles appear on the board without a reload, open it,
requeue it, accept an item in review; a title full of HTML, script and escape sequences stays
inert text."""

from __future__ import annotations

import json
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.worker_process import LiveWorker, ProjectOnDisk

# Writes answer.txt; a task that says FAIL fails (the item needs attention); a task that
# says WAIT PATH prints a line, then another once the file PATH exists, then ends.
AGENT = textwrap.dedent(
    """\
    import pathlib, sys, time
    task = sys.stdin.read()
    if "FAIL" in task:
        print("the agent gave up", file=sys.stderr)
        sys.exit(3)
    if task.startswith("WAIT "):
        go = pathlib.Path(task.split()[1])
        print("thinking about <b>it</b>", flush=True)
        while not go.exists():
            time.sleep(0.05)
        print("the second thought", flush=True)
        while go.read_text() != "end":
            time.sleep(0.05)
    pathlib.Path("answer.txt").write_text("42\\n")
    """
)
# The `project` fixture's project (tests/conftest.py) of every browser test: a git repository
# in worktree mode whose agent is AGENT, its done items waiting for a person's review.
CONSOLE_PROJECT = pytest.mark.project(
    name="p",
    programs={"maker": ("agent.py", AGENT)},
    resumable=True,
    worker={"workspaceMode": "worktree"},
    git=True,
    completion={"review": "person"},
)
pytestmark = CONSOLE_PROJECT
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">\x1b[31mred'


@pytest.fixture
def console(project: ProjectOnDisk) -> Iterator[str]:
    """`wrighty serve --port 0` running on the project; the URL it printed (with its token)."""
    served = subprocess.Popen(
        project.command("serve", "--port", "0"),
        cwd=project.root, env=project.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert served.stdout is not None
        url = served.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        served.terminate()
        served.wait(timeout=30)


def test_the_console_follows_the_queue_and_acts_in_a_real_browser(
    project: ProjectOnDisk, console: str, page: Any
) -> None:
    hostile = project.plant("Write the answer.", title=HOSTILE)
    assert project.worker("--once").returncode == 0  # it waits for review now
    page.on("dialog", lambda dialog: dialog.accept())  # each action's confirm: yes

    page.goto(console)
    assert "token=" not in page.url  # the token became a cookie and left the address bar
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["wrighty_token"]["httpOnly"]
    assert cookies["wrighty_token"]["sameSite"] == "Strict"
    row = page.locator(f'tr:has(a[href="/items/{hostile}"])')
    title = row.locator("td:nth-child(4)").inner_text()  # the row's fourth cell
    assert "<script>window.__pwned=1</script>" in title
    assert "\\x1b[31mred" in title  # the escape sequence shown, not obeyed
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#board img").count() == 0

    # an item a worker settles appears on the board by itself, no reload
    failing = project.plant("FAIL this one.", title="Doomed")
    page.locator(f'a[href="/items/{failing}"]').first.wait_for(timeout=20_000)
    loaded = page.evaluate("performance.getEntriesByType('navigation').length")
    assert project.worker("--once").returncode == 0
    row = page.locator(f'tr:has(a[href="/items/{failing}"])')
    state = row.locator("td:nth-child(2)")  # the row's second cell
    state.filter(has_text="needs-attention").wait_for(timeout=20_000)
    assert page.evaluate("performance.getEntriesByType('navigation').length") == loaded

    # open it and requeue it; the answer is the command's line
    row.locator("a").first.click()
    page.get_by_role("button", name="Requeue (fresh)").click()
    page.get_by_text(f"item {failing} is queued").wait_for(timeout=20_000)
    assert project.get(failing).state.value == "queued"

    # accept the item in review: done
    page.goto(console.split("?", 1)[0] + f"items/{hostile}")
    assert page.evaluate("window.__pwned") is None
    page.get_by_role("button", name="Accept").click()
    page.get_by_text(f"item {hostile} is done").wait_for(timeout=20_000)
    shown = json.loads(project.wrighty("show", str(hostile), "--json"))
    assert (shown["state"], shown["reason_code"]) == ("done", "accepted")


def test_an_item_page_shows_its_running_log_grow(
    project: ProjectOnDisk, console: str, page: Any, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    item_id = project.plant(f"WAIT {go}", title="Think aloud")
    worker = LiveWorker(project, "--once")
    try:
        worker.until("spawned")  # the agent runs
        page.goto(console)
        page.goto(console.split("?", 1)[0] + f"items/{item_id}")
        stdout = page.locator("#log-stdout")
        stdout.get_by_text("thinking about <b>it</b>").wait_for(timeout=20_000)
        assert page.locator("#log-stdout b").count() == 0  # the agent's text, not HTML
        loaded = page.evaluate("performance.getEntriesByType('navigation').length")
        go.write_text("")
        stdout.get_by_text("the second thought").wait_for(timeout=20_000)
        assert page.evaluate("performance.getEntriesByType('navigation').length") == loaded
        go.write_text("end")
        page.locator('#log[data-state="ended"]').wait_for(timeout=30_000)
        assert "the run has ended (succeeded)" in page.locator("#log-note").inner_text()
    finally:
        go.write_text("end")
        code, err = worker.finish()
    assert code == 0, err
