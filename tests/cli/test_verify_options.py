"""Which checks an item runs, chosen on the command line and in an import
(docs/verify.md#which-checks-an-item-runs): `create`, `edit` and `import` take the names of
wrighty.json's checks, or none; a name its agent has no check for is refused and nothing is
written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty
from tests.cli.run_helpers import open_store
from tests.cli.test_verify_cli import with_checks

TESTS = {"name": "tests", "argv": ["true"]}
LINT = {"name": "lint", "argv": ["true"]}


def chosen(project: Path, item_id: int) -> tuple[str, ...] | None:
    store = open_store(project)
    try:
        item = store.get_item(item_id)
        assert item is not None
        return item.verify_checks
    finally:
        store.close()


def item_count(project: Path) -> int:
    store = open_store(project)
    try:
        return len(store.list_items())
    finally:
        store.close()


@pytest.mark.parametrize(
    ("options", "expected", "said"),
    [
        ((), None, "created item 1 (todo): t"),
        (("--verify", "lint"), ("lint",), "created item 1 (todo, checks lint): t"),
        (("--verify", "lint", "--verify", "tests", "--verify", "lint"), ("lint", "tests"), None),
        (("--no-verify",), (), "created item 1 (todo, checks none): t"),
    ],
)
def test_create_keeps_the_checks_an_item_chooses(
    initialised: Path, options: tuple[str, ...], expected: tuple[str, ...] | None, said: str | None
) -> None:
    with_checks(initialised, TESTS, LINT)
    result = wrighty("create", "--title", "t", "--body", "b", *options)
    assert result.exit_code == 0, result.output
    if said is not None:
        assert result.output.strip() == said
    assert chosen(initialised, 1) == expected


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (("--verify", "nope"), "--verify nope: the default agent has no check of that name "
         "(its checks: tests, lint)"),
        (("--verify", "lint", "--no-verify"), "give --verify CHECK or --no-verify, not both"),
        (("--agent", "codex", "--verify", "lint"), None),
    ],
)  # fmt: skip
def test_create_refuses_a_check_its_agent_does_not_have(
    initialised: Path, options: tuple[str, ...], says: str | None
) -> None:
    with_checks(initialised, TESTS, LINT)
    path = initialised / "wrighty.json"
    document = json.loads(path.read_text())
    document["agents"] = {"codex": {"verify": {"checks": [{"name": "cx", "argv": ["true"]}]}}}
    document["verify"]["checks"] = [TESTS]  # lint is no longer anybody's
    path.write_text(json.dumps(document))
    result = wrighty("create", "--title", "t", "--body", "b", *options)
    assert result.exit_code == 2
    if says is None:
        says = "--verify lint: agent 'codex' has no check of that name (its checks: tests, cx)"
    assert says.replace("tests, lint", "tests") in result.output
    assert item_count(initialised) == 0


def test_an_agents_own_check_can_be_chosen_for_its_items_only(initialised: Path) -> None:
    path = initialised / "wrighty.json"
    document = json.loads(path.read_text())
    document["agents"] = {"codex": {"verify": {"checks": [{"name": "cx", "argv": ["true"]}]}}}
    path.write_text(json.dumps(document))
    ok = wrighty("create", "--title", "t", "--body", "b", "--agent", "codex", "--verify", "cx")
    assert ok.exit_code == 0, ok.output
    refused = wrighty("create", "--title", "t", "--body", "b", "--verify", "cx")
    assert refused.exit_code == 2
    assert "wrighty.json gives it none" in refused.output
    assert chosen(initialised, 1) == ("cx",)


def test_edit_changes_the_checks_and_says_how(initialised: Path) -> None:
    with_checks(initialised, TESTS, LINT)
    assert wrighty("create", "--title", "t", "--body", "b").exit_code == 0
    steps = [
        (("--verify", "lint"), "checks wrighty.json's -> lint", ("lint",)),
        (("--no-verify",), "checks lint -> none", ()),
        (("--verify-default",), "checks none -> wrighty.json's", None),
    ]
    for options, said, expected in steps:
        result = wrighty("edit", "1", *options)
        assert result.exit_code == 0, result.output
        assert said in result.output
        assert chosen(initialised, 1) == expected
    again = wrighty("edit", "1", "--verify-default")
    assert again.exit_code == 2
    assert "already is as asked" in again.output


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (("--verify", "nope"), "--verify nope: the default agent has no check of that name"),
        (("--verify-default", "--no-verify"), "give --verify-default alone"),
    ],
)
def test_edit_refuses_and_changes_nothing(
    initialised: Path, options: tuple[str, ...], says: str
) -> None:
    with_checks(initialised, TESTS, LINT)
    assert wrighty("create", "--title", "t", "--body", "b", "--verify", "lint").exit_code == 0
    result = wrighty("edit", "1", *options)
    assert result.exit_code == 2
    assert says in result.output
    assert chosen(initialised, 1) == ("lint",)


def test_import_takes_a_sections_checks_or_none(initialised: Path) -> None:
    with_checks(initialised, TESTS, LINT)
    (initialised / "items.md").write_text(
        "## Only lint\n```wrighty\nverify: lint\n```\nDo it.\n"
        "## No checks\n```wrighty\nverify: none\n```\nDo it.\n"
        "## Default\nDo it.\n"
    )
    result = wrighty("import", "items.md")
    assert result.exit_code == 0, result.output
    assert [chosen(initialised, n) for n in (1, 2, 3)] == [("lint",), (), None]


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("verify: nope", "line 3 ('B'): verify nope: the default agent has no check of that name"),
        ("verify: lint, bad name!", "give check names of wrighty.json, comma-separated, or none"),
    ],
)
def test_import_refuses_an_unknown_check_and_writes_nothing(
    initialised: Path, setting: str, says: str
) -> None:
    with_checks(initialised, TESTS, LINT)
    (initialised / "items.md").write_text(f"## A\nDo it.\n## B\n```wrighty\n{setting}\n```\nx\n")
    result = wrighty("import", "items.md")
    assert result.exit_code == 2
    assert says in result.output
    assert item_count(initialised) == 0
