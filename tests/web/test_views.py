"""What the console's pages show, as plain values (wrighty/web/views.py), and the ids its
URLs take (wrighty/web/app.py)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import make_item
from wrighty.domain.board import OpenItem, Row, Section
from wrighty.domain.model import Item
from wrighty.domain.states import ItemState
from wrighty.web.app import Flashes, parse_item_id
from wrighty.web.views import Action, BoardFilter, actions_for, board_digest, board_sections

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def item(item_id: int, state: ItemState, title: str = "t", agent: str | None = None) -> Item:
    return make_item(state, id=item_id, title=title, agent=agent, generation=1,
                     created_at=NOW, updated_at=NOW)  # fmt: skip


def row(item_id: int, state: ItemState, section: Section, **kwargs: object) -> Row:
    labels = kwargs.pop("labels", ())
    made = item(item_id, state, **kwargs)  # type: ignore[arg-type]
    entry = OpenItem(made, NOW - timedelta(minutes=5), 0, None, labels=labels)  # type: ignore[arg-type]
    return Row(section, entry, f"why {item_id}")


ROWS = [
    row(1, ItemState.NEEDS_ATTENTION, Section.ATTENTION, title="Fix login"),
    row(2, ItemState.QUEUED, Section.WAITING, agent="codex", labels=("docs",)),
    row(3, ItemState.QUEUED, Section.WAITING, title="LOGIN page"),
]


def ids(wanted: BoardFilter) -> list[int]:
    sections = board_sections(ROWS, now=NOW, default_agent="claude-code", wanted=wanted)
    return [view.id for section in sections for view in section.rows]


def test_the_filters_each_narrow_the_rows():
    assert ids(BoardFilter()) == [1, 2, 3]
    assert ids(BoardFilter(state="queued")) == [2, 3]
    assert ids(BoardFilter(agent="codex")) == [2]
    assert ids(BoardFilter(agent="claude-code")) == [1, 3]
    assert ids(BoardFilter(label="docs")) == [2]
    assert ids(BoardFilter(text="login")) == [1, 3]
    assert ids(BoardFilter(text="why 2")) == [2]
    assert ids(BoardFilter(state="queued", text="login")) == [3]


def test_counts_are_before_the_filters_and_every_section_is_there():
    sections = board_sections(
        ROWS, now=NOW, default_agent="claude-code", wanted=BoardFilter(agent="codex")
    )
    assert [s.section for s in sections] == list(Section)
    waiting = next(s for s in sections if s.section is Section.WAITING)
    assert (waiting.total, len(waiting.rows)) == (2, 1)
    assert waiting.rows[0].when == "5m"


def test_a_filter_from_the_query_is_cut_to_its_bound():
    wanted = BoardFilter.of({"text": " x" * 500, "state": " queued "})
    assert len(wanted.text) == 200
    assert wanted.state == "queued"
    assert wanted.active
    assert not BoardFilter.of({}).active


def test_the_digest_follows_the_rows_not_their_ages():
    first = board_digest(ROWS)
    aged = [dataclasses.replace(r, entry=dataclasses.replace(r.entry, since=NOW)) for r in ROWS]
    assert board_digest(aged) == first
    moved = [*ROWS[:2], row(3, ItemState.CANCELLED, Section.WAITING, title="LOGIN page")]
    assert board_digest(moved) != first
    renamed = [*ROWS[:2], row(3, ItemState.QUEUED, Section.WAITING, title="other")]
    assert board_digest(renamed) != first
    assert board_digest(ROWS, extra=(1,)) != board_digest(ROWS, extra=(2,))


def test_the_actions_offered_follow_the_state():
    assert actions_for(ItemState.DONE) == ()
    assert actions_for(ItemState.CANCELLED) == ()
    assert Action.REQUEUE in actions_for(ItemState.NEEDS_ATTENTION)
    assert Action.REQUEUE in actions_for(ItemState.RETRY_SCHEDULED)
    assert Action.REQUEUE not in actions_for(ItemState.QUEUED)
    assert set(actions_for(ItemState.RUNNING)) == {Action.RELEASE, Action.CANCEL}
    assert {Action.ACCEPT, Action.REJECT} <= set(actions_for(ItemState.REVIEW))
    assert actions_for(ItemState.LANDING) == ()  # it lands as it was accepted


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", 1), ("42", 42), ("9223372036854775807", 2**63 - 1), ("0", None), ("-1", None),
        ("9223372036854775808", None), ("99999999999999999999", None), ("abc", None),
        ("", None), ("1e3", None), ("\u0661", None), ("²", None), (" 1", None),
        ("0" * 21 + "1", None),
    ],
)  # fmt: skip
def test_an_item_id_in_a_url_is_plain_digits_in_range(text: str, expected: int | None):
    assert parse_item_id(text) == expected


def test_a_flash_is_shown_once_and_only_by_its_key():
    flashes = Flashes()
    key = flashes.put(True, "item 1 is queued")
    assert flashes.take("forged") is None
    assert flashes.take(key) == (True, "item 1 is queued")
    assert flashes.take(key) is None
    assert flashes.take(None) is None


def test_a_change_is_shown_file_by_file_numbered_and_inert() -> None:
    from wrighty.web.views import DiffRow, diff_view

    text = (
        'diff --git "a/\\033[2Jx" "b/\\033[2Jx"\n'
        "index 1..2 100644\n"
        '--- "a/\\033[2Jx"\n'
        '+++ "b/\\033[2Jx"\n'
        "@@ -10,3 +10,3 @@ def f():\n"
        " keep\n"
        "-old \x1b[31m\n"
        "+new <script>\n"
        " keep\n"
        "diff --git a/gone b/gone\n"
        "deleted file mode 100644\n"
        "--- a/gone\n"
        "+++ /dev/null\n"
        "@@ -1 +0,0 @@\n"
        "-x\n"
    )
    view = diff_view(text, limit=100)
    first, gone = view.files
    assert (first.anchor, first.path, first.added, first.removed) == ("file-1", "\\033[2Jx", 1, 1)
    assert first.rows[-4:] == [
        DiffRow("same", 10, 10, " keep"),
        DiffRow("del", 11, None, "-old \\x1b[31m"),  # the escape shown, not obeyed
        DiffRow("add", None, 11, "+new <script>"),  # escaped by the template
        DiffRow("same", 12, 12, " keep"),
    ]
    assert (gone.path, gone.removed, view.added, view.removed) == ("gone", 1, 1, 2)
    cut = diff_view(text, limit=7)
    assert cut.cut == 7
    assert sum(len(one.rows) for one in cut.files) == 6  # the diff --git line is the file
