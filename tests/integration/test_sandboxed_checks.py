"""Checks and integration commands run code the agent wrote: they run in the item's sandbox
too, whoever runs them (docs/sandbox.md#checks-and-integration) — `wrighty verify`, a landing
(`wrighty accept --wait`) and its `completion.integrateCommand` — with real bubblewrap, real
git and real `wrighty` processes, on both stores. verify.sandbox "none" runs them as wrighty
(and the same probes then reach what the sandbox kept from them)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_sandbox_processes import fingerprint, sandboxed_project
from tests.integration.worker_process import ProjectOnDisk
from wrighty.domain.states import ItemState

# The integration command: it tries to write outside the item's worktree and says what worked;
# it fails (exit 1) when something did.
INTEGRATE = textwrap.dedent(
    """\
    import os, pathlib, sys
    sys.stdin.read()
    root = pathlib.Path(os.environ["PROJECT_ROOT"])
    worked = []
    for target in (root / "planted-by-integration.txt", root / ".git" / "config",
                   pathlib.Path(os.environ["HOME"]) / "planted-by-integration.txt"):
        try:
            with open(target, "a") as handle:
                handle.write("planted\\n")
            worked.append(f"wrote {target.name}")
        except OSError:
            pass
    print(", ".join(worked) or "all refused", file=sys.stderr)
    print("https://example.com/pr/" + os.environ["WRIGHTY_ITEM_ID"])
    sys.exit(1 if worked else 0)
    """
)


@pytest.fixture
def loopback() -> Iterator[str]:
    """A server on loopback that a check with network "none" must not reach: its port."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield str(server.getsockname()[1])


def project_at(
    tmp_path: Path,
    store_url: str | None,
    port: str,
    *,
    sandbox: str = "agent",
    probe: bool = True,
    **completion: Any,
) -> ProjectOnDisk:
    root = tmp_path / "p"
    return sandboxed_project(
        root, store_url, environ={"PROBE_PORT": port, "PROJECT_ROOT": str(root)},
        network="none", env=["PROBE_PORT", "PROJECT_ROOT"], verify_sandbox=sandbox, probe=probe,
        completion={"review": "person", **completion},
    )  # fmt: skip


def in_review(project: ProjectOnDisk) -> int:
    """A new item, worked by a real worker and waiting for review."""
    item_id = project.plant("Add the feature.", title="Feature")
    assert project.worker("--once").returncode == 0
    assert project.get(item_id).state is ItemState.REVIEW
    return item_id


def set_verify_sandbox(project: ProjectOnDisk, value: object) -> None:
    document = json.loads(project.config.read_text())
    document["verify"]["sandbox"] = value
    project.config.write_text(json.dumps(document))


def run(project: ProjectOnDisk, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        project.command(*args), cwd=project.root, env=project.env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip


def watched(root: Path) -> list[Path]:
    return [root / "planted-by-check.txt", root / ".git" / "config", root / "wrighty.json",
            root / ".git" / "hooks" / "post-checkout"]  # fmt: skip


def test_wrighty_verify_runs_the_checks_in_the_sandbox_and_verify_sandbox_none_does_not(
    tmp_path: Path, store_url: str | None, loopback: str
) -> None:
    project = project_at(tmp_path, store_url, loopback)
    item_id = in_review(project)
    before = fingerprint(watched(project.root))

    by_hand = run(project, "verify", str(item_id))

    assert by_hand.returncode == 0, by_hand.stdout + by_hand.stderr
    assert "probe" in by_hand.stdout, by_hand.stdout
    assert "passed" in by_hand.stdout, by_hand.stdout
    assert fingerprint(watched(project.root)) == before

    # As wrighty: the same check writes the project's checkout and reaches loopback.
    set_verify_sandbox(project, "none")
    unsandboxed = run(project, "verify", str(item_id))
    assert unsandboxed.returncode == 1, unsandboxed.stdout + unsandboxed.stderr
    assert (project.root / "planted-by-check.txt").exists()
    assert "reached loopback" in unsandboxed.stdout, unsandboxed.stdout


def test_a_verify_sandbox_that_cannot_start_refuses_wrighty_verify_with_one_line(
    tmp_path: Path, store_url: str | None, loopback: str
) -> None:
    project = project_at(tmp_path, store_url, loopback)
    item_id = in_review(project)
    set_verify_sandbox(project, {"kind": "bubblewrap", "program": str(tmp_path / "no-bwrap")})
    before = fingerprint(watched(project.root))

    refused = run(project, "verify", str(item_id))

    assert refused.returncode == 2, refused.stdout + refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("wrighty: verify.sandbox: bubblewrap"), line
    assert "does not exist" in line, line
    assert 'set verify.sandbox to "none"' in line, line
    assert fingerprint(watched(project.root)) == before
    assert "verified by hand" not in project.wrighty("show", str(item_id))


def test_a_landings_checks_run_in_the_sandbox(
    tmp_path: Path, store_url: str | None, loopback: str
) -> None:
    project = project_at(tmp_path, store_url, loopback, integrate="merge")
    first = project.plant("Add the feature.", title="First")
    second = project.plant("Add the feature.", title="Second")
    assert project.worker("--once").returncode == 0
    assert project.worker("--once").returncode == 0
    assert project.wrighty("accept", str(first), "--wait", "60")
    assert project.get(first).state is ItemState.DONE
    before = fingerprint(watched(project.root))

    # The second branch is behind main now: its landing updates it and checks it again.
    project.wrighty("accept", str(second), "--wait", "60")

    item = project.get(second)
    assert item.state is ItemState.DONE, item.reason
    assert fingerprint(watched(project.root)) == before
    store = project.store()
    try:
        records = store.list_checks(second)
    finally:
        store.close()
    landing = [r.evidence for r in records if r.verification_id.startswith("land-")]
    assert [(check.name, check.passed) for check in landing] == [("probe", True)], landing


@pytest.mark.parametrize("sandbox", ["agent", "none"])
def test_the_integration_command_runs_in_the_sandbox_unless_verify_sandbox_is_none(
    tmp_path: Path, store_url: str | None, loopback: str, sandbox: str
) -> None:
    command = tmp_path / "home" / "integrate.py"  # the sandbox shows the home, read-only
    command.parent.mkdir()
    command.write_text(INTEGRATE)
    project = project_at(
        tmp_path, store_url, loopback, sandbox=sandbox, probe=False, integrate="command",
        integrateCommand=[sys.executable, str(command)],
    )  # fmt: skip
    root = project.root
    item_id = project.plant("Add the feature.", title="Feature")
    assert project.worker("--once").returncode == 0

    run(project, "accept", str(item_id), "--wait", "60")

    item = project.get(item_id)
    planted = [
        root / "planted-by-integration.txt",
        tmp_path / "home" / "planted-by-integration.txt",
    ]
    if sandbox == "agent":
        assert item.state is ItemState.DONE, item.reason
        assert f"https://example.com/pr/{item_id}" in (item.reason or "")
        assert not any(path.exists() for path in planted)
    else:
        assert item.state is not ItemState.DONE
        assert "wrote planted-by-integration.txt" in (item.reason or ""), item.reason
        assert all(path.exists() for path in planted)
