"""`wrighty import FILE.md`: a source's sections as items, idempotently.

A source (`Source`) is where items come from outside wrighty: a Markdown file today
(`MarkdownSource`), an issue tracker next. Each of its sections carries a key that stays the
same across reads; with the source's name it makes the item's import key (`import_key`), which
the store holds unique, so that importing a source again creates only what is new.

Every section is checked before anything is written (agents, the items it comes after, the
item's own rules), so a file that cannot be imported changes nothing. Then each new section is
created, in an order where a section comes after those it waits for; a section whose key an
item already has is left alone: unchanged, or (its text or settings differ) reported as
changed. A failure midway (the store went away) leaves the items created so far, and the next
import of the file creates the rest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from wrighty.domain.importing import BadImport, MarkdownSection, in_order, parse_markdown
from wrighty.domain.model import DEFAULT_PRIORITY, Item, NewItem
from wrighty.domain.states import ItemState
from wrighty.domain.transitions import validate_new_item
from wrighty.errors import AlreadyImported, WrightyError
from wrighty.services.items import OPERATOR, CheckNames, check_choice, create_item, normalized
from wrighty.store.port import Store

Outcome = Literal["created", "unchanged", "changed"]


class Source(Protocol):
    """Items described outside wrighty. Its promises, which tests/contract/test_sources.py holds
    every source to: reading it writes nothing; each section's key is unique within it and the
    same on every read of an unchanged source; a section's fingerprint changes when what it
    says changes."""

    @property
    def name(self) -> str:
        """What its items' import keys begin with (a file's name)."""
        ...

    def sections(self) -> list[MarkdownSection]:
        """Every item it describes, in its own order."""
        ...


@dataclass(frozen=True)
class MarkdownSource:
    """A Markdown file: an item per second-level heading (docs/scheduling.md)."""

    name: str
    parsed: tuple[MarkdownSection, ...]

    @classmethod
    def read(cls, name: str, text: str) -> MarkdownSource:
        """The file ``name`` holding ``text``; WrightyError naming the line (not the file: the
        caller names it) when it is not what `wrighty import` takes."""
        try:
            return cls(name, tuple(parse_markdown(text)))
        except BadImport as error:
            raise WrightyError(str(error)) from None

    def sections(self) -> list[MarkdownSection]:
        return list(self.parsed)


@dataclass(frozen=True)
class Imported:
    section: MarkdownSection
    outcome: Outcome
    item_id: int | None  # None: a dry run's section to be created


def import_key(source: str, section: MarkdownSection) -> str:
    """The key an item of this source carries: the source's name and the section's key."""
    return f"{source}#{section.key}"


def import_sections(
    store: Store,
    source: Source,
    *,
    agents: Collection[str],
    queue: bool,
    dry_run: bool,
    now: datetime,
    check_names: CheckNames = lambda agent: (),
    actor: str = OPERATOR,
) -> list[Imported]:
    """Each of ``source``'s sections' outcome, in its order (WrightyError naming the section's
    line, having written nothing, when one cannot be imported). ``check_names``: the checks
    each agent has, which a section's ``verify`` may name."""
    sections = source.sections()
    name = source.name
    existing = store.find_imported([import_key(name, s) for s in sections])
    ordered = in_order(sections)
    for section in ordered:
        _check(store, section, agents=agents, queue=queue, check_names=check_names)
    made: dict[str, int | None] = {key: item.id for key, item in existing.items()}
    outcomes: dict[str, Imported] = {}
    for section in ordered:
        key = import_key(name, section)
        found = existing.get(key)
        if found is not None:
            outcomes[key] = _already(section, found)
            continue
        if dry_run:
            made[key] = None
            outcomes[key] = Imported(section, "created", None)
            continue
        after = [made[import_key(name, s)] for s in sections if s.key in section.after_keys]
        new = _new_item(section, key, queue=queue, after=[i for i in after if i is not None])
        try:
            item = create_item(store, new, now=now, actor=actor)
        except AlreadyImported:
            # Another import of the file made this section's item since `existing` was read
            # (the store refused a second item with its key): it is reported as already there.
            item = store.find_imported([key])[key]
            outcomes[key] = _already(section, item)
        else:
            outcomes[key] = Imported(section, "created", item.id)
        made[key] = item.id
    return [outcomes[import_key(name, s)] for s in sections]


def _already(section: MarkdownSection, found: Item) -> Imported:
    same = found.import_fingerprint == section.fingerprint
    return Imported(section, "unchanged" if same else "changed", found.id)


def _new_item(section: MarkdownSection, key: str, *, queue: bool, after: list[int]) -> NewItem:
    return normalized(
        NewItem(
            title=section.title,
            body=section.body,
            agent=section.agent,
            timeout_seconds=section.timeout_seconds,
            workspace=None,
            initial_state=ItemState.QUEUED if queue else ItemState.TODO,
            priority=section.priority if section.priority is not None else DEFAULT_PRIORITY,
            after=(*section.after_ids, *after),
            labels=section.labels,
            verify_checks=section.verify_checks,
            import_key=key,
            import_fingerprint=section.fingerprint,
        )
    )


def _check(
    store: Store,
    section: MarkdownSection,
    *,
    agents: Collection[str],
    queue: bool,
    check_names: CheckNames,
) -> None:
    where = f"line {section.line} ({section.title!r})"
    if section.agent is not None and section.agent not in agents:
        known = ", ".join(sorted(agents))
        raise WrightyError(f"{where}: unknown agent {section.agent!r} (known: {known})")
    try:
        check_choice(
            section.verify_checks, agent=section.agent, check_names=check_names, said="verify"
        )
    except WrightyError as error:
        raise WrightyError(f"{where}: {error}") from None
    for item_id in section.after_ids:
        if store.get_item(item_id) is None:
            raise WrightyError(f"{where}: after #{item_id}: no such item")
    probe = _new_item(section, "probe", queue=queue, after=[])
    try:
        validate_new_item(dataclasses.replace(probe, after=()))
    except WrightyError as error:
        raise WrightyError(f"{where}: {error}") from None


def summary(results: list[Imported]) -> dict[Outcome, int]:
    counts: dict[Outcome, int] = {"created": 0, "unchanged": 0, "changed": 0}
    for result in results:
        counts[result.outcome] += 1
    return counts
