"""The console's New item page (docs/web.md#new-items): a form that makes an item as
`wrighty create` does, and a Markdown text that is imported as `wrighty import FILE.md`
imports a file. The desk checks and writes (the commands' own code, `operator/forms.new_item_of`,
`operator/actions.import_now`) and answers in the commands' words; here the form's fields are
read and the page is made.

A refused form is shown again with what was typed and the refusal (400), nothing written; a
made item is shown on its page (303) with `create`'s line. An import is previewed (the
command's ``--dry-run``) or made, and its lines are shown on the page.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from wrighty.domain.model import DEFAULT_PRIORITY, MAX_ITEM_ID
from wrighty.domain.scheduling import PRIORITIES, priority_name
from wrighty.domain.text import printable_line
from wrighty.errors import WrightyError
from wrighty.web.security import posted_form
from wrighty.web.views import parse_item_id

if TYPE_CHECKING:
    from wrighty.operator.desk import Desk

# The page the console makes of a template and its values (`web/app.Console.render`).
Render = Callable[..., Response]

# Labels, checks and the items an item comes after are typed in one field each, apart by
# commas or spaces (the command takes them one option each).
_APART = re.compile(r"[\s,]+")
# The longest name of an imported file taken (`wrighty import` keys the items by it).
MAX_SOURCE_CHARS = 255


@dataclass(frozen=True)
class ItemForm:
    """The New item form's fields, as typed (kept when the form is shown again)."""

    title: str = ""
    body: str = ""
    agent: str = ""
    priority: str = priority_name(DEFAULT_PRIORITY)
    labels: str = ""
    after: str = ""
    verify: str = ""
    no_verify: bool = False
    queue: bool = True  # a new item is queued unless the person says otherwise

    @classmethod
    def of(cls, fields: Mapping[str, str]) -> ItemForm:
        return cls(
            title=fields.get("title", ""),
            body=_lines(fields.get("body", "")),
            agent=fields.get("agent", ""),
            priority=fields.get("priority", ""),
            labels=fields.get("labels", ""),
            after=fields.get("after", ""),
            verify=fields.get("verify", ""),
            no_verify=fields.get("no_verify") == "on",
            queue=fields.get("queue") == "on",
        )

    def create(self, desk: Desk) -> tuple[int, str]:
        """The item made by the desk (`wrighty create`'s checks and service): its id and the
        command's line."""
        return desk.create(
            title=self.title,
            body=self.body,
            agent=self.agent or None,
            priority=self.priority or None,
            labels=_words(self.labels),
            after=_item_ids(self.after),
            verify=_words(self.verify),
            no_verify=self.no_verify,
            queue=self.queue,
        )


@dataclass(frozen=True)
class ImportForm:
    """The import form's fields: the file's name, its text, and whether to queue."""

    source: str = ""
    text: str = ""
    queue: bool = False
    dry_run: bool = True

    @classmethod
    def of(cls, fields: Mapping[str, str]) -> ImportForm:
        return cls(
            source=fields.get("source", "").strip(),
            text=_lines(fields.get("markdown", "")),
            queue=fields.get("queue") == "on",
            dry_run=fields.get("do") != "import",
        )

    def run(self, desk: Desk) -> ImportOutcome:
        source = _source_name(self.source)
        lines, ids = desk.import_markdown(
            self.text, source=source, queue=self.queue, dry_run=self.dry_run
        )
        # Each section's line, with the item it made or found to link to; the counts last.
        made = list(zip(lines[:-1], ids, strict=True))
        return ImportOutcome(made=made, total=lines[-1], dry_run=self.dry_run)


@dataclass(frozen=True)
class ImportOutcome:
    made: list[tuple[str, int | None]] = field(default_factory=list)
    total: str = ""
    dry_run: bool = True


def _lines(text: str) -> str:
    """A text area's text with its lines ended by LF, as a file's are (a browser sends
    CRLF)."""
    return text.replace("\r\n", "\n")


def _words(text: str) -> tuple[str, ...]:
    return tuple(word for word in _APART.split(text.strip()) if word)


def _item_ids(text: str) -> tuple[int, ...]:
    """The items an item comes after, as `--after ID` takes each (1 to MAX_ITEM_ID)."""
    ids = []
    for word in _words(text):
        item_id = parse_item_id(word)
        if item_id is None:
            raise WrightyError(f"--after {word}: give an item id (1 to {MAX_ITEM_ID})")
        ids.append(item_id)
    return tuple(ids)


def _source_name(text: str) -> str:
    """The imported file's name, as `wrighty import FILE.md` keys its items by it (a name,
    not a path)."""
    if (
        not text
        or len(text) > MAX_SOURCE_CHARS
        or printable_line(text) != text
        or any(c in text for c in "/\\")
    ):
        raise WrightyError(
            "the file's name: give the Markdown file's name, as `wrighty import FILE.md` "
            "names its items by it (one line, no '/')"
        )
    return text


class NewItemPages:
    """GET /new, POST /new, POST /import, on the console's desk and templates: ``open_desk``
    gives the desk for a request, ``render`` makes a page, ``flash`` keeps the message the
    page an action redirects to shows (its key)."""

    def __init__(
        self,
        open_desk: Callable[[], AbstractContextManager[Desk]],
        render: Render,
        flash: Callable[[bool, str], str],
        *,
        read_only: bool,
    ) -> None:
        self.open_desk = open_desk
        self.render = render
        self.flash = flash
        self.read_only = read_only

    def page(self, request: Request) -> Response:
        return self._render(ItemForm(), ImportForm())

    async def create(self, request: Request) -> Response:
        form = ItemForm.of(await posted_form(request))
        ok, item_id, said = await asyncio.to_thread(self._create, form)
        if not ok:
            return await asyncio.to_thread(
                self._render, form, ImportForm(), status=400, refused=said
            )
        key = self.flash(True, said)
        return RedirectResponse(f"/items/{item_id}?flash={key}", status_code=303)

    async def import_markdown(self, request: Request) -> Response:
        form = ImportForm.of(await posted_form(request))
        outcome, refused = await asyncio.to_thread(self._import, form)
        return await asyncio.to_thread(
            self._render,
            ItemForm(),
            form,
            status=200 if refused is None else 400,
            imported=outcome,
            import_refused=refused,
        )

    def _create(self, form: ItemForm) -> tuple[bool, int, str]:
        with self.open_desk() as desk:
            try:
                item_id, said = form.create(desk)
            except WrightyError as error:
                return False, 0, printable_line(f"wrighty: {error}")
        return True, item_id, printable_line(said)

    def _import(self, form: ImportForm) -> tuple[ImportOutcome | None, str | None]:
        with self.open_desk() as desk:
            try:
                return form.run(desk), None
            except WrightyError as error:
                return None, printable_line(f"wrighty: {error}")

    def _render(
        self, item: ItemForm, imports: ImportForm, *, status: int = 200, **values: Any
    ) -> Response:
        agents: list[str] = []
        default_agent = ""
        if not self.read_only:
            with self.open_desk() as desk:
                agents = desk.agent_names()
                default_agent = desk.settings.default_agent
        values.setdefault("refused", None)
        values.setdefault("imported", None)
        values.setdefault("import_refused", None)
        return self.render(
            "new.html",
            status=status,
            tab="new",
            form=item,
            imports=imports,
            agents=agents,
            default_agent=default_agent,
            priorities=[priority_name(p) for p in PRIORITIES],
            **values,
        )
