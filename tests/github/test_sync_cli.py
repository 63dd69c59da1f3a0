"""`wrighty sources sync` and `wrighty sources`, as real processes against the local GitHub API,
on both stores: issues become items once, an unchanged repository costs only 304s, edits and
closes reach the items that have not started, and every fault is one line that writes no item
and never shows the token."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.github.conftest import ServedGitHub
from tests.github.fake_api import TOKEN
from tests.integration.worker_process import ProjectOnDisk, make_project

REPO = "acme/widgets"


def project(
    tmp_path: Path, github: ServedGitHub, store_url: str | None, **source: Any
) -> ProjectOnDisk:
    tracker = {
        "kind": "github",
        "name": "widgets",
        "repo": REPO,
        "labels": ["wrighty"],
        "apiUrl": github.url,
        "priorityLabels": {"urgent": "P0"},
        **source,
    }
    return make_project(
        tmp_path / "project",
        store_url=store_url,
        env={"GITHUB_TOKEN": TOKEN},
        sources={"trackers": [tracker]},
    )


def run(project: ProjectOnDisk, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        project.command(*args), cwd=project.root, env=project.env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip


def items(project: ProjectOnDisk) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = json.loads(project.wrighty("list", "--json"))
    return listed


def shown(project: ProjectOnDisk, item_id: int) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(project.wrighty("show", str(item_id), "--json"))
    return found


def synced(project: ProjectOnDisk, *args: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(project.wrighty("sources", "sync", "--json", *args))
    return report["sources"][0]


def test_labelled_issues_become_items_once(
    tmp_path: Path, github: ServedGitHub, store_url: str | None
) -> None:
    fake = github.fake
    fake.add_issue(REPO, 1, "Set up the database", "Make the schema.")
    fake.add_issue(
        REPO, 2, "Add login", "Depends on #1\n\nUse the schema.", labels=("wrighty", "urgent")
    )
    fake.add_issue(REPO, 3, "A pull request", pull_request=True)
    fake.add_issue(REPO, 4, "Not for agents", labels=("other",))
    proj = project(tmp_path, github, store_url)
    report = synced(proj)
    assert [entry["issue"] for entry in report["created"]] == [2, 1]
    by_title = {item["title"]: item for item in items(proj)}
    assert set(by_title) == {"Set up the database", "Add login"}
    login = shown(proj, by_title["Add login"]["id"])
    database = by_title["Set up the database"]
    assert (login["state"], login["priority"], database["priority"]) == ("queued", 0, 2)
    assert login["after"] == [{"id": database["id"], "state": "queued"}]
    assert "written outside wrighty" in login["body"]
    assert "issue acme/widgets#2" in login["body"]
    assert "Use the schema." in login["body"]
    assert sorted(login["labels"]) == ["urgent", "wrighty"]
    # The same repository again: every page unchanged, answered 304, nothing created; the
    # status comments say what they said (nothing posted), and no new comment (304).
    before = fake.counted()
    again = synced(proj)
    assert (again["created"], again["unchanged"], again["not_modified"]) == ([], 2, 1)
    assert [(r.path, r.status) for r in fake.requests[before:]] == [
        (f"/repos/{REPO}/issues", 304),
        (f"/repos/{REPO}/issues/comments", 304),
    ]
    assert len(items(proj)) == 2


def test_an_edit_updates_and_a_close_cancels_only_items_that_have_not_started(
    tmp_path: Path, github: ServedGitHub, store_url: str | None
) -> None:
    fake = github.fake
    for number in (1, 2, 3):
        fake.add_issue(REPO, number, f"Issue {number}", f"text {number}")
    proj = project(tmp_path, github, store_url)
    created = {entry["issue"]: entry["item_id"] for entry in synced(proj)["created"]}
    proj.wrighty("cancel", str(created[3]))  # a final item: its issue's changes leave it alone
    fake.edit_issue(
        REPO, 1, title="Issue one, edited", body="new text", labels=["wrighty", "urgent"]
    )
    fake.edit_issue(REPO, 2, state="closed")
    fake.edit_issue(REPO, 3, title="Changed after cancel")
    report = synced(proj)
    assert [e["issue"] for e in report["updated"]] == [1]
    assert [e["issue"] for e in report["cancelled"]] == [2]
    one, two, three = (shown(proj, created[n]) for n in (1, 2, 3))
    assert (one["title"], one["priority"], one["state"]) == ("Issue one, edited", 0, "queued")
    assert "new text" in one["body"]
    assert (two["state"], two["reason_code"]) == ("cancelled", "source-closed")
    assert (three["title"], three["reason_code"]) == ("Issue 3", "operator-cancelled")
    # The label taken off an issue is as good as closing it.
    fake.add_issue(REPO, 4, "Issue 4")
    four = synced(proj)["created"][0]["item_id"]
    fake.edit_issue(REPO, 4, labels=["other"])
    assert [e["issue"] for e in synced(proj)["cancelled"]] == [4]
    assert shown(proj, four)["state"] == "cancelled"


def test_an_issue_the_pages_missed_is_asked_alone_before_its_item_is_cancelled(
    tmp_path: Path, github: ServedGitHub, store_url: str | None
) -> None:
    for number in (1, 2, 3):
        github.fake.add_issue(REPO, number, f"Issue {number}")
    proj = project(tmp_path, github, store_url)
    created = {entry["issue"]: entry["item_id"] for entry in synced(proj)["created"]}
    github.fake.hidden = {2}  # still open with the label: the list shifted past it
    github.fake.edit_issue(REPO, 3, state="closed")
    before = github.fake.counted()
    report = synced(proj)
    assert [e["issue"] for e in report["cancelled"]] == [3]
    assert shown(proj, created[2])["state"] == "queued"
    asked = [r.path for r in github.fake.requests[before:] if r.path.endswith(("/2", "/3"))]
    assert sorted(asked) == ["/repos/acme/widgets/issues/2", "/repos/acme/widgets/issues/3"]


def test_a_thousand_issues_sync_in_ten_requests_and_again_in_ten_304s(
    tmp_path: Path, github: ServedGitHub, store_url: str | None
) -> None:
    for number in range(1, 1001):
        github.fake.add_issue(REPO, number, f"Issue {number}", "text")
    # The issues alone (the status comments would be a comment each: test_conversation.py).
    proj = project(tmp_path, github, store_url, statusComments=False, answers=False)
    first = synced(proj)
    assert (len(first["created"]), first["requests"]) == (1000, 10)
    spent = first["rate_limit_remaining"]
    again = synced(proj)
    assert (again["created"], again["requests"], again["not_modified"]) == ([], 10, 10)
    assert again["rate_limit_remaining"] == spent
    assert github.fake.counted(304) == 10


def test_a_dry_run_says_what_it_would_do_and_writes_nothing(
    tmp_path: Path, github: ServedGitHub, store_url: str | None
) -> None:
    github.fake.add_issue(REPO, 7, "Something")
    proj = project(tmp_path, github, store_url)
    out = proj.wrighty("sources", "sync", "--dry-run")
    assert "widgets: issue #7 would be created" in out
    assert items(proj) == []
    health = json.loads(proj.wrighty("sources", "--json"))[0]
    assert (health["last_sync"], health["last_error"]) == (None, None)


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("5xx", "GitHub answered 502 (a server error) when asked to list acme/widgets's issues"),
        ("hang", "did not answer within 0.5s"),
        ("malformed", "is not the JSON list it documents"),
        ("spent", "GitHub's rate limit is spent until"),
    ],
)
def test_a_fault_is_one_line_writes_no_item_and_shows_in_sources(
    tmp_path: Path, github: ServedGitHub, store_url: str | None, fault: str, says: str
) -> None:
    for number in range(1, 151):
        github.fake.add_issue(REPO, number, f"Issue {number}")
    proj = project(tmp_path, github, store_url, timeoutSeconds=0.5)
    # The fault on the second page: the first was read, and still nothing is written.
    github.fake.fault, github.fake.fault_pages = fault, frozenset({2})
    done = run(proj, "sources", "sync")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("wrighty: source widgets: ")
    assert says in done.stderr
    assert items(proj) == []
    listed = proj.wrighty("sources")
    assert says in listed
    for output in (done.stdout, done.stderr, listed, proj.wrighty("sources", "--json")):
        assert TOKEN not in output
    status = json.loads(run(proj, "status", "--json").stdout)
    warned = [w["message"] for w in status["warnings"] if w["check"] == "source_failing"]
    assert len(warned) == 1
    assert warned[0].startswith("source widgets: its last sync failed: ")
    assert says in warned[0]
    if fault == "spent":  # no request until the limit's reset
        before = github.fake.counted()
        again = run(proj, "sources", "sync")
        assert (again.returncode, github.fake.counted()) == (2, before)
        assert "rate limit left 0 (until" in listed


def test_a_missing_token_is_one_line_and_a_wrong_one_is_never_shown(
    tmp_path: Path, github: ServedGitHub, store_url: str | None
) -> None:
    github.fake.add_issue(REPO, 1, "Issue")
    proj = project(tmp_path, github, store_url)
    assert proj.env is not None
    proj.env.pop("GITHUB_TOKEN")
    done = run(proj, "sources", "sync")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "wrighty: source widgets: $GITHUB_TOKEN is not set: put a GitHub token that can read "
        "the repository's issues in it (docs/sources.md)\n"
    )
    assert github.fake.counted() == 0
    wrong = "ghp_a-wrong-token-0000"
    proj.env["GITHUB_TOKEN"] = wrong
    done = run(proj, "sources", "sync")
    assert done.returncode == 2
    assert "GitHub refused the token in $GITHUB_TOKEN (401)" in done.stderr
    for output in (
        done.stdout,
        done.stderr,
        proj.wrighty("sources"),
        proj.wrighty("sources", "--json"),
    ):
        assert wrong not in output
