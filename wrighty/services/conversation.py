"""Talking on a source's issues (docs/sources.md#talking-on-the-issue): each item's status
comment kept saying what its state says, the `/wrighty` answers people give acted on once,
and the pull requests wrighty opened followed to their merge or close.

The status comment's outbox is the store: what the comment should say is made from the item
as it is, and what it said when last posted is recorded (`tracker_items`, a digest); whenever
they differ, the next pass posts it. A worker killed anywhere loses nothing (the difference
stays until a pass posts it), and a comment posted but not recorded (killed between the two)
is found by the marker it begins with, and edited, never posted twice.

An answer is recorded by its comment's id before it is acted on (`tracker_answers`), so that it
is acted on once however often it is read; one taken but not acted on when its worker died is
acted on by the next pass if its item has not moved since, and otherwise answered as such.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

from wrighty.domain import suggestions
from wrighty.domain.conversation import (
    ACTED,
    ANSWERED,
    TAKEN,
    Answer,
    AnswerRecord,
    StatusView,
    TrackerItem,
    answer_marker,
    answer_reply,
    digest,
    is_ours,
    item_version,
    may_answer,
    read_answer,
    status_comment,
    status_marker,
)
from wrighty.domain.integration import summary
from wrighty.domain.links import item_link
from wrighty.domain.model import LANDED, PULL_OPEN, Change, Item, Session
from wrighty.domain.sources import SourceSettings, SourceState, issue_number
from wrighty.domain.states import ItemState
from wrighty.domain.text import clip, printable_line
from wrighty.domain.transitions import restated, transition
from wrighty.errors import WrightyError
from wrighty.services.items import apply_change
from wrighty.services.sources import failed_state, github_client
from wrighty.sources.github import GitHubError
from wrighty.sources.github_talk import PER_PAGE, Comment, GitHubTalk, PullRequest
from wrighty.store.port import Store

# What acts on an answer: the operator's desk, as the caller gives it (operator/answers.py):
# the line it said, or WrightyError with why not.
Act = Callable[[int, Answer, str], str]
# How long a person's permission, as GitHub said it, is believed.
PERMISSION_SECONDS = 600.0
# How far back each read of the comments looks before the last one it saw (GitHub's clock
# and ours may differ a little; an answer read twice is acted on once).
OVERLAP = timedelta(seconds=60)
MAX_RESULT_CHARS = 4000
PULL_CLOSED = "pull-request-closed"
# What an item's record says while its first status comment is being posted.
POSTING = "0" * 32
ACTOR = "tracker"


class Tracker(Protocol):
    """What a conversation asks of a tracker: GitHub's `GitHubTalk` (sources/github_talk.py)
    is one; Linear's or Jira's would be another, with the same promises: every request has a
    deadline, every failure is a WrightyError in wrighty's words, no message holds the token."""

    @property
    def requests(self) -> int: ...

    def new_comments(
        self, since: datetime | None, etag: str | None
    ) -> tuple[list[Comment], str]: ...

    def issue_comments(self, number: int) -> list[Comment]: ...

    def post_comment(self, number: int, body: str) -> int | None: ...

    def edit_comment(self, comment_id: int, body: str) -> bool: ...

    def whoami(self) -> str | None: ...

    def permission(self, login: str) -> str: ...

    def pull(self, number: int, etag: str | None) -> tuple[PullRequest | None, str]: ...


@dataclass
class TalkReport:
    """What one pass did: comments posted and edited, answers acted on (their lines), the
    pull requests that finished, and the requests it made."""

    posted: list[int] = field(default_factory=list)  # item ids
    edited: list[int] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)
    pulls: list[str] = field(default_factory=list)
    requests: int = 0


@dataclass
class Conversation:
    """One source's conversation, kept between passes (a worker's, a command's): the
    permissions GitHub said, believed for PERMISSION_SECONDS."""

    store: Store
    settings: SourceSettings
    talk: Tracker
    view_of: Callable[[Item], StatusView]
    act: Act | None = None
    clock: Callable[[], float] = lambda: 0.0
    permissions: dict[str, tuple[str, float]] = field(default_factory=dict)
    me: str | None = None  # the login wrighty's token writes as ("": GitHub did not say)
    # Each item whose comment says what it is, by the item's version then: not made again
    # until the item moves (a pass over thousands of items reads only those that moved).
    current: dict[int, str] = field(default_factory=dict)

    def turn(self, *, now: datetime) -> TalkReport:
        """One pass: the pull requests, every status comment, the answers (and the status
        comments of the items they moved). A tracker's failure stops it, and is recorded in
        the source's state, as a sync's is (`wrighty sources`, `status`; the back-off)."""
        try:
            return self._turn(now=now)
        except GitHubError as error:
            state = self.store.get_source(self.settings.name) or SourceState(self.settings.name)
            self.store.write_source(failed_state(state, error, now))
            raise

    def _turn(self, *, now: datetime) -> TalkReport:
        report = TalkReport()
        self._pulls(report, now=now)
        if self.settings.status_comments:
            self._status_comments(report)
        if self.act is not None and self.settings.answers:
            self._answers(report, now=now)
            if report.answered and self.settings.status_comments:  # what they moved, said now
                self._status_comments(report)
        report.requests = self.talk.requests
        return report

    # -- status comments --------------------------------------------------------------------

    def _status_comments(self, report: TalkReport) -> None:
        for item in self.store.list_imported(self.settings.prefix):
            version = item_version(item)
            if self.current.get(item.id) == version:  # said since it last moved
                continue
            record = self.store.get_tracker_item(item.id) or TrackerItem(item.id)
            body = status_comment(self.view_of(item))
            said = digest(body)
            if record.comment_digest == said:
                self.current[item.id] = version
                continue
            comment_id = self._put(item, record, body, report)
            latest = self.store.get_tracker_item(item.id) or record
            self.store.write_tracker_item(
                dataclasses.replace(latest, comment_id=comment_id, comment_digest=said)
            )
            self.current[item.id] = version

    def _put(self, item: Item, record: TrackerItem, body: str, report: TalkReport) -> int | None:
        """The item's status comment edited to say ``body`` where it is, or posted; its id."""
        if record.comment_id is not None and self.talk.edit_comment(record.comment_id, body):
            report.edited.append(item.id)
            return record.comment_id
        number = issue_number(item)
        # A pass that said it was posting may have posted (and died before it recorded): its
        # comment is found and edited, never posted twice.
        if record.comment_id is not None or record.comment_digest == POSTING:
            found = self._find_ours(number, status_marker(item.id))
            if found is not None and self.talk.edit_comment(found, body):
                report.edited.append(item.id)
                return found
        posting = dataclasses.replace(record, comment_id=None, comment_digest=POSTING)
        self.store.write_tracker_item(posting)
        posted = self.talk.post_comment(number, body)
        report.posted.append(item.id)
        return posted

    def _find_ours(self, number: int, marker: str) -> int | None:
        """The comment on issue ``number`` that wrighty's token wrote and that begins with
        ``marker`` (posted by a pass that died before it recorded it), or None. Anyone can
        write a marker: a comment by anyone else is never taken for wrighty's (nor edited)."""
        if self.me is None:
            self.me = self.talk.whoami() or ""
        if not self.me:
            return None
        for comment in self.talk.issue_comments(number):
            if comment.author == self.me and comment.body.startswith(marker):
                return comment.id
        return None

    # -- answers ----------------------------------------------------------------------------

    def _answers(self, report: TalkReport, *, now: datetime) -> None:
        for record in self.store.unfinished_answers(self.settings.name):
            self._carry_on(record, report)
        state = self.store.get_source(self.settings.name) or SourceState(self.settings.name)
        # A new source takes the answers from now on, none given before. The read asks from
        # the same time while it fits in one page, so that an unchanged repository answers
        # 304 (no rate limit); a longer one moves the time on.
        since = state.answers_since or now
        comments, etag = self.talk.new_comments(since, state.answers_etag)
        items = {
            issue_number(item): item for item in self.store.list_imported(self.settings.prefix)
        }
        for comment in sorted(comments, key=lambda comment: comment.id):
            answer = read_answer(comment.body)
            item = items.get(comment.issue)
            if answer is None or item is None:
                continue
            record = AnswerRecord(
                self.settings.name, comment.id, comment.issue, item.id, comment.author,
                answer.action, TAKEN, item_version(item), None,
            )  # fmt: skip
            if self.store.take_answer(record):
                self._act(record, answer, comment, report)
        if len(comments) > PER_PAGE:  # more than a page: the next read starts later
            times = [comment.updated for comment in comments if comment.updated is not None]
            later = max([since, *(moment - OVERLAP for moment in times)])
            if later != since:  # (the ETag was the earlier read's)
                since, etag = later, ""
        self._cursor(since, etag or None)

    def _cursor(self, since: datetime, etag: str | None) -> None:
        if self.store.get_source(self.settings.name) is None:
            self.store.write_source(SourceState(self.settings.name))
        self.store.write_answers_cursor(self.settings.name, since, etag)

    def _act(
        self, record: AnswerRecord, answer: Answer, comment: Comment, report: TalkReport
    ) -> None:
        """Act on a taken answer (or say why not), then answer on the issue."""
        if answer.problem is not None:
            result = f"not acted on: {answer.problem}"
        elif not may_answer(
            comment.author, self._permission(comment.author), self.settings.trusted
        ):
            result = (
                f"not acted on: only people with write access to {self.settings.repo}, or "
                "named in the source's trustedAuthors, can answer wrighty"
            )
        else:
            result = self._desk(record, answer)
        acted = dataclasses.replace(record, step=ACTED, result=clip(result, MAX_RESULT_CHARS))
        self.store.update_answer(acted)
        self._reply(acted, report)

    def _desk(self, record: AnswerRecord, answer: Answer) -> str:
        assert self.act is not None
        assert record.item_id is not None
        who = f"github:{record.author}"
        try:
            return self.act(record.item_id, answer, who)
        except WrightyError as refused:
            return f"not done: {refused}"

    def _carry_on(self, record: AnswerRecord, report: TalkReport) -> None:
        """An answer a pass that died left unfinished: acted on when its item has not moved
        since it was taken, then answered; or only answered."""
        if record.step == TAKEN:
            item = self.store.get_item(record.item_id) if record.item_id is not None else None
            comment = Comment(record.comment_id, record.issue, record.author, "")
            answer = read_answer(self._body_of(record)) if item is not None else None
            if item is not None and answer is not None and item_version(item) == record.seen:
                self._act(record, answer, comment, report)
                return
            record = dataclasses.replace(
                record, step=ACTED, result="taken before wrighty stopped; its item has moved "
                "since, so it was not acted on again",
            )  # fmt: skip
            self.store.update_answer(record)
        self._reply(record, report)

    def _body_of(self, record: AnswerRecord) -> str:
        for comment in self.talk.issue_comments(record.issue):
            if comment.id == record.comment_id:
                return comment.body
        return ""

    def _reply(self, record: AnswerRecord, report: TalkReport) -> None:
        """wrighty's answer on the issue, once: found first (a pass that died after posting
        it), posted otherwise."""
        said = record.result or ""
        marker = answer_marker(record.comment_id)
        if self._find_ours(record.issue, marker) is None:
            self.talk.post_comment(
                record.issue, answer_reply(record.comment_id, record.author, said)
            )
        self.store.update_answer(dataclasses.replace(record, step=ANSWERED))
        report.answered.append(f"#{record.issue} {record.author} /wrighty {record.action}: {said}")

    def _permission(self, login: str) -> str:
        known = self.permissions.get(login)
        if known is not None and known[1] > self.clock():
            return known[0]
        if not self.settings.trust_collaborators:
            return "none"
        permission = self.talk.permission(login)
        self.permissions[login] = (permission, self.clock() + PERMISSION_SECONDS)
        return permission

    # -- pull requests ----------------------------------------------------------------------

    def _pulls(self, report: TalkReport, *, now: datetime) -> None:
        for record in self.store.list_open_pulls():
            if record.pull_repo != self.settings.repo or record.pull_number is None:
                continue
            pull, etag = self.talk.pull(record.pull_number, record.pull_etag)
            if pull is None:
                continue
            if pull.state == "open":
                self.store.write_tracker_item(dataclasses.replace(record, pull_etag=etag))
                continue
            said = pull_finished(self.store, record.item_id, pull, now=now)
            state = "merged" if pull.merged else "closed"
            self.store.write_tracker_item(
                dataclasses.replace(record, pull_state=state, pull_etag=etag)
            )
            report.pulls.append(said)


def pull_finished(store: Store, item_id: int, pull: PullRequest, *, now: datetime) -> str:
    """A pull request merged (the item is done) or closed without merging (back to review,
    saying so); the line that says it (or that the item no longer waited for it)."""

    def plan(item: Item) -> Change:
        if item.state is not ItemState.REVIEW or item.reason_code != PULL_OPEN:
            raise ValueError(f"item {item.id} no longer waits for its pull request")
        if pull.merged:
            merged = f" as {pull.merge_commit[:12]}" if pull.merge_commit else ""
            return transition(
                item, ItemState.DONE, at=now, actor=ACTOR, reason_code=LANDED,
                reason=f"pull request #{pull.number} was merged{merged}: {pull.url}",
            )  # fmt: skip
        return restated(
            item, at=now, actor=ACTOR, reason_code=PULL_CLOSED,
            reason=f"pull request #{pull.number} was closed without merging: {pull.url}; "
            "accept it again to open another, or reject it",
            next_action=suggestions.accept(item.id),
        )  # fmt: skip

    try:
        apply_change(store, item_id, plan)
    except (ValueError, WrightyError) as refused:
        return f"item {item_id}: {printable_line(str(refused))}"
    how = "merged: done" if pull.merged else "closed without merging: back in review"
    return f"item {item_id}: pull request #{pull.number} {how}"


@dataclass(frozen=True)
class Viewer:
    """Makes an item's StatusView from the store and this installation's repository: its
    branch, and in review its change's stat and checks (only where its branch is here)."""

    store: Store
    project_root: Path
    installation_id: str
    default_agent: str
    public_url: str | None = None

    def __call__(self, item: Item) -> StatusView:
        session = self.store.get_session(item.id)
        branch = session.branch if session is not None else None
        record = self.store.get_tracker_item(item.id)
        summary_text = None
        if item.state is ItemState.REVIEW and session is not None and branch is not None:
            summary_text = self._summary(item, session)
        landing = self.store.get_landing(item.id) if item.state is ItemState.LANDING else None
        return StatusView(
            item.id, item.state, item.reason_code, item.reason, item.agent or self.default_agent,
            branch=branch, target=landing.target if landing is not None else None,
            summary=summary_text, pull_url=record.pull_url if record is not None else None,
            link=item_link(self.public_url, item.id) if self.public_url else None,
        )  # fmt: skip

    def _summary(self, item: Item, session: Session) -> str | None:
        from wrighty.domain.verify import latest_verification
        from wrighty.workproduct.diff import branch_stat

        if session.installation_id != self.installation_id:
            return None
        checks = latest_verification(self.store.list_checks(item.id))
        try:
            stat = branch_stat(self.project_root, session.base_commit, session.branch or "")
        except WrightyError:
            stat = ""
        return summary(
            item_id=item.id, title=item.title, branch=session.branch, base=session.base_commit,
            diff_stat=stat, checks=[record.evidence for record in checks],
        )  # fmt: skip


def conversation_of(
    store: Store,
    settings: SourceSettings,
    environ: Mapping[str, str],
    *,
    view_of: Callable[[Item], StatusView],
    act: Act | None,
    clock: Callable[[], float],
) -> Conversation:
    """A source's conversation, its token from its variable (WrightyError when unset)."""
    token = environ.get(settings.token_env, "")
    if not token:
        raise WrightyError(f"${settings.token_env} is not set: {settings.name} cannot be talked on")
    talk = GitHubTalk(github_client(settings, token))
    return Conversation(store, settings, talk, view_of, act, clock)


__all__ = ["Act", "Conversation", "TalkReport", "is_ours", "pull_finished"]
