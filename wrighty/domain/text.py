"""Outside text made safe to show: characters that act on a terminal, or hide or reorder what
is shown, become visible escapes.

Titles, reasons, diagnostics, agent output and anything read from a store are shown to a
person. An escape sequence in them could move the cursor, retitle the window, write to the
clipboard (OSC 52) or hide the lines above; a bidi override could show `rm -rf /` as something
else. So before they reach a terminal, these characters are replaced by their Python escape
(``\\x1b``, ``\\u202e``, ``\\U000e0041``; ``\\r``, ``\\n`` and ``\\t`` for carriage return,
newline and tab), which shows what was there:

- C0 controls (U+0000-U+001F) except newline and tab where a text may span lines; carriage
  return always, since it lets a line overwrite itself;
- DEL (U+007F) and the C1 controls (U+0080-U+009F), which some terminals obey like ESC;
- the bidi controls: LRM, RLM, ALM, the embeddings and overrides U+202A-U+202E and the
  isolates U+2066-U+2069;
- invisible characters that can hide or join text: zero width space U+200B, word joiner and
  invisible operators U+2060-U+2064, the deprecated format characters U+206A-U+206F, the byte
  order mark U+FEFF, the Mongolian vowel separator U+180E, the interlinear annotation marks
  U+FFF9-U+FFFB and the tag characters U+E0001, U+E0020-U+E007F (invisible ASCII);
- the line and paragraph separators U+2028 and U+2029;
- lone surrogates, which cannot be written as UTF-8 at all.

Zero width joiner and non-joiner (U+200C, U+200D) stay: emoji and several scripts need them.
A literal backslash is not escaped, so the text ``\\x1b`` typed by someone looks the same as an
escaped ESC; the JSON output (``--json``) is exact.
"""

from __future__ import annotations

import re

_HIDING = (
    r"\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
    r"\ufff9-\ufffb\U000e0001\U000e0020-\U000e007f\ud800-\udfff\x7f-\x9f"
)
# Text that may span lines keeps newline and tab.
_UNPRINTABLE = re.compile(rf"[\x00-\x08\x0b-\x1f{_HIDING}]")
# One line (a table cell, a field, an event line): newline and tab are escaped too.
_UNPRINTABLE_IN_LINE = re.compile(rf"[\x00-\x1f{_HIDING}]")


_SHORT_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    character = match.group()
    if character in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[character]
    code = ord(character)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` with every unsafe character escaped; newlines and tabs are kept."""
    return _UNPRINTABLE.sub(_escape, text)


def clip(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` - 1 characters and an ellipsis when it is longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plural(count: int, one: str, many: str) -> str:
    """``one`` for a count of 1, else ``many``."""
    return one if count == 1 else many


def printable_line(text: str) -> str:
    """``text`` as one line: every unsafe character escaped, newline and tab included."""
    return _UNPRINTABLE_IN_LINE.sub(_escape, text)


def first_unprintable_in_line(text: str) -> str | None:
    """The first character that `printable_line` would escape, or None."""
    found = _UNPRINTABLE_IN_LINE.search(text)
    return found.group() if found else None


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


def json_printable(document: str) -> str:
    """JSON text (as ``json.dumps(..., ensure_ascii=False)`` writes it) with every unsafe
    character written as a ``\\u`` escape, which a JSON reader decodes to the same string.

    ``json.dumps`` escapes only U+0000-U+001F; DEL, C1 and bidi controls would pass raw.
    Outside strings JSON text is ASCII, so only string contents change.
    """
    return _UNPRINTABLE.sub(_json_escape, document)


def given_text_problem(text: str, *, what: str, limit: int, if_empty: str) -> str | None:
    """Why ``text``, a person's words for an agent's prompt (a rejection's feedback, a
    handoff's note), cannot be taken: not UTF-8, empty (``if_empty`` says what to do), or
    more than ``limit`` bytes; None when it can."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return f"the {what} is not valid UTF-8 text (undecodable bytes); give it as UTF-8"
    if not text.strip():
        return f"the {what} is empty: {if_empty}"
    if size > limit:
        return (
            f"the {what} is larger than {limit // 1024} KiB: put the details in a file in the "
            "workspace and tell the agent to read it"
        )
    return None
