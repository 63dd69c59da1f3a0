"""The real Codex and Gemini CLIs where they can run offline, run by a real worker."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.vendors.conftest import VendorProject, vendor_cli

pytestmark = pytest.mark.slow


def processes_marked(run_id: str) -> list[int]:
    """Live processes whose environment carries this run's WRIGHTY_RUN_ID."""
    needle = f"\0WRIGHTY_RUN_ID={run_id}\0".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environment = b"\0" + Path(f"/proc/{entry}/environ").read_bytes()
            status = Path(f"/proc/{entry}/stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if needle in environment and status != "Z":
            found.append(int(entry))
    return found


def test_codex_that_reconnects_forever_is_timed_out_and_its_tree_killed(
    vendor_project: VendorProject,
) -> None:
    codex_home = vendor_project.home / ".codex"
    codex_home.mkdir()
    vendor_project.configure(
        {
            "codex": {
                "executable": str(vendor_cli("codex")),
                "env": {"CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "sk-test"},
            }
        },
        defaultAgent="codex",
        workspaceMode="directory",
    )
    item_id = vendor_project.create("say hi", "--timeout", "10s")
    events, worked = vendor_project.run_once("--json")
    assert worked.returncode == 0, worked.stderr
    shown = vendor_project.show(item_id)
    [run] = shown["runs"]
    assert (run["outcome_class"], run["confidence"]) == ("timeout", "authoritative")
    assert shown["state"] == "needs-attention"
    assert shown["reason_code"] == "timeout"
    # The thread id that codex printed first is the recorded session, before the run ended.
    log = vendor_project.root / ".wrighty" / "runs" / str(item_id) / run["run_id"] / "stdout.log"
    first = json.loads(log.read_text().splitlines()[0])
    assert first["type"] == "thread.started"
    assert shown["session"]["session_id"] == first["thread_id"] == run["session_id"]
    kinds = [event["event"] for event in events]
    assert kinds.index("session") < kinds.index("exited") < kinds.index("settled")
    assert processes_marked(run["run_id"]) == []


def test_gemini_without_credentials_is_an_auth_failure(vendor_project: VendorProject) -> None:
    vendor_project.configure(
        {"gemini": {"executable": str(vendor_cli("gemini"))}},
        defaultAgent="gemini",
        workspaceMode="directory",
    )
    item_id = vendor_project.create("say hi")
    _, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
    shown = vendor_project.show(item_id)
    [run] = shown["runs"]
    assert (run["outcome_class"], run["confidence"], run["exit_code"]) == (
        "auth",
        "authoritative",
        41,
    )
    assert shown["state"] == "needs-attention"
