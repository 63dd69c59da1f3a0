"""The AgentAdapter contract (wrighty/vendors/base.py), held against every built-in adapter:
each vendor CLI's and the command adapter (a plugin's adapter passes it in
tests/unit/test_adapter_registry.py). The programs started are a stand-in that records its argv
and standard input; the readers read the real CLIs' samples in tests/fixtures/vendor-samples."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wrighty.domain.outcomes import OutcomeClass
from wrighty.supervisor.process import LaunchSpec, launch
from wrighty.vendors.base import AgentAdapter, AgentProgram, Reader, VendorError
from wrighty.vendors.registry import BUILT_IN

SAMPLES = Path(__file__).parent.parent / "fixtures" / "vendor-samples"
TASK = "Fix the failing test in shop/cart.py; the secret word is PLUM."
SESSION = "0b4c1e2a-5f7d-4e61-9a3b-2c8d7e6f5a41"
# A real CLI's successful run and a failed one, with how each ends, by adapter.
OUTPUTS = {
    "claude": [
        ("claude-code-2.1.197/ok.stream.jsonl", 0, OutcomeClass.SUCCEEDED),
        ("claude-code-2.1.197/auth.stream.jsonl", 1, OutcomeClass.AUTH),
    ],
    "codex": [
        ("codex-0.169.0/ok.jsonl", 0, OutcomeClass.SUCCEEDED),
        ("codex-0.169.0/api-429.jsonl", 1, OutcomeClass.RATE_LIMITED),
    ],
    "gemini": [
        ("gemini-cli-0.61.0/ok.stream.jsonl", 0, OutcomeClass.SUCCEEDED),
        ("gemini-cli-0.61.0/api-401.stream.jsonl", 1, OutcomeClass.AUTH),
    ],
    "command": [],
}
GARBAGE = [b"", b"\xff\xfe\x00", b"{", b"[1, 2]", b'{"type": 3, "session_id": 4}', b"x" * 100_000]

pytestmark = pytest.mark.parametrize("name", list(BUILT_IN))


def recorder(folder: Path) -> Path:
    """A program that writes its argv (a line each) and its standard input beside itself."""
    program = folder / "agent"
    program.write_text(
        '#!/bin/sh\nprintf "%s\\n" "$@" > "$(dirname "$0")/argv"\ncat > "$(dirname "$0")/stdin"\n'
    )
    program.chmod(0o755)
    return program


def written(name: str, program: Path) -> AgentProgram:
    if name == "command":
        return AgentProgram(
            command=(str(program), "--fast"), resume_command=(str(program), "--resume")
        )
    return AgentProgram(executable=str(program))


def configured(name: str, program: Path) -> tuple[AgentAdapter, str]:
    adapter = BUILT_IN[name]
    return adapter.configured(written(name, program)), adapter.program(written(name, program))


def run(argv: list[str], folder: Path, prompt: str) -> tuple[list[str], str]:
    """What the recorder saw when started with ``argv`` and ``prompt`` as its task."""
    (folder / "work").mkdir(exist_ok=True)
    spec = LaunchSpec(
        argv=tuple(argv), cwd=folder / "work", env=dict(os.environ), task=prompt,
        log_dir=folder / "logs", on_line=None,
    )  # fmt: skip
    process = launch(spec)
    assert process.wait(30) is not None
    process.close()
    return (folder / "argv").read_text().splitlines(), (folder / "stdin").read_text()


def test_an_adapter_is_what_the_protocol_asks_and_is_found_by_its_name(name: str) -> None:
    adapter = BUILT_IN[name]
    assert isinstance(adapter, AgentAdapter)
    assert adapter.name == name


def test_a_fresh_run_gets_its_task_on_stdin_never_in_its_argv(name: str, tmp_path: Path) -> None:
    adapter, executable = configured(name, recorder(tmp_path))
    session = SESSION if adapter.preassigns_session else None
    argv = adapter.start_argv(executable, session, ["--user-flag"])
    seen, stdin = run(argv, tmp_path, TASK)
    assert stdin == TASK
    assert not any("PLUM" in arg for arg in seen)
    assert argv[0] == executable
    assert "--user-flag" in argv


def test_a_resume_names_its_session_or_the_adapter_hands_it_over_itself(
    name: str, tmp_path: Path
) -> None:
    adapter, executable = configured(name, recorder(tmp_path))
    assert adapter.resumable
    argv = adapter.resume_argv(executable, SESSION, ["--user-flag"])
    seen, stdin = run(argv, tmp_path, "The checks failed: PLUM")
    assert stdin == "The checks failed: PLUM"
    assert not any("PLUM" in arg for arg in seen)
    # The command adapter's program gets the session as WRIGHTY_SESSION_ID (the worker sets it).
    assert SESSION in seen or adapter.preassigns_session
    assert "--user-flag" in argv


def test_a_session_id_that_could_pass_as_a_flag_never_reaches_an_argv(
    name: str, tmp_path: Path
) -> None:
    adapter, executable = configured(name, recorder(tmp_path))
    for bad in ("--dangerously-skip-permissions", "-rf", "a b", "../../etc/passwd", ""):
        try:
            argv = adapter.resume_argv(executable, bad, [])
        except VendorError:
            continue
        assert bad not in argv
        assert adapter.preassigns_session  # an id that is not in the argv at all


def test_a_transcript_problem_is_an_answer_never_an_exception(name: str, tmp_path: Path) -> None:
    adapter, _ = configured(name, recorder(tmp_path))
    home = {"HOME": str(tmp_path / "home")}
    for session in (SESSION, "../../outside", "-x"):
        problem = adapter.transcript_problem(session, tmp_path / "work", home)
        assert problem is None or (problem.strip() == problem and "\n" not in problem)
    if adapter.reader() is not None:  # an adapter that reads a vendor's output keeps its transcript
        assert SESSION in (adapter.transcript_problem(SESSION, tmp_path, home) or "")


def test_the_reader_classifies_the_real_clis_output(name: str) -> None:
    adapter = BUILT_IN[name]
    if adapter.reader() is None:
        assert OUTPUTS[name] == []  # the exit code alone tells how it ended
        return
    for sample, exit_code, expected in OUTPUTS[name]:
        reader = adapter.reader()
        assert isinstance(reader, Reader)
        for line in (SAMPLES / sample).read_bytes().splitlines():
            reader.feed("stdout", line)
        assert reader.classify(exit_code).outcome_class is expected, sample


def test_the_reader_never_raises_on_a_line(name: str) -> None:
    reader = BUILT_IN[name].reader()
    if reader is None:
        return
    for line in GARBAGE:
        reader.feed("stdout", line)
        reader.feed("stderr", line)
    assert reader.classify(1).outcome_class is not OutcomeClass.SUCCEEDED
