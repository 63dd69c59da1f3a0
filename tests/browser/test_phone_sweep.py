"""Every page of the console on a phone (390x844) and a desktop (1440x900), in a real Chromium
against a real `wrighty serve` and worker (docs/web.md#on-a-phone): nothing is wider than the
screen, and every action (a button, an opener, a form's control, a tab, a link that stands
alone) is a target of at least 44x44 px that lies inside the viewport, uncovered, once
scrolled to. The project holds items in every open state and done, a title that is one long
word, a hostile title, a running item's log and a change with a long line."""

from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.browser.screen import sideways
from tests.browser.test_console import HOSTILE, console  # noqa: F401 (a fixture)
from tests.integration.worker_process import LiveWorker, ProjectOnDisk
from wrighty.domain.states import ItemState

# Writes answer.txt; a task that says FAIL fails (the item needs attention); one that says
# WAIT PATH prints a line, then ends once the file PATH exists.
AGENT = textwrap.dedent(
    """\
    import pathlib, sys, time
    task = sys.stdin.read()
    if "FAIL" in task:
        print("the agent gave up", file=sys.stderr)
        sys.exit(3)
    if task.startswith("WAIT "):
        go = pathlib.Path(task.split()[1])
        print("thinking about it " + "x" * 300, flush=True)
        while not go.exists():
            time.sleep(0.05)
    pathlib.Path("answer.txt").write_text("42\\n")
    """
)


def two_agents(agent: str, **sections: Any) -> pytest.MarkDecorator:
    """The project of a browser test whose items may be handed off: tests/browser's project
    (test_console.py's CONSOLE_PROJECT) with a second agent, `helper`, running ``agent`` too."""
    return pytest.mark.project(
        name="p",
        programs={"maker": ("agent.py", agent), "helper": ("agent.py", agent)},
        resumable=True,
        worker={"workspaceMode": "worktree"},
        git=True,
        completion={"review": "person"},
        **sections,
    )


pytestmark = two_agents(
    AGENT, verify={"checks": [{"name": "tidy", "argv": ["test", "!", "-f", "bad.txt"]}]}
)
SIZES = [(390, 844), (1440, 900)]
ONE_WORD = "Rename" + "TheConfigurationLoaderEverywhere" * 4 + "/src/wrighty/very/long/path.py"
LONG_LINE = "x = '" + "y" * 400 + "'\n"


@dataclass
class Seeded:
    review: int  # its checks passed
    again: int  # back in review after a reject: what changed since
    red: int  # in review, its latest checks failed; a long line in its change
    attention: int  # the hostile title
    retry: int  # rejected with feedback
    done: int
    running: int
    todo: int
    queued: int


def run(project: ProjectOnDisk, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        project.command(*args), cwd=project.root, env=project.env, capture_output=True,
        text=True, check=False,
    )  # fmt: skip


def settled(project: ProjectOnDisk, body: str, title: str) -> int:
    """An item a real worker ran to its end."""
    item_id = project.plant(body, title=title)
    assert project.worker("--once").returncode == 0
    return item_id


@pytest.fixture
def seeded(project: ProjectOnDisk, tmp_path: Path) -> Iterator[Seeded]:
    review = settled(project, "Write the answer.", ONE_WORD)
    red = settled(project, "Write the answer.", "Its checks fail " + "now " * 30)
    worktree = project.root / ".wrighty" / "worktrees" / str(red)
    (worktree / "bad.txt").write_text("x\n")
    (worktree / ("long" * 20 + ".py")).write_text(LONG_LINE * 3)
    assert run(project, "verify", str(red)).returncode == 1
    attention = settled(project, "FAIL this one.", HOSTILE)
    again = settled(project, "Write the answer.", "Back again")
    assert run(project, "reject", str(again), "--feedback", "more").returncode == 0
    (project.root / ".wrighty" / "worktrees" / str(again) / "more.txt").write_text(LONG_LINE)
    assert project.worker("--once").returncode == 0
    done = settled(project, "Write the answer.", "Accepted already")
    assert run(project, "accept", str(done)).returncode == 0
    retry = settled(project, "Write the answer.", "Rejected once")
    go = tmp_path / "go"
    running = project.plant(f"WAIT {go}", title="Thinking aloud")
    worker = LiveWorker(project, "--once")
    try:
        worker.until("spawned")  # it takes no other item: rejected now, this one waits
        assert run(project, "reject", str(retry), "--feedback", "again").returncode == 0
        todo = project.plant("Later.", title="Not yet " * 12, state=ItemState.TODO)
        queued = project.plant("Soon.", title="Next in line")
        made = Seeded(review, again, red, attention, retry, done, running, todo, queued)
        states = {
            made.review: "review", made.again: "review", made.red: "review",
            made.attention: "needs-attention", made.retry: "retry-scheduled", made.done: "done",
            made.running: "running", made.todo: "todo", made.queued: "queued",
        }  # fmt: skip
        assert {i: project.get(i).state.value for i in states} == states
        yield made
    finally:
        go.write_text("")
        worker.finish()


def pages(made: Seeded) -> list[tuple[str, int, str]]:
    """Every page the console answers a GET with (wrighty/web/app.py's routes): its path, its
    status and a part that shows it has its content (waited for: a log comes after the page)."""
    title = "#board table.board td:nth-child(4) a"  # a row's title, its link
    return [
        ("", 200, title),
        ("?state=review", 200, title),
        ("?state=reviw", 400, "#filter-refused"),  # a filter refused: a page that says so
        (f"items/{made.review}", 200, "#change table.diff"),
        (f"items/{made.again}", 200, "#since table.diff"),
        (f"items/{made.red}", 200, "details.check-failed[open]"),
        (f"items/{made.attention}", 200, "nav.action-bar .opens-handoff"),
        (f"items/{made.retry}", 200, "h1 .state-retry-scheduled"),
        (f"items/{made.done}", 200, "h1 .state-done"),
        (f"items/{made.running}", 200, "#log-stdout:has-text('thinking about it')"),
        (f"items/{made.todo}", 200, "nav.action-bar .action-queue"),
        (f"items/{made.queued}", 200, "h1 .state-queued"),
        *((f"items/{i}/diff", 200, "table.diff") for i in (made.review, made.again, made.red)),
        (f"items/{made.attention}/diff", 200, "nav.action-bar"),
        ("items/9999", 404, "p.back a"),  # no such item
        ("new", 200, "form.item-form"),
        ("operations", 200, "#workers td"),
        ("spend", 200, "svg.chart"),
        ("accept-all", 200, "table.ready td.title"),
        ("since", 200, "#since-counts a"),
        ("since?since=tomorrow", 400, "#since-refused"),
    ]


# The actions: buttons, openers, a form's controls (a checkbox's target is its label), the
# tabs, and the links that stand alone (a link inside a sentence is the sentence's).
ACTIONS = ", ".join(
    [
        "button", "summary", "select", "textarea", "label.check",
        "input:not([type=checkbox]):not([type=radio]):not([type=hidden])",
        "header a", "nav a", "a.button", "table.rows td a", ".period a", "p.back a",
        "ul.imported a", "p.figures a", "p.section-action a", "p.change-link a", "p.change a",
        "h1 > a",
    ]
)  # fmt: skip
# Each action shown: scrolled to (its middle to the viewport's), measured, and hit where a
# finger lands (its middle); the problems, one line each.
MEASURE = """(selector) => {
  const problems = [];
  for (const el of document.querySelectorAll(selector)) {
    if (!el.checkVisibility()) continue;
    el.scrollIntoView({block: "center", inline: "center"});
    const r = el.getBoundingClientRect();
    const name = el.tagName.toLowerCase() + " '" + (el.textContent || el.name || "").trim()
      .replace(/\\s+/g, " ").slice(0, 40) + "'";
    if (r.width < 44 || r.height < 44) {
      problems.push(name + " is " + Math.round(r.width) + "x" + Math.round(r.height));
    }
    if (r.left < 0 || r.top < 0 || r.right > innerWidth + 0.5 || r.bottom > innerHeight + 0.5) {
      problems.push(name + " lies outside the viewport at " + [r.left, r.top, r.right,
        r.bottom].map(Math.round).join(","));
      continue;
    }
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (!hit || !(el.contains(hit) || (el.labels && [...el.labels].some(l => l.contains(hit))))) {
      problems.push(name + " is covered by " + (hit ? hit.tagName.toLowerCase() + "."
        + hit.className : "nothing"));
    }
  }
  return problems;
}"""


def sweep(page: Any) -> list[str]:
    """What is wrong with the page as it is: too wide, or an action too small, off screen or
    covered."""
    wide = sideways(page)
    return ([wide] if wide else []) + page.evaluate(MEASURE, ACTIONS)


def sweep_page(page: Any, url: str, status: int, content: str) -> list[str]:
    """The page, then each of its openers (Reject…, Hand off…, More…) open in turn."""
    answered = page.goto(url).status
    if answered != status:
        return [f"answered {answered}, not {status}"]
    page.locator(content).first.wait_for(state="attached", timeout=10_000)
    page.wait_for_function("() => document.readyState === 'complete'")
    problems = sweep(page)
    closed = "() => document.querySelectorAll('details:not([open]) > summary').length"
    openers = page.locator("details:not([open]) > summary")
    shut = openers.count()
    for index in range(shut):
        opener = openers.nth(index)
        label = opener.inner_text()
        named = " ".join(label.split())
        opener.click()
        page.wait_for_function(f"() => ({closed})() < {shut}")
        problems += [f"({named} open) {problem}" for problem in sweep(page)]
        page.locator("details[open] > summary", has_text=label).first.click()
        page.wait_for_function(f"() => ({closed})() === {shut}")
    return problems


@pytest.mark.parametrize("size", SIZES, ids=["phone", "desktop"])
def test_every_page_fits_the_screen_and_its_actions_a_finger(
    project: ProjectOnDisk,
    seeded: Seeded,
    console: str,  # noqa: F811
    chromium: Any,
    size: tuple[int, int],
) -> None:
    context = chromium.new_context(viewport={"width": size[0], "height": size[1]})
    try:
        page = context.new_page()
        page.goto(console)
        base = console.split("?", 1)[0]
        problems = [
            f"/{path}: {problem}"
            for path, status, content in pages(seeded)
            for problem in sweep_page(page, base + path, status, content)
        ]
        assert page.evaluate("() => window.__pwned") is None
    finally:
        context.close()
    assert not problems, "\n".join(problems)
