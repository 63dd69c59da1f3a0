"""The adapter registry (wrighty/vendors/registry.py): an adapter an installed package declares
in the `wrighty.agents` entry point group is found by name, in wrighty.json and when an agent is
planned; a plugin that is broken is one clear line (docs/vendors.md, "An adapter of your
own"). The packages are real: a module and its dist-info on sys.path."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from wrighty.agents import plan_agent
from wrighty.config import check_config_text
from wrighty.domain.adapters import ADAPTERS
from wrighty.domain.outcomes import OutcomeClass
from wrighty.errors import WrightyError
from wrighty.plugins import PluginError
from wrighty.vendors.base import AgentAdapter
from wrighty.vendors.registry import BUILT_IN, agent_adapter

DOCS = Path(__file__).parent.parent.parent / "docs" / "vendors.md"


def docs_example() -> str:
    """The Python block of docs/vendors.md's "An adapter of your own"."""
    section = DOCS.read_text(encoding="utf-8").split("## An adapter of your own", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None
    return found.group(1)


def install(
    site: Path, monkeypatch: pytest.MonkeyPatch, *, entry: str, module: str, code: str
) -> None:
    """A package named after ``module`` on sys.path: the module's ``code`` and a dist-info
    whose entry point is ``entry`` (``name = module:attribute``) in group wrighty.agents."""
    site.mkdir(exist_ok=True)
    (site / f"{module}.py").write_text(code)
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[wrighty.agents]\n{entry}\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, module, raising=False)


def test_the_registry_holds_every_built_in_adapter_and_nothing_else() -> None:
    assert list(BUILT_IN) == list(ADAPTERS)
    assert all(isinstance(adapter, AgentAdapter) for adapter in BUILT_IN.values())


def test_the_docs_example_plugin_is_found_and_plans_an_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(
        tmp_path / "site", monkeypatch,
        entry="mycli = wrighty_mycli:MyCli", module="wrighty_mycli", code=docs_example(),
    )  # fmt: skip
    adapter = agent_adapter("mycli")
    assert isinstance(adapter, AgentAdapter)
    assert adapter.name == "mycli"
    document = '{"agents": {"helper": {"adapter": "mycli", "args": ["--model", "small"]}}}'
    config, problems = check_config_text(document)
    assert config is not None, problems
    plan = plan_agent(config, "helper")
    assert plan.start_argv(None) == ("mycli", "--json", "--model", "small")
    assert plan.resume_argv("s-1") == ("mycli", "--json", "--resume", "s-1", "--model", "small")
    reader = plan.reader()
    assert reader is not None
    reader.feed("stdout", b'{"type": "message", "session": "s-2", "text": "ok"}\n')
    reader.feed("stdout", b'{"type": "done", "ok": true}\n')
    assert reader.session_id == "s-2"
    assert reader.provider_answered
    assert reader.classify(0).outcome_class is OutcomeClass.SUCCEEDED
    # An agent named after the plugin needs no adapter key, as one named after a built-in.
    config, problems = check_config_text('{"agents": {"mycli": {}}}')
    assert config is not None, problems
    assert plan_agent(config, "mycli").executable == "mycli"


def test_an_unknown_adapter_is_one_line_naming_the_installed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, problems = check_config_text('{"agents": {"x": {"adapter": "aider"}}}')
    assert [str(p) for p in problems] == [
        "agents.x.adapter: must be 'claude', 'codex', 'gemini' or 'command' (got a string)"
    ]
    install(
        tmp_path / "site", monkeypatch,
        entry="mycli = wrighty_mycli:MyCli", module="wrighty_mycli", code=docs_example(),
    )  # fmt: skip
    _, problems = check_config_text('{"agents": {"x": {"adapter": "aider"}}}')
    assert [str(p) for p in problems] == [
        "agents.x.adapter: must be 'claude', 'codex', 'gemini', 'command' or 'mycli' (got a string)"
    ]
    with pytest.raises(PluginError) as refused:
        agent_adapter("aider")
    assert (
        str(refused.value)
        == "unknown adapter 'aider' (known: claude, codex, gemini, command, mycli)"
    )


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (
            "import nothing_here\n",
            "plugin 'broken' (wrighty_broken:Broken, entry point group wrighty.agents) could not "
            "be loaded: ModuleNotFoundError: No module named 'nothing_here'",
        ),
        (
            "Broken = 42\n",
            "plugin 'broken' (entry point group wrighty.agents) is not an agent adapter: int "
            "lacks what wrighty.vendors.base.AgentAdapter asks",
        ),
        (
            "from wrighty.vendors.codex import Codex as Broken\n",
            "plugin 'broken' (entry point group wrighty.agents) names itself 'codex': the entry "
            "point's name and the adapter's must be the same",
        ),
    ],
    ids=["import-fails", "not-an-adapter", "wrong-name"],
)
def test_a_broken_plugin_is_one_clear_line_when_its_agent_is_planned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, said: str
) -> None:
    install(
        tmp_path / "site", monkeypatch,
        entry="broken = wrighty_broken:Broken", module="wrighty_broken", code=code,
    )  # fmt: skip
    config, problems = check_config_text('{"agents": {"b": {"adapter": "broken"}}}')
    assert config is not None, problems  # the config names an installed adapter: it is valid
    with pytest.raises(WrightyError) as refused:
        plan_agent(config, "b")
    assert str(refused.value) == said
    assert isinstance(refused.value, PluginError)
    assert refused.value.exit_code == 2
    assert plan_agent(config, "claude").adapter == "claude"  # no other agent is troubled
