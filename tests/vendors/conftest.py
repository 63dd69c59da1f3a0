"""The real vendor CLIs, run by a real `wrighty worker start --once`.

The CLIs come from the npm registry at the versions pinned in tests/vendors/package.json;
`tests/vendors/install-clis` puts them in $WRIGHTY_VENDOR_CLIS (default
~/.cache/wrighty/vendor-clis), and .ci/run calls it. Without them these tests skip, saying so;
with WRIGHTY_REQUIRE_VENDOR_CLIS=1 (set by .ci/run) a missing CLI fails them instead.
Each run gets its own HOME, so nothing reads or writes the real user's vendor settings.

The CLIs run with whatever bubblewrap the machine has (Codex uses a `bwrap` on PATH for its own
shell sandbox, else the one it bundles). WRIGHTY_BWRAP_DIR, a folder holding a `bwrap`, is put
first on the PATH of every process these tests start, to run them with a bubblewrap that is not
installed system-wide (docs/vendors.md, "The vendors' own sandboxes").
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import helpers
from tests.vendors.gemini_provider import GeminiProvider
from tests.vendors.openai_provider import Call, OpenAIProvider, codex_provider_args
from tests.vendors.provider import Provider
from wrighty.domain.model import Run
from wrighty.store.sqlite import SqliteStore

CLI_FOLDER = Path(
    os.environ.get("WRIGHTY_VENDOR_CLIS") or Path.home() / ".cache" / "wrighty" / "vendor-clis"
)
WORKER_TIMEOUT_SECONDS = 120

# How long a refusal keeps a provider's circuit open in the tests that watch a worker hold the
# queue back (usageFailure.initialRetryMinutes). A real clock runs in these workers (the vendor
# CLIs' own), so no event can end the window early; it is long enough that the worker usually
# looks while it is open (and says so), and `held_while_open` checks what must hold whenever
# it looks.
CIRCUIT_OPEN_MINUTES = 0.2
CODEX_KEY = "sk-codex-secret-0123456789"


def bwrap_dir() -> Path | None:
    """WRIGHTY_BWRAP_DIR, checked: a folder with an executable `bwrap`, outside the temporary
    folder (Codex takes no `bwrap` from a folder its sandbox lets commands write, /tmp
    included, and would silently use its bundled one instead)."""
    given = os.environ.get("WRIGHTY_BWRAP_DIR")
    if not given:
        return None
    folder = Path(given).resolve()
    if not os.access(folder / "bwrap", os.X_OK):
        pytest.fail(f"WRIGHTY_BWRAP_DIR={given} holds no executable bwrap")
    if folder.is_relative_to(Path(tempfile.gettempdir()).resolve()):
        pytest.fail(
            f"WRIGHTY_BWRAP_DIR={given} is inside {tempfile.gettempdir()}, where Codex does not "
            "take a bwrap from: copy it elsewhere (/opt/bwrap/usr/bin, for example)"
        )
    return folder


def with_bwrap_dir(env: dict[str, str]) -> dict[str, str]:
    """``env`` with WRIGHTY_BWRAP_DIR, if given, first on its PATH."""
    bwrap = bwrap_dir()
    if bwrap is None:
        return env
    return {**env, "PATH": os.pathsep.join([str(bwrap), env.get("PATH", os.defpath)])}


def vendor_cli(name: str) -> Path:
    """The pinned CLI ``name``, or skip the test with the reason (fail it in CI)."""
    path = CLI_FOLDER / "node_modules" / ".bin" / name
    if not path.exists():
        reason = f"the real {name} CLI is not installed in {CLI_FOLDER}"
        if os.environ.get("WRIGHTY_REQUIRE_VENDOR_CLIS") == "1":
            pytest.fail(f"{reason}, and WRIGHTY_REQUIRE_VENDOR_CLIS=1 requires it")
        pytest.skip(f"{reason}; run tests/vendors/install-clis (npm) to include these tests")
    return path


def claude_agent(provider: Provider, home: Path, **settings: Any) -> dict[str, Any]:
    """The `agents` entry of Claude Code talking to ``provider``, its settings under ``home``."""
    return {
        "claude": {
            "executable": str(vendor_cli("claude")),
            "env": {
                "ANTHROPIC_BASE_URL": provider.url,
                "ANTHROPIC_API_KEY": "sk-test",
                "CLAUDE_CODE_MAX_RETRIES": "0",
                "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            },
            **settings,
        }
    }


def codex_agent(provider: OpenAIProvider, home: Path, **settings: Any) -> dict[str, Any]:
    """The `agents` entry of Codex talking to ``provider``, its settings under ``home``.

    ``home`` lies in the temporary folder, where a person's never does, and Codex refuses to
    make its helper programs (`CODEX_HOME/tmp/arg0-linux/…/codex-linux-sandbox`) under the
    temporary folder: a system bubblewrap then cannot start its shell sandbox ("bwrap: execvp
    codex-linux-sandbox: No such file or directory"). Its own TMPDIR, inside ``home``, makes the
    temporary folder one that CODEX_HOME is not in, as on a person's machine."""
    codex_home = home / ".codex"
    codex_home.mkdir(exist_ok=True)
    codex_tmp = home / "tmp"
    codex_tmp.mkdir(exist_ok=True)
    return {
        "codex": {
            "executable": str(vendor_cli("codex")),
            "args": codex_provider_args(provider.url),
            "env": {
                "CODEX_API_KEY": CODEX_KEY,
                "CODEX_HOME": str(codex_home),
                "TMPDIR": str(codex_tmp),
            },
            **settings,
        }
    }


# The CLIs' own tools, as a scripted provider calls them; the user's texts a provider received.


def write(path: Path, content: str) -> dict[str, Any]:
    """A call of Claude Code's own file-writing tool."""
    return {"name": "Write", "input": {"file_path": str(path), "content": content}}


def read(path: Path) -> dict[str, Any]:
    """A call of Claude Code's file-reading tool (it writes over a file only once read)."""
    return {"name": "Read", "input": {"file_path": str(path)}}


def anthropic_user_texts(request: dict[str, Any]) -> list[str]:
    """The user's texts in a Messages API request, in order."""
    texts = []
    for message in request.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
            continue
        texts += [block["text"] for block in content or [] if block.get("type") == "text"]
    return texts


CODEX_MODEL = "gpt-5"  # a model Codex knows, so that it offers its shell tool


def shell(command: str) -> Call:
    """A call of Codex's shell tool."""
    return Call("exec_command", {"cmd": command})


def write_file(path: Path, content: str) -> dict[str, Any]:
    """A call of the Gemini CLI's own file-writing tool."""
    return {"name": "write_file", "args": {"file_path": str(path), "content": content}}


def argv_wrapper(home: Path, name: str = "claude") -> tuple[Path, Path]:
    """A program that appends its arguments (tab-separated, one start a line) to a log, then
    execs the real CLI ``name`` (same pid, so wrighty watches and stops the CLI itself)."""
    wrapper = home / f"{name}-argv"
    log = home / f"{name}-argv.log"
    real = shlex.quote(str(vendor_cli(name)))
    wrapper.write_text(
        "#!/bin/sh\n"
        f'{{ for a in "$@"; do printf \'%s\\t\' "$a"; done; echo; }} >> {shlex.quote(str(log))}\n'
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper, log


def started_argvs(log: Path) -> list[list[str]]:
    """The argv of each start of the CLI, in order (without the program)."""
    if not log.exists():
        return []
    return [line.rstrip("\t").split("\t") for line in log.read_text().splitlines()]


def _wrighty() -> list[str]:
    return [sys.executable, "-m", "wrighty"]


@dataclass
class VendorProject:
    """A wrighty project whose agents are the real CLIs, with a private HOME."""

    root: Path
    home: Path
    workers: list[subprocess.Popen[str]] = field(default_factory=list)
    # More variables of the worker's own environment (not an agent's env), after HOME's.
    environ: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        kept = {k: v for k, v in os.environ.items() if not k.startswith(("WRIGHTY_", "ANTHROPIC"))}
        return {
            **with_bwrap_dir(kept),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            **self.environ,
        }

    def wrighty(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*_wrighty(), *args],
            cwd=self.root,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=WORKER_TIMEOUT_SECONDS,
            check=False,
        )

    def configure(self, agents: dict[str, Any], **worker: Any) -> None:
        config = self.root / "wrighty.json"
        document = json.loads(config.read_text())
        document["agents"] = agents
        document["worker"] = {**document.get("worker", {}), **worker}
        config.write_text(json.dumps(document, indent=2))

    def configure_sections(self, **sections: Any) -> None:
        """Set whole top-level sections of wrighty.json (``budgets``, ``pricing``...)."""
        config = self.root / "wrighty.json"
        document = json.loads(config.read_text())
        config.write_text(json.dumps({**document, **sections}, indent=2))

    def runs(self, item_id: int) -> list[Run]:
        """The item's runs as the store holds them (with each one's recorded usage)."""
        store = SqliteStore.open(self.root / ".wrighty" / "wrighty.db", create=False)
        try:
            return store.list_runs(item_id)
        finally:
            store.close()

    def run_log(self, item_id: int, run_id: str, name: str = "stdout.log") -> Path:
        """Where the worker kept a run's output."""
        return self.root / ".wrighty" / "runs" / str(item_id) / run_id / name

    def create(self, body: str, *extra: str) -> int:
        created = self.wrighty("create", "--title", "vendor run", "--queue", "--json", *extra,
                               stdin=body)  # fmt: skip
        assert created.returncode == 0, created.stderr
        return int(json.loads(created.stdout)["id"])

    def run_once(
        self, *extra: str
    ) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
        """`wrighty worker start --once --json`: its events, and the finished process."""
        return self.run_worker("--once", *extra)

    def run_worker(
        self, *args: str
    ) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
        """`wrighty worker start --json ARGS` to its end: its events, and the process."""
        worked = self.wrighty("worker", "start", "--json", *args)
        events = [json.loads(line) for line in worked.stdout.splitlines() if line.startswith("{")]
        return events, worked

    def start_worker(self, *extra: str) -> subprocess.Popen[str]:
        """A `wrighty worker start --json` in the background; read it with ``next_event``.
        The fixture kills it at the end of the test if it is still running."""
        worker = subprocess.Popen(
            [*_wrighty(), "worker", "start", "--json", *extra],
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.workers.append(worker)
        return worker

    def show(self, item_id: int) -> dict[str, Any]:
        shown = self.wrighty("show", str(item_id), "--json")
        assert shown.returncode == 0, shown.stderr
        result: dict[str, Any] = json.loads(shown.stdout)
        return result


def held_while_open(events: list[dict[str, Any]], scheduled: dict[str, Any]) -> None:
    """The worker held its claims while the refusal's circuit was open: if it looked while
    open, it said so (`circuit-wait`, open until the retry's due time); it went half-open, to
    take the probe, only once that time had come. The look's moment is the machine's: a worker
    on a loaded machine may first look after the window, and then only the second holds."""
    until = scheduled["not_before"]
    waiting = [event for event in events if event["event"] == "circuit-wait"]
    if waiting:
        assert (waiting[0]["state"], waiting[0]["until"]) == ("open", until)
    half_open = next(event for event in events if event["event"] == "circuit-half-open")
    assert half_open["at"] >= until, (half_open, until)


def next_event(worker: subprocess.Popen[str], name: str) -> dict[str, Any]:
    """Read the worker's events up to the first called ``name``."""
    assert worker.stdout is not None
    for line in worker.stdout:
        event: dict[str, Any] = json.loads(line)
        if event["event"] == name:
            return event
    raise AssertionError(f"the worker ended without a {name!r} event")


def wait_for(worker: subprocess.Popen[str], what: str, condition: Callable[[], bool]) -> None:
    """`tests.helpers.wait_for` ``condition``, within WORKER_TIMEOUT_SECONDS; fail at once if
    the worker ends first."""

    def seen() -> bool:
        if condition():
            return True
        assert worker.poll() is None, f"the worker ended before {what}"
        return False

    helpers.wait_for(seen, timeout=WORKER_TIMEOUT_SECONDS, what=what, every=0.05)


def finish(worker: subprocess.Popen[str]) -> None:
    """Wait for a worker to end by itself; kill it if it does not."""
    try:
        worker.communicate(timeout=WORKER_TIMEOUT_SECONDS)
    finally:
        worker.kill()
        worker.wait()


@pytest.fixture
def vendor_project(tmp_path: Path) -> Iterator[VendorProject]:
    root = tmp_path / "project"
    home = tmp_path / "home"
    root.mkdir()
    home.mkdir()
    project = VendorProject(root, home)
    initialised = project.wrighty("init")
    assert initialised.returncode == 0, initialised.stderr
    yield project
    for worker in project.workers:  # a failed or timed-out test leaves no worker behind
        worker.kill()
        worker.wait()
        if worker.stdout is not None:
            worker.stdout.close()


@pytest.fixture
def provider() -> Iterator[Provider]:
    with Provider() as serving:
        yield serving


@pytest.fixture
def openai_provider() -> Iterator[OpenAIProvider]:
    with OpenAIProvider() as serving:
        yield serving


@pytest.fixture
def gemini_provider() -> Iterator[GeminiProvider]:
    with GeminiProvider() as serving:
        yield serving
