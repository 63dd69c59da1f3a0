"""The work product's pure rules (docs/work-product.md): branch names, the prefixes and
identities wrighty.json may give, the commit's message, where a failed commit sends an item;
and that git itself accepts every branch name a valid prefix makes."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.factories import claimed_item
from wrighty.config import check_config_text, completion_of
from wrighty.domain import decisions
from wrighty.domain.claims import Settlement
from wrighty.domain.model import BRANCH_NAME, Item, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.states import ItemState
from wrighty.domain.work_product import (
    Completion,
    HeadPlace,
    WorktreeHead,
    branch_name,
    branch_prefix_problem,
    commit_message,
    fresh_branch,
    head_place,
    identity_problem,
    off_branch_reason,
    slug,
)

AT = datetime(2026, 1, 1, tzinfo=UTC)


def item(title: str = "Fix it", body: str = "the body") -> Item:
    return claimed_item(id=7, title=title, body=body, lease_expires_at=AT, queued_at=AT,
                        created_at=AT, updated_at=AT)  # fmt: skip


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Fix the login page!", "fix-the-login-page"),
        ("  Élan vital: café  ", "elan-vital-cafe"),
        ("a/../b\x1b[2J", "a-b-2j"),
        ("日本語", ""),
        ("x" * 50, "x" * 40),
        ("word " * 12, "word-word-word-word-word-word-word-word"),
    ],
)
def test_a_title_becomes_a_slug_of_ascii_letters_digits_and_dashes(
    title: str, expected: str
) -> None:
    assert slug(title) == expected


def test_the_branch_is_the_prefix_the_id_and_the_slug() -> None:
    assert branch_name("wrighty/", 12, "Fix the login page") == "wrighty/12-fix-the-login-page"
    assert branch_name("wrighty/", 12, "日本語") == "wrighty/12"
    assert branch_name("", 3, "a") == "3-a"


@pytest.mark.parametrize(
    ("prefix", "says"),
    [
        ("a..b/", "'..' or '//'"),
        ("a//", "'..' or '//'"),
        ("-x/", "must start with a letter or digit"),
        ("/x/", "must start with a letter or digit"),
        ("a b/", "hold only letters"),
        ("a~/", "hold only letters"),
        ("a\n/", "hold only letters"),
        ("x/.hidden/", "starts with '.'"),
        ("x.lock/", "ends with '.lock'"),
        ("x/.", "starts with '.'"),
        ("x" * 101, "longer than 100"),
    ],
)
def test_a_prefix_git_would_refuse_is_refused(prefix: str, says: str) -> None:
    problem = branch_prefix_problem(prefix)
    assert problem is not None
    assert says in problem


@pytest.mark.parametrize("prefix", ["wrighty/", "", "agents/claude/", "wr-", "team.a/x_y/"])
def test_a_sane_prefix_passes(prefix: str) -> None:
    assert branch_prefix_problem(prefix) is None


@settings(deadline=None)  # each example runs git
@given(
    prefix=st.text(alphabet="ab./_-", max_size=12),
    item_id=st.integers(1, 2**63 - 1),
    title=st.text(max_size=60),
)
def test_every_branch_of_an_accepted_prefix_is_one_git_and_the_store_accept(
    prefix: str, item_id: int, title: str
) -> None:
    if branch_prefix_problem(prefix) is not None:
        return
    name = branch_name(prefix, item_id, title)
    assert BRANCH_NAME.fullmatch(name)
    checked = subprocess.run(
        ["git", "check-ref-format", "--branch", name], capture_output=True, check=False
    )
    assert checked.returncode == 0, name


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("a\nb", "newline"),
        ("a\x1b", "control character"),
        ("<a@b>", "'<' or '>'"),
        ("x" * 201, "longer than 200"),
    ],
)
def test_an_identity_git_would_not_keep_as_written_is_refused(value: str, says: str) -> None:
    problem = identity_problem(value)
    assert problem is not None
    assert says in problem


def test_the_message_is_the_title_the_body_s_first_line_and_the_trailers() -> None:
    message = commit_message(item("Fix it", "\n\n  First line.  \nSecond line."), "run-1")
    assert message == "Fix it\n\nFirst line.\n\nWrighty-Item: 7\nWrighty-Run: run-1\n"


def test_the_message_bounds_the_body_line_and_skips_an_empty_body() -> None:
    long = commit_message(item("T", "y" * 500), "run-1")
    assert len(long.splitlines()[2]) == 200
    assert commit_message(item("T", ""), "run-1") == "T\n\nWrighty-Item: 7\nWrighty-Run: run-1\n"


def test_a_failed_commit_waits_for_a_person_with_a_resume_that_works() -> None:
    run_end = RunEnd(AT, OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE)
    settlement = decisions.commit_failed(item(), run_end, "hook said no")
    assert settlement.to_state is ItemState.NEEDS_ATTENTION
    assert settlement.reason_code == "commit-failed"
    assert settlement.reason is not None
    assert "hook said no" in settlement.reason
    assert "still in the item's worktree" in settlement.reason
    assert settlement.next_action == "wrighty requeue 7 --resume"


def test_uncommitted_changes_are_said_in_the_done_reason() -> None:
    done = Settlement(ItemState.DONE, process_started=True, reason="checks passed")
    said = decisions.uncommitted(done)
    assert said.to_state is ItemState.DONE
    assert said.reason == (
        "checks passed; the agent left uncommitted changes in its worktree "
        "(completion.commit is agent)"
    )


def test_the_completion_section_reaches_the_worker_as_written() -> None:
    document = {
        "completion": {
            "branchPrefix": "bots/",
            "base": "origin/main",
            "commit": "agent",
            "author": {"name": "Bot", "email": "bot@example.invalid"},
        }
    }
    config, problems = check_config_text(json.dumps(document))
    assert config is not None, problems
    assert completion_of(config) == Completion("bots/", "origin/main", "agent", "Bot",
                                               "bot@example.invalid")  # fmt: skip
    default, _ = check_config_text("{}")
    assert default is not None
    assert completion_of(default) == Completion("wrighty/", None, "wrighty", None, None)


TIP, HEAD = "a" * 40, "b" * 40
ON = WorktreeHead("wrighty/7-fix", "wrighty/7-fix", TIP, TIP, tip_in_head=True)


def test_only_a_detached_head_that_holds_the_branchs_commit_is_brought_back() -> None:
    assert head_place(ON) is HeadPlace.ON_BRANCH
    detached = WorktreeHead("wrighty/7-fix", None, HEAD, TIP, tip_in_head=True)
    assert head_place(detached) is HeadPlace.BRING_BACK
    # the agent left the branch's commit behind, or reads nothing: set aside
    for facts in (
        WorktreeHead("wrighty/7-fix", None, HEAD, TIP, tip_in_head=False),
        WorktreeHead("wrighty/7-fix", None, HEAD, None, tip_in_head=False),
        WorktreeHead("wrighty/7-fix", None, None, TIP, tip_in_head=False),
        # another branch, even one that holds the item's commit, is never taken over
        WorktreeHead("wrighty/7-fix", "main", HEAD, TIP, tip_in_head=True),
    ):
        assert head_place(facts) is HeadPlace.OFF_BRANCH, facts


def test_the_off_branch_reason_names_where_the_worktree_is_and_the_moved_branch() -> None:
    facts = WorktreeHead("wrighty/7-fix", "main", HEAD, TIP, True, elsewhere=("/p",))
    said = off_branch_reason(facts, worktree="/p/.wrighty/worktrees/7")
    assert "it has the branch main checked out, not its branch wrighty/7-fix" in said
    assert "wrighty committed nothing and moved no branch" in said
    assert "`git switch wrighty/7-fix`" in said
    assert "which is checked out in /p too: see `git reflog main`" in said
    detached = WorktreeHead("wrighty/7-fix", None, HEAD, TIP, tip_in_head=False)
    assert f"its HEAD is detached at {HEAD[:12]}, which does not hold" in off_branch_reason(
        detached, worktree="/w"
    )


def test_a_taken_branch_name_gets_the_first_free_number() -> None:
    taken = {"wrighty/1-fix-2", "wrighty/1-fix-3"}
    assert fresh_branch("wrighty/1-fix", taken.__contains__) == "wrighty/1-fix-4"
    assert fresh_branch("wrighty/1-fix", lambda _: True) is None
