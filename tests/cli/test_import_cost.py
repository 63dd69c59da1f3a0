"""A read command loads only what it needs. Each command runs in a fresh interpreter, which
then reports every module it holds; none of the modules listed for the command may be among
them. This is checked by module, not by a timing: bench/cli_latency.py times the commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import wrighty

# Run the command as `wrighty ARGS` would, then print the modules loaded.
RUN_AND_LIST_MODULES = """
import json, sys
from typer.testing import CliRunner
from wrighty.cli.app import app
result = CliRunner().invoke(app, sys.argv[1:], catch_exceptions=False)
assert result.exit_code in (0, 1), result.output  # status exits 1 when unhealthy
print(json.dumps(sorted(sys.modules)))
"""

# No read command starts a worker, supervises a process or talks to PostgreSQL.
NOT_FOR_READING = (
    "psycopg",
    "psycopg_pool",
    "wrighty.store.postgres",
    # The worker's modules, but for the run logs' reader that `show` and `logs` use.
    "wrighty.worker.loop",
    "wrighty.worker.run",
    "wrighty.worker.patient",
    "wrighty.worker.registry",
    "wrighty.workproduct.worktree",
    "wrighty.worker.wakeup",
    "filelock",
    "wrighty.project",
    # Notifications are delivered by workers and `wrighty notify`; Apprise only by its sinks.
    "wrighty.notify",
    "apprise",
    # The terminal inbox: Textual is for `wrighty inbox` alone.
    "textual",
    "wrighty.inbox",
    # The web console: its framework, server and templates are for `wrighty serve` alone.
    "starlette",
    "uvicorn",
    "jinja2",
    "wrighty.web",
    # A worker's side of an item's life: claiming it, settling a run, deciding a retry.
    "wrighty.domain.claims",
    "wrighty.domain.decisions",
    "wrighty.domain.retry",
)
# The inbox's board, the workers' health and the outbox: each for the commands that show it.
NOT_FOR_ITEMS = (
    "wrighty.domain.board",
    "wrighty.domain.health",
    "wrighty.domain.notices",
    "wrighty.domain.outbox",
    "wrighty.domain.redact",
)
# Nothing an agent run needs, and no service beyond items: `list` reads the store alone.
NOT_FOR_LISTING = (
    "wrighty.services.status",
    "wrighty.services.resume",
    "wrighty.services.reaper",
    "wrighty.agents",
    "wrighty.vendors",
    "wrighty.supervisor",
    "psutil",
    "wrighty.installation",
)

# In a project whose wrighty.json is the one `wrighty init` writes, `list`, `show` and
# `status` read its settings without the config's models (AppContext.settings()). pydantic
# itself is typer's: it reads every option through it.
NOT_FOR_INIT_DOCUMENT = ("wrighty.config",)

NOT_LOADED: dict[tuple[str, ...], tuple[str, ...]] = {
    ("list",): (
        *NOT_FOR_READING,
        *NOT_FOR_LISTING,
        *NOT_FOR_ITEMS,
        *NOT_FOR_INIT_DOCUMENT,
        "wrighty.domain.circuits",
    ),
    ("list", "--json"): (
        *NOT_FOR_READING,
        *NOT_FOR_LISTING,
        *NOT_FOR_ITEMS,
        *NOT_FOR_INIT_DOCUMENT,
        "wrighty.domain.circuits",
        "rich",
    ),
    ("list", "--attention"): (*NOT_FOR_READING, *NOT_FOR_LISTING, *NOT_FOR_INIT_DOCUMENT),
    # psutil comes only with a registered worker of this installation, to see if it runs.
    ("status", "--json"): (
        *NOT_FOR_READING,
        *NOT_FOR_INIT_DOCUMENT,
        "wrighty.agents",
        "wrighty.vendors",
        "wrighty.supervisor",
        "psutil",
        "rich",
        "wrighty.domain.board",
    ),
    # The provider circuits are a read of the store alone, as `list`.
    ("providers", "--json"): (*NOT_FOR_READING, *NOT_FOR_LISTING, "rich"),
    # So is the outbox: listing it loads no sink.
    ("notify", "pending", "--json"): (*NOT_FOR_READING, *NOT_FOR_LISTING, "rich"),
    # The agent's vendor is asked only for an item with a session it could resume.
    ("status",): (
        *NOT_FOR_READING,
        *NOT_FOR_INIT_DOCUMENT,
        "wrighty.agents",
        "wrighty.vendors",
        "wrighty.supervisor",
        "psutil",
        "wrighty.domain.board",
    ),
    ("show", "1"): (
        *NOT_FOR_READING,
        *NOT_FOR_INIT_DOCUMENT,
        "wrighty.domain.board",
        "wrighty.domain.health",
        "wrighty.domain.notices",
        "wrighty.domain.outbox",
        "wrighty.agents",
        "wrighty.vendors",
        "wrighty.supervisor",
    ),
    ("--version",): (
        *NOT_FOR_READING,
        *NOT_FOR_LISTING,
        "wrighty.services",
        "rich",
        "pydantic",
        "wrighty.config",
        "wrighty.store.sqlite",
    ),
}


def loaded_modules(project: Path, *args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST_MODULES, *args],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


def is_in(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


@pytest.mark.slow
@pytest.mark.parametrize("args", list(NOT_LOADED), ids=" ".join)
def test_a_read_command_loads_only_what_it_needs(initialised: Path, args: tuple[str, ...]) -> None:
    created = wrighty("create", "--title", "Read me", "--body", "a task", "--queue")
    assert created.exit_code == 0, created.output
    loaded = loaded_modules(initialised, *args)
    assert "wrighty.cli.app" in loaded  # the command did run in that interpreter
    unwanted = sorted(m for m in loaded if any(is_in(m, p) for p in NOT_LOADED[args]))
    assert unwanted == []


@pytest.mark.slow
def test_notification_sinks_cost_a_read_command_nothing(initialised: Path) -> None:
    """Sinks are checked by the commands that deliver (`worker start`, `notify flush`,
    `notify test`) and by `config validate`: `status` and `list` load neither Apprise nor the
    delivery, whatever the sinks (docs/notifications.md#secrets)."""
    config = initialised / "wrighty.json"
    document = json.loads(config.read_text())
    document["notify"] = {"urls": [{"env": "WRIGHTY_TEST_SLACK_URL"}], "command": ["true"]}
    for urls in ([], ["json://127.0.0.1:9/hook"]):
        document["notify"]["urls"].extend(urls)
        config.write_text(json.dumps(document))
        for args in (("status", "--json"), ("list", "--json"), ("notify", "pending", "--json")):
            loaded = loaded_modules(initialised, *args)
            assert "wrighty.cli.app" in loaded
            unwanted = [m for m in loaded if is_in(m, "apprise") or is_in(m, "wrighty.notify")]
            assert unwanted == []
    assert "apprise" in loaded_modules(initialised, "config", "validate")


# The command lines entry.py answers itself, in a project whose wrighty.json it vouches for:
# neither the typer app (typer, click) nor the config's models (pydantic), nor rich.
FAST_AND_LIST_MODULES = """
import json, os, sys
from pathlib import Path
from wrighty.cli.entry import fast_answer
answer = fast_answer(sys.argv[1:], {}, Path.cwd())
assert answer is not None, "the fast path did not answer"
print(json.dumps(sorted(sys.modules)))
"""
NOT_FOR_FAST = (
    "typer",
    "click",
    "pydantic",
    "pydantic_core",
    "rich",
    "wrighty.config",
    "wrighty.cli.app",
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "unwanted"),
    [
        pytest.param(
            ("status", "--json"),
            (*NOT_FOR_READING, *NOT_FOR_FAST, "wrighty.domain.board"),
            id="status --json",
        ),
        pytest.param(
            ("--version",),
            (*NOT_FOR_READING, *NOT_FOR_LISTING, *NOT_FOR_FAST, "wrighty.store"),
            id="--version",
        ),
    ],
)
def test_a_fast_command_loads_neither_the_app_nor_the_models(
    initialised: Path, args: tuple[str, ...], unwanted: tuple[str, ...]
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FAST_AND_LIST_MODULES, *args],
        cwd=initialised,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert "wrighty.cli.entry" in loaded
    assert sorted(m for m in loaded if any(is_in(m, p) for p in unwanted)) == []
