"""Outside text made safe for a terminal: what is escaped, how, and what is kept."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wrighty.domain.text import (
    first_unprintable_in_line,
    json_printable,
    printable,
    printable_line,
)

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07 clip"
BIDI = [*"\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"]
INVISIBLE = [*"\u180e\u200b\u2028\u2029\u2060\u2064\u206a\u206f\ufeff\ufff9\ufffb"]
TAGS = ["\U000e0001", "\U000e0020", "\U000e0041", "\U000e007f"]


def unsafe_for_a_terminal(character: str) -> bool:
    """The oracle the rendering tests check against, written apart from the implementation:
    every control character, the bidi controls, the line and paragraph separators."""
    return (
        unicodedata.category(character) in ("Cc", "Cs", "Zl", "Zp")
        or character in BIDI
        or character in TAGS
    )


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param(OSC52, "\\x1b]52;c;ZWNobyBwd25lZA==\\x07 clip", id="osc52"),
        pytest.param("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H", id="clear-screen"),
        pytest.param("ok\rFAILED", "ok\\rFAILED", id="carriage-return"),
        pytest.param("\x00\x08\x7f", "\\x00\\x08\\x7f", id="nul-backspace-del"),
        pytest.param("\x85\x9b31m", "\\x85\\x9b31m", id="c1"),
        pytest.param("rm \u202eflog.txt", "rm \\u202eflog.txt", id="right-to-left-override"),
        pytest.param("a\u2066b\u2069", "a\\u2066b\\u2069", id="isolates"),
        pytest.param("pass\u200bword", "pass\\u200bword", id="zero-width-space"),
        pytest.param("hid\U000e0041den", "hid\\U000e0041den", id="tag-character"),
        pytest.param("bad \udcff byte", "bad \\udcff byte", id="lone-surrogate"),
    ],
)
def test_printable_shows_each_kind_of_unsafe_character_as_an_escape(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert printable_line(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "plain ASCII [with] brackets \\ and backslashes",
        "café, naïve, Ελληνικά, 日本語, עברית, العربية",
        "emoji 👩\u200d💻 and joiners \u200c kept",
        "\xa0no-break space and ÿ (U+00FF)",
    ],
)
def test_printable_keeps_ordinary_text_as_it_is(text: str) -> None:
    assert printable(text) == text
    assert printable_line(text) == text


def test_multi_line_text_keeps_newlines_and_tabs_but_not_carriage_returns() -> None:
    assert printable("one\n\ttwo\r\nthree") == "one\n\ttwo\\r\nthree"


def test_one_line_text_escapes_newlines_and_tabs_too() -> None:
    assert printable_line("one\n\ttwo\r\nthree") == "one\\n\\ttwo\\r\\nthree"


def test_a_long_text_is_escaped_whole() -> None:
    text = ("x" * 999 + "\x1b") * 1000
    shown = printable_line(text)
    assert shown == ("x" * 999 + "\\x1b") * 1000


def test_first_unprintable_in_line_names_the_first_one() -> None:
    assert first_unprintable_in_line("fine title") is None
    assert first_unprintable_in_line("a\u202eb\x1b") == "\u202e"
    assert first_unprintable_in_line("tab\there") == "\t"


def test_every_control_and_bidi_character_of_unicode_is_escaped() -> None:
    unsafe = [
        chr(code)
        for code in range(0x110000)
        if unsafe_for_a_terminal(chr(code)) and chr(code) not in "\n\t"
    ]
    assert len(unsafe) > 2000
    left = [c for c in unsafe if printable(c) == c]
    assert left == []
    assert printable_line("\n\t") == "\\n\\t"


@given(st.text())
def test_printable_leaves_no_unsafe_character_but_newline_and_tab(text: str) -> None:
    assert not [c for c in printable(text) if unsafe_for_a_terminal(c) and c not in "\n\t"]
    assert not [c for c in printable_line(text) if unsafe_for_a_terminal(c)]


@given(st.text())
def test_json_printable_is_the_same_json_document_without_unsafe_characters(
    text: str,
) -> None:
    document = {"title": text, "list": [text]}
    dumped = json_printable(json.dumps(document, indent=2, ensure_ascii=False))
    assert json.loads(dumped) == document
    assert not [c for c in dumped if unsafe_for_a_terminal(c) and c != "\n"]


def test_json_printable_escapes_what_json_dumps_lets_through() -> None:
    raw = json.dumps("\x7f\x85\u202e\U000e0041", ensure_ascii=False)
    assert raw == '"\x7f\x85\u202e\U000e0041"'  # json.dumps keeps these raw
    assert json_printable(raw) == '"\\u007f\\u0085\\u202e\\udb40\\udc41"'
