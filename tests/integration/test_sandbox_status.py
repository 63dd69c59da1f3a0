"""Is the sandbox working? (docs/sandbox.md): `wrighty agents` shows each agent's sandbox and
whether it starts here, `wrighty agents --check` starts it with every mount of a real run, and
`wrighty config validate` warns of one that cannot start; with the installed bubblewrap, a
program that does not exist, and a bubblewrap that starts a bare sandbox but not a run's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.integration.bubblewrap import bubblewrap
from tests.integration.worker_process import ProjectOnDisk, make_project

NO_OP = "pass\n"


def logging_bubblewrap(folder: Path, *, runs_fail: bool = False) -> tuple[Path, Path]:
    """A bubblewrap that writes each command line it gets to a log, then runs the real one;
    with ``runs_fail``, only the bare probe (`--ro-bind / / --unshare-pid -- true`) starts:
    a run's sandbox fails as a kernel refusing a mount would."""
    log = folder / "bwrap.log"
    script = folder / "bwrap"
    refuse = (
        'if [ "$#" -gt 6 ]; then echo "bwrap: Can\'t mount tmpfs on /newroot/x: Operation not '
        'permitted" >&2; exit 1; fi\n'
        if runs_fail
        else ""
    )
    script.write_text(f'#!/bin/sh\necho "$*" >> {log}\n{refuse}exec {bubblewrap()} "$@"\n')
    script.chmod(0o755)
    return script, log


def project_with(tmp_path: Path, store_url: str | None, **sandboxes: Any) -> ProjectOnDisk:
    """A git project with one no-op agent per entry of ``sandboxes`` (its sandbox setting)."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    agents = {name: {"sandbox": sandbox} for name, sandbox in sandboxes.items()}
    return make_project(
        tmp_path / "p", programs=dict.fromkeys(sandboxes, NO_OP), agents=agents,
        worker={"workspaceMode": "worktree"}, store_url=store_url, git=True,
        env={"HOME": str(home)},
    )  # fmt: skip


def run(project: ProjectOnDisk, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        project.command(*args), cwd=project.root, env=project.env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip


def sandboxes(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    return {row["name"]: row["sandbox"] for row in json.loads(done.stdout)}


def test_agents_shows_each_sandbox_probing_each_program_once(
    tmp_path: Path, store_url: str | None
) -> None:
    program, log = logging_bubblewrap(tmp_path)
    boxed = {"kind": "bubblewrap", "program": str(program), "network": "none"}
    project = project_with(
        tmp_path, store_url, boxed=boxed, again=boxed, bare="none",
        broken={"kind": "bubblewrap", "program": str(tmp_path / "no-bwrap")},
    )  # fmt: skip

    done = run(project, "agents", "--json")

    assert done.returncode == 0, done.stderr
    shown = sandboxes(done)
    assert shown["bare"] is None
    assert shown["boxed"] == {
        "kind": "bubblewrap", "setting": "agents.boxed.sandbox", "program": str(program),
        "network": "none", "works": True, "problem": None, "checked": False,
    }  # fmt: skip
    assert shown["again"]["works"] is True
    assert (shown["broken"]["works"], shown["broken"]["problem"]) == (False, "does not exist")
    assert len(log.read_text().splitlines()) == 1  # one probe for the two agents that share it
    [line] = done.stderr.splitlines()
    assert line.startswith("wrighty: agent 'broken': agents.broken.sandbox: bubblewrap"), line
    assert "does not exist; install it" in line

    table = run(project, "agents")
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if line.startswith("boxed"))
    assert "bubblewrap (network none), agents.boxed.sandbox: works" in row
    row = next(line for line in table.stdout.splitlines() if line.startswith("broken"))
    assert "cannot start" in row


def test_agents_check_starts_the_sandbox_with_every_mount_of_a_run(
    tmp_path: Path, store_url: str | None
) -> None:
    program, log = logging_bubblewrap(tmp_path)
    project = project_with(
        tmp_path, store_url, boxed={"kind": "bubblewrap", "program": str(program)}
    )
    state = project.root / ".wrighty"
    before = sorted(state.iterdir()) if state.exists() else None

    done = run(project, "agents", "--check", "--yes", "--agent", "boxed", "--json")

    assert done.returncode == 0, done.stderr
    assert sandboxes(done)["boxed"]["checked"] is True
    assert sandboxes(done)["boxed"]["works"] is True
    _probe, started = log.read_text().splitlines()
    assert "--tmpfs /tmp" in started
    assert f"--tmpfs {state.resolve()}" in started  # the state folder hidden
    assert f"--tmpfs {(tmp_path / 'home' / '.ssh').resolve()}" in started  # the secrets too
    assert f"--ro-bind {project.config.resolve()} {project.config.resolve()}" in started
    store_hidden = f"--ro-bind /dev/null {(state / 'wrighty.db').resolve()}"
    assert (store_hidden in started) is (store_url is None)  # a SQLite store's file, hidden
    assert started.endswith("-- true")
    assert (sorted(state.iterdir()) if state.exists() else None) == before  # its workspace is gone


def test_agents_check_fails_on_a_sandbox_that_starts_bare_but_not_with_a_runs_mounts(
    tmp_path: Path, store_url: str | None
) -> None:
    program, _ = logging_bubblewrap(tmp_path, runs_fail=True)
    project = project_with(
        tmp_path, store_url, boxed={"kind": "bubblewrap", "program": str(program)}
    )

    listed = run(project, "agents", "--json")
    assert listed.returncode == 0, listed.stderr
    assert sandboxes(listed)["boxed"]["works"] is True  # the bare probe cannot tell

    done = run(project, "agents", "--check", "--yes", "--agent", "boxed", "--json")

    assert done.returncode == 1
    shown = sandboxes(done)["boxed"]
    assert (shown["works"], shown["checked"]) == (False, True)
    assert "Operation not permitted" in shown["problem"]
    [line] = done.stderr.splitlines()
    assert line.startswith("wrighty: agent 'boxed': agents.boxed.sandbox: bubblewrap"), line
    assert "cannot start a sandbox (bwrap: Can't mount tmpfs" in line


def test_agents_check_fails_on_a_missing_program(tmp_path: Path) -> None:
    missing = {"kind": "bubblewrap", "program": str(tmp_path / "no-bwrap")}
    project = project_with(tmp_path, None, boxed=missing)

    done = run(project, "agents", "--check", "--yes", "--agent", "boxed")

    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert "agents.boxed.sandbox: bubblewrap" in line, line
    assert "does not exist" in line, line


def test_config_validate_warns_of_a_sandbox_that_cannot_start_here(tmp_path: Path) -> None:
    missing = {"kind": "bubblewrap", "program": str(tmp_path / "no-bwrap")}
    project = project_with(tmp_path, None, boxed=missing, other=missing)
    document = json.loads(project.config.read_text())
    document["worker"]["sandbox"] = {"kind": "bubblewrap", "program": bubblewrap()}
    project.config.write_text(json.dumps(document))

    done = run(project, "config", "validate")

    assert (done.returncode, done.stdout) == (0, "ok\n")
    assert done.stderr.splitlines() == [
        f"warning: agents.{name}.sandbox: bubblewrap '{tmp_path / 'no-bwrap'}' does not exist, "
        "so a worker whose agent runs in this sandbox refuses to start on this machine; "
        "install it (Debian: apt-get install bubblewrap) or set program to its path"
        for name in ("boxed", "other")
    ]
    document["agents"]["boxed"]["sandbox"] = document["agents"]["other"]["sandbox"] = "none"
    project.config.write_text(json.dumps(document))
    assert run(project, "config", "validate").stderr == ""  # the installed one starts
