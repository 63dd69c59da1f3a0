"""`wrighty import FILE.md` (docs/scheduling.md#importing-a-markdown-file): a Markdown
file as a list of items. Pure: text in, sections out, or an BadImport naming the line.

Each second-level heading (`## Title`) starts an item: its title is the heading, its body the
section's text up to the next heading of level one or two. A section may start with a fenced
block of settings:

    ```wrighty
    key: login-test
    agent: claude
    priority: P1
    after: Set up the database, #12
    label: backend
    timeout: 45m
    verify: tests, lint
    ```

A section's key (its `key:`, else the heading made into a slug) is stable across imports: the
same file imported again changes nothing, and a section whose text changed is reported, not
created twice. Text before the first `##` heading is not an item.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from wrighty.domain.durations import MAX_ITEM_TIMEOUT_SECONDS, parse_duration
from wrighty.domain.model import CHECK_NAME

MAX_SECTIONS = 1000
MAX_KEY_CHARS = 80
SETTINGS_FENCE = "wrighty"
KNOWN_SETTINGS = ("key", "agent", "priority", "after", "label", "timeout", "verify")
NO_CHECKS = "none"  # `verify: none`: the item runs no checks

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*([^`\s]*)")
_SETTING = re.compile(r"^([A-Za-z]+)[ \t]*:[ \t]*(.*?)[ \t]*$")
_KEY = re.compile(r"^[a-z0-9][a-z0-9._-]{0,79}$")
_PRIORITY = re.compile(r"^[Pp]?([0-3])$")


class BadImport(ValueError):
    """A file that cannot be imported: the message names the line."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass(frozen=True)
class MarkdownSection:
    """One item to be, as the file says it."""

    key: str
    title: str
    body: str
    line: int  # of its heading
    agent: str | None = None
    priority: int | None = None
    after_keys: tuple[str, ...] = ()  # other sections of the file, by key
    after_ids: tuple[int, ...] = ()  # items already in the store
    labels: tuple[str, ...] = ()
    timeout_seconds: float | None = None
    verify_checks: tuple[str, ...] | None = None  # as Item.verify_checks
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        """What the section says, hashed: a re-import compares it to see a changed section."""
        said = json.dumps(
            [self.title, self.body, sorted(self.settings.items())], ensure_ascii=False
        )
        return hashlib.sha256(said.encode()).hexdigest()[:16]


def slug(title: str) -> str:
    """``Fix the flaky login test!`` -> ``fix-the-flaky-login-test``."""
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words)[:MAX_KEY_CHARS].strip("-") or "section"


def parse_markdown(text: str) -> list[MarkdownSection]:
    """The sections of a Markdown file (BadImport, naming the line, for one that is not what
    `wrighty import` takes)."""
    lines = text.splitlines()
    sections: list[MarkdownSection] = []
    heading: tuple[int, str] | None = None
    for number, level, title in _headings(lines):
        if heading is not None:
            sections.append(_section(heading, lines[heading[0] : number - 1]))
        heading = (number, title) if level == 2 else None
    if heading is not None:
        sections.append(_section(heading, lines[heading[0] :]))
    if not sections:
        raise BadImport(1, "no `## Title` heading: each second-level heading makes an item")
    if len(sections) > MAX_SECTIONS:
        raise BadImport(sections[MAX_SECTIONS].line, f"more than {MAX_SECTIONS} sections")
    _check_keys(sections)
    return sections


def _headings(lines: list[str]) -> Iterator[tuple[int, int, str]]:
    """(line number, level, title) of each heading of level 1 or 2 outside fenced blocks."""
    fence: str | None = None
    for number, line in enumerate(lines, start=1):
        opened = _FENCE.match(line)
        if fence is not None:
            marker = opened.group(1) if opened else ""
            if marker[:1] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        found = _HEADING.match(line)
        if found and len(found.group(1)) <= 2:
            yield number, len(found.group(1)), found.group(2)
    if fence is not None:
        raise BadImport(len(lines), "a fenced block is never closed")


def _section(heading: tuple[int, str], body_lines: list[str]) -> MarkdownSection:
    number, title = heading
    if not title:
        raise BadImport(number, "a heading with no title")
    settings, rest = _settings(number, body_lines)
    body = "\n".join(rest).strip("\n")
    if not body.strip():
        raise BadImport(number, f"section {title!r} has no text: its text is the agent's task")
    return _with_settings(MarkdownSection(slug(title), title, body + "\n", number), settings)


_Settings = dict[str, tuple[int, str]]  # name -> (line, value)


def _settings(heading_line: int, body_lines: list[str]) -> tuple[_Settings, list[str]]:
    """The section's settings block, if its first non-blank line opens one, and the rest."""
    first = next((i for i, line in enumerate(body_lines) if line.strip()), None)
    if first is None:
        return {}, body_lines
    opened = _FENCE.match(body_lines[first])
    if not opened or opened.group(2) != SETTINGS_FENCE:
        return {}, body_lines
    settings: _Settings = {}
    for offset, line in enumerate(body_lines[first + 1 :], start=first + 1):
        number = heading_line + 1 + offset
        if line.strip().startswith(opened.group(1)):
            return settings, body_lines[offset + 1 :]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found = _SETTING.match(line.strip())
        if found is None:
            raise BadImport(number, "a setting is `name: value` (key, agent, priority, ...)")
        name, value = found.group(1).lower(), found.group(2)
        if name not in KNOWN_SETTINGS:
            raise BadImport(
                number, f"unknown setting {name!r} (known: {', '.join(KNOWN_SETTINGS)})"
            )
        if name in settings and name not in ("after", "label"):
            raise BadImport(number, f"{name} is set twice")
        if name in settings:  # after and label may repeat
            value = f"{settings[name][1]}, {value}"
        settings[name] = (number, value)
    # parse_markdown saw every fence closed, and this block is one of them.
    raise AssertionError("unreachable: a settings block that is never closed")


def _with_settings(section: MarkdownSection, settings: _Settings) -> MarkdownSection:
    values: dict[str, object] = {}
    for name, (number, value) in settings.items():
        values.update(_setting(name, value, number))
    plain = {name: value for name, (_, value) in settings.items()}
    return dataclasses.replace(section, **values, settings=plain)  # type: ignore[arg-type]


def _setting(name: str, value: str, number: int) -> dict[str, object]:
    if not value:
        raise BadImport(number, f"{name} has no value")
    try:
        return _READERS[name](value)
    except ValueError as error:
        raise BadImport(number, f"{name} {value!r}: {error}") from None


def _key(value: str) -> dict[str, object]:
    if not _KEY.match(value):
        raise ValueError("a key is 1 to 80 lowercase letters, digits, '.', '_' or '-'")
    return {"key": value}


def _priority(value: str) -> dict[str, object]:
    found = _PRIORITY.match(value)
    if found is None:
        raise ValueError("use 0 to 3 (or P0 to P3)")
    return {"priority": int(found.group(1))}


def _timeout(value: str) -> dict[str, object]:
    return {"timeout_seconds": parse_duration(value, at_most=MAX_ITEM_TIMEOUT_SECONDS)}


def _listed(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _after(value: str) -> dict[str, object]:
    parts = _listed(value)
    ids = [int(part[1:]) for part in parts if re.fullmatch(r"#[0-9]{1,18}", part)]
    keys = [part if _KEY.match(part) else slug(part) for part in parts if part[0] != "#"]
    if len(ids) + len(keys) != len(parts):
        raise ValueError("give headings or keys of this file, and #ID for items in the store")
    return {"after_ids": tuple(ids), "after_keys": tuple(keys)}


def _verify(value: str) -> dict[str, object]:
    if value == NO_CHECKS:
        return {"verify_checks": ()}
    names = tuple(dict.fromkeys(_listed(value)))
    if not names or any(CHECK_NAME.fullmatch(name) is None for name in names):
        raise ValueError(f"give check names of wrighty.json, comma-separated, or {NO_CHECKS}")
    return {"verify_checks": names}


_READERS: dict[str, Callable[[str], dict[str, object]]] = {
    "key": _key,
    "agent": lambda value: {"agent": value},
    "priority": _priority,
    "timeout": _timeout,
    "label": lambda value: {"labels": tuple(dict.fromkeys(_listed(value)))},
    "after": _after,
    "verify": _verify,
}


def _check_keys(sections: list[MarkdownSection]) -> None:
    seen: dict[str, MarkdownSection] = {}
    for section in sections:
        if section.key in seen:
            raise BadImport(
                section.line,
                f"key {section.key!r} is also line {seen[section.key].line}'s: give one of them "
                "its own `key:`",
            )
        seen[section.key] = section
    for section in sections:
        for key in section.after_keys:
            if key not in seen:
                raise BadImport(section.line, f"after {key!r}: no section of this file has it")
            if key == section.key:
                raise BadImport(section.line, "a section cannot come after itself")
    _refuse_cycles(sections)


def _refuse_cycles(sections: list[MarkdownSection]) -> None:
    """BadImport when the sections' `after` settings go round in a circle.

    A depth-first walk with its own stack, not recursion: a file of MAX_SECTIONS sections
    each after the next is a chain that deep."""
    edges = {section.key: section.after_keys for section in sections}
    lines = {section.key: section.line for section in sections}
    state: dict[str, int] = {}  # 1: on the path, 2: done
    for start in edges:
        if start in state:
            continue
        state[start] = 1
        path: list[tuple[str, Iterator[str]]] = [(start, iter(edges[start]))]
        while path:
            key, pending = path[-1]
            before = next(pending, None)
            if before is None:
                state[key] = 2
                path.pop()
            elif state.get(before) == 1:
                raise BadImport(
                    lines[key], f"the sections {before!r} and {key!r} wait for each other"
                )
            elif before not in state:
                state[before] = 1
                path.append((before, iter(edges[before])))


def in_order(sections: list[MarkdownSection]) -> list[MarkdownSection]:
    """Sections ordered so that each comes after those it waits for (file order otherwise).

    The sections have no cycle (parse_markdown refused it); walked with a stack of its own,
    like _refuse_cycles."""
    by_key = {section.key: section for section in sections}
    done: set[str] = set()
    ordered: list[MarkdownSection] = []
    for section in sections:
        if section.key in done:
            continue
        done.add(section.key)
        path: list[tuple[MarkdownSection, Iterator[str]]] = [(section, iter(section.after_keys))]
        while path:
            current, pending = path[-1]
            key = next(pending, None)
            if key is None:
                ordered.append(current)
                path.pop()
            elif key not in done:
                done.add(key)
                path.append((by_key[key], iter(by_key[key].after_keys)))
    return ordered
