"""How the docs harness reads a page's examples, normalises output and compares it: the rules
of docs/testing.md#the-docs-examples-run, on small pages written here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.docs.examples import Normaliser, PageError, matches, read_page, run_page

PAGE = """# A page

<!-- setup
wrighty create --title t --body b
-->
```console
$ wrighty list
ID STATE
1  todo
$ cat <<'EOF'
$ not a command
EOF
$ not a command
```

<!-- not run: needs Slack -->
```console
$ wrighty notify test
sent
```

```sh
echo one
```

```
plain output, not a command
```
"""


def test_a_page_gives_its_examples_in_order_with_their_commands_and_output() -> None:
    setup, console, slack, script = read_page(PAGE, "page.md")
    assert (setup.kind, setup.commands[0].text) == ("setup", "wrighty create --title t --body b")
    assert [c.text for c in console.commands] == [
        "wrighty list",
        "cat <<'EOF'\n$ not a command\nEOF",
        "not a command",
    ]
    assert console.commands[0].expected == ("ID STATE", "1  todo")
    assert console.commands[1].expected == ()
    assert (slack.not_run, console.not_run) == ("needs Slack", None)
    assert (script.kind, script.commands[0].text) == ("sh", "echo one")
    assert console.commands[0].line == 7


@pytest.mark.parametrize(
    ("page", "says"),
    [
        ("```\n$ wrighty list\n```\n", "without a language"),
        ("<!-- not run: why -->\nSome text.\n", "marks no block"),
        ("<!-- not run: why -->\n```json\n{}\n```\n", "never runs"),
        ("```console\noutput first\n$ wrighty list\n```\n", "output before"),
        ("```console\n$ wrighty list\n", "no closing"),
    ],
)
def test_a_block_that_does_not_say_whether_it_runs_is_refused(page: str, says: str) -> None:
    with pytest.raises(PageError, match=says):
        read_page(page, "page.md")


def test_what_changes_from_run_to_run_is_normalised_on_both_sides() -> None:
    normalise = Normaliser(replacements=(("/tmp/pytest-7/shop", "/tmp/demo/shop"),))
    printed = (
        "07:38:12 started  worker=w-2242e3975c1a installation_id=inst-fd3dbf46c281f6c469bb2475 "
        "pid=8802 at 2026-11-30T06:04:18.440Z in /tmp/pytest-7/shop took 1.5s"
    )
    documented = (
        "09:01:02 started worker=w-0123456789ab installation_id=inst-000000000000000000000000 "
        "pid=1 at 2026-12-01T00:00:00.000Z in /tmp/demo/shop took 12s"
    )
    assert normalise.line(printed) == normalise.line(documented)
    assert normalise.line("item 1 is queued") != normalise.line("item 2 is queued")


def test_an_elision_stands_for_any_lines_and_nothing_else_differs() -> None:
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["a", "...", "d"], ["a", "d"])
    assert not matches(["a", "...", "d"], ["a", "b", "c"])
    assert not matches(["a", "b"], ["a", "b", "c"])
    assert not matches(["a", "b"], ["a", "c"])


def test_a_page_runs_in_one_shell_and_each_command_gets_its_own_output_and_status(
    tmp_path: Path,
) -> None:
    page = (
        "<!-- setup\nexport GREETING=hello\n-->\n"
        "```console\n$ echo $GREETING; echo oops >&2\nhello\noops\n"
        "$ false\n$ echo $?\n1\n$ printf 'no newline'\nno newline\n```\n"
    )
    results = run_page(read_page(page, "p.md"), tmp_path, {"PATH": os.environ["PATH"]})
    assert [(r.output, r.status) for r in results] == [
        ("", 0),
        ("hello\noops\n", 0),
        ("", 1),
        ("1\n", 0),
        ("no newline", 0),
    ]


def test_a_failing_setup_stops_the_page_there(tmp_path: Path) -> None:
    page = "<!-- setup\nfalse\necho not reached\n-->\n```console\n$ sleep 30\n$ echo after\n```\n"
    results = run_page(read_page(page, "p.md"), tmp_path, {"PATH": os.environ["PATH"]}, timeout=1)
    assert len(results) == 1
    assert results[0].status == -1
    assert "stopped here" in results[0].output


def test_a_command_that_never_ends_is_reported_and_what_ran_before_is_kept(
    tmp_path: Path,
) -> None:
    page = "```console\n$ echo before\nbefore\n$ sleep 30\n$ echo after\n```\n"
    results = run_page(read_page(page, "p.md"), tmp_path, {"PATH": os.environ["PATH"]}, timeout=1)
    assert (results[0].output, results[0].status) == ("before\n", 0)
    assert results[1].status == -1
    assert "stopped here after 1 seconds" in results[1].output
