"""At the end of a run that collected the docs examples: how many ran, which were not, why."""

from __future__ import annotations

import pytest

from tests.docs.examples import PageError
from tests.docs.test_pages import PAGES, page_examples


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    ran = 0
    not_run: list[str] = []
    for page in PAGES:
        try:
            examples = page_examples(page)
        except PageError:
            continue  # its test fails, saying why
        for example in examples:
            if example.not_run is None:
                ran += example.kind != "setup"
            else:
                not_run.append(f"{example.where}: {example.not_run}")
    terminalreporter.write_sep("-", f"docs examples: {ran} run, {len(not_run)} not run")
    for line in not_run:
        terminalreporter.write_line(f"not run: {line}")
