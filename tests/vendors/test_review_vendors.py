"""Review with the real Claude Code, Codex and Gemini CLIs (docs/work-product.md#review).

A project in `worktree` mode, with completion.review "person" and one check. A loopback provider
makes the agent write answer.txt = 41 with the CLI's own tool; the check passes, wrighty commits
the change on the item's branch and the item waits in `review`. `wrighty reject` sends it back
with a person's feedback; the next claim resumes the same vendor session in the same worktree,
and the provider, now holding the first turn's conversation and the feedback, has the agent
write 42: a second commit, `review` again, and `wrighty accept` makes it done. When the session
cannot be resumed (its transcript is gone), the rejected item starts a new session in the same
worktree, told the task and then the feedback.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import git, git_repo
from tests.vendors.conftest import (
    CODEX_MODEL,
    VendorProject,
    anthropic_user_texts,
    argv_wrapper,
    claude_agent,
    codex_agent,
    read,
    shell,
    started_argvs,
    write,
    write_file,
)
from tests.vendors.gemini_provider import GeminiProvider
from tests.vendors.openai_provider import OpenAIProvider
from tests.vendors.provider import USAGE_TURNS, Provider, Turn
from tests.vendors.test_codex_gemini import (
    codex_user_texts,
    gemini_agent,
    gemini_user_texts,
    transcript,
)

pytestmark = pytest.mark.slow

PROMPT = "Write the answer to answer.txt."
FEEDBACK = "The answer must be 42"
# How the worker tells the agent of a rejection (wrighty/domain/review.py), word for word.
REJECTED_HEAD = "A person reviewed your work on this task and rejected it. Their feedback:"
# The project's check: answer.txt holds a number (41 passes too: the person rejects it).
CHECK = "answer"
CHECK_ARGV = [sys.executable, "-c", "import pathlib; int(pathlib.Path('answer.txt').read_text())"]


def reviewed(project: VendorProject, agents: dict[str, Any]) -> None:
    """The agent under the workspace permission profile, in worktree mode, in a git repository
    with one commit; each done run waits for a person's review after the project's check."""
    [agent] = agents
    agents[agent]["permission"] = "workspace"
    git_repo(project.root)
    project.configure(agents, defaultAgent=agent, workspaceMode="worktree", pollSeconds=0.1)
    check = {"name": CHECK, "argv": CHECK_ARGV, "timeoutMinutes": 1}
    project.configure_sections(verify={"checks": [check]}, completion={"review": "person"})


def worktree_of(project: VendorProject, item_id: int) -> Path:
    """Where the worker puts the item's worktree, as the agent's tools see it."""
    return (project.root / ".wrighty" / "worktrees" / str(item_id)).resolve()


def branch_answers(project: VendorProject, shown: dict[str, Any]) -> list[str]:
    """answer.txt in each of the item's commits on its branch, oldest first; each commit must
    change only answer.txt."""
    branch = shown["session"]["branch"]
    commits = git(project.root, "rev-list", "--reverse", f"main..{branch}").split()
    for commit in commits:
        changed = git(project.root, "diff-tree", "--no-commit-id", "--name-only", "-r", commit)
        assert changed == "answer.txt", (commit, changed)
    return [git(project.root, "show", f"{commit}:answer.txt") for commit in commits]


def first_turn_in_review(project: VendorProject, item_id: int) -> dict[str, Any]:
    """Run the item's first claim: its check passes, its change is committed, it waits in
    review."""
    _, worked = project.run_once()
    assert worked.returncode == 0, worked.stderr
    shown = project.show(item_id)
    assert (shown["state"], shown["reason_code"]) == ("review", "ready-for-review"), shown
    [run] = shown["runs"]
    assert (run["kind"], run["outcome_class"]) == ("fresh", "succeeded"), run
    assert shown["session"]["workspace"] == str(worktree_of(project, item_id))
    assert branch_answers(project, shown) == ["41"]
    return shown


def rejected(project: VendorProject, item_id: int) -> None:
    """`wrighty reject ID --feedback FEEDBACK`: back to work, due now."""
    done = project.wrighty("reject", str(item_id), "--feedback", FEEDBACK)
    assert done.returncode == 0, done.stderr
    shown = project.show(item_id)
    assert (shown["state"], shown["reason_code"]) == ("retry-scheduled", "rejected"), shown
    assert (shown["rejections"], shown["feedback"]) == (1, FEEDBACK)


def second_turn_in_review(project: VendorProject, item_id: int, kind: str) -> dict[str, Any]:
    """Run the rejected item's next claim (a run of ``kind``): it ends in review again, with a
    second commit on the same branch."""
    events, worked = project.run_once()
    assert worked.returncode == 0, worked.stderr
    shown = project.show(item_id)
    assert (shown["state"], shown["reason_code"]) == ("review", "ready-for-review"), shown
    first, second = shown["runs"]
    assert (second["kind"], second["outcome_class"]) == (kind, "succeeded"), second
    assert shown["session"]["workspace"] == str(worktree_of(project, item_id))
    assert branch_answers(project, shown) == ["41", "42"]
    resumed = [event["session_id"] for event in events if event["event"] == "resumed"]
    assert resumed == ([first["session_id"]] if kind == "resume" else [])
    return shown


def accepted(project: VendorProject, item_id: int) -> None:
    done = project.wrighty("accept", str(item_id))
    assert done.returncode == 0, done.stderr
    shown = project.show(item_id)
    assert (shown["state"], shown["reason_code"]) == ("done", "accepted"), shown


def assert_feedback_resumed(texts: list[str]) -> None:
    """The resumed turn's request, as the provider received it: the first turn's prompt (the
    session was resumed), then the person's feedback in the rejection's prompt."""
    asked = [n for n, text in enumerate(texts) if PROMPT in text]
    told = [n for n, text in enumerate(texts) if FEEDBACK in text]
    assert asked, f"the resumed session lost the first turn's prompt: {texts!r}"
    assert told, f"the provider never received the feedback: {texts!r}"
    assert asked[0] < told[-1]
    assert REJECTED_HEAD in texts[told[-1]]
    assert PROMPT not in texts[told[-1]], "a resumed session is told the feedback alone"


# --- Claude Code ----------------------------------------------------------------------------


def assistant_turns(request: dict[str, Any]) -> int:
    """How many of the conversation's messages a Messages API request carries are the model's."""
    return sum(message.get("role") == "assistant" for message in request.get("messages", []))


def claude_writes_41(provider: Provider, answer: Path) -> None:
    provider.mode = "script"
    provider.script = [
        Turn(USAGE_TURNS[0], text="Writing.", call=write(answer, "41\n")),
        Turn(USAGE_TURNS[1], text="Written."),
    ]


def claude_writes_42(provider: Provider, answer: Path) -> None:
    provider.script = [
        Turn(USAGE_TURNS[0], text="Reading.", call=read(answer)),
        Turn(USAGE_TURNS[0], text="Fixing.", call=write(answer, "42\n")),
        Turn(USAGE_TURNS[1], text="Fixed."),
    ]


def test_claude_rejected_resumes_its_session_with_the_feedback_and_is_accepted(
    vendor_project: VendorProject, provider: Provider
) -> None:
    wrapper, log = argv_wrapper(vendor_project.home, "claude")
    reviewed(vendor_project, claude_agent(provider, vendor_project.home, executable=str(wrapper)))
    item_id = vendor_project.create(PROMPT)
    answer = worktree_of(vendor_project, item_id) / "answer.txt"
    claude_writes_41(provider, answer)
    session_id = first_turn_in_review(vendor_project, item_id)["session"]["session_id"]
    rejected(vendor_project, item_id)
    asked = len(provider.requests)

    claude_writes_42(provider, answer)
    shown = second_turn_in_review(vendor_project, item_id, "resume")
    assert provider.script == [], "the resumed turn did not run its script to the end"
    assert shown["session"]["session_id"] == session_id

    fresh, resumed = started_argvs(log)
    assert f"--session-id={session_id}" in fresh
    assert f"--resume={session_id}" in resumed
    assert ("--permission-mode", "acceptEdits") in itertools.pairwise(resumed)
    request = provider.requests[asked]
    assert assistant_turns(request) >= 2, "the resumed request lacks the first turn's answers"
    assert_feedback_resumed(anthropic_user_texts(request))
    accepted(vendor_project, item_id)


def test_claude_rejected_without_its_transcript_starts_a_new_session_told_task_and_feedback(
    vendor_project: VendorProject, provider: Provider
) -> None:
    wrapper, log = argv_wrapper(vendor_project.home, "claude")
    agents = claude_agent(provider, vendor_project.home, executable=str(wrapper))
    reviewed(vendor_project, agents)
    item_id = vendor_project.create(PROMPT)
    answer = worktree_of(vendor_project, item_id) / "answer.txt"
    claude_writes_41(provider, answer)
    first = first_turn_in_review(vendor_project, item_id)
    old_session = first["session"]["session_id"]
    env = {**vendor_project.env, **agents["claude"]["env"]}
    transcript(vendor_project, "claude", first, env).unlink()
    rejected(vendor_project, item_id)
    asked = len(provider.requests)

    claude_writes_42(provider, answer)
    shown = second_turn_in_review(vendor_project, item_id, "fresh")
    assert provider.script == [], "the new session did not run its script to the end"
    new_session = shown["session"]["session_id"]
    assert new_session not in (None, old_session)

    fresh, fresh_again = started_argvs(log)
    assert f"--session-id={old_session}" in fresh
    assert f"--session-id={new_session}" in fresh_again
    assert not any(arg.startswith("--resume") for arg in fresh_again), fresh_again
    request = provider.requests[asked]
    assert assistant_turns(request) == 0, "the new session carries an earlier conversation"
    [told] = [text for text in anthropic_user_texts(request) if FEEDBACK in text]
    assert told.index(PROMPT) < told.index(REJECTED_HEAD) < told.index(FEEDBACK), told
    accepted(vendor_project, item_id)


# --- Codex ----------------------------------------------------------------------------------


def test_codex_rejected_resumes_its_thread_with_the_feedback_and_is_accepted(
    vendor_project: VendorProject, openai_provider: OpenAIProvider
) -> None:
    wrapper, log = argv_wrapper(vendor_project.home, "codex")
    agents = codex_agent(openai_provider, vendor_project.home, executable=str(wrapper))
    agents["codex"]["args"] += ["-m", CODEX_MODEL]
    reviewed(vendor_project, agents)
    item_id = vendor_project.create(PROMPT)
    openai_provider.mode = "script"
    openai_provider.script = [shell("printf '41\\n' > answer.txt"), "Written."]
    thread_id = first_turn_in_review(vendor_project, item_id)["session"]["session_id"]
    rejected(vendor_project, item_id)
    asked = len(openai_provider.requests)

    openai_provider.script = [shell("printf '42\\n' > answer.txt"), "Fixed."]
    shown = second_turn_in_review(vendor_project, item_id, "resume")
    assert openai_provider.script == [], "the resumed turn did not run its script to the end"
    assert shown["session"]["session_id"] == thread_id

    fresh, resumed = started_argvs(log)
    assert "resume" not in fresh
    assert resumed[resumed.index("resume") :] == ["resume", thread_id, "-"]
    assert ("--sandbox", "workspace-write") in itertools.pairwise(resumed)
    assert {h.get("session-id") for h in openai_provider.headers[asked:]} == {thread_id}
    assert_feedback_resumed(codex_user_texts(openai_provider.requests[asked]))
    accepted(vendor_project, item_id)


# --- Gemini CLI -----------------------------------------------------------------------------


def test_gemini_rejected_resumes_its_session_with_the_feedback_and_is_accepted(
    vendor_project: VendorProject, gemini_provider: GeminiProvider
) -> None:
    wrapper, log = argv_wrapper(vendor_project.home, "gemini")
    agents = gemini_agent(gemini_provider, vendor_project.home)
    agents["gemini"]["executable"] = str(wrapper)
    reviewed(vendor_project, agents)
    item_id = vendor_project.create(PROMPT)
    answer = worktree_of(vendor_project, item_id) / "answer.txt"
    gemini_provider.mode = "script"
    gemini_provider.script = [write_file(answer, "41\n"), "Written."]
    session_id = first_turn_in_review(vendor_project, item_id)["session"]["session_id"]
    rejected(vendor_project, item_id)
    asked = len(gemini_provider.streamed)

    gemini_provider.script = [write_file(answer, "42\n"), "Fixed."]
    shown = second_turn_in_review(vendor_project, item_id, "resume")
    assert gemini_provider.script == [], "the resumed turn did not run its script to the end"
    assert shown["session"]["session_id"] == session_id

    fresh, resumed = started_argvs(log)
    assert fresh[fresh.index("--session-id") + 1] == session_id
    assert resumed[resumed.index("--resume") + 1] == session_id
    assert ("--approval-mode", "auto_edit") in itertools.pairwise(resumed)
    assert_feedback_resumed(gemini_user_texts(gemini_provider.streamed[asked]))
    accepted(vendor_project, item_id)
