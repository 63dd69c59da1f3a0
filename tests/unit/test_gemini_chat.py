"""When a Gemini CLI chat file can back a resume: only when it holds a turn besides the CLI's
own session context (a refusal of the first request takes the task back out)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from wrighty.vendors.base import VendorError
from wrighty.vendors.registry import VENDORS

SESSION = "1137ea3b-fbc7-4890-b299-3cb85ed7e381"
CONTEXT = {"id": "m0", "type": "user", "content": [{"text": "<session_context>\nToday is..."}]}
TASK = {"id": "m1", "type": "user", "content": [{"text": "Fix the failing test."}]}
ANSWER = {"id": "m2", "type": "gemini", "content": "On it."}


def chat(home: Path, workspace: Path, *records: object) -> Path:
    project_hash = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()
    path = home / ".gemini" / "tmp" / "proj" / "chats" / f"session-2026-12-01-{SESSION[:8]}.jsonl"
    path.parent.mkdir(parents=True)
    header = {"sessionId": SESSION, "projectHash": project_hash}
    path.write_text("".join(json.dumps(r) + "\n" for r in (header, *records)))
    return path


def found(home: Path, workspace: Path) -> Path | None:
    return VENDORS["gemini"].transcript(SESSION, workspace, {"HOME": str(home)})


@pytest.mark.parametrize(
    "records",
    [
        (CONTEXT, TASK),
        (CONTEXT, TASK, ANSWER),
        (CONTEXT, ANSWER),
        (CONTEXT, {"$set": {"messages": [CONTEXT, TASK]}}),
    ],
    ids=["task", "task-and-answer", "answer", "reset-keeping-the-task"],
)
def test_a_chat_with_a_turn_backs_a_resume(tmp_path: Path, records: tuple[object, ...]) -> None:
    path = chat(tmp_path, tmp_path, *records)
    assert found(tmp_path, tmp_path) == path


@pytest.mark.parametrize(
    "records",
    [
        (CONTEXT,),
        (CONTEXT, TASK, {"$set": {"messages": [CONTEXT]}}),  # the refused task taken back out
        (),
        (CONTEXT, "not json at all"),
    ],
    ids=["context-only", "task-taken-back", "empty", "garbage"],
)
def test_a_chat_with_no_turn_cannot(tmp_path: Path, records: tuple[object, ...]) -> None:
    chat(tmp_path, tmp_path, *records)
    with pytest.raises(VendorError, match="holds no turn to resume"):
        found(tmp_path, tmp_path)
