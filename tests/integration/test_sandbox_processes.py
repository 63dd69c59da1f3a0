"""A hostile agent in a bubblewrap sandbox (docs/sandbox.md), run by real `wrighty worker
start` processes on a real git repository, on both stores: everything it tries outside its
item fails with nothing changed, and its own work still reaches review."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import socket
import sys
import textwrap
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import git, poll
from tests.integration.bubblewrap import bubblewrap
from tests.integration.worker_process import LiveWorker, ProjectOnDisk, make_project
from wrighty.domain.states import ItemState

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nplanted-key-4471\n"
SECRET = "worker-secret-value-9083"
DAEMON = "wrighty-sandbox-daemon-5519"  # in the daemon's command line, to find it

# Each attempt is tried and its error ignored; what it could read goes to seen.txt, in the
# workspace (committed with the rest of its work).
HOSTILE = textwrap.dedent(
    f"""\
    import os, pathlib, subprocess, sys
    task = sys.stdin.read()
    work = pathlib.Path.cwd()
    root = work.parents[2]  # .wrighty/worktrees/<id>
    home = pathlib.Path(os.environ.get("HOME", "/nonexistent"))
    seen = []

    def attempt(action):
        try:
            action()
        except Exception as error:
            seen.append(f"refused: {{type(error).__name__}}")

    def append(path, text="planted\\n"):
        with open(path, "a") as handle:
            handle.write(text)

    attempt(lambda: seen.append((home / ".ssh" / "id_ed25519").read_text()))
    seen.append("secret=" + os.environ.get("WORKER_SECRET", "(none)"))
    for name in ("BUILD_HOOK", "WRIGHTY_RUN_ID", "PATH"):
        seen.append(f"has {{name}}" if os.environ.get(name) else f"lacks {{name}}")
    attempt(lambda: seen.append((root / ".wrighty" / "wrighty.db").read_bytes()[:16].hex()))
    for target in (root / "planted.txt", home / "planted.txt", pathlib.Path("/etc/planted"),
                   root / "wrighty.json", root / ".wrighty" / "wrighty.db",
                   root / ".git" / "config", root / ".git" / "hooks" / "pre-commit"):
        attempt(lambda target=target: append(target))
    subprocess.run(["git", "update-ref", "refs/heads/main", "HEAD"], capture_output=True)
    # a daemon in a session of its own, with an empty environment (no marker of the run)
    subprocess.Popen(["env", "-i", "setsid", "sh", "-c", "sleep 300; echo {DAEMON}"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    (work / "seen.txt").write_text("\\n".join(seen) + "\\n")
    (work / "feature.txt").write_text("made in the sandbox\\n")
    if "LINGER" in task:
        import signal
        while True:
            signal.pause()  # until its worker is killed
    """
)


# A check that runs code the agent could have written: it exits 1, saying which, if any of its
# attempts outside the workspace works, or if it reaches a server on loopback.
PROBE = textwrap.dedent(
    """\
    import os, pathlib, socket, sys
    root = pathlib.Path.cwd().parents[2]
    worked = []
    for target in (root / "planted-by-check.txt", root / ".git" / "config",
                   root / ".git" / "hooks" / "post-checkout", root / "wrighty.json"):
        try:
            with open(target, "a") as handle:
                handle.write("planted\\n")
            worked.append(f"wrote {target}")
        except OSError:
            pass
    try:
        socket.create_connection(("127.0.0.1", int(os.environ["PROBE_PORT"])), timeout=5)
        worked.append("reached loopback")
    except OSError:
        pass
    print("\\n".join(worked) or "all refused")
    sys.exit(1 if worked else 0)
    """
)


def fingerprint(paths: list[Path]) -> dict[str, str | None]:
    return {
        str(path): hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
        for path in paths
    }


def daemons() -> list[int]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if DAEMON in " ".join(process.info["cmdline"] or ()):
            found.append(process.pid)
    return found


def sandboxed_project(
    root: Path,
    store_url: str | None,
    *,
    environ: dict[str, str] | None = None,
    completion: dict[str, Any] | None = None,
    verify_sandbox: Any = "agent",
    probe: bool = True,
    **profile: Any,
) -> ProjectOnDisk:
    home = root.parent / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(KEY)
    (home / ".netrc").write_text("machine example.com password hunter2\n")
    sandbox = {"kind": "bubblewrap", "program": bubblewrap(), **profile}
    root.mkdir(parents=True)
    (root / "probe.py").write_text(PROBE)
    return make_project(
        root, programs={"hostile": ("agent.py", HOSTILE)},
        agents={"hostile": {"sandbox": sandbox, "env": {"BUILD_HOOK": "hook"}}},
        worker={"workspaceMode": "worktree"}, completion=completion or {"review": "person"},
        store_url=store_url, git=True,
        env={"HOME": str(home), "WORKER_SECRET": SECRET, **(environ or {})},
        verify={
            "checks": [{"name": "probe", "argv": [sys.executable, str(root / "probe.py")]}]
            if probe
            else [],
            "sandbox": verify_sandbox,
        },
    )  # fmt: skip


def test_a_hostile_agent_changes_nothing_outside_its_workspace_and_its_work_reaches_review(
    tmp_path: Path, store_url: str | None
) -> None:
    project = sandboxed_project(tmp_path / "p", store_url)
    root, home = project.root, tmp_path / "home"
    watched = [
        root / "planted.txt", home / "planted.txt", Path("/etc/planted"), root / "wrighty.json",
        root / ".git" / "config",
        root / ".git" / "hooks" / "pre-commit", root / ".git" / "refs" / "heads" / "main",
        home / ".ssh" / "id_ed25519",
    ]  # fmt: skip
    before = fingerprint(watched)
    main = git(root, "rev-parse", "main")
    item_id = project.plant("Add the feature.", title="Feature")

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    item = project.get(item_id)
    assert item.state is ItemState.REVIEW, item.reason
    assert fingerprint(watched) == before
    for store_file in (root / ".wrighty").glob("wrighty.db*"):  # the worker's writes only
        assert b"planted" not in store_file.read_bytes()
    assert git(root, "rev-parse", "main") == main
    branch = f"wrighty/{item_id}-feature"
    assert git(root, "show", f"{branch}:feature.txt") == "made in the sandbox"
    seen = git(root, "show", f"{branch}:seen.txt")
    assert "planted-key" not in seen
    assert SECRET not in seen
    assert "secret=(none)" in seen
    # what the agent is given does reach it: its own env, the run's variables, PATH
    assert "has BUILD_HOOK\nhas WRIGHTY_RUN_ID\nhas PATH" in seen, seen
    assert b"SQLite".hex() not in seen  # the store's header: the store is hidden
    assert seen.count("refused: ") >= 8, seen  # the key, the store, and every write
    # the daemon died with the sandbox's PID namespace, when the run ended
    assert poll(lambda: not daemons(), timeout=10), daemons()


def test_a_sandbox_that_cannot_start_refuses_the_worker_with_one_line(
    tmp_path: Path, store_url: str | None
) -> None:
    project = sandboxed_project(tmp_path / "p", store_url)
    document = project.config.read_text().replace(bubblewrap(), str(tmp_path / "no-bwrap"))
    project.config.write_text(document)
    item_id = project.plant("Add the feature.", title="Feature")

    finished = project.worker("--once")

    assert finished.returncode == 2
    [line] = finished.stderr.strip().splitlines()
    assert "agents.hostile.sandbox: bubblewrap" in line, line
    assert "does not exist" in line, line
    assert "apt-get install bubblewrap" in line, line
    assert project.get(item_id).state is ItemState.QUEUED


def test_no_process_of_a_sandboxed_run_outlives_its_worker_killed_with_sigkill(
    tmp_path: Path, store_url: str | None
) -> None:
    project = sandboxed_project(tmp_path / "p", store_url)
    project.plant("Add the feature. LINGER", title="Feature")
    worker = LiveWorker(project, "--once")
    try:
        worker.until("spawned")
        assert poll(daemons, timeout=30), "the agent never started its daemon"
    finally:
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.communicate(timeout=30)

    # bubblewrap dies with the worker, its PID namespace with it, and the daemon in there
    assert poll(lambda: not daemons(), timeout=10), daemons()


@pytest.mark.parametrize("network", ["none", "host"])
def test_a_check_runs_in_the_agents_sandbox_and_network_none_reaches_nothing(
    tmp_path: Path, store_url: str | None, network: str
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:  # a server on loopback
        port = str(server.getsockname()[1])
        project = sandboxed_project(
            tmp_path / "p", store_url, environ={"PROBE_PORT": port}, network=network,
            env=["PROBE_PORT"],
        )  # fmt: skip
        root = project.root
        watched = [root / "planted-by-check.txt", root / ".git" / "config", root / "wrighty.json"]
        watched.append(root / ".git" / "hooks" / "post-checkout")
        before = fingerprint(watched)
        item_id = project.plant("Add the feature.", title="Feature")

        finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    assert fingerprint(watched) == before
    item = project.get(item_id)
    assert item.state is ItemState.REVIEW, item.reason
    shown = project.wrighty("show", str(item_id))
    if network == "none":
        assert "every check passed" in (item.reason or ""), item.reason
        assert "reached loopback" not in shown
    else:  # the machine's network: the check reached the server, and said so
        assert "reached loopback" in shown
        assert "wrote" not in shown


# In current mode the workspace is the project itself: its wrighty.json, store and git's shared
# files are inside it.
IN_PROJECT = textwrap.dedent(
    """\
    import pathlib, sys
    sys.stdin.read()
    for target in ("wrighty.json", ".wrighty/wrighty.db", ".git/config", ".git/hooks/pre-commit"):
        try:
            with open(target, "a") as handle:
                handle.write("planted\\n")
        except OSError:
            pass
    pathlib.Path("feature.txt").write_text("made in the sandbox\\n")
    """
)


def test_in_current_mode_the_project_is_writable_but_its_config_store_and_git_are_not(
    tmp_path: Path, store_url: str | None
) -> None:
    root = tmp_path / "p"
    sandbox = {"kind": "bubblewrap", "program": bubblewrap()}
    project = make_project(
        root, programs={"maker": ("agent.py", IN_PROJECT)}, agents={"maker": {"sandbox": sandbox}},
        worker={"workspaceMode": "current"}, store_url=store_url, git=True,
    )  # fmt: skip
    watched = [root / "wrighty.json", root / ".git" / "config"]
    watched.append(root / ".git" / "hooks" / "pre-commit")
    before = fingerprint(watched)
    item_id = project.plant("Add the feature.", title="Feature")

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    assert project.get(item_id).state is ItemState.DONE
    assert (root / "feature.txt").read_text() == "made in the sandbox\n"
    assert fingerprint(watched) == before
    for store_file in (root / ".wrighty").glob("wrighty.db*"):
        assert b"planted" not in store_file.read_bytes()


# completion.commit agent: the agent commits on its branch itself, inside the sandbox, and then
# tries to move the project's main branch.
COMMITTER = textwrap.dedent(
    """\
    import pathlib, subprocess, sys
    sys.stdin.read()
    pathlib.Path("feature.txt").write_text("committed in the sandbox\\n")
    subprocess.run(["git", "add", "feature.txt"], check=True)
    subprocess.run(["git", "commit", "-qm", "The feature"], check=True)
    subprocess.run(["git", "branch", "-f", "main", "HEAD"], capture_output=True)
    """
)


def test_an_agent_commits_on_its_own_branch_in_the_sandbox_but_cannot_move_main(
    tmp_path: Path, store_url: str | None
) -> None:
    root = tmp_path / "p"
    sandbox = {"kind": "bubblewrap", "program": bubblewrap()}
    project = make_project(
        root, programs={"maker": ("agent.py", COMMITTER)}, agents={"maker": {"sandbox": sandbox}},
        worker={"workspaceMode": "worktree"}, completion={"commit": "agent", "review": "person"},
        store_url=store_url, git=True,
    )  # fmt: skip
    main = git(root, "rev-parse", "main")
    item_id = project.plant("Add the feature.", title="Feature")

    finished = project.worker("--once")

    assert finished.returncode == 0, finished.stderr
    item = project.get(item_id)
    assert item.state is ItemState.REVIEW, item.reason
    branch = f"wrighty/{item_id}-feature"
    assert git(root, "log", "-1", "--format=%s", branch) == "The feature"
    assert git(root, "show", f"{branch}:feature.txt") == "committed in the sandbox"
    assert git(root, "rev-parse", "main") == main


@pytest.fixture(autouse=True)
def _no_daemon_left() -> Any:
    yield
    for pid in daemons():  # a failed test's daemon (the sandbox should have killed it)
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
