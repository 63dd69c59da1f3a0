"""An item's page beyond its fields: the action forms each state offers, button by button;
running the checks; the change against its base; the last run's output followed live
(wrighty/web/app.py, wrighty/web/logstream.py), on both stores."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import FakeClock
from tests.helpers import git, git_repo
from tests.inbox.seed import claim
from tests.web.conftest import Console, history, make_console, seeded
from tests.web.test_console import cli, in_review, post
from wrighty.domain.model import NewItem, NewRun, Run, RunEnd, Session
from wrighty.domain.outcomes import Confidence, OutcomeClass, RunKind
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import transition
from wrighty.installation import installation_id
from wrighty.operator.context import AppContext
from wrighty.services.runlogs import LogReader, run_log_dir
from wrighty.web.logstream import log_events
from wrighty.web.security import CSRF_FIELD

# Passes while the project's file `answer` holds 42.
CHECK = {
    "name": "answer",
    "argv": ["sh", "-c", "echo the answer is $(cat answer); grep -qx 42 answer"],
}


class Forms(HTMLParser):
    """Each form's action and the labels of its buttons (and whether it has a feedback
    field and a priority choice)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: dict[str, list[str]] = {}
        self._form: str | None = None
        self._button: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form" and found.get("method") == "post":
            self._form = found.get("action") or ""
            self.forms[self._form] = []
        elif self._form is not None and tag == "button":
            self._button = []
        elif self._form is not None and tag in ("textarea", "select"):
            self.forms[self._form].append(f"<{tag} {found.get('name')}>")
        elif self._form is not None and tag == "input" and found.get("name") == CSRF_FIELD:
            self.forms[self._form].append("<csrf>")

    def handle_data(self, data: str) -> None:
        if self._button is not None:
            self._button.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "button" and self._button is not None and self._form is not None:
            self.forms[self._form].append("".join(self._button).strip())
            self._button = None
        elif tag == "form":
            self._form = None


def forms_on(console: Console, item_id: int) -> dict[str, list[str]]:
    parser = Forms()
    parser.feed(console.client.get(f"/items/{item_id}").text)
    prefix = f"/items/{item_id}/"
    return {action.removeprefix(prefix): fields for action, fields in parser.forms.items()}


REQUEUE = ["<csrf>", "Requeue (resume)", "Requeue (fresh)"]
PRIORITY = ["<csrf>", "<select priority>", "Set priority"]
CANCEL = ["<csrf>", "Cancel"]
HANDOFF = ["<csrf>", "<select to>", "<textarea note>", "Hand off"]


QUEUE = ["<csrf>", "Queue"]


def test_each_state_offers_its_actions_button_by_button(
    console: Console, clock: FakeClock, vendor_clis: Path
):
    made = seeded(console.app_ctx, clock)
    review = in_review(console.app_ctx, clock)
    console.login()
    waiting = {"requeue": REQUEUE, "handoff": HANDOFF, "priority": PRIORITY, "cancel": CANCEL}
    assert forms_on(console, made.attention) == waiting
    assert forms_on(console, made.retry) == waiting
    assert forms_on(console, made.running) == {
        "release": ["<csrf>", "Release"],
        "cancel": CANCEL,
    }
    for unclaimed in (made.queued, made.blocked):
        assert forms_on(console, unclaimed) == {"priority": PRIORITY, "cancel": CANCEL}
    assert forms_on(console, made.todo) == {"queue": QUEUE, "priority": PRIORITY, "cancel": CANCEL}
    assert forms_on(console, review) == {
        "accept": ["<csrf>", "Accept"],
        "reject": ["<csrf>", "<textarea feedback>", "Reject"],
        "handoff": HANDOFF,
        "priority": PRIORITY,
        "cancel": CANCEL,
    }
    assert forms_on(console, made.done) == {}
    assert forms_on(console, made.cancelled) == {}


def test_the_priority_choice_holds_every_priority_with_the_items_chosen(
    console: Console, clock: FakeClock
):
    made = seeded(console.app_ctx, clock)
    page = console.login().get(f"/items/{made.queued}").text
    assert '<option value="P0">P0</option>' in page
    assert '<option value="P1" selected>P1</option>' in page  # the seed's queued item is P1
    assert '<option value="P3">P3</option>' in page


# Running the checks


def with_checks(project: Path, *checks: dict[str, object]) -> None:
    path = project / "wrighty.json"
    document = json.loads(path.read_text())
    document["verify"] = {"checks": list(checks)}
    path.write_text(json.dumps(document))


def ran_here(app_ctx: AppContext, clock: FakeClock, workspace: Path, **session: object) -> Run:
    """An item claimed and started on this installation, in ``workspace``."""
    here = installation_id()
    with app_ctx.store() as store:
        made = store.create_item(
            NewItem("Checked", "b", None, None, str(workspace), ItemState.QUEUED),
            at=clock(),
            actor="operator",
        )
        claimed = claim(store, made.id, at=clock())
        kept = Session(made.id, "command", "s-1", str(workspace), here, **session)  # type: ignore[arg-type]
        run = store.start_run(
            claimed,
            NewRun(f"run-{made.id}", RunKind.FRESH, "w", here, clock(), "s-1"),
            session=kept,
        )
        assert run is not None
        return run


def end_run(app_ctx: AppContext, clock: FakeClock, run: Run, to: ItemState, code: str) -> None:
    with app_ctx.store() as store:
        item = store.get_item(run.item_id)
        assert item is not None
        change = transition(
            item,
            to,
            at=clock(),
            actor="worker:w",
            reason_code=code,
            reason="the check answer failed",
            run_end=RunEnd(clock(), OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE, 0),
        )
        assert store.write_transition(change)


@pytest.fixture
def checked(project_ctx: AppContext, clock: FakeClock) -> Iterator[Console]:
    """A console on a project whose wrighty.json has the check ``answer`` (passing unless
    the test says otherwise: ANSWER's file)."""
    project_ctx.cwd.joinpath("answer").write_text("42")
    with_checks(project_ctx.cwd, CHECK)
    made = make_console(project_ctx, project_ctx.cwd)
    with made.client:
        yield made


def waiting_on_checks(console: Console, clock: FakeClock) -> int:
    run = ran_here(console.app_ctx, clock, console.project)
    end_run(console.app_ctx, clock, run, ItemState.NEEDS_ATTENTION, "verification-failed")
    return run.item_id


def test_run_the_checks_is_offered_when_show_offers_verify_and_lands_as_it_does(
    checked: Console, clock: FakeClock
):
    console = checked
    item_id = waiting_on_checks(console, clock)
    console.login()
    assert forms_on(console, item_id)["verify"] == ["<csrf>", "Run the checks"]
    page = post(console, f"/items/{item_id}/verify")
    assert f"item {item_id} is done: every check passed" in page.text
    with console.store() as store:
        item = store.get_item(item_id)
        [record] = store.list_checks(item_id)
    assert item is not None
    assert item.state is ItemState.DONE
    assert item.reason_code == "verified-by-hand"
    assert (record.actor, record.evidence.passed) == ("operator", True)
    assert "the answer is 42" in page.text  # the evidence, on the page it comes back to


def test_checks_that_fail_are_shown_as_a_refusal_and_the_item_stays(
    checked: Console, clock: FakeClock
):
    console = checked
    console.project.joinpath("answer").write_text("41")
    item_id = waiting_on_checks(console, clock)
    page = post(console, f"/items/{item_id}/verify")
    assert (
        '<p class="flash refused" role="status">'
        f"wrighty: item {item_id} stays needs-attention: `wrighty show {item_id}` "
        "has the evidence</p>" in page.text
    )
    with console.store() as store:
        item = store.get_item(item_id)
        [record] = store.list_checks(item_id)
    assert item is not None
    assert item.state is ItemState.NEEDS_ATTENTION
    assert record.evidence.exit_code == 1


def test_checks_are_not_offered_to_an_item_that_does_not_wait_for_them_and_refused_by_post(
    checked: Console, clock: FakeClock
):
    console = checked
    made = seeded(console.app_ctx, clock)
    console.login()
    assert "verify" not in forms_on(console, made.attention)  # no workspace here
    before = history(console.app_ctx, made.running)
    page = post(console, f"/items/{made.running}/verify")
    assert (
        f"wrighty: item {made.running} is running: its worker runs its checks once its run ends"
        in page.text
    )
    assert history(console.app_ctx, made.running) == before


# The change against its base


def diff_row(kind: str, old: int | None, new: int | None, text: str) -> str:
    """A line of a change as its page shows it: its kind, its numbers, its text."""
    numbers = "".join(f'<td class="n">{"" if n is None else n}</td>' for n in (old, new))
    return f'<tr class="d-{kind}">{numbers}<td class="code">{text}</td></tr>'


def worktree_item(console: Console, clock: FakeClock) -> tuple[int, Path]:
    project = git_repo(console.project)
    (project / "app.py").write_text("print('one')\nprint('two')\n")
    (project / ".gitignore").write_text(".wrighty/\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the app")
    base = git(project, "rev-parse", "HEAD")
    workspace = project / ".wrighty" / "worktrees" / "1"
    git(project, "worktree", "add", "-q", "-b", "wrighty/1-t", str(workspace), base)
    run = ran_here(console.app_ctx, clock, workspace, branch="wrighty/1-t", base_commit=base)
    return run.item_id, workspace


def test_the_diff_page_shows_the_change_coloured_and_escaped(console: Console, clock: FakeClock):
    item_id, workspace = worktree_item(console, clock)
    (workspace / "app.py").write_text("print('one')\nprint('<script>alert(1)</script>\x1b[2J')\n")
    (workspace / "new.txt").write_text("a new file\n")
    (workspace / "<img src=x onerror=alert(1)>").write_text("named to hurt\n")
    client = console.login()
    item_page = client.get(f"/items/{item_id}").text
    assert f'href="/items/{item_id}/diff"' in item_page
    page = client.get(f"/items/{item_id}/diff")
    assert page.status_code == 200
    text = page.text
    assert diff_row("del", 2, None, "-print(&#39;two&#39;)") in text
    assert (
        diff_row("add", None, 2, "+print(&#39;&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[2J&#39;)")
        in text
    )
    assert diff_row("add", None, 1, "+a new file") in text
    assert '<tr class="d-hunk"><td class="n"></td><td class="n"></td><td class="code">@@' in text
    assert '"><span class="path">&lt;img src=x onerror=alert(1)&gt;</span>' in text  # listed
    assert '<span class="files-n">3 files</span>' in text  # the figures above it
    assert "<script>" not in text
    assert "<img" not in text
    assert "\x1b" not in text
    assert 'class="action-bar"' in text  # the item's actions on its change's page too


def test_the_diff_page_refuses_in_the_commands_words(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)
    client = console.login()
    page = client.get(f"/items/{made.queued}/diff")
    assert page.status_code == 409
    assert (
        f"wrighty: item {made.queued} has no workspace yet: it has not run; it is queued: a "
        "worker of its agent makes its workspace" in page.text
    )
    assert client.get("/items/999999/diff").status_code == 404
    assert client.get("/items/x/diff").status_code == 404
    assert f'href="/items/{made.queued}/diff"' not in client.get(f"/items/{made.queued}").text


# The last run's output


def logs_of(console: Console, run: Run) -> Path:
    log_dir = run_log_dir(console.project / ".wrighty", run)
    log_dir.mkdir(parents=True)
    return log_dir


def events_of(text: str) -> list[tuple[str, object]]:
    found = []
    for block in text.split("\n\n"):
        lines = dict(
            line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":")
        )
        if "event" in lines:
            found.append((lines["event"], json.loads(lines["data"])))
    return found


def test_the_log_of_an_ended_run_streams_whole_and_ends(console: Console, clock: FakeClock):
    run = ran_here(console.app_ctx, clock, console.project)
    log_dir = logs_of(console, run)
    key = "sk-ant-api03-" + "x" * 40
    (log_dir / "stdout.log").write_bytes(f"step one\nkey {key}\n<b>bold</b>\x1b[31m\n".encode())
    (log_dir / "stderr.log").write_bytes(b"a warning")
    end_run(console.app_ctx, clock, run, ItemState.NEEDS_ATTENTION, "agent-failure")
    client = console.login()
    page = client.get(f"/items/{run.item_id}").text
    assert f'data-stream="/items/{run.item_id}/log"' in page
    response = client.get(f"/items/{run.item_id}/log")
    assert response.headers["content-type"].startswith("text/event-stream")
    assert events_of(response.text) == [
        ("start", {"run": 1, "skipped": {"stdout": 0, "stderr": 0}}),
        ("out", {"stream": "stdout", "text": "step one\nkey [REDACTED]\n<b>bold</b>\\x1b[31m\n"}),
        ("out", {"stream": "stderr", "text": "a warning"}),
        ("end", {"outcome": "succeeded"}),
    ]
    assert key not in response.text


def test_a_run_with_no_logs_here_says_why(console: Console, clock: FakeClock):
    made = seeded(console.app_ctx, clock)  # its runs wrote no log files
    client = console.login()
    page = client.get(f"/items/{made.attention}").text
    gone = f"the logs of run 1 of item {made.attention} are gone from this machine"
    assert gone in page
    assert "data-stream" not in page
    response = client.get(f"/items/{made.attention}/log")
    assert response.status_code == 404
    assert gone in response.text
    none_yet = client.get(f"/items/{made.queued}/log")
    assert none_yet.status_code == 404
    assert f"item {made.queued} has no runs yet (it is queued)" in none_yet.text


def test_a_long_log_starts_near_its_end_at_a_line(tmp_path: Path):
    log = tmp_path / "stdout.log"
    log.write_bytes(b"".join(b"line %05d\n" % n for n in range(10_000)))  # 110,000 bytes
    reader = LogReader(log, "stdout")
    skipped = reader.skip_to_tail(1000)
    assert skipped == 109_010  # line 9909, cut by the window, is left out whole
    text = reader.read_new(final=False)
    assert text.startswith("line 09910\n")
    assert text.endswith("line 09999\n")
    assert len(text) == 990


def test_an_open_runs_output_follows_until_it_ends(tmp_path: Path):
    log = tmp_path / "stdout.log"
    log.write_bytes(b"first\n")
    at = datetime(2026, 1, 1, tzinfo=UTC)
    run = Run("r", 7, 1, 2, RunKind.FRESH, "w", "i", at, *[None] * 9)
    looks: list[str | None] = [None, None, "agent-failure"]

    def run_open() -> str | None:
        found = looks.pop(0)
        if found is None:
            with log.open("ab") as handle:
                handle.write(b"more\npart")  # a line still being written waits
        return found

    async def disconnected() -> bool:
        return False

    async def collect() -> list[str]:
        readers = [LogReader(log, "stdout")]
        stream = log_events(run, readers, run_open=run_open, disconnected=disconnected, tick=0)
        return [chunk async for chunk in stream]

    told = events_of("".join(asyncio.run(collect())))
    assert told == [
        ("start", {"run": 2, "skipped": {"stdout": 0}}),
        ("out", {"stream": "stdout", "text": "first\nmore\n"}),
        ("out", {"stream": "stdout", "text": "partmore\n"}),
        ("out", {"stream": "stdout", "text": "part"}),
        ("end", {"outcome": "agent-failure"}),
    ]


def test_hand_off_lands_as_the_command_does_and_its_refusal_word_for_word(
    console: Console, clock: FakeClock
):
    made = seeded(console.app_ctx, clock)
    page = post(console, f"/items/{made.attention}/handoff", to="codex", note="see NOTES.md")
    assert (
        f"item {made.attention} is retry-scheduled, handed from claude to codex (handoff 1)"
        in page.text
    )
    with console.store() as store:
        item = store.get_item(made.attention)
    assert item is not None
    assert (item.state, item.reason_code, item.agent, item.handoff_note) == (
        ItemState.RETRY_SCHEDULED, "handed-off", "codex", "see NOTES.md")  # fmt: skip
    before = history(console.app_ctx, made.queued)
    hostile = post(console, f"/items/{made.queued}/handoff", to="<b>robot</b>")
    assert "wrighty: --to &lt;b&gt;robot&lt;/b&gt;: unknown agent (configured: " in hostile.text
    assert history(console.app_ctx, made.queued) == before
    refused = post(console, f"/items/{made.queued}/handoff", to="codex")
    assert (
        f"wrighty: item {made.queued} is queued; handoff takes items that are needs-attention"
        in refused.text
    )
    assert history(console.app_ctx, made.queued) == before


def with_agent_env(project: Path, env: dict[str, str]) -> None:
    """wrighty.json's agent `fake` (a command agent) with ``env``."""
    path = project / "wrighty.json"
    document = json.loads(path.read_text())
    document["agents"] = {"fake": {"adapter": "command", "command": ["true"], "env": env}}
    path.write_text(json.dumps(document))


def test_the_live_log_hides_the_values_of_an_agents_env(
    project_ctx: AppContext, clock: FakeClock
) -> None:
    """A value set in agents.<name>.env, under a name that says nothing of a secret and with
    nothing that looks like one, never shows in the console's log (docs/config.md#agents)."""
    hook = "hook-Plain-value-5521"
    with_agent_env(project_ctx.cwd, {"BUILD_HOOK": hook})
    app_ctx = AppContext(project_ctx.config_option, project_ctx.store_option, project_ctx.cwd)
    console = make_console(app_ctx, app_ctx.cwd)
    with console.client:
        run = ran_here(app_ctx, clock, console.project)
        log_dir = logs_of(console, run)
        (log_dir / "stdout.log").write_bytes(f"calling {hook}/deploy\n".encode())
        (log_dir / "stderr.log").write_bytes(f"failed: {hook}".encode())
        end_run(app_ctx, clock, run, ItemState.NEEDS_ATTENTION, "agent-failure")
        response = console.login().get(f"/items/{run.item_id}/log")
    assert hook not in response.text
    assert ("out", {"stream": "stdout", "text": "calling [REDACTED]/deploy\n"}) in events_of(
        response.text
    )


def test_a_handoffs_note_and_a_rejections_feedback_are_stored_without_secrets(
    project_ctx: AppContext, clock: FakeClock
) -> None:
    """A person who pastes a secret into a note or feedback: the store keeps, and the item's
    page, its history and the next prompt show, `[REDACTED]` in its place, for a value of an
    agent's env and for what looks like a key (docs/handoff.md, docs/work-product.md#review)."""
    hook, key = "hook-Plain-value-5521", "sk-ant-api03-" + "q" * 40
    with_agent_env(project_ctx.cwd, {"BUILD_HOOK": hook})
    app_ctx = AppContext(project_ctx.config_option, project_ctx.store_option, project_ctx.cwd)
    console = make_console(app_ctx, app_ctx.cwd)
    with console.client:
        made = seeded(app_ctx, clock)
        post(console, f"/items/{made.attention}/handoff", to="fake", note=f"use {hook}\nand {key}")
        reviewed = in_review(app_ctx, clock)
        post(console, f"/items/{reviewed}/reject", feedback=f"drop {hook}; {key}")
        pages = [console.client.get(f"/items/{i}").text for i in (made.attention, reviewed)]
    with app_ctx.store() as store:
        handed, rejected = store.get_item(made.attention), store.get_item(reviewed)
        reasons = [e.reason or "" for i in (made.attention, reviewed) for e in store.list_events(i)]
    assert handed is not None
    assert rejected is not None
    assert handed.handoff_note == "use [REDACTED]\nand [REDACTED]"
    assert rejected.feedback == "drop [REDACTED]; [REDACTED]"
    for text in (*pages, *reasons, handed.reason or "", rejected.reason or ""):
        assert hook not in text
        assert key not in text


def test_the_diff_page_replaces_the_secrets_an_agent_wrote_into_its_change(
    project_ctx: AppContext, clock: FakeClock
) -> None:
    """A page is for eyes: the change's agents.<name>.env values and keys show as
    [REDACTED], as `wrighty diff --redact` shows them (docs/work-product.md)."""
    hook, key = "hook-Plain-value-5521", "sk-ant-api03-" + "q" * 40
    with_agent_env(project_ctx.cwd, {"BUILD_HOOK": hook})
    app_ctx = AppContext(project_ctx.config_option, project_ctx.store_option, project_ctx.cwd)
    console = make_console(app_ctx, app_ctx.cwd)
    with console.client:
        item_id, workspace = worktree_item(console, clock)
        (workspace / "deploy.sh").write_text(f"curl {hook}\nexport KEY={key}\n")
        page = console.login().get(f"/items/{item_id}/diff")
    assert page.status_code == 200
    assert diff_row("add", None, 1, "+curl [REDACTED]") in page.text
    assert hook not in page.text
    assert key not in page.text


def test_a_refusal_that_quotes_a_runaway_field_is_bounded(console: Console, clock: FakeClock):
    """A handoff to an agent named by 100,000 characters: the page's refusal quotes its start
    and end, not all of it."""
    made = seeded(console.app_ctx, clock)
    page = post(console, f"/items/{made.attention}/handoff", to="r" * 100_000)
    assert "characters cut]… " in page.text
    assert "r" * 1000 not in page.text


def commit_all(workspace: Path, message: str) -> str:
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", message)
    return git(workspace, "rev-parse", "HEAD")


def test_after_a_reject_the_page_offers_first_what_changed_since(
    console: Console, clock: FakeClock
):
    """A real reject of an item with a real branch records the commit the person saw; after
    the agent's next run, the page shows that run's change first, then the whole change."""
    item_id, workspace = worktree_item(console, clock)
    (workspace / "app.py").write_text("print('one')\nprint('first try')\n")
    seen = commit_all(workspace, "first try")
    with console.app_ctx.store() as store:
        run = store.list_runs(item_id)[-1]
    end_run(console.app_ctx, clock, run, ItemState.REVIEW, "ready-for-review")
    client = console.login()
    first = client.get(f"/items/{item_id}").text
    assert diff_row("add", None, 2, "+print(&#39;first try&#39;)") in first
    assert "Since your last review" not in first
    assert f'action="/items/{item_id}/accept"' in first
    said = post(console, f"/items/{item_id}/reject", feedback="say it twice")
    assert f"item {item_id}" in said.text
    with console.app_ctx.store() as store:
        rejected = store.get_item(item_id)
        assert rejected is not None
        assert rejected.reviewed_commit == seen
    assert (
        json.loads(cli(console.app_ctx, "show", str(item_id), "--json"))["reviewed_commit"] == seen
    )
    with console.app_ctx.store() as store:
        from tests.inbox.seed import TERMS
        from wrighty.domain.claims import ClaimRequest

        request = ClaimRequest("w", installation_id(), TERMS, "command", item_id=item_id)
        held = store.acquire(request, now=clock())
        assert held is not None
        claimed = held.item
        again = store.start_run(
            claimed, NewRun("run-again", RunKind.RESUME, "w", installation_id(), clock(), "s-1")
        )
        assert again is not None
    (workspace / "more.txt").write_text("said twice\n")
    commit_all(workspace, "second try")
    end_run(console.app_ctx, clock, again, ItemState.REVIEW, "ready-for-review")
    page = client.get(f"/items/{item_id}").text
    since = page[page.index('<section class="since"') : page.index('<section class="change"')]
    assert f"since you rejected it at {seen[:12]}" in since
    assert diff_row("add", None, 1, "+said twice") in since
    assert "first try" not in since  # what the person saw already is not in it
    whole = page[page.index('<section class="change"') :]
    assert "first try" in whole
    assert "+said twice" in whole
    assert page.index("Since your last review") < page.index("The whole change")


def test_the_page_says_what_the_item_needs_then_its_checks_failing_first_and_open(
    project_ctx: AppContext, clock: FakeClock
):
    project_ctx.cwd.joinpath("answer").write_text("41")
    first = {"name": "first", "argv": ["sh", "-c", "echo all good"]}
    with_checks(project_ctx.cwd, first, CHECK)
    console = make_console(project_ctx, project_ctx.cwd)
    with console.client:
        item_id = waiting_on_checks(console, clock)
        post(console, f"/items/{item_id}/verify")
        page = console.client.get(f"/items/{item_id}").text
    head = page[page.index('<section class="review-head">') : page.index("</section>")]
    assert '<span class="standing-label">Why</span>' in head
    assert "wrighty " not in head  # words, not commands
    assert '<span class="standing-label">Next</span>' in head
    checks = page[page.index('<section class="checks"') :]
    failed = checks.index('<details class="check check-failed" open>')
    passed = checks.index('<details class="check check-passed">')
    assert failed < passed  # the failing check first, though it ran second
    assert "the answer is 41" in checks[failed:passed]
    assert page.index('<section class="checks"') < page.index('<section class="fields"')
    assert "<code>wrighty show" not in page  # show's text dump left the page


def test_an_items_pull_request_is_on_its_page(console: Console, clock: FakeClock) -> None:
    """completion.integrate github-pr's pull request (docs/sources.md): its number, link and
    where it stands, among the item's fields; a stored URL that does not read is left out."""
    from wrighty.domain.conversation import TrackerItem

    review = in_review(console.app_ctx, clock)
    url = "https://github.com/acme/widgets/pull/7?a=1&b=<2>"
    with console.app_ctx.store() as store:
        store.write_tracker_item(
            TrackerItem(
                review, pull_repo="acme/widgets", pull_number=7, pull_url=url, pull_state="open"
            )
        )
    console.login()
    page = console.client.get(f"/items/{review}").text
    assert "pull request" in page
    assert "#7 https://github.com/acme/widgets/pull/7?a=1&amp;b=&lt;2&gt; (open)" in page
    assert "<2>" not in page
