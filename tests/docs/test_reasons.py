"""Every reason a page quotes is the one the code words (docs/testing.md#the-reasons-a-page-quotes).

A page marks a quoted reason with an HTML comment right after its closing quote:

- `` `TEXT`<!-- reason: NAME --> `` (or ``"TEXT"<!-- reason: NAME -->``): TEXT is the whole
  reason, as REASONS[NAME] produces it through the domain's own functions;
- ``<!-- reason-part: NAME -->``: TEXT is part of it;
- ``<!-- reasons: NAME ... -->`` on the line before a fenced block: the block (a notification's
  JSON, its chat text) holds each reason whole.

In TEXT, ``...`` and a word in capitals (``SUMMARY``, ``WHY``, ``N``) stand for any text, and a
line break is a space, as Markdown reads it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.factories import claimed_item
from wrighty.domain import decisions, handoff, review, verify
from wrighty.domain.check_evidence import CheckEvidence
from wrighty.domain.claims import Settlement
from wrighty.domain.classify import Classification
from wrighty.domain.model import Item, RunEnd
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.domain.retry import AGENT_REPORTED, Fallback, ResetHint, UsagePolicy
from wrighty.domain.states import ItemState
from wrighty.domain.verify import VerifyPolicy

ROOT = Path(__file__).resolve().parents[2]
# docs/testing.md shows the markers themselves.
PAGES = [
    "README.md",
    *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md") if p.name != "testing.md"),
]

T0 = datetime(2026, 11, 30, 13, 0, tzinfo=UTC)
ENDED = RunEnd(T0, OutcomeClass.AGENT_FAILURE, Confidence.INFERRED, exit_code=1)


def _item(state: ItemState = ItemState.RUNNING) -> Item:
    return claimed_item(state, queued_at=T0, created_at=T0, updated_at=T0)


def _ended(outcome: OutcomeClass, summary: str, **policies: object) -> str | None:
    settled = decisions.after_run(
        _item(),
        Classification(outcome, Confidence.INFERRED, summary),
        dataclasses.replace(ENDED, outcome_class=outcome),
        timeout_seconds=3600,
        **policies,  # type: ignore[arg-type]
    )
    return settled.reason


def _passed(*names: str) -> Settlement:
    evidence = [CheckEvidence(name, ("true",), 0.2, exit_code=0) for name in names]
    return verify.after_checks(
        _item(), ENDED, evidence, policy=VerifyPolicy(()), fix_turns=0, resume_missing=()
    )


def _refused(hint: ResetHint | None, **facts: object) -> str | None:
    policy = UsagePolicy(action="retry", handoff_after_seconds=60)
    usage = decisions.UsageFacts(hint=hint, **facts)  # type: ignore[arg-type]
    return _ended(OutcomeClass.RATE_LIMITED, "429", usage_policy=policy, usage=usage)


def _coded(reason_code: str | None, reason: str | None) -> str:
    """A reason as `show` prints it: its code first."""
    return f"{reason_code}: {reason}"


def _ready_for_review() -> str:
    waiting = review.to_review(_item(), _passed("lint", "tests"))
    return _coded(waiting.reason_code, waiting.reason)


def _integration_failed() -> str:
    change = review.integration_failed(
        _item(ItemState.REVIEW), "git merge would conflict", at=T0, actor="operator"
    )
    return _coded(change.after.reason_code, change.after.reason)


def _handed_off() -> str | None:
    change = handoff.hand_off(
        _item(ItemState.NEEDS_ATTENTION),
        "codex",
        from_agent="claude",
        note="try the other way",
        at=T0,
        actor="operator",
    )
    return change.after.reason


RESET = ResetHint("rate_limit_event", resets_at=T0 + timedelta(minutes=60))

# Each reason a page quotes, by the name its marker gives, produced by the code that words it.
REASONS: dict[str, Callable[[], str | None]] = {
    "checks-passed": lambda: _passed("lint", "tests").reason,
    "checks-passed-2": lambda: review.to_review(_item(), _passed("lint", "tests")).reason,
    "ready-for-review": _ready_for_review,
    "commit-failed": lambda: decisions.commit_failed(_item(), ENDED, "the hook said no").reason,
    "uncommitted": lambda: (
        decisions.uncommitted(
            Settlement(ItemState.DONE, process_started=True, run_end=ENDED)
        ).reason
    ),
    "timeout": lambda: _ended(OutcomeClass.TIMEOUT, "stopped"),
    "process-crash": lambda: _ended(OutcomeClass.PROCESS_CRASH, "killed by SIGSEGV"),
    "agent-failure": lambda: _ended(OutcomeClass.AGENT_FAILURE, "exit code 3"),
    "agent-failed-exit-1": lambda: _ended(OutcomeClass.AGENT_FAILURE, "exit code 1"),
    "ended-as": lambda: _ended(OutcomeClass.BILLING, "claude: Credit balance is too low"),
    "worker-stopped-resumes": lambda: (
        decisions.after_shutdown(_item(), ENDED, resumable=True).reason
    ),
    "worker-stopped-waits": lambda: (
        decisions.after_shutdown(_item(), ENDED, resumable=False).reason
    ),
    "start-failed": lambda: decisions.start_failed(_item(), ENDED, why="no such file").reason,
    "integration-failed": _integration_failed,
    "handed-off": _handed_off,
    "usage-retry": lambda: _refused(
        ResetHint("rate_limit_event", resets_at=T0 + timedelta(minutes=0))
    ),
    "usage-retry-backoff": lambda: _refused(None),
    "agent-reported-reset": lambda: _refused(ResetHint(AGENT_REPORTED, resets_at=T0)),
    "usage-retry-fresh": lambda: _ended(
        OutcomeClass.RATE_LIMITED,
        "429",
        usage_policy=UsagePolicy(action="retry"),
        usage=decisions.UsageFacts(provider_answered=False),
        resume_missing=("no session id was recorded",),
    ),
    "no-fallback": lambda: _refused(
        RESET, fallbacks=(Fallback("codex", f"its provider circuit is open until {T0}"),)
    ),
}

INLINE = re.compile(
    r"(?:`(?P<code>[^`]+)`|\"(?P<quoted>[^\"]+)\")<!-- (?P<kind>reason|reason-part): "
    r"(?P<name>[\w-]+) -->"
)
BLOCK = re.compile(r"^<!-- reasons: (?P<names>[\w -]+?) -->\n(?P<fence>`{3,})[\w-]*\n", re.M)
PLACEHOLDER = re.compile(r"\.\.\.|\b[A-Z][A-Z_]*\b")


@dataclasses.dataclass(frozen=True)
class Quote:
    page: str
    line: int
    name: str
    text: str
    whole: bool  # the whole reason (else a part of it, or a block holding it)
    block: bool = False


def quotes(page: str) -> list[Quote]:
    text = (ROOT / page).read_text(encoding="utf-8")
    found = []
    for match in INLINE.finditer(text):
        said = match["code"] if match["code"] is not None else match["quoted"]
        line = text.count("\n", 0, match.start()) + 1
        found.append(Quote(page, line, match["name"], said, match["kind"] == "reason"))
    for match in BLOCK.finditer(text):
        start = match.end()
        end = text.index("\n" + match["fence"], start)
        line = text.count("\n", 0, match.start()) + 1
        for name in match["names"].split():
            found.append(Quote(page, line, name, text[start:end], False, block=True))
    return found


def _one_line(text: str) -> str:
    return " ".join(text.split())


def matches(quote: Quote, produced: str) -> bool:
    """Whether ``produced`` (the code's reason) is what ``quote`` says of it."""
    produced = _one_line(produced)
    if quote.block:
        return produced in _one_line(quote.text)
    pieces = PLACEHOLDER.split(_one_line(quote.text))
    pattern = ".+?".join(re.escape(piece) for piece in pieces)
    found = re.fullmatch if quote.whole else re.search
    return found(pattern, produced) is not None


ALL = [quote for page in PAGES for quote in quotes(page)]


def test_the_pages_mark_their_quoted_reasons_and_each_name_is_known() -> None:
    assert len(ALL) >= 20
    unknown = [f"{q.page}:{q.line}: {q.name}" for q in ALL if q.name not in REASONS]
    assert unknown == []
    # a reason no page quotes any more goes from the table too
    assert sorted(set(REASONS) - {quote.name for quote in ALL}) == []


@pytest.mark.parametrize("quote", ALL, ids=lambda q: f"{q.page}:{q.line}:{q.name}")
def test_a_quoted_reason_is_the_one_the_code_words(quote: Quote) -> None:
    produced = REASONS[quote.name]()
    assert produced is not None
    assert matches(quote, produced), (
        f"{quote.page}:{quote.line} quotes {quote.name!r} as\n  {_one_line(quote.text)}\n"
        f"the code says\n  {produced}"
    )


def test_a_quote_that_the_code_no_longer_says_fails() -> None:
    quote = Quote("p", 1, "timeout", "the run passed its time limit of DURATION; kept", True)
    assert matches(quote, "the run passed its time limit of 1h; kept")
    assert not matches(quote, "the run went past its time limit of 1h; kept")
    assert not matches(quote, "the run passed its time limit of 1h; kept, and more")
    part = dataclasses.replace(quote, text="passed its time limit", whole=False)
    assert matches(part, "the run passed its time limit of 1h; kept")
    block = dataclasses.replace(quote, text='{"reason": "it was kept"}', block=True)
    assert matches(block, "it was kept")
    assert not matches(block, "it was lost")
