"""GitHub's comments, permissions and pull requests as wrighty's client reads them
(wrighty/sources/github_talk.py), against the local GitHub API: what GitHub answers is checked
before anyone reads it, a Link to another host is not followed, a failure is GitHubError in
wrighty's words (never the token), and a failure of a conversation is the source's error."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.github.conftest import ServedGitHub
from tests.github.fake_api import TOKEN
from tests.github.test_conversation import NOW, conversation, issue_item
from wrighty.sources.github import GitHubClient, GitHubError, GitHubPlace
from wrighty.sources.github_talk import GitHubTalk, _comments, _next_url
from wrighty.store.port import Store

REPO = "acme/widgets"


def talk_to(github: ServedGitHub, token: str = TOKEN) -> GitHubTalk:
    place = GitHubPlace(github.url, REPO, ("wrighty",))
    return GitHubTalk(GitHubClient(place, token, "GITHUB_TOKEN", timeout=5))


def test_comments_posted_edited_and_read_back(github: ServedGitHub) -> None:
    talk = talk_to(github)
    github.fake.talk.stamp = "2026-12-07T09:00:00Z"
    posted = talk.post_comment(3, "hello")
    assert posted is not None
    assert talk.edit_comment(posted, "hello again")
    assert not talk.edit_comment(999_999, "gone")
    [comment] = talk.issue_comments(3)
    assert (comment.id, comment.issue, comment.author, comment.body) == (
        posted, 3, "wrighty-bot", "hello again",
    )  # fmt: skip
    assert comment.updated is not None
    found, etag = talk.new_comments(datetime(2026, 12, 7, tzinfo=UTC), None)
    assert [c.id for c in found] == [posted]
    again, same = talk.new_comments(datetime(2026, 12, 7, tzinfo=UTC), etag)
    assert (again, same) == ([], etag)  # 304: nothing new, no rate limit
    assert talk.whoami() == "wrighty-bot"


def test_permissions_as_github_says_them(github: ServedGitHub) -> None:
    github.fake.talk.permissions.update(alice="write", bob="read")
    talk = talk_to(github)
    assert talk.permission("alice") == "write"
    assert talk.permission("bob") == "read"
    assert talk.permission("carol") == "none"  # not a collaborator: 404
    before = github.fake.counted()
    assert talk.permission("../../user") == "none"  # not a login: never asked
    assert github.fake.counted() == before


def test_pull_requests_opened_found_updated_and_read(github: ServedGitHub) -> None:
    talk = talk_to(github)
    assert talk.find_pull("acme", "wrighty/1-x") is None
    opened = talk.open_pull(title="T", head="wrighty/1-x", base="main", body="B", draft=False)
    assert opened.state == "open"
    assert not opened.merged
    assert talk.find_pull("acme", "wrighty/1-x") == opened
    talk.update_pull(opened.number, title="T2", body="B2")
    assert github.fake.talk.pulls[opened.number]["body"] == "B2"
    read, etag = talk.pull(opened.number, None)
    assert read == opened
    assert talk.pull(opened.number, etag) == (None, etag)
    github.fake.talk.merge(opened.number)
    merged, _ = talk.pull(opened.number, etag)
    assert merged is not None
    assert (merged.state, merged.merged, merged.merge_commit) == ("closed", True, "ab" * 20)


def test_what_github_answers_is_checked_before_it_is_read() -> None:
    documents = [
        {"id": 1, "body": "ok", "user": {"login": "alice"}, "issue_url": "x/issues/4"},
        {"id": "2", "body": "id not a number", "user": {"login": "a"}, "issue_url": "x/issues/4"},
        {"id": 3, "body": "bad login", "user": {"login": "a b\x1b"}, "issue_url": "x/issues/4"},
        {"id": 4, "body": None, "user": {"login": "a"}, "issue_url": "x/issues/4"},
        {"id": 5, "body": "no issue", "user": {"login": "a"}, "issue_url": "x/pulls/4"},
        {"id": True, "body": "a bool", "user": {"login": "a"}, "issue_url": "x/issues/4"},
        "not an object",
    ]
    assert [c.id for c in _comments(documents)] == [1]
    with pytest.raises(GitHubError):
        _comments({"message": "not a list"})


def test_a_link_to_another_host_is_not_followed() -> None:
    class Headers(dict[str, str]):
        pass

    evil = Headers(Link='<https://evil.example/steal?page=2>; rel="next"')
    assert _next_url(evil, "https://api.github.com") is None
    same = Headers(Link='<https://api.github.com/repos/a/b/issues/comments?page=2>; rel="next"')
    assert _next_url(same, "https://api.github.com") is not None


def test_a_refused_token_and_a_server_error_say_so_without_the_token(
    github: ServedGitHub,
) -> None:
    with pytest.raises(GitHubError) as refused:
        talk_to(github, token="ghp_wrong-token-secret").post_comment(3, "x")
    assert "401" in str(refused.value)
    assert "ghp_wrong" not in str(refused.value)
    github.fake.fault = "5xx"
    with pytest.raises(GitHubError) as failed:
        talk_to(github).open_pull(title="T", head="h", base="main", body="B", draft=False)
    assert "502" in str(failed.value)
    assert "open a pull request" in str(failed.value)
    assert TOKEN not in str(failed.value)


def test_a_conversation_that_fails_is_the_sources_error_and_backs_off(
    store: Store, github: ServedGitHub
) -> None:
    issue_item(store, 2)
    github.fake.fault = "5xx"
    with pytest.raises(GitHubError):
        conversation(store, github).turn(now=NOW)
    state = store.get_source("widgets")
    assert state is not None
    assert state.failures == 1
    assert "GitHub answered 502" in (state.last_error or "")
    assert TOKEN not in (state.last_error or "")
