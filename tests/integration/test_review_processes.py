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


def test_accept_merges_the_branch_and_a_conflict_leaves_everything_as_it_was(
    tmp_path: Path, store_url: str | None
) -> None:
    project, item_id = _reviewed(tmp_path, store_url, integrate="merge")
    branch = f"wrighty/{item_id}-answer"
    # the project moved on meanwhile, in the same file: the merge would conflict
    (project.root / "answer.txt").write_text("40\n")
    git(project.root, "add", "answer.txt")
    git(project.root, "commit", "-qm", "the project's own answer")
    before = git(project.root, "rev-parse", "main")

    refused = _accept(project, item_id)

    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.startswith(f"item {item_id} stays in review: ")
    assert "answer.txt" in refused.stderr
    assert git(project.root, "rev-parse", "main") == before
    assert git(project.root, "status", "--porcelain", "--untracked-files=no") == ""
    waiting = project.get(item_id)
    assert (waiting.state, waiting.reason_code) == (ItemState.REVIEW, "integration-failed")
    assert waiting.reason is not None
    assert "answer.txt" in waiting.reason

    # the person mends it (the project's answer goes), and accepts again: a merge commit
    git(project.root, "rm", "-q", "answer.txt")
    git(project.root, "commit", "-qm", "drop the project's answer")
    accepted = _accept(project, item_id, "--json")
    assert accepted.returncode == 0, accepted.stderr
    said = json.loads(accepted.stdout)
    assert (said["state"], said["url"]) == ("done", None)
    assert said["integrated"].startswith(f"merged {branch} into main as ")
    assert (project.root / "answer.txt").read_text() == "41\n"
    assert git(project.root, "merge-base", "--is-ancestor", branch, "main") == ""
    shown = json.loads(project.wrighty("show", str(item_id), "--json"))
    moves = [(e["from_state"], e["to_state"], e["reason_code"]) for e in shown["events"]]
    assert moves[-2:] == [
        ("review", "review", "integration-failed"),
        ("review", "done", "accepted"),
    ]
    assert shown["reason"] == said["integrated"]
    # `show` says it once: "accepted: merged ...", never "accepted: accepted; merged ..."
    [line] = [x for x in project.wrighty("show", str(item_id)).splitlines() if "accepted:" in x]
    assert line.split(None, 1)[1] == f"accepted: {said['integrated']}"


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
