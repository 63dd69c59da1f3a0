"""Reading a Markdown file as items (wrighty import; pure)."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wrighty.domain.importing import BadImport, in_order, parse_markdown, slug

SAMPLE = textwrap.dedent("""\
    # Sprint 12

    Intro text before the first item, not an item.

    ## Set up the database

    Create the schema.

    ```sql
    ## not a heading: inside a fenced block
    ```

    ## Fix the flaky login test

    ```wrighty
    agent: claude
    priority: P1
    after: Set up the database, #12
    label: backend, auth
    timeout: 45m
    ```

    The login test fails one run in ten. Find out why.

    ### Notes
    A third-level heading stays in the body.
    """)


def test_each_second_level_heading_is_an_item_with_its_text_and_settings() -> None:
    database, login = parse_markdown(SAMPLE)
    assert (database.key, database.title, database.line) == (
        "set-up-the-database", "Set up the database", 5)  # fmt: skip
    assert database.body == (
        "Create the schema.\n\n```sql\n## not a heading: inside a fenced block\n```\n"
    )
    assert (login.agent, login.priority, login.timeout_seconds) == ("claude", 1, 2700)
    assert (login.after_keys, login.after_ids) == (("set-up-the-database",), (12,))
    assert login.labels == ("backend", "auth")
    assert login.body.startswith("The login test fails")
    assert "### Notes\nA third-level heading stays in the body.\n" in login.body


def test_a_fingerprint_changes_with_the_text_and_the_settings_only() -> None:
    [first] = parse_markdown("## A\n\ntext\n")
    [same] = parse_markdown("# Other file title\n\n## A\n\ntext\n")
    [edited] = parse_markdown("## A\n\nmore text\n")
    [set_] = parse_markdown("## A\n\n```wrighty\npriority: 0\n```\ntext\n")
    assert first.fingerprint == same.fingerprint
    assert len({first.fingerprint, edited.fingerprint, set_.fingerprint}) == 3


def test_sections_come_after_the_ones_they_wait_for() -> None:
    text = "## B\n```wrighty\nafter: a\n```\nb\n## A\n\na\n"
    assert [s.key for s in in_order(parse_markdown(text))] == ["a", "b"]


def test_an_own_key_is_used_and_must_be_unique() -> None:
    [section] = parse_markdown("## Title\n```wrighty\nkey: t-1\n```\nx\n")
    assert section.key == "t-1"
    with pytest.raises(BadImport, match=r"^line 3: key 'same' is also line 1's"):
        parse_markdown("## Same\nx\n## Same\ny\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no heading at all\n", "line 1: no `## Title` heading"),
        ("## Empty\n\n## Next\nx\n", "line 1: section 'Empty' has no text"),
        ("## A\n```\nnever closed\n", "line 3: a fenced block is never closed"),
        ("## A\n```wrighty\ncolour: red\n```\nx\n", "line 3: unknown setting 'colour'"),
        ("## A\n```wrighty\nnot a setting\n```\nx\n", "line 3: a setting is `name: value`"),
        ("## A\n```wrighty\npriority: 7\n```\nx\n", "line 3: priority '7': use 0 to 3"),
        ("## A\n```wrighty\ntimeout: soon\n```\nx\n", "line 3: timeout 'soon'"),
        ("## A\n```wrighty\nagent: a\nagent: b\n```\nx\n", "line 4: agent is set twice"),
        ("## A\n```wrighty\nkey: Not A Key\n```\nx\n", "line 3: key 'Not A Key': a key is"),
        ("## A\n```wrighty\nafter: #x1\n```\nx\n", "line 3: after '#x1': give headings"),
        ("## A\n```wrighty\nafter: nowhere\n```\nx\n", "line 1: after 'nowhere': no section"),
        ("## A\n```wrighty\nafter: a\n```\nx\n", "line 1: a section cannot come after itself"),
        (
            "## A\n```wrighty\nafter: b\n```\nx\n## B\n```wrighty\nafter: a\n```\ny\n",
            "wait for each other",
        ),
        ("## A\n```wrighty\nagent:\n```\nx\n", "line 3: agent has no value"),
    ],
)
def test_a_file_that_cannot_be_imported_names_its_line(text: str, message: str) -> None:
    with pytest.raises(BadImport) as raised:
        parse_markdown(text)
    assert str(raised.value).startswith(message) or message in str(raised.value)


def test_slugs() -> None:
    assert slug("Fix the flaky login test!") == "fix-the-flaky-login-test"
    assert slug("日本語") == "section"
    assert len(slug("a" * 300)) == 80


@given(st.text(max_size=400))
def test_any_text_is_read_or_refused_with_a_line_never_crashes(text: str) -> None:
    refused: BadImport | None = None
    try:
        sections = parse_markdown(text)
    except BadImport as error:
        refused, sections = error, []
    if refused is not None:
        assert refused.line >= 1
        return
    assert sections
    assert all(section.title and section.body.strip() for section in sections)


def _chain(count: int, *, closing: bool = False) -> str:
    """``count`` sections, each after the next one in the file (the last after the first when
    ``closing``): the deepest chain a file may hold."""
    parts = []
    for number in range(count):
        later = number + 1 if number + 1 < count else (0 if closing else None)
        settings = f"```wrighty\nafter: s{later}\n```\n\n" if later is not None else ""
        parts.append(f"## S{number}\n\n{settings}text {number}\n\n")
    return "".join(parts)


def test_the_longest_chain_a_file_may_hold_is_read_and_ordered() -> None:
    from wrighty.domain.importing import MAX_SECTIONS

    sections = parse_markdown(_chain(MAX_SECTIONS))
    assert len(sections) == MAX_SECTIONS
    ordered = [section.key for section in in_order(sections)]
    assert ordered == [f"s{number}" for number in reversed(range(MAX_SECTIONS))]


def test_a_cycle_closing_the_longest_chain_is_refused_with_its_line() -> None:
    from wrighty.domain.importing import MAX_SECTIONS

    with pytest.raises(BadImport) as refused:
        parse_markdown(_chain(MAX_SECTIONS, closing=True))
    assert "wait for each other" in str(refused.value)
