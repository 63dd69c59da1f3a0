"""The item page as a review in a real browser: what a long change costs to show.

A git project in worktree mode whose agent writes one line (tests/browser's project), two
items a real `wrighty worker --once` left in review: one with that one-line change (the
baseline), one with a file of --lines more lines in its worktree (2,000 by default). Then a
real `wrighty serve --port 0` and Debian's Chromium through Playwright, at a phone's size
(390x844) and a desktop's (1440x900); in turns, after warm-up rounds, each page is opened in a
fresh tab and timed from the navigation's start to the end of its load event (the page's
Navigation Timing, as the browser reports it): the one-line item's page, the long item's page
(its change inline) and the long item's diff page. Per page: median and p95 (nearest rank) and
the ratio of the medians to the one-line page's, measured in the same run.

Usage: python bench/review_page.py [--lines 2000] [--runs 20]
(pip install -e '.[test]'; Chromium at /usr/bin/chromium, or WRIGHTY_CHROMIUM)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.browser.test_console import AGENT  # the browser tests' agent
from tests.integration.worker_process import ProjectOnDisk, make_project

SIZES = {"phone": (390, 844), "desktop": (1440, 900)}
WARM_UP = 3
# When the page's load event ended, in ms from its navigation's start.
LOADED = "() => performance.getEntriesByType('navigation')[0].loadEventEnd"


def seeded(root: Path, lines: int) -> tuple[ProjectOnDisk, int, int]:
    """The project and its two items in review: the one-line change and the long one."""
    project = make_project(
        root,
        programs={"maker": ("agent.py", AGENT)},
        worker={"workspaceMode": "worktree"},
        git=True,
        completion={"review": "person"},
    )
    ids = []
    for title in ("One line", f"{lines} lines"):
        ids.append(project.plant("Write the answer.", title=title))
        worker = subprocess.run(
            project.command("worker", "start", "--once"), cwd=root, env=project.env,
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if worker.returncode != 0:
            sys.exit(f"review_page: the worker failed: {worker.stderr.strip()}")
    long_file = root / ".wrighty" / "worktrees" / str(ids[1]) / "long.txt"
    long_file.write_text("".join(f"line {n} of a long change\n" for n in range(1, lines + 1)))
    return project, ids[0], ids[1]


def timed(context: Any, url: str) -> float:
    """Milliseconds from the navigation's start to its load event's end, in a fresh tab."""
    page = context.new_page()
    try:
        page.goto(url, wait_until="load")
        page.wait_for_function(LOADED + " > 0")
        return float(page.evaluate(LOADED))
    finally:
        page.close()


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * 95 // 100) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("WRIGHTY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory(prefix="wrighty-review-page-") as scratch:
        project, small, long = seeded(Path(scratch) / "p", args.lines)
        served = subprocess.Popen(
            project.command("serve", "--port", "0"), cwd=project.root, env=project.env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        try:
            assert served.stdout is not None
            login = served.stdout.readline().strip()
            base = login.split("?", 1)[0]
            pages = {
                "item, one line (baseline)": f"{base}items/{small}",
                f"item, {args.lines} lines": f"{base}items/{long}",
                f"diff, {args.lines} lines": f"{base}items/{long}/diff",
            }
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=chromium, headless=True, args=["--no-sandbox"]
                )
                print(
                    f"`wrighty serve --port 0`, Chromium {browser.version}; {args.runs} loads "
                    f"of each page in turns after {WARM_UP} warm-up rounds"
                )
                for size_name, (width, height) in SIZES.items():
                    context = browser.new_context(viewport={"width": width, "height": height})
                    context.new_page().goto(login)  # the token becomes the context's cookie
                    times: dict[str, list[float]] = {name: [] for name in pages}
                    for turn in range(WARM_UP + args.runs):
                        for name, url in pages.items():
                            took = timed(context, url)
                            if turn >= WARM_UP:
                                times[name].append(took)
                    context.close()
                    report(f"{size_name} {width}x{height}", times)
                browser.close()
        finally:
            served.terminate()
            served.wait(timeout=30)


def report(heading: str, times: dict[str, list[float]]) -> None:
    baseline = statistics.median(next(iter(times.values())))
    print(f"{heading}: load event end, ms    median       p95   median/baseline")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<28} {median:9.0f} {p95(values):9.0f}   {median / baseline:9.2f}x")


if __name__ == "__main__":
    main()
