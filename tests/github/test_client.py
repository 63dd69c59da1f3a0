"""wrighty's GitHub client against the local GitHub API: pages, conditional requests, the rate
limit, and each fault as one GitHubError that never carries the token."""

from __future__ import annotations

import pytest

from tests.github.conftest import ServedGitHub
from tests.github.fake_api import TOKEN
from wrighty.sources.github import GitHubClient, GitHubError, GitHubPlace

REPO = "acme/widgets"


def client(github: ServedGitHub, *, token: str = TOKEN, **options: object) -> GitHubClient:
    place = GitHubPlace(github.url, REPO, ("wrighty",))
    return GitHubClient(place, token, "GITHUB_TOKEN", **options)  # type: ignore[arg-type]


def many(github: ServedGitHub, count: int) -> None:
    for number in range(1, count + 1):
        github.fake.add_issue(REPO, number, f"Issue {number}", "text")


def test_a_thousand_issues_are_ten_pages_and_unchanged_they_cost_only_304s(
    github: ServedGitHub,
) -> None:
    many(github, 1000)
    github.fake.add_issue(REPO, 1001, "Not labelled", labels=("other",))
    first = client(github).open_issues([])
    assert first.requests == 10
    assert sum(len(page.documents or []) for page in first.pages) == 1000
    spent = first.rate_remaining
    again = client(github).open_issues([page.etag for page in first.pages])
    assert again.requests == 10
    assert all(page.documents is None for page in again.pages)
    assert github.fake.counted(304) == 10
    assert again.rate_remaining == spent  # a 304 spends no rate limit


def test_a_changed_page_is_read_again_and_the_others_answer_304(github: ServedGitHub) -> None:
    many(github, 250)
    first = client(github).open_issues([])
    github.fake.edit_issue(REPO, 10, title="Edited")  # on the last page (newest first)
    again = client(github).open_issues([page.etag for page in first.pages])
    assert [page.documents is None for page in again.pages] == [True, True, False]


def test_pull_requests_and_other_labels_are_listed_as_github_lists_them(
    github: ServedGitHub,
) -> None:
    github.fake.add_issue(REPO, 1, "An issue")
    github.fake.add_issue(REPO, 2, "A pull request", pull_request=True)
    listing = client(github).open_issues([])
    documents = listing.pages[0].documents or []
    assert [d["number"] for d in documents] == [2, 1]  # type: ignore[index]


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ("5xx", "GitHub answered 502 (a server error)"),
        ("malformed", "is not the JSON list it documents"),
        ("spent", "GitHub's rate limit is spent until"),
    ],
)
def test_a_fault_is_one_error_in_wrighty_words(
    github: ServedGitHub, fault: str, words: str
) -> None:
    many(github, 3)
    github.fake.fault = fault
    with pytest.raises(GitHubError) as raised:
        client(github).open_issues([])
    assert words in str(raised.value)
    assert TOKEN not in str(raised.value)


def test_no_answer_within_the_deadline_is_an_error(github: ServedGitHub) -> None:
    github.fake.fault = "hang"
    with pytest.raises(GitHubError, match=r"did not answer within 0\.3s"):
        client(github, timeout=0.3).open_issues([])


def test_a_wrong_token_is_refused_and_never_shown(github: ServedGitHub) -> None:
    wrong = "ghp_wrong-token-that-must-not-show"
    with pytest.raises(GitHubError) as raised:
        client(github, token=wrong).open_issues([])
    assert "$GITHUB_TOKEN (401)" in str(raised.value)
    assert wrong not in str(raised.value)
    assert github.fake.counted(401) == 1


def test_a_secondary_limit_is_waited_out_as_github_asks(github: ServedGitHub) -> None:
    many(github, 2)
    github.fake.fault, github.fake.fault_times, github.fake.retry_after = "secondary", 1, 7
    waited: list[float] = []
    listing = client(github, sleep=waited.append).open_issues([])
    assert waited == [7.0]
    assert len(listing.pages[0].documents or []) == 2


def test_a_long_secondary_limit_stops_the_walk(github: ServedGitHub) -> None:
    github.fake.fault, github.fake.retry_after = "secondary", 600
    with pytest.raises(GitHubError, match="secondary rate limit") as raised:
        client(github, sleep=lambda s: None).open_issues([])
    assert raised.value.rate_limited
    assert github.fake.counted() == 1


def test_a_limit_spent_midway_is_waited_out_when_its_reset_is_near(github: ServedGitHub) -> None:
    many(github, 150)
    fake = github.fake
    fake.remaining, fake.reset_at = 1, 1_000_030

    def reset(seconds: float) -> None:  # the wait: the limit is new again after it
        waited.append(seconds)
        fake.remaining = 5000

    waited: list[float] = []
    listing = client(github, sleep=reset, clock=lambda: 1_000_000.0).open_issues([])
    assert waited == [30.0]
    assert sum(len(page.documents or []) for page in listing.pages) == 150
    fake.remaining, fake.reset_at = 1, 1_000_000 + 3600
    with pytest.raises(GitHubError, match="rate limit is spent until") as raised:
        client(github, sleep=reset, clock=lambda: 1_000_000.0).open_issues([])
    assert raised.value.until is not None
    assert waited == [30.0]  # an hour is not waited: the sync stops
