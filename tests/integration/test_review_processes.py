"""Review with real git and real `wrighty worker start` processes
(docs/work-product.md#review): completion.review person keeps a verified, committed change in
review; reject sends it back and the same session hears the feedback; accept makes it done; on
both stores."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.helpers import git
from tests.integration.test_work_product_processes import make_project
from wrighty.domain.states import ItemState

# An agent that records each prompt it is given (MARKS/prompt-N), the session it runs in and
# its run's kind (session-N, kind-N), and writes answer.txt: 41, or 42 once its prompt carries
# a person's feedback.
AGENT = textwrap.dedent(
    """\
    import os, pathlib, sys
    task = sys.stdin.read()
    marks = pathlib.Path(os.environ["MARKS"])
    number = len(list(marks.glob("prompt-*"))) + 1
    (marks / f"prompt-{number}").write_text(task)
    (marks / f"session-{number}").write_text(os.environ.get("WRIGHTY_SESSION_ID", ""))
    (marks / f"kind-{number}").write_text(os.environ.get("WRIGHTY_RUN_KIND", ""))
    answer = "42" if "must be 42" in task else "41"
    pathlib.Path("answer.txt").write_text(answer + "\\n")
    """
)
CHECK = {"checks": [{"name": "answer", "argv": ["test", "-f", "answer.txt"]}]}


def test_reject_resumes_the_session_with_the_feedback_and_accept_makes_it_done(
    tmp_path: Path, store_url: str | None
) -> None:
    project = make_project(
        tmp_path / "p", store_url, completion={"review": "person"}, agent=AGENT, verify=CHECK
    )
    marks = project.root / "marks"
    item_id = project.plant("Write the answer.", title="Answer")
    branch = f"wrighty/{item_id}-answer"
    base = git(project.root, "rev-parse", "main")

    first = project.worker("--once")

    assert first.returncode == 0, first.stderr
    waiting = project.get(item_id)
    assert (waiting.state, waiting.reason_code) == (ItemState.REVIEW, "ready-for-review")
    # the reason says what the run did: its checks passed (docs/work-product.md#review)
    assert waiting.reason == "every check passed (1 check); it waits for a person's review"
    assert waiting.next_action == f"wrighty accept {item_id}"
    assert git(project.root, "show", f"{branch}:answer.txt") == "41"
    [settled] = first.named("settled")
    assert settled["state"] == "review"
    shown = project.wrighty("show", str(item_id))
    assert f"wrighty reject {item_id} --feedback TEXT" in shown
    # the reviewer sees the change's stat and the checks beside it
    change = shown.split("Change against its base\n", 1)[1].splitlines()[:2]
    assert change == ["   answer.txt | 1 +", "   1 file changed, 1 insertion(+)"]
    assert "Checks" in shown

    said = project.wrighty("reject", str(item_id), "--feedback", "The answer must be 42.")
    assert said.strip() == (
        f"item {item_id} is retry-scheduled (rejection 1 of 5): its agent takes it up again "
        "with your feedback"
    )
    second = project.worker("--once")

    assert second.returncode == 0, second.stderr
    [resumed] = second.named("resumed")
    assert resumed["kind"] == "resume"
    prompt = (marks / "prompt-2").read_text()
    assert prompt.startswith("A person reviewed your work on this task and rejected it.")
    assert "The answer must be 42." in prompt
    assert (marks / "session-2").read_text() == (marks / "session-1").read_text() != ""
    assert [(marks / f"kind-{n}").read_text() for n in (1, 2)] == ["fresh", "rejected"]
    again = project.get(item_id)
    assert (again.state, again.rejections) == (ItemState.REVIEW, 1)
    assert git(project.root, "show", f"{branch}:answer.txt") == "42"
    assert git(project.root, "rev-list", "--count", f"{base}..{branch}") == "2"
    detail = json.loads(project.wrighty("show", str(item_id), "--json"))
    # each run's change was checked: the rejected one again
    assert [[c["passed"] for c in run["checks"]] for run in detail["runs"]] == [[True], [True]]
    assert (detail["rejections"], detail["feedback"]) == (1, "The answer must be 42.")

    accepted = project.wrighty("accept", str(item_id))
    assert accepted.strip() == f"item {item_id} is done"
    done = json.loads(project.wrighty("show", str(item_id), "--json"))
    assert (done["state"], done["reason_code"]) == ("done", "accepted")
    moves = [(e["from_state"], e["to_state"], e["reason_code"]) for e in done["events"]]
    assert moves[-5:] == [
        ("running", "review", "ready-for-review"),
        ("review", "retry-scheduled", "rejected"),
        ("retry-scheduled", "running", None),
        ("running", "review", "ready-for-review"),
        ("review", "done", "accepted"),
    ]
    assert git(project.root, "rev-parse", "main") == base  # integrate none: the branch stays


def test_review_auto_is_done_as_before_and_reject_has_its_bound(tmp_path: Path) -> None:
    auto = make_project(tmp_path / "auto", agent=AGENT)
    done_id = auto.plant("Write the answer.", title="Answer")
    assert auto.worker("--once").returncode == 0
    assert auto.get(done_id).state is ItemState.DONE

    project = make_project(
        tmp_path / "p", completion={"review": "person", "maxRejections": 1}, agent=AGENT
    )
    item_id = project.plant("Write the answer.", title="Answer")
    assert project.worker("--once").returncode == 0
    project.wrighty("reject", str(item_id), "--feedback", "no")
    assert project.worker("--once").returncode == 0
    assert project.get(item_id).state is ItemState.REVIEW
    refused = subprocess.run(
        project.command("reject", str(item_id), "--feedback", "still no"),
        cwd=project.root, env=project.env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        f"wrighty: item {item_id} was rejected 1 times, completion.maxRejections in "
        f"wrighty.json: accept it (`wrighty accept {item_id}`), cancel it "
        f"(`wrighty cancel {item_id}`) or raise completion.maxRejections"
    )
    assert project.get(item_id).state is ItemState.REVIEW


def _reviewed(tmp_path: Path, store_url: str | None, **completion: object) -> tuple[Any, int]:
    """A project whose one item waits in review, its answer committed on its branch."""
    project = make_project(
        tmp_path / "p", store_url, completion={"review": "person", **completion}, agent=AGENT
    )
    item_id = project.plant("Write the answer.", title="Answer")
    assert project.worker("--once").returncode == 0
    assert project.get(item_id).state is ItemState.REVIEW
    return project, item_id


def _accept(project: Any, item_id: int, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        project.command("accept", str(item_id), *more),
        cwd=project.root, env=project.env, capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_accept_lands_the_branch_and_a_conflict_goes_back_to_the_agent_not_the_project(
    tmp_path: Path, store_url: str | None
) -> None:
    """docs/landing.md: a conflict with what the target gained is the agent's fix turn; the
    project's branch and checkout are left as they were until the resolution lands."""
    project, item_id = _reviewed(tmp_path, store_url, integrate="merge")
    # the project moved on meanwhile, in the same file: bringing the branch up to date conflicts
    (project.root / "answer.txt").write_text("40\n")
    git(project.root, "add", "answer.txt")
    git(project.root, "commit", "-qm", "the project's own answer")
    before = git(project.root, "rev-parse", "main")

    sent_back = _accept(project, item_id)

    assert sent_back.returncode == 0, sent_back.stderr
    assert git(project.root, "rev-parse", "main") == before
    assert git(project.root, "status", "--porcelain", "--untracked-files=no") == ""
    waiting = project.get(item_id)
    assert (waiting.state, waiting.reason_code) == (ItemState.RETRY_SCHEDULED, "landing-conflict")
    assert "answer.txt" in (waiting.reason or "")

    # the agent's fix turn resolves it (its answer), a person reviews it again and accepts
    assert project.worker("--once").returncode == 0
    assert project.get(item_id).state is ItemState.REVIEW
    accepted = _accept(project, item_id, "--json")
    assert accepted.returncode == 0, accepted.stderr
    said = json.loads(accepted.stdout)
    assert (said["state"], said["url"]) == ("done", None)
    assert said["integrated"].startswith("landed on main as ")
    assert (project.root / "answer.txt").read_text() == "41\n"
    assert git(project.root, "merge-base", "--is-ancestor", before, "main") == ""
    shown = json.loads(project.wrighty("show", str(item_id), "--json"))
    assert shown["reason"] == said["integrated"]


def test_accept_pushes_to_a_remote_or_runs_the_command_and_keeps_its_url(
    tmp_path: Path, store_url: str | None
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    project, item_id = _reviewed(tmp_path, store_url, integrate="push")
    git(project.root, "remote", "add", "origin", str(remote))
    branch = f"wrighty/{item_id}-answer"
    pushed = _accept(project, item_id)
    assert pushed.returncode == 0, pushed.stderr
    assert pushed.stdout.splitlines()[1].startswith(f"pushed {branch} to origin")
    assert git(remote, "rev-parse", branch) == git(project.root, "rev-parse", branch)

    # a stand-in `gh pr create`: it reads the summary and prints the pull request's address
    gh = tmp_path / "gh"
    gh.write_text(
        "#!/usr/bin/env python3\nimport os, pathlib, sys\n"
        "pathlib.Path(os.environ['MARKS'], 'gh-stdin').write_text(sys.stdin.read())\n"
        "print('Creating pull request for', os.environ['WRIGHTY_BRANCH'])\n"
        "print('https://github.example/o/r/pull/7')\n"
    )
    gh.chmod(0o755)
    document = json.loads(project.config.read_text())
    document["completion"] = {"review": "person", "integrate": "command",
                              "integrateCommand": [str(gh), "pr", "create", "--fill"]}  # fmt: skip
    project.config.write_text(json.dumps(document))
    second = project.plant("Write it again.", title="Again")
    assert project.worker("--once").returncode == 0
    ran = _accept(project, second, "--json")
    assert ran.returncode == 0, ran.stderr
    said = json.loads(ran.stdout)
    assert said["url"] == "https://github.example/o/r/pull/7"
    told = (project.root / "marks" / "gh-stdin").read_text()
    assert told.startswith(f"Item {second}: Again\nBranch: wrighty/{second}-again")
    assert "answer.txt | 1 +" in told
    assert project.get(second).reason == said["integrated"]
    assert "https://github.example/o/r/pull/7" in said["integrated"]


# A notification command sink: appends each notice (JSON on stdin) to MARKS/notices.jsonl.
SINK = textwrap.dedent(
    """\
    import os, pathlib, sys
    with open(pathlib.Path(os.environ["MARKS"]) / "notices.jsonl", "a") as out:
        out.write(sys.stdin.read().strip() + "\\n")
    """
)


def test_an_item_ready_for_review_is_told_with_its_branch_stat_and_checks(
    tmp_path: Path,
) -> None:
    project = make_project(
        tmp_path / "p", completion={"review": "person"}, agent=AGENT, verify=CHECK
    )
    (project.root / "sink.py").write_text(SINK)
    document = json.loads(project.config.read_text())
    document["notify"] = {"command": {"argv": [sys.executable, str(project.root / "sink.py")]}}
    project.config.write_text(json.dumps(document))
    item_id = project.plant("Write the answer.", title="Answer")

    assert project.worker("--once").returncode == 0
    project.wrighty("notify", "flush")

    lines = (project.root / "marks" / "notices.jsonl").read_text().splitlines()
    [told] = [json.loads(line) for line in lines if '"ready-for-review"' in line]
    assert (told["event"], told["item"]["id"], told["state"]) == (
        "ready-for-review", item_id, "review")  # fmt: skip
    assert told["next_action"] == f"wrighty accept {item_id}"
    assert told["branch"] == f"wrighty/{item_id}-answer"
    assert told["diff_stat"].splitlines() == [
        " answer.txt | 1 +",
        " 1 file changed, 1 insertion(+)",
    ]
    assert [(c["name"], c["passed"]) for c in told["checks"]] == [("answer", True)]
    assert [a["command"] for a in told["next_actions"]] == [
        f"wrighty diff {item_id}",
        f"wrighty accept {item_id}",
        f"wrighty reject {item_id} --feedback TEXT",
    ]


MANY_FILES_AGENT = textwrap.dedent(
    """\
    import pathlib, sys
    sys.stdin.read()
    for n in range(300):
        pathlib.Path(f"file-{n:03}.txt").write_text("x\\n")
    """
)


def test_show_bounds_the_stat_of_a_change_of_many_files(
    tmp_path: Path, store_url: str | None
) -> None:
    """300 files changed: `show` (and the console's item page, which prints its text) lists
    the first files, how many lines were left out, and git's summary, not 300 lines."""
    project = make_project(
        tmp_path / "p", store_url, completion={"review": "person"}, agent=MANY_FILES_AGENT
    )
    item_id = project.plant("Write many files.", title="Many")
    assert project.worker("--once").returncode == 0
    assert project.get(item_id).state is ItemState.REVIEW
    shown = project.wrighty("show", str(item_id))
    change = shown.split("Change against its base\n", 1)[1].splitlines()
    lines = change[: change.index("   300 files changed, 300 insertions(+)") + 1]
    assert len(lines) == 200
    assert lines[0] == "   file-000.txt | 1 +"
    assert lines[-2] == "   … 102 more lines"  # 198 files shown of 300
    assert "file-199.txt" not in shown


def test_a_passing_verify_by_hand_commits_the_work_and_waits_for_review_then_accept_merges(
    tmp_path: Path, store_url: str | None
) -> None:
    # The check fails after the run (no fix turn): the item waits for its checks, its change
    # not committed. Once the check passes by hand, `wrighty verify` takes the worker's way:
    # the change is committed on the item's branch, the item waits for review, and accept
    # merges it. Before, it went straight to done, its work left uncommitted in the worktree.
    flag = tmp_path / "checks-pass"
    project = make_project(
        tmp_path / "p", store_url, agent=AGENT,
        completion={"review": "person", "integrate": "merge"},
        verify={"checks": [{"name": "flag", "argv": ["test", "-f", str(flag)], "onBase": False}],
                "maxFixTurns": 0},
    )  # fmt: skip
    item_id = project.plant("Write the answer.", title="Answer")
    branch = f"wrighty/{item_id}-answer"
    worktree = project.root / ".wrighty" / "worktrees" / str(item_id)
    assert project.worker("--once").returncode == 0
    waiting = project.get(item_id)
    assert waiting.state is ItemState.NEEDS_ATTENTION
    assert waiting.reason_code == "verification-failed"
    assert git(worktree, "status", "--porcelain") == "?? answer.txt"

    flag.touch()
    said = project.wrighty("verify", str(item_id))

    assert said.splitlines()[-1] == (
        f"every check passed; item {item_id} is review: every check passed when run by hand "
        "(1 check); it waits for a person's review"
    )
    item = project.get(item_id)
    assert (item.state, item.reason_code) == (ItemState.REVIEW, "ready-for-review")
    assert item.next_action == f"wrighty accept {item_id}"
    assert git(worktree, "status", "--porcelain") == ""
    assert git(project.root, "show", f"{branch}:answer.txt") == "41"
    message = git(project.root, "log", "-1", "--format=%B", branch)
    assert message.startswith("Answer\n\nWrite the answer.\n\nWrighty-Item: ")

    assert project.wrighty("accept", str(item_id)).startswith(f"item {item_id} is done")
    assert git(project.root, "show", "main:answer.txt") == "41"
    done = json.loads(project.wrighty("show", str(item_id), "--json"))
    moves = [(e["from_state"], e["to_state"], e["reason_code"]) for e in done["events"]]
    assert moves[-5:] == [
        ("running", "needs-attention", "verification-failed"),
        ("needs-attention", "review", "ready-for-review"),
        ("review", "landing", "accepted"),
        ("landing", "landing", "landing-started"),
        ("landing", "done", "landed"),
    ]


def test_an_item_whose_run_changed_nothing_says_no_change(
    tmp_path: Path, store_url: str | None
) -> None:
    # The agent ends well and changes nothing: the item still waits for review (a task that
    # asked for a change and got none is for a person to judge), its reason saying so first.
    # Under review auto it is done, saying so too. An agent that committed its own change is
    # not "no change".
    idle = "import sys\nsys.stdin.read()\n"
    project = make_project(
        tmp_path / "p", store_url, completion={"review": "person"}, agent=idle, verify=CHECK_NONE
    )
    item_id = project.plant("Write the answer.", title="Answer")
    assert project.worker("--once").returncode == 0
    item = project.get(item_id)
    assert (item.state, item.reason_code) == (ItemState.REVIEW, "ready-for-review")
    assert item.reason == (
        "no change: every check passed (1 check), but its branch is still its base (nothing "
        "was changed); it waits for a person's review"
    )

    auto = make_project(tmp_path / "auto", store_url, agent=idle)
    auto_id = auto.plant("Write the answer.", title="Answer")
    assert auto.worker("--once").returncode == 0
    done = auto.get(auto_id)
    assert done.state is ItemState.DONE
    assert done.reason == (
        "no change: the run succeeded, but its branch is still its base (nothing was changed)"
    )

    committing = textwrap.dedent(
        """\
        import pathlib, subprocess, sys
        sys.stdin.read()
        pathlib.Path("answer.txt").write_text("41\\n")
        subprocess.run(["git", "add", "answer.txt"], check=True)
        subprocess.run(["git", "commit", "-qm", "the answer"], check=True)
        """
    )
    itself = make_project(tmp_path / "itself", store_url, agent=committing)
    itself_id = itself.plant("Write the answer.", title="Answer")
    assert itself.worker("--once").returncode == 0
    assert (itself.get(itself_id).state, itself.get(itself_id).reason) == (ItemState.DONE, None)


CHECK_NONE = {"checks": [{"name": "always", "argv": ["true"]}]}


def test_a_passing_verify_by_hand_whose_commit_fails_keeps_the_item_waiting_saying_why(
    tmp_path: Path, store_url: str | None
) -> None:
    flag = tmp_path / "checks-pass"
    project = make_project(
        tmp_path / "p", store_url, agent=AGENT, completion={"review": "person", "hooks": "run"},
        verify={"checks": [{"name": "flag", "argv": ["test", "-f", str(flag)], "onBase": False}],
                "maxFixTurns": 0},
    )  # fmt: skip
    item_id = project.plant("Write the answer.", title="Answer")
    assert project.worker("--once").returncode == 0
    hook = project.root / ".git" / "hooks" / "commit-msg"
    hook.write_text("#!/bin/sh\necho 'no ticket number' >&2\nexit 1\n")
    hook.chmod(0o755)
    flag.touch()

    said = project.wrighty("verify", str(item_id))

    item = project.get(item_id)
    assert (item.state, item.reason_code) == (ItemState.NEEDS_ATTENTION, "commit-failed")
    assert item.reason is not None
    assert "git could not commit the staged changes (git commit; they stay staged): " in (
        item.reason
    )
    assert "no ticket number" in item.reason
    assert said.splitlines()[-1].startswith(
        f"every check passed; item {item_id} is needs-attention"
    )
    worktree = project.root / ".wrighty" / "worktrees" / str(item_id)
    assert git(worktree, "status", "--porcelain") == "A  answer.txt"  # kept, staged
    done = json.loads(project.wrighty("show", str(item_id), "--json"))
    last = done["events"][-1]
    assert (last["from_state"], last["to_state"], last["reason_code"]) == (
        "needs-attention", "needs-attention", "commit-failed")  # fmt: skip
