"""The console's New item page, in process, on both stores: an item made by the form is the
item `wrighty create` makes of the same options, a bad field is the command's refusal with
nothing written, a Markdown text is imported as `wrighty import` imports the file, and the
guard's rules (CSRF, size, read-only) hold for both forms (wrighty/web/create.py)."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import wrighty
from tests.conftest import FakeClock, open_postgres, postgres_schema
from tests.inbox.conftest import make_project
from tests.web.conftest import Console, make_console
from tests.web.test_console import CSRF, cli
from tests.web.test_hostile import HOSTILE, OUR_SCRIPT, PAYLOADS, RAW_CONTROL
from tests.web.test_hostile import inert as inert_page
from wrighty.domain.scheduling import PRIORITIES, priority_name
from wrighty.operator.context import AppContext

GOOD = {
    "title": "Add a health endpoint",
    "body": "Add GET /healthz.\r\nIt answers 200.",
    "agent": "codex",
    "priority": "P0",
    "labels": "web, ui",
    "after": "",
    "verify": "",
    "no_verify": "on",
    "queue": "on",
}


def as_args(fields: dict[str, str]) -> list[str]:
    """The form's fields as `wrighty create`'s options (a text area's lines as a file's)."""
    args = ["--title", fields["title"], "--body", fields["body"].replace("\r\n", "\n")]
    if fields["agent"]:
        args += ["--agent", fields["agent"]]
    args += ["--priority", fields["priority"]]
    for flag, name in (("--label", "labels"), ("--after", "after"), ("--verify", "verify")):
        for word in re.split(r"[\s,]+", fields[name].strip()):
            args += [flag, word] if word else []
    args += ["--no-verify"] if fields["no_verify"] else []
    return args + (["--queue"] if fields["queue"] else [])


SHOWN = ("title", "body", "state", "agent", "priority", "labels", "verify_checks", "after")

PLAN = """# Release 2.4

## Add a health endpoint

```wrighty
priority: P1
label: web
```

Add GET /healthz.

## Document the health endpoint

```wrighty
after: Add a health endpoint
```

Describe /healthz in docs/api.md.
"""


NEW_ITEM_SCRIPT = '<script src="/static/new-item.js"></script>'


def inert(page: str) -> None:
    """The hostile text is inert on the page (whose one script is the New item page's)."""
    assert page.count(NEW_ITEM_SCRIPT) <= 1
    inert_page(page.replace(NEW_ITEM_SCRIPT, ""))


def item_count(app_ctx: AppContext) -> int:
    with app_ctx.store() as store:
        return len(store.list_items())


def shown(app_ctx: AppContext, item_id: int) -> dict[str, Any]:
    """What `wrighty show --json` reads of an item's fields."""
    document = json.loads(cli(app_ctx, "show", str(item_id), "--json"))
    return {key: document[key] for key in SHOWN}


def refusal(page: str) -> str:
    found = re.search(r'<p class="flash refused" role="alert">(.*?)</p>', page, re.S)
    assert found is not None, page
    return html.unescape(found.group(1))


def cli_refusal(app_ctx: AppContext, *args: str) -> str:
    store = ("--store", app_ctx.store_option) if app_ctx.store_option else ()
    result = wrighty(*store, *args)
    assert result.exit_code == 2, result.output
    return result.output.strip()


def create(console: Console, follow: bool = True, **fields: str):  # type: ignore[no-untyped-def]
    if "wrighty_token" not in console.client.cookies:
        console.login()
    data = {"csrf": CSRF, **GOOD, **fields}
    return console.client.post("/new", data=data, follow_redirects=follow)


# The page


def test_the_page_offers_create_s_fields_and_the_import(console: Console):
    page = console.login().get("/new")
    assert page.status_code == 200
    assert '<a href="/new" aria-current="page">New item</a>' in page.text
    for name in ("title", "body", "agent", "priority", "labels", "after", "verify", "no_verify"):
        assert f'name="{name}"' in page.text, name
    names = [priority_name(p) for p in PRIORITIES]
    assert re.findall(r'<option value="(P\d)"', page.text) == names
    assert '<option value="P2" selected>' in page.text  # the command's default
    assert "default (claude)" in page.text
    assert '<option value="gemini">' in page.text
    assert page.text.count(f'name="csrf" value="{CSRF}"') == 2
    assert 'action="/import"' in page.text
    assert '<script src="/static/new-item.js"></script>' in page.text
    assert console.client.get("/static/new-item.js").status_code == 200


# Creating


def test_a_created_item_is_the_one_create_makes_on_the_board_and_in_show(console: Console):
    app_ctx = console.app_ctx
    first = cli(app_ctx, "create", "--title", "Set up", "--body", "b")  # an item to come after
    assert first.startswith("created item 1 ")
    response = create(console, follow=False, after="1")
    assert response.status_code == 303
    assert re.fullmatch(r"/items/2\?flash=[\w-]+", response.headers["location"])
    page = console.client.get(response.headers["location"])
    said = cli(app_ctx, "create", *as_args({**GOOD, "after": "1"}))  # the same item by the command
    assert said.startswith("created item 3 ")
    assert f"created item 2 {said.removeprefix('created item 3 ')}" in html.unescape(page.text)
    assert shown(app_ctx, 2) == shown(app_ctx, 3)
    assert shown(app_ctx, 2)["body"] == "Add GET /healthz.\nIt answers 200."
    board = console.client.get("/").text
    assert '<a href="/items/2">' in board
    assert board.count("Add a health endpoint") == 2


def test_the_defaults_are_create_s(console: Console):
    fields = {"agent": "", "priority": "P2", "labels": "", "no_verify": "", "queue": ""}
    create(console, **fields)
    cli(console.app_ctx, "create", *as_args({**GOOD, **fields}))
    assert shown(console.app_ctx, 1) == shown(console.app_ctx, 2)
    assert shown(console.app_ctx, 1)["state"] == "todo"


BAD_FIELDS = [
    {"title": ""},
    {"title": "two\nlines"},
    {"title": "x" * 201},
    {"title": "bell\x07"},
    {"body": "  \r\n "},
    {"agent": "nobody"},
    {"priority": "P9"},
    {"priority": "<b>"},
    {"labels": "web Bad"},
    {"after": "99"},
    {"verify": "nope", "no_verify": ""},
    {"verify": "tests"},
]


@pytest.mark.parametrize("fields", BAD_FIELDS, ids=lambda v: repr(v)[:30])
def test_a_bad_field_is_create_s_refusal_with_nothing_written(
    console: Console, fields: dict[str, str]
):
    page = create(console, follow=False, **fields)
    assert page.status_code == 400
    assert item_count(console.app_ctx) == 0
    assert refusal(page.text) == cli_refusal(
        console.app_ctx, "create", *as_args({**GOOD, **fields})
    )
    assert item_count(console.app_ctx) == 0
    # The form comes back as it was typed.
    kept = fields.get("title", GOOD["title"])
    if kept.isprintable():
        assert f'name="title" value="{html.escape(kept)}"' in page.text
    assert f'<option value="{GOOD["agent"]}" selected>' in page.text or "agent" in fields


@pytest.mark.parametrize("after", ["abc", "0", "1.5", "#1", "99999999999999999999999"])
def test_an_after_that_is_no_item_id_is_refused(console: Console, after: str):
    page = create(console, follow=False, after=after)
    assert page.status_code == 400
    assert refusal(page.text).startswith(f"wrighty: --after {after}: give an item id (1 to ")
    assert item_count(console.app_ctx) == 0


def test_hostile_text_in_an_item_stays_inert_on_its_page_and_the_board(console: Console):
    title = " ".join(p for p in PAYLOADS if "\x1b" not in p)[:200]
    response = create(console, follow=False, title=title, body=HOSTILE)
    assert response.status_code == 303
    inert(console.client.get(response.headers["location"]).text)
    for path in ("/", "/board"):
        page = console.client.get(path).text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert page.count("<script") == page.count(OUR_SCRIPT)
        assert "<img" not in page
        assert "<svg" not in page


@pytest.mark.parametrize(
    "field", ["title", "body", "agent", "priority", "labels", "after", "verify"]
)
def test_a_hostile_field_comes_back_inert_with_its_refusal(console: Console, field: str):
    fields = {"title": "", field: HOSTILE} if field != "title" else {"title": HOSTILE}
    page = create(console, follow=False, **fields)
    assert page.status_code == 400
    inert(page.text)
    assert item_count(console.app_ctx) == 0


# Importing


@pytest.fixture
def other_project(
    project_ctx: AppContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AppContext]:
    """Another project on a store of the same kind, for the command to import into."""
    root = make_project(tmp_path / "other", monkeypatch)
    if project_ctx.store_option is None:
        yield AppContext(config_option=None, store_option=None, cwd=root)
        return
    with postgres_schema() as url:
        open_postgres(url).close()
        yield AppContext(config_option=None, store_option=url, cwd=root)


def imported(console: Console, **fields: str):  # type: ignore[no-untyped-def]
    if "wrighty_token" not in console.client.cookies:
        console.login()
    data = {"csrf": CSRF, "source": "plan.md", "markdown": PLAN, "do": "import", **fields}
    return console.client.post("/import", data=data)


def page_lines(page: str) -> list[str]:
    """The import's lines as the page shows them (links and all)."""
    block = re.search(r'<div class="flash ok" role="status">(.*?)</div>', page, re.S)
    assert block is not None, page
    text = re.sub(r"<[^>]+>", "\n", block.group(1))
    return [html.unescape(line.strip()) for line in text.splitlines() if line.strip()]


def items_of(app_ctx: AppContext) -> list[tuple[object, ...]]:
    with app_ctx.store() as store:
        edges = sorted((e.item_id, e.depends_on) for e in store.list_dependencies())
        labels = store.list_labels()
        return [
            (i.id, i.title, i.body, i.state, i.priority, labels.get(i.id, ()), i.import_key,
             i.import_fingerprint, edges)
            for i in store.list_items()
        ]  # fmt: skip


def test_an_import_makes_what_the_command_makes_of_the_file(
    console: Console, other_project: AppContext, tmp_path: Path
):
    preview = imported(console, do="preview")
    assert preview.status_code == 200
    assert item_count(console.app_ctx) == 0
    (other_project.cwd / "plan.md").write_text(PLAN)
    dry = cli(other_project, "import", "plan.md", "--dry-run", "--queue")
    assert page_lines(imported(console, do="preview", queue="on").text) == dry.splitlines()
    assert 'value="plan.md"' in preview.text
    assert "Document the health endpoint" in preview.text

    page = imported(console, queue="on")
    assert page.status_code == 200
    said = cli(other_project, "import", "plan.md", "--queue")
    assert page_lines(page.text) == said.splitlines()
    assert said.splitlines()[-1] == "2 created, 0 unchanged, 0 changed"
    assert items_of(console.app_ctx) == items_of(other_project)
    assert '<a href="/items/1">' in page.text
    assert '<a href="/items/2">' in page.text

    again = imported(console)
    assert page_lines(again.text)[-1] == "0 created, 2 unchanged, 0 changed"
    assert item_count(console.app_ctx) == 2


@pytest.mark.parametrize(
    ("text", "source"),
    [
        ("## Only a heading\n", "bad.md"),
        ("## Fix it\n\n```wrighty\npriority: 9\n```\n\ntext\n", "bad.md"),
        ("## Fix it\n\n```wrighty\nagent: nobody\n```\n\ntext\n", "bad.md"),
        ("## Fix it\n\n```wrighty\nafter: #99\n```\n\ntext\n", "bad.md"),
    ],
)
def test_a_file_the_command_refuses_is_refused_with_its_words(
    console: Console, other_project: AppContext, text: str, source: str
):
    page = imported(console, markdown=text, source=source)
    assert page.status_code == 400
    (other_project.cwd / source).write_text(text)
    assert refusal(page.text) == cli_refusal(other_project, "import", source)
    assert item_count(console.app_ctx) == 0
    assert html.escape(text.strip(), quote=False) in page.text  # kept in the text area


@pytest.mark.parametrize(
    "source", ["", "../plan.md", "dir/plan.md", "a\\b.md", "tab\t.md", "x" * 256]
)
def test_a_file_name_that_is_no_file_s_name_is_refused(console: Console, source: str):
    page = imported(console, source=source)
    assert page.status_code == 400
    assert refusal(page.text).startswith("wrighty: the file's name: ")
    assert item_count(console.app_ctx) == 0


def test_a_hostile_import_stays_inert(console: Console):
    title = " ".join(p for p in PAYLOADS if "\x1b" not in p)[:150]
    text = f"## {title}\n\n{HOSTILE}\n"
    page = imported(console, markdown=text, source="x.md", do="preview")
    assert page.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    inert(page.text)  # the text area holds the whole text, escaped
    refused = imported(console, markdown=HOSTILE, source="x.md")
    assert refused.status_code == 400
    inert(refused.text)
    assert RAW_CONTROL.search(refused.text) is None


# The guard's rules


@pytest.mark.parametrize("path", ["/new", "/import"])
@pytest.mark.parametrize(
    ("fields", "headers"),
    [({}, {}), ({"csrf": "forged"}, {}), ({"csrf": CSRF}, {"x-csrf-token": "forged"})],
)
def test_a_post_without_the_csrf_token_is_403_and_nothing_written(
    console: Console, path: str, fields: dict[str, str], headers: dict[str, str]
):
    client = console.login()
    data = {**GOOD, "source": "plan.md", "markdown": PLAN, "do": "import", **fields}
    response = client.post(path, data=data, headers=headers, follow_redirects=False)
    assert response.status_code == 403
    assert item_count(console.app_ctx) == 0


@pytest.mark.parametrize(("path", "field"), [("/new", "body"), ("/import", "markdown")])
def test_a_body_over_256_kib_is_413_and_nothing_written(console: Console, path: str, field: str):
    client = console.login()
    data = {"csrf": CSRF, **GOOD, "source": "plan.md", field: "x" * (256 * 1024)}
    response = client.post(path, data=data, follow_redirects=False)
    assert response.status_code == 413
    assert item_count(console.app_ctx) == 0


def test_read_only_offers_no_form_and_refuses_both_posts(project_ctx: AppContext, clock: FakeClock):
    console = make_console(project_ctx, project_ctx.cwd, read_only=True)
    with console.client:
        client = console.login()
        page = client.get("/new")
        assert page.status_code == 200
        assert "read-only" in page.text
        assert "<form" not in page.text
        assert 'href="/new"' not in page.text
        for path in ("/new", "/import"):
            data = {"csrf": CSRF, **GOOD, "source": "plan.md", "markdown": PLAN, "do": "import"}
            response = client.post(path, data=data, follow_redirects=False)
            assert response.status_code == 403, path
    assert item_count(project_ctx) == 0


@pytest.mark.parametrize(
    "body",
    [b"title=%FF%FE&body=b", b"title=\xff\xfe&body=b"],
    ids=["percent-escaped", "raw"],
)
def test_a_form_that_is_not_utf8_is_refused_with_nothing_written(console: Console, body: bytes):
    """Bytes that are not UTF-8 in a field, %-escaped or raw: 400 and one line, not an item
    titled with replacement characters."""
    client = console.login()
    response = client.post(
        "/new",
        content=body + f"&csrf={CSRF}&queue=on".encode(),
        headers={"content-type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )
    assert response.status_code == 400
    said = "the form is not UTF-8 text: send its fields as UTF-8 (a browser does)\n"
    assert response.text == said
    assert item_count(console.app_ctx) == 0
