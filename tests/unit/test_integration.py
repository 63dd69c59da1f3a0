"""Integration's pure rules (wrighty/domain/integration.py, docs/work-product.md#integration):
the settings as wrighty.json gives them, the merge commit's message, the summary a command
reads, and the URL it printed."""

from __future__ import annotations

import json

import pytest

from wrighty.config import check_config_text, completion_of
from wrighty.domain.check_evidence import CheckEvidence
from wrighty.domain.integration import (
    MAX_STAT_CHARS,
    MAX_SUMMARY_CHARS,
    MAX_URL_CHARS,
    Integration,
    last_url,
    summary,
)
from wrighty.domain.work_product import merge_message


def test_wrighty_json_gives_the_integration_and_its_defaults() -> None:
    config, problems = check_config_text("{}")
    assert config is not None, problems
    assert completion_of(config).integration == Integration(
        kind="none", merge="ff", remote="origin", command=(), timeout_seconds=300
    )
    document = {
        "completion": {
            "integrate": "command",
            "merge": "no-ff",
            "remote": "fork/me",
            "integrateCommand": ["gh", "pr", "create", "--fill"],
            "integrateTimeoutSeconds": 30,
        }
    }
    config, problems = check_config_text(json.dumps(document))
    assert config is not None, problems
    assert completion_of(config).integration == Integration(
        kind="command",
        merge="no-ff",
        remote="fork/me",
        command=("gh", "pr", "create", "--fill"),
        timeout_seconds=30,
    )


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"remote": "-x"}, "remote '-x' must be a git remote's name"),
        ({"remote": "a b"}, "must be a git remote's name"),
        ({"kind": "command"}, "an integration command must name a program"),
        ({"kind": "command", "command": ("",)}, "must name a program"),
        ({"command": ("gh", "a\x00b")}, "must not contain NUL"),
        ({"command": ("x",) * 65}, "at most 64 arguments"),
        ({"timeout_seconds": 0.5}, "timeout must be 1 to 3600 s"),
        ({"timeout_seconds": 3601}, "timeout must be 1 to 3600 s"),
    ],
)
def test_an_integration_wrighty_json_could_not_give_is_refused(
    settings: dict[str, object], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        Integration(**settings)  # type: ignore[arg-type]


def test_the_merge_message_names_the_item_in_one_line_and_its_trailer() -> None:
    assert merge_message(3, "Fix the\nlogin\x1b[2J page") == (
        "Merge item 3: Fix the login\\x1b[2J page",
        "Wrighty-Item: 3",
    )
    assert merge_message(3, "  ") == ("Merge item 3", "Wrighty-Item: 3")
    subject, _ = merge_message(3, "x" * 500)
    assert len(subject) == len("Merge item 3: ") + 200


def evidence(
    name: str, code: int | None, seconds: float, *, timed_out: bool = False
) -> CheckEvidence:
    signal = 15 if code is None else None
    return CheckEvidence(
        name, ("true",), seconds, exit_code=code, signal=signal, timed_out=timed_out
    )


STAT = " login.py | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"


def test_the_summary_says_the_item_its_branch_its_change_and_its_checks() -> None:
    text = summary(
        item_id=3,
        title="Fix the login page",
        branch="wrighty/3-fix-the-login-page",
        base="1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d",
        diff_stat=STAT,
        checks=[
            evidence("tests", 0, 12.34),
            evidence("lint", 1, 0.4),
            evidence("slow", None, 60, timed_out=True),
        ],
    )
    assert text == (
        "Item 3: Fix the login page\n"
        "Branch: wrighty/3-fix-the-login-page (from 1a2b3c4d5e6f)\n"
        "\n"
        "Change:\n"
        " login.py | 2 +-\n"
        " 1 file changed, 1 insertion(+), 1 deletion(-)\n"
        "\n"
        "Checks:\n"
        "- tests: passed (12.3s)\n"
        "- lint: exit code 1 (0.4s)\n"
        "- slow: stopped at its time limit (signal 15) (60.0s)\n"
    )


def test_a_summary_without_change_or_checks_says_so_and_outside_text_is_neutralised() -> None:
    text = summary(
        item_id=3, title="a\x1b]0;owned\x07b", branch=None, base=None, diff_stat="", checks=[]
    )
    assert text == "Item 3: a\\x1b]0;owned\\x07b\n\nChange:\n(no change)\n\nChecks:\n(none ran)\n"
    text = summary(
        item_id=3,
        title="t",
        branch="b",
        base=None,
        diff_stat=" a\x1b[2J | 1 +\r\n 1 file changed\n",
        checks=[],
    )
    assert "Branch: b\n" in text
    assert " a\\x1b[2J | 1 +\n 1 file changed\n" in text


def test_a_long_stat_keeps_its_first_lines_and_its_totals_within_the_bound() -> None:
    lines = [f" file{n}.py | 1 +" for n in range(2_000)]
    stat = "\n".join([*lines, " 2000 files changed, 2000 insertions(+)"]) + "\n"
    text = summary(item_id=1, title="t", branch="b", base=None, diff_stat=stat, checks=[])
    change = text.split("Change:\n")[1].split("\n\nChecks:")[0]
    assert len(change) <= MAX_STAT_CHARS
    assert change.startswith(" file0.py | 1 +\n file1.py | 1 +\n")
    assert change.endswith("more lines left out)\n 2000 files changed, 2000 insertions(+)")
    assert (
        len(
            summary(
                item_id=1,
                title="t" * 10**6,
                branch="b" * 10**6,
                base=None,
                diff_stat=stat * 10,
                checks=[],
            )
        )
        <= MAX_SUMMARY_CHARS
    )


@pytest.mark.parametrize(
    ("output", "url"),
    [
        ("https://github.com/o/r/pull/7\n", "https://github.com/o/r/pull/7"),
        ("see http://a.example/1 then https://b.example/pr/2.\n", "https://b.example/pr/2"),
        ("(https://b.example/x?y=1&z=2)", "https://b.example/x?y=1&z=2"),
        ("<https://b.example/x>", "https://b.example/x"),
        ("https://b.example/\x1b[2Jx", "https://b.example/"),
        ("no URL at all\n", None),
        ("ftp://files.example/x\n", None),
        ("https://\n", None),
        ("https://x.example/" + "a" * MAX_URL_CHARS, None),
    ],
)
def test_the_url_a_command_printed_is_its_last_one(output: str, url: str | None) -> None:
    assert last_url(output) == url
