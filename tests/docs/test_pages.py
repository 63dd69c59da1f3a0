"""The console examples of README.md and docs/*.md run as written, in a scratch project, and
print what the page says (docs/testing.md#the-docs-examples-run)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.examples import (
    SHOWN_PROJECT,
    SHOWN_VENV,
    Example,
    Normaliser,
    PageError,
    Result,
    matches,
    read_page,
    run_page,
)
from tests.helpers import fork_server, installed_wrighty

ROOT = Path(__file__).resolve().parents[2]
# The pages run on one xdist worker: `page_runs` starts them all at once, in its own threads.
pytestmark = pytest.mark.xdist_group("docs-pages")

PAGES = ["README.md", *sorted(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md"))]


def page_examples(page: str) -> list[Example]:
    return read_page((ROOT / page).read_text(encoding="utf-8"), page)


@pytest.fixture(scope="module")
def wrighty_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The folders of PATH that hold `wrighty`: the venv's, after the fork server's shim
    (tests/docs/zygote.py) unless WRIGHTY_DOCS_EXECUTABLE=1 asks for the executable itself."""
    bin_dir = str(Path(installed_wrighty()).parent)
    if os.environ.get("WRIGHTY_DOCS_EXECUTABLE") == "1":
        yield bin_dir
        return
    with fork_server(tmp_path_factory.mktemp("zygote")) as shim:
        yield f"{shim.parent}:{bin_dir}"


def scratch_env(home: Path, wrighty_dirs: str) -> dict[str, str]:
    """A user's shell: wrighty's commands on PATH (an activated venv), UTC, no WRIGHTY_ variable,
    a home of its own, output unbuffered so that its order is a terminal's."""
    env = {
        "PATH": f"{wrighty_dirs}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "TZ": "UTC",
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "TERM": "dumb",
    }
    for name in ("WRIGHTY_TEST_POSTGRES",):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _output_lines(text: str, normalise: Normaliser) -> list[str]:
    lines = [normalise.line(line) for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def problems_of(results: list[Result], normalise: Normaliser) -> list[str]:
    """What differs from the page: a console command's output, a script that failed."""
    problems = []
    for result in results:
        where = f"{result.example.page}:{result.command.line}"
        if result.status == -1:
            problems.append(f"{where}: {result.output}")
            break
        if result.example.kind != "console":
            if result.status != 0:
                problems.append(
                    f"{where}: the {result.example.kind} block failed (exit {result.status}):\n"
                    f"{result.command.text}\n--- output:\n{result.output}"
                )
            continue
        expected = _output_lines("\n".join(result.command.expected), normalise)
        actual = _output_lines(result.output, normalise)
        if not matches(expected, actual):
            problems.append(
                f"{where}: $ {result.command.text}\n--- the page says:\n"
                + "\n".join(expected)
                + f"\n--- the program printed (exit {result.status}):\n"
                + "\n".join(actual)
            )
    return problems


def test_every_page_says_which_examples_run() -> None:
    """Every `$ ` block is fenced ```console (run) or marked not run, with a reason."""
    for page in PAGES:
        page_examples(page)


def _runs_examples(page: str) -> bool:
    try:
        return any(example.not_run is None for example in page_examples(page))
    except PageError:
        return True  # its test says what is wrong with it


RUN_PAGES = [page for page in PAGES if _runs_examples(page)]


@dataclass(frozen=True)
class PageRun:
    results: list[Result]
    normalise: Normaliser


def run_one_page(page: str, folder: Path, wrighty_dirs: str) -> PageRun:
    """A page's examples, in order, in a fresh project `shop` under ``folder``."""
    examples = page_examples(page)
    project = folder / "shop"
    project.mkdir(parents=True)
    home = folder / "home"
    home.mkdir()
    runs = [e for e in examples if e.not_run is None and e.kind != "setup"]
    if not any(e.commands[0].text.startswith("wrighty init") for e in runs):
        # A page that shows no `wrighty init` of its own starts in a project made by
        # `wrighty init --example` (its default agent is the example agent); one that does
        # runs the examples before it in an empty folder.
        examples.insert(0, read_page("```sh\nwrighty init --example >/dev/null\n```", page)[0])
    results = run_page(examples, project, scratch_env(home, wrighty_dirs))
    venv_bin = str(Path(installed_wrighty()).parent)
    normalise = Normaliser(
        replacements=((str(project), SHOWN_PROJECT), (str(home), "~"), (venv_bin, SHOWN_VENV))
    )
    return PageRun(results, normalise)


@pytest.fixture(scope="module")
def page_runs(
    tmp_path_factory: pytest.TempPathFactory, wrighty_dirs: str
) -> Iterator[dict[str, Future[PageRun]]]:
    """Every page's run, started at once: the pages are independent (a project each), and most
    of a page's time is its commands waiting on each other, so they share the cores."""
    folder = tmp_path_factory.mktemp("pages")
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        yield {
            page: pool.submit(run_one_page, page, folder / f"page{index}", wrighty_dirs)
            for index, page in enumerate(RUN_PAGES)
            if _reads(page)
        }


def _reads(page: str) -> bool:
    try:
        page_examples(page)
    except PageError:
        return False
    return True


@pytest.mark.parametrize("page", RUN_PAGES)
def test_the_page_examples_print_what_the_page_says(
    page: str, page_runs: dict[str, Future[PageRun]]
) -> None:
    if page not in page_runs:
        page_examples(page)  # raises, saying what is wrong with the page
    run = page_runs[page].result()
    if os.environ.get("WRIGHTY_DOCS_UPDATE") == "1":
        update_page(ROOT / page, run.results, run.normalise)
    problems = problems_of(run.results, run.normalise)
    assert not problems, "\n\n".join(problems)


def update_page(path: Path, results: list[Result], normalise: Normaliser) -> None:
    """WRIGHTY_DOCS_UPDATE=1: write what each console command printed into the page, in place
    of what it says, where the two differ (read the diff before committing it)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    changes = []
    for result in results:
        command = result.command
        if result.example.kind != "console" or result.status == -1:
            continue
        expected = _output_lines("\n".join(command.expected), normalise)
        if matches(expected, _output_lines(result.output, normalise)):
            continue
        start = command.line - 1 + len(command.text.split("\n"))
        printed = result.output
        for old, new in normalise.replacements:
            printed = printed.replace(old, new)
        new_lines = [line.rstrip() for line in printed.rstrip("\n").split("\n")]
        new_lines = new_lines if printed.strip() else []
        changes.append((start, start + len(command.expected), new_lines))
    for start, end, new_lines in sorted(changes, reverse=True):
        lines[start:end] = new_lines
    path.write_text("\n".join(lines), encoding="utf-8")
