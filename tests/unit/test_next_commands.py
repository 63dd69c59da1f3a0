from __future__ import annotations

import pytest

from wrighty.domain.states import ItemState
from wrighty.domain.suggestions import Standing, next_commands


def commands(
    state: ItemState, *, resumable: bool = True, has_logs: bool = True, lease_expired: bool = False
) -> list[str]:
    standing = Standing(resumable=resumable, has_logs=has_logs, lease_expired=lease_expired)
    return [suggestion.command for suggestion in next_commands(12, state, standing)]


def test_needs_attention_offers_resume_only_when_the_session_can_be_resumed_here() -> None:
    assert commands(ItemState.NEEDS_ATTENTION, resumable=True) == [
        "wrighty requeue 12 --resume",
        "wrighty requeue 12 --fresh",
        "wrighty logs 12",
        "wrighty cancel 12",
    ]
    assert commands(ItemState.NEEDS_ATTENTION, resumable=False) == [
        "wrighty requeue 12 --fresh",
        "wrighty logs 12",
        "wrighty cancel 12",
    ]


@pytest.mark.parametrize("state", list(ItemState))
def test_logs_are_offered_only_where_there_are_logs(state: ItemState) -> None:
    assert not any("logs" in command for command in commands(state, has_logs=False))


@pytest.mark.parametrize("resumable", [True, False])
def test_a_scheduled_retry_can_be_run_now(resumable: bool) -> None:
    # The retry resumes on the installation that holds the session, wherever show runs.
    assert commands(ItemState.RETRY_SCHEDULED, resumable=resumable) == [
        "wrighty requeue 12 --resume",
        "wrighty cancel 12",
        "wrighty logs 12",
    ]


@pytest.mark.parametrize("resumable", [True, False])
def test_a_running_item_can_be_watched_or_stopped(resumable: bool) -> None:
    assert commands(ItemState.RUNNING, resumable=resumable) == [
        "wrighty logs 12 --follow",
        "wrighty cancel 12",
    ]


def test_a_running_item_whose_lease_expired_is_offered_to_the_reaper() -> None:
    assert commands(ItemState.RUNNING, lease_expired=True) == ["wrighty reap", "wrighty logs 12"]


@pytest.mark.parametrize(
    "state", [ItemState.TODO, ItemState.QUEUED, ItemState.DONE, ItemState.CANCELLED]
)
def test_states_that_need_nobody_get_no_suggestions(state: ItemState) -> None:
    assert commands(state) == []


@pytest.mark.parametrize("state", list(ItemState))
def test_every_suggestion_is_a_whole_line_to_paste(state: ItemState) -> None:
    for command in commands(state):
        assert "#" not in command
        assert "\n" not in command


def test_an_item_whose_budget_is_spent_is_offered_requeues_that_raise_it() -> None:
    # A requeue without a higher budget would be settled budget-exceeded again at once.
    from wrighty.domain.budgets import raise_flags
    from wrighty.domain.usage import Limit, Usage

    flags = raise_flags(Limit(max_cost_usd=1, max_tokens=1000), Usage(1500, cost_usd=0.5))
    assert flags == ("--max-tokens 3000",)
    standing = Standing(resumable=True, has_logs=False, lease_expired=False, raise_budget=flags)
    offered = next_commands(12, ItemState.NEEDS_ATTENTION, standing)
    assert [s.command for s in offered][:2] == [
        "wrighty requeue 12 --resume --max-tokens 3000",
        "wrighty requeue 12 --fresh --max-tokens 3000",
    ]
    assert offered[0].purpose.endswith("with a higher budget")
    assert raise_flags(Limit(max_tokens=1000), Usage(10)) == ()


@pytest.mark.parametrize(
    ("reason_code", "offered"),
    [
        (
            "verification-failed",
            ["requeue 12 --resume", "verify 12", "requeue 12 --fresh", "logs 12", "cancel 12"],
        ),
        (
            "check-start-failed",  # wrighty.json's to mend: the checks again come first
            ["verify 12", "requeue 12 --resume", "requeue 12 --fresh", "logs 12", "cancel 12"],
        ),
        ("agent-failure", ["requeue 12 --resume", "requeue 12 --fresh", "logs 12", "cancel 12"]),
    ],
)
def test_an_item_waiting_because_of_its_checks_is_offered_them_again(
    reason_code: str, offered: list[str]
) -> None:
    standing = Standing(resumable=True, has_logs=True, lease_expired=False, can_verify=True)
    suggested = next_commands(12, ItemState.NEEDS_ATTENTION, standing, reason_code=reason_code)
    assert [s.command for s in suggested] == [f"wrighty {command}" for command in offered]
    if reason_code == "verification-failed":
        assert "failing checks' output" in suggested[0].purpose  # the resume is a fix turn


def test_the_checks_are_offered_only_where_they_would_run() -> None:
    standing = Standing(resumable=True, has_logs=True, lease_expired=False, can_verify=False)
    for reason_code in ("verification-failed", "check-start-failed"):
        suggested = next_commands(12, ItemState.NEEDS_ATTENTION, standing, reason_code=reason_code)
        assert "wrighty verify 12" not in [s.command for s in suggested]


def test_an_item_whose_budget_cannot_be_raised_may_still_have_its_checks_run() -> None:
    standing = Standing(True, True, False, raise_budget=None, can_verify=True)
    suggested = next_commands(
        12, ItemState.NEEDS_ATTENTION, standing, reason_code="verification-failed"
    )
    assert [s.command for s in suggested] == [
        "wrighty verify 12",
        "wrighty logs 12",
        "wrighty cancel 12",
    ]


def change_offered(
    state: ItemState, *, has_change: bool, reason_code: str | None = None
) -> list[str]:
    standing = Standing(resumable=True, has_logs=True, lease_expired=False, has_change=has_change)
    offered = next_commands(12, state, standing, reason_code=reason_code)
    return [suggestion.command for suggestion in offered]


def test_a_done_item_whose_change_shows_here_is_offered_its_diff() -> None:
    assert change_offered(ItemState.DONE, has_change=True) == ["wrighty diff 12"]
    assert change_offered(ItemState.DONE, has_change=False) == []


def test_an_item_whose_commit_failed_is_offered_a_resume_then_its_change() -> None:
    # The hook's complaint is the agent's to mend: resume first; the change, to see what failed.
    standing = Standing(resumable=True, has_logs=True, lease_expired=False, has_change=True)
    offered = next_commands(12, ItemState.NEEDS_ATTENTION, standing, reason_code="commit-failed")
    assert [suggestion.command for suggestion in offered] == [
        "wrighty requeue 12 --resume",
        "wrighty diff 12",
        "wrighty requeue 12 --fresh",
        "wrighty logs 12",
        "wrighty cancel 12",
    ]
    assert "hook" in offered[0].purpose


@pytest.mark.parametrize(
    "state", [ItemState.TODO, ItemState.QUEUED, ItemState.RUNNING, ItemState.RETRY_SCHEDULED]
)
def test_the_change_is_offered_only_for_an_item_done_or_waiting_for_a_person(
    state: ItemState,
) -> None:
    assert "wrighty diff 12" not in change_offered(state, has_change=True)


def test_the_change_is_offered_only_where_wrighty_diff_would_show_it() -> None:
    assert "wrighty diff 12" in change_offered(ItemState.NEEDS_ATTENTION, has_change=True)
    assert "wrighty diff 12" not in change_offered(ItemState.NEEDS_ATTENTION, has_change=False)
