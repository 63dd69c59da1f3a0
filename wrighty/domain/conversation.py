"""Talking on a tracker's issue (docs/sources.md#talking-on-the-issue), pure: the status
comment an item's state says, the answers a person may give (`/wrighty accept`, ...), who may
give them, and the markers that tie a comment to what wrighty wrote.

Every text from outside wrighty that a comment repeats (a reason, a check's name, a change's
stat, a person's feedback) goes inside a fenced block longer than any run of backticks in it:
GitHub renders it as text, so a mention, a link, an image or HTML in it does nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wrighty.domain.model import PULL_OPEN
from wrighty.domain.states import ItemState

if TYPE_CHECKING:
    from wrighty.domain.model import Item
from wrighty.domain.text import clip, printable

# A GitHub login (a bot's ends in [bot]) and a repository's owner/name, as every reader of
# them checks them: the config, the tracker's answers, the store.
LOGIN = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?"
REPO = r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}"

# What a status comment and an answer carry first, so that wrighty finds its own comments (a
# comment posted but not recorded before a worker died is found, not posted again) and never
# reads them as answers.
STATUS_MARKER = "<!-- wrighty:status item={item} -->"
ANSWER_MARKER = "<!-- wrighty:answer comment={comment} -->"
_OURS = re.compile(r"^<!-- wrighty:(status|answer) ")
MAX_QUOTED_CHARS = 4000
MAX_FEEDBACK_CHARS = 4000
MAX_NOTE_CHARS = 2000

# The answers a person may give on the issue, and what each asks of the operator's desk.
ACTIONS = ("accept", "reject", "retry", "handoff", "cancel", "priority")
# The permissions GitHub names that may answer (write access and above).
ANSWERING = frozenset({"admin", "maintain", "write"})
_COMMAND = re.compile(r"/wrighty(?:[ \t]+(\S+)[ \t]*(.*))?")
_PRIORITY = re.compile(r"[Pp]([0-3])")
_AGENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Answer:
    """A `/wrighty ...` comment read: the action, and its words (a rejection's feedback, a
    handoff's agent and note, a priority). ``problem``: why it cannot be acted on as written
    (an unknown action, a missing argument), answered on the issue instead."""

    action: str
    text: str = ""
    agent: str = ""
    priority: int | None = None
    problem: str | None = None


def is_ours(body: str) -> bool:
    """Whether a comment is one wrighty wrote (a status comment or an answer)."""
    return _OURS.match(body) is not None


def status_marker(item_id: int) -> str:
    return STATUS_MARKER.format(item=item_id)


def answer_marker(comment_id: int) -> str:
    return ANSWER_MARKER.format(comment=comment_id)


def read_answer(body: str) -> Answer | None:
    """The answer a comment gives, when its first line that is not blank starts with
    `/wrighty`; None for any other comment (and for wrighty's own)."""
    if is_ours(body):
        return None
    lines = body.replace("\r\n", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return None
    first = _COMMAND.fullmatch(lines[0].strip())
    if first is None:
        return None
    action = (first.group(1) or "").lower()
    rest = "\n".join([first.group(2) or "", *lines[1:]]).strip()
    if action not in ACTIONS:
        known = ", ".join(f"/wrighty {name}" for name in ACTIONS)
        return Answer(action or "?", problem=f"wrighty answers {known}")
    reading = _ARGUMENTS.get(action)
    return reading(action, rest) if reading is not None else Answer(action)


def _reject(action: str, rest: str) -> Answer:
    if not rest:
        return Answer(action, problem="/wrighty reject needs the feedback after it")
    return Answer(action, text=clip(rest, MAX_FEEDBACK_CHARS))


def _handoff(action: str, rest: str) -> Answer:
    agent, _, note = rest.partition(" ")
    if _AGENT.fullmatch(agent) is None:
        return Answer(action, problem="/wrighty handoff needs an agent's name after it")
    return Answer(action, agent=agent, text=clip(note.strip(), MAX_NOTE_CHARS))


def _priority(action: str, rest: str) -> Answer:
    found = _PRIORITY.fullmatch(rest)
    if found is None:
        return Answer(action, problem="/wrighty priority needs P0, P1, P2 or P3 after it")
    return Answer(action, priority=int(found.group(1)))


_ARGUMENTS: dict[str, Callable[[str, str], Answer]] = {
    "reject": _reject,
    "handoff": _handoff,
    "priority": _priority,
}


def may_answer(author: str, permission: str, trusted: tuple[str, ...]) -> bool:
    """Whether ``author`` may answer: named in the source's trustedAuthors, or with write
    access to the repository as GitHub says it (``permission``)."""
    named = {name.lower() for name in trusted}
    return author.lower() in named or permission in ANSWERING


def quoted(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """``text`` as a fenced block GitHub shows as it is: control characters escaped, at most
    ``limit`` characters, the fence longer than any run of backticks inside."""
    shown = clip(printable(text.replace("\r\n", "\n")).rstrip("\n"), limit)
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{shown}\n{fence}"


@dataclass(frozen=True)
class StatusView:
    """What a status comment says of an item: gathered by services/conversation.py."""

    item_id: int
    state: ItemState
    reason_code: str | None
    reason: str | None
    agent: str
    branch: str | None = None
    target: str | None = None
    summary: str | None = None  # the change's stat and the checks (domain/integration.summary)
    pull_url: str | None = None
    link: str | None = None  # the item's page in the console (serve.publicUrl)


_WAITS = {
    ItemState.TODO: "It waits to be queued: `wrighty queue {id}` on wrighty's machine.",
    ItemState.QUEUED: "It is queued for an agent.",
}


def status_comment(view: StatusView) -> str:
    """The status comment of an item: what it is doing and what a person may answer."""
    item = view.item_id
    head = f"**wrighty** · item {item} · **{view.state.value}**"
    lines = [status_marker(item), head, ""]
    lines += _state_lines(view)
    if view.link:
        lines += ["", f"Its page: {view.link}"]
    return "\n".join(lines).rstrip() + "\n"


def _state_lines(view: StatusView) -> list[str]:
    state = view.state
    if state in _WAITS:
        return [_WAITS[state].format(id=view.item_id)]
    return [line for line in _SAYS[state](view) if line is not None]


def _running(view: StatusView) -> list[str]:
    on = f" on branch `{_code(view.branch)}`" if view.branch else ""
    return [f"The agent `{_code(view.agent)}` is working on it{on}."]


def _attention(view: StatusView) -> list[str]:
    return [
        "It needs a person:", _reason(view), "",
        "Answer with `/wrighty retry`, `/wrighty handoff <agent> [note]` or `/wrighty cancel`.",
    ]  # fmt: skip


def _review(view: StatusView) -> list[str]:
    if view.pull_url and view.reason_code == PULL_OPEN:
        return [
            f"Its pull request is open: {view.pull_url}", "",
            "Merging it finishes the item; `/wrighty reject <feedback>` sends it back to the "
            "agent.",
        ]  # fmt: skip
    lines = [f"Its change is ready for review on branch `{_code(view.branch or '?')}`."]
    if view.reason and view.reason_code not in (None, "done"):
        lines += [_reason(view)]
    if view.summary:
        lines += ["", quoted(view.summary)]
    return [
        *lines, "", "Answer with `/wrighty accept`, or `/wrighty reject <feedback>` to send it "
        "back to the agent with your words. On wrighty's machine: "
        f"`wrighty diff {view.item_id}`, `wrighty accept {view.item_id}`, "
        f"`wrighty reject {view.item_id} --feedback TEXT`.",
    ]  # fmt: skip


def _landing(view: StatusView) -> list[str]:
    onto = f" onto `{_code(view.target)}`" if view.target else ""
    return [f"It was accepted and is landing{onto}: updated, checked, then merged."]


def _done(view: StatusView) -> list[str]:
    pulled = f" Its pull request: {view.pull_url}" if view.pull_url else ""
    return [f"It is done.{pulled}", _reason(view)]


_SAYS: dict[ItemState, Callable[[StatusView], list[str]]] = {
    ItemState.RUNNING: _running,
    ItemState.RETRY_SCHEDULED: lambda view: ["It will be tried again:", _reason(view)],
    ItemState.NEEDS_ATTENTION: _attention,
    ItemState.REVIEW: _review,
    ItemState.LANDING: _landing,
    ItemState.DONE: _done,
    ItemState.CANCELLED: lambda view: ["It was cancelled.", _reason(view)],
}


def _reason(view: StatusView) -> str:
    return quoted(view.reason) if view.reason else ""


def _code(text: str) -> str:
    """A short name (a branch, an agent) inside a code span: one line, no backticks."""
    return clip(printable(text).replace("`", "'").replace("\n", " "), 200)


def digest(body: str) -> str:
    """What a comment says, as the store keeps it to know whether it changed."""
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def answer_reply(comment_id: int, author: str, said: str) -> str:
    """wrighty's answer to ``author``'s comment: what it did, or why not."""
    return f"{answer_marker(comment_id)}\n@{author}\n\n{quoted(said)}\n"


@dataclass(frozen=True)
class TrackerItem:
    """What wrighty wrote about an item on a tracker: its status comment (its id, and the
    digest of what it says as last posted) and its pull request (the repository, number,
    page, where it stands: open, merged, closed; the ETag it was read with). Its fields are
    the columns of `tracker_items`, as the store writes them."""

    item_id: int
    comment_id: int | None = None
    comment_digest: str | None = None
    pull_repo: str | None = None
    pull_number: int | None = None
    pull_url: str | None = None
    pull_state: str | None = None
    pull_etag: str | None = None


# An answer's steps: taken (recorded before it acts), acted (the desk answered, ``result``
# says how), answered (wrighty's reply is on the issue).
TAKEN, ACTED, ANSWERED = "taken", "acted", "answered"
PULL_STATES = ("open", "merged", "closed")


@dataclass(frozen=True)
class AnswerRecord:
    """One `/wrighty` comment as the store keeps it, by the comment's id: acted on once.
    ``seen``: the item's updated_at when it was taken (a worker that died between taking
    and acting acts again only when the item has not moved since). Its fields are the
    columns of `tracker_answers`, as the store writes them."""

    source: str
    comment_id: int
    issue: int
    item_id: int | None
    author: str
    action: str
    step: str
    seen: str | None
    result: str | None


def item_version(item: Item) -> str:
    """What an answer taken records of its item, to tell later whether it moved since: its
    state, generation, rejections and last change, to the microsecond."""
    return f"{item.state.value}|{item.generation}|{item.rejections}|{item.updated_at.isoformat()}"
