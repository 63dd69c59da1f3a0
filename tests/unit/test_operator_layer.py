"""The operator's desk (wrighty/operator/) is what every entry point acts and reads through:
it imports none of them (the command line, the inbox, the web console), so that the next one
(a tracker, a chat reply) takes the desk without them (docs/architecture.md)."""

from __future__ import annotations

from tests.unit.test_layers import PACKAGE, imported_modules

ENTRY_POINTS = ("wrighty.cli", "wrighty.inbox", "wrighty.web")


def _entry_point(module: str) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in ENTRY_POINTS)


def test_the_operator_desk_imports_no_entry_point() -> None:
    modules = sorted((PACKAGE / "operator").glob("*.py"))
    assert len(modules) >= 8  # desk, actions, sentences, forms, context, fleet, ...
    offenders = {
        path.name: sorted(filter(_entry_point, imported_modules(path))) for path in modules
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_entry_points_share_one_desk() -> None:
    """The inbox and the web console name the operator's Desk, and declare none of their own."""
    for path in (PACKAGE / "inbox" / "app.py", PACKAGE / "web" / "app.py"):
        assert "wrighty.operator.desk.Desk" in imported_modules(path), path
        assert "class Desk(" not in path.read_text(encoding="utf-8"), path


def test_the_new_item_page_does_not_climb_back_to_the_app() -> None:
    assert "wrighty.web.app" not in imported_modules(PACKAGE / "web" / "create.py")
    # show's text takes its check lines from the operator's sentences, not `wrighty verify`'s.
    assert "wrighty.cli.verify" not in imported_modules(PACKAGE / "cli" / "render.py")
