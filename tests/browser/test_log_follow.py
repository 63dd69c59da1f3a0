"""A running item's live log follows its end in a real browser (docs/web.md#an-item), on a
phone's screen and a desktop's, against a real `wrighty serve` and a real worker whose agent
prints its lines in steps the test releases: at the end the last line stays in sight as the
log grows; scrolled up, new lines leave the reader where they are and "jump to the end" takes
them back, following again."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_console import console  # noqa: F401 (a fixture)
from tests.integration.worker_process import LiveWorker, ProjectOnDisk

# Prints 60 lines of step 1, then 60 of step N once the file STEPS/step-N exists; ends once
# STEPS/end does.
AGENT = textwrap.dedent(
    """\
    import pathlib, sys, time
    steps = pathlib.Path(sys.stdin.read().split()[1])
    step = 1
    while True:
        for n in range(1, 61):
            print(f"step {step} line {n}", flush=True)
        step += 1
        while not (steps / f"step-{step}").exists():
            if (steps / "end").exists():
                sys.exit(0)
            time.sleep(0.05)
    """
)
pytestmark = pytest.mark.project(
    name="p",
    programs={"maker": ("agent.py", AGENT)},
    worker={"workspaceMode": "worktree"},
    git=True,
    completion={"review": "person"},
)
# The last line of the log is in sight: inside the log's box, inside the viewport, and what is
# under it is the log (not the action bar).
LAST_LINE_SHOWN = """() => {
  const pane = document.getElementById("log-stdout");
  const node = pane.lastChild;
  if (!node || node.length < 2) return false;
  const range = document.createRange();
  range.setStart(node, node.length - 2);
  range.setEnd(node, node.length - 1);
  const line = range.getBoundingClientRect(), box = pane.getBoundingClientRect();
  const hit = document.elementFromPoint(line.left + 1, (line.top + line.bottom) / 2);
  return line.height > 0 && line.top >= box.top && line.bottom <= box.bottom + 1
    && line.top >= 0 && line.bottom <= innerHeight && pane.contains(hit);
}"""


def grown_to(page: Any, text: str) -> None:
    """Wait until the log's last line is ``text``."""
    page.wait_for_function(
        "(text) => document.getElementById('log-stdout').textContent.endsWith(text + '\\n')",
        arg=text,
        timeout=20_000,
    )


@pytest.mark.parametrize("size", [(390, 844), (1440, 900)], ids=["phone", "desktop"])
def test_the_log_follows_its_end_until_the_reader_scrolls_up(
    project: ProjectOnDisk,
    console: str,  # noqa: F811
    chromium: Any,
    tmp_path: Path,
    size: tuple[int, int],
) -> None:
    steps = tmp_path / "steps"
    steps.mkdir()
    item_id = project.plant(f"STEPS {steps}", title="Think aloud")
    worker = LiveWorker(project, "--once")
    context = chromium.new_context(viewport={"width": size[0], "height": size[1]}, has_touch=True)
    try:
        worker.until("spawned")
        page = context.new_page()
        page.goto(console)
        page.goto(console.split("?", 1)[0] + f"items/{item_id}")
        pane = page.locator("#log-stdout")
        jump = page.get_by_role("button", name="jump to the end")
        grown_to(page, "step 1 line 60")
        page.evaluate(
            "() => document.getElementById('log-stdout').scrollIntoView({block: 'center'})"
        )
        assert page.evaluate("() => { const p = document.getElementById('log-stdout'); "
                             "return p.scrollHeight > 2 * p.clientHeight; }")  # fmt: skip
        assert page.evaluate(LAST_LINE_SHOWN)  # at the end from the start

        (steps / "step-2").write_text("")
        grown_to(page, "step 2 line 60")
        assert page.evaluate(LAST_LINE_SHOWN)  # it followed
        assert jump.is_hidden()

        # the reader scrolls the log up: it stops following and offers the end
        box = pane.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.wheel(0, -100_000)
        page.wait_for_function("() => document.getElementById('log-stdout').scrollTop === 0")
        jump.wait_for(state="visible")
        (steps / "step-3").write_text("")
        grown_to(page, "step 3 line 60")
        assert page.evaluate("() => document.getElementById('log-stdout').scrollTop") == 0
        assert not page.evaluate(LAST_LINE_SHOWN)

        # "jump to the end", a finger's target: at the end, following again
        jump.scroll_into_view_if_needed()
        target = jump.bounding_box()
        assert target["width"] >= 44
        assert target["height"] >= 44
        jump.tap()
        page.evaluate(
            "() => document.getElementById('log-stdout').scrollIntoView({block: 'center'})"
        )
        page.wait_for_function(LAST_LINE_SHOWN)
        jump.wait_for(state="hidden")
        (steps / "step-4").write_text("")
        grown_to(page, "step 4 line 60")
        assert page.evaluate(LAST_LINE_SHOWN)
    finally:
        context.close()
        (steps / "end").write_text("")
        code, err = worker.finish()
    assert code == 0, err
