"""Vendor output readers and their classification, on real CLI output.

The files in tests/fixtures/vendor-samples were captured from the real CLIs (their README says
how); tests/vendors/ captures fresh output from the installed CLIs as well.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from wrighty.domain.classify import RunFacts, StopReason, classify_exit
from wrighty.domain.outcomes import Confidence, OutcomeClass
from wrighty.supervisor.process import LineSplitter
from wrighty.vendors.base import Reader, VendorError, checked_session_id
from wrighty.vendors.registry import VENDORS

SAMPLES = Path(__file__).parent.parent / "fixtures" / "vendor-samples"
CLAUDE = SAMPLES / "claude-code-2.1.197"


def read(vendor: str, stdout: bytes, stderr: bytes = b"") -> Reader:
    reader = VENDORS[vendor].reader()
    for stream, data in (("stdout", stdout), ("stderr", stderr)):
        splitter = LineSplitter(lambda line, s=stream: reader.feed(s, line))  # type: ignore[misc]
        splitter.feed(data)
        splitter.close()
    return reader


def exit_code_of(path: Path) -> int:
    return int(path.read_text().split()[1])


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("ok", OutcomeClass.SUCCEEDED),
        ("ok-preassigned-session", OutcomeClass.SUCCEEDED),
        ("ok-resumed", OutcomeClass.SUCCEEDED),
        ("auth", OutcomeClass.AUTH),
        ("not-logged-in", OutcomeClass.AUTH),
        ("perm", OutcomeClass.PERMISSION),
        ("bill", OutcomeClass.BILLING),
        ("ctx", OutcomeClass.CONTEXT_LIMIT),
        ("rate", OutcomeClass.RATE_LIMITED),
        ("over", OutcomeClass.PROVIDER_UNAVAILABLE),
    ],
)
def test_claude_samples_classify_from_their_structured_fields(
    sample: str, expected: OutcomeClass
) -> None:
    data = (CLAUDE / f"{sample}.stream.jsonl").read_bytes()
    exit_code = 0 if expected is OutcomeClass.SUCCEEDED else 1
    reader = read("claude", data)
    result = reader.classify(exit_code)
    assert (result.outcome_class, result.confidence) == (expected, Confidence.AUTHORITATIVE)
    first = json.loads(data.splitlines()[0])
    assert reader.session_id == first["session_id"]


def test_claude_resume_of_a_missing_session_is_an_agent_failure_naming_it() -> None:
    data = (CLAUDE / "resume-missing-session.stream.jsonl").read_bytes()
    stderr = (CLAUDE / "resume-missing-session.stderr").read_bytes()
    result = read("claude", data, stderr).classify(
        exit_code_of(CLAUDE / "resume-missing-session.exit")
    )
    assert result.outcome_class is OutcomeClass.AGENT_FAILURE
    assert "No conversation found" in result.summary


def test_a_successful_result_that_mentions_errors_is_still_a_success() -> None:
    ok = json.loads((CLAUDE / "ok.stream.jsonl").read_text().splitlines()[-1])
    ok["result"] = "Fixed the 401 Unauthorized error and the rate limit (429) handling."
    lines = [*(CLAUDE / "ok.stream.jsonl").read_text().splitlines()[:-1], json.dumps(ok)]
    result = read("claude", "\n".join(lines).encode()).classify(0)
    assert result.outcome_class is OutcomeClass.SUCCEEDED


@pytest.mark.parametrize(
    "cut",
    [
        pytest.param(lambda data: data.rsplit(b"\n", 2)[0], id="no-result-record"),
        pytest.param(lambda data: data[: len(data) - 200], id="truncated-mid-line"),
        pytest.param(lambda data: b"not json at all\n\xff\xfe garbage\n", id="not-json"),
    ],
)
def test_claude_output_without_its_result_record_is_a_process_crash(cut: object) -> None:
    data = (CLAUDE / "ok.stream.jsonl").read_bytes()
    reader = read("claude", cut(data))  # type: ignore[operator]
    result = reader.classify(1)
    assert (result.outcome_class, result.confidence) == (
        OutcomeClass.PROCESS_CRASH,
        Confidence.INFERRED,
    )


def test_wrightys_own_facts_and_signals_outrank_the_vendor() -> None:
    vendor = read("claude", (CLAUDE / "auth.stream.jsonl").read_bytes()).classify(1)
    assert classify_exit(RunFacts(1, None, vendor=vendor)).outcome_class is OutcomeClass.AUTH
    timed_out = classify_exit(RunFacts(None, 15, StopReason.TIMEOUT, vendor=vendor))
    assert timed_out.outcome_class is OutcomeClass.TIMEOUT
    killed = classify_exit(RunFacts(None, 9, vendor=vendor))
    assert killed.outcome_class is OutcomeClass.PROCESS_CRASH


def test_codex_offline_sample_learns_the_thread_id_and_is_no_failure_by_itself() -> None:
    folder = SAMPLES / "codex-0.169.0"
    reader = read(
        "codex", (folder / "offline.jsonl").read_bytes(), (folder / "offline.stderr").read_bytes()
    )
    assert reader.session_id == "01a22aa3-8c8b-7000-a2d5-fe65b09dc6c3"
    # Reconnect errors are not a terminal record: a codex that ends now, by itself, crashed
    # unless it said why (nonzero exit beside an error event whose text names a cause).
    assert reader.classify(0).outcome_class is OutcomeClass.PROCESS_CRASH
    assert reader.classify(1).outcome_class is OutcomeClass.PROVIDER_UNAVAILABLE


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("unexpected status 401 Unauthorized: Incorrect API key provided", OutcomeClass.AUTH),
        (
            "You exceeded your current quota, please check your plan and billing details.",
            OutcomeClass.BILLING,
        ),
        ("Your input exceeds the context window of this model.", OutcomeClass.CONTEXT_LIMIT),
        ("unexpected status 429 Too Many Requests", OutcomeClass.RATE_LIMITED),
        ("something nobody has seen before", OutcomeClass.UNKNOWN),
    ],
)
def test_codex_turn_failed_is_read_by_its_text(message: str, expected: OutcomeClass) -> None:
    events = [
        {"type": "thread.started", "thread_id": "t-1"},
        {"type": "turn.started"},
        {"type": "turn.failed", "error": {"message": message}},
    ]
    data = "\n".join(json.dumps(event) for event in events).encode()
    result = read("codex", data).classify(1)
    assert (result.outcome_class, result.confidence) == (expected, Confidence.INFERRED)


def test_codex_turn_completed_is_success() -> None:
    events = [{"type": "thread.started", "thread_id": "t-1"}, {"type": "turn.completed"}]
    data = "\n".join(json.dumps(event) for event in events).encode()
    assert read("codex", data).classify(0).outcome_class is OutcomeClass.SUCCEEDED


def test_gemini_without_credentials_is_auth_from_its_exit_code() -> None:
    folder = SAMPLES / "gemini-cli-0.61.0"
    reader = read(
        "gemini", (folder / "no-auth.json").read_bytes(), (folder / "no-auth.stderr").read_bytes()
    )
    result = reader.classify(exit_code_of(folder / "no-auth.exit"))
    assert (result.outcome_class, result.confidence) == (
        OutcomeClass.AUTH,
        Confidence.AUTHORITATIVE,
    )
    assert reader.session_id == "20495202-9d59-4737-914e-2bf026665c6e"


def test_a_gigantic_line_is_skipped_with_bounded_memory() -> None:
    seen: list[bytes] = []
    splitter = LineSplitter(seen.append, limit=1024)
    splitter.feed(b'{"type":"result"')
    for _ in range(1000):
        splitter.feed(b"x" * 4096)  # 4 MB without a newline
    splitter.feed(b'}\n{"ok":1}\n')
    splitter.close()
    assert seen == [b'{"ok":1}']
    assert splitter.skipped == 1


@pytest.mark.parametrize("bad", ["-rf", "--help", "", "a b", "x" * 200, "../../etc"])
def test_session_ids_that_could_pass_for_flags_or_paths_are_refused(bad: str) -> None:
    with pytest.raises(VendorError):
        checked_session_id(bad)
    with pytest.raises(VendorError):
        VENDORS["claude"].resume_argv("claude", bad, [])


def test_a_transcript_path_outside_the_vendor_folder_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    projects = home / ".claude" / "projects"
    folder = projects / re.sub(r"[^A-Za-z0-9]", "-", str(workspace.resolve()))
    folder.mkdir(parents=True)
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("{}\n")
    (folder / "abc.jsonl").symlink_to(outside)
    with pytest.raises(VendorError, match="outside"):
        VENDORS["claude"].transcript("abc", workspace, {"HOME": str(home)})
    (folder / "abc.jsonl").unlink()
    (folder / "abc.jsonl").write_text("{}\n")
    found = VENDORS["claude"].transcript("abc", workspace, {"HOME": str(home)})
    assert found == (folder / "abc.jsonl").resolve()


CODEX = SAMPLES / "codex-0.169.0"
GEMINI = SAMPLES / "gemini-cli-0.61.0"


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("ok", (OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE)),
        ("api-401", (OutcomeClass.AUTH, Confidence.INFERRED)),
        ("api-403", (OutcomeClass.PERMISSION, Confidence.INFERRED)),
        ("api-429", (OutcomeClass.RATE_LIMITED, Confidence.INFERRED)),
        ("api-429-quota", (OutcomeClass.BILLING, Confidence.INFERRED)),
        ("api-400-context", (OutcomeClass.CONTEXT_LIMIT, Confidence.INFERRED)),
        ("api-500", (OutcomeClass.PROVIDER_UNAVAILABLE, Confidence.INFERRED)),
    ],
)
def test_codex_samples_classify_from_their_terminal_events(
    sample: str, expected: tuple[OutcomeClass, Confidence]
) -> None:
    data = (CODEX / f"{sample}.jsonl").read_bytes()
    reader = read("codex", data)
    result = reader.classify(exit_code_of(CODEX / f"{sample}.exit"))
    assert (result.outcome_class, result.confidence) == expected
    assert reader.session_id == json.loads(data.splitlines()[0])["thread_id"]


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("ok", (OutcomeClass.SUCCEEDED, Confidence.AUTHORITATIVE)),
        # An API error: the exit code is the HTTP status modulo 256.
        ("api-401", (OutcomeClass.AUTH, Confidence.AUTHORITATIVE)),
        ("api-403", (OutcomeClass.PERMISSION, Confidence.AUTHORITATIVE)),
        ("api-429", (OutcomeClass.RATE_LIMITED, Confidence.AUTHORITATIVE)),
        ("api-500", (OutcomeClass.PROVIDER_UNAVAILABLE, Confidence.AUTHORITATIVE)),
        # Exit 0, but the result says error: no success.
        ("empty-answer", (OutcomeClass.AGENT_FAILURE, Confidence.INFERRED)),
    ],
)
def test_gemini_samples_classify_from_result_and_exit_code(
    sample: str, expected: tuple[OutcomeClass, Confidence]
) -> None:
    data = (GEMINI / f"{sample}.stream.jsonl").read_bytes()
    reader = read("gemini", data)
    result = reader.classify(exit_code_of(GEMINI / f"{sample}.exit"))
    assert (result.outcome_class, result.confidence) == expected
    assert reader.session_id == json.loads(data.splitlines()[0])["session_id"]


def test_gemini_that_exits_0_without_its_result_crashed() -> None:
    first = (GEMINI / "ok.stream.jsonl").read_bytes().splitlines()[0]
    result = read("gemini", first).classify(0)  # SIGTERM from elsewhere: exit 0, no result
    assert result.outcome_class is OutcomeClass.PROCESS_CRASH


@pytest.mark.parametrize(
    ("vendor", "message", "expected"),
    [
        ("gemini", "fetch failed sending request", OutcomeClass.PROVIDER_UNAVAILABLE),
        ("codex", "Missing environment variable: `CODEX_API_KEY`.", OutcomeClass.AUTH),
    ],
)
def test_failure_texts_seen_from_the_real_clis(
    vendor: str, message: str, expected: OutcomeClass
) -> None:
    event = (
        {"type": "error", "severity": "error", "message": message}
        if vendor == "gemini"
        else {"type": "error", "message": message}
    )
    result = read(vendor, json.dumps(event).encode()).classify(1)
    assert result.outcome_class is expected


def test_resume_can_be_turned_off_for_every_adapter() -> None:
    from wrighty.agents import plan_agent
    from wrighty.config import check_config_text

    document = {
        "agents": {
            "tool": {
                "adapter": "command",
                "command": ["t"],
                "resumeCommand": ["t"],
                "resume": False,
            },
            "claude": {"resume": False},
        }
    }
    config, problems = check_config_text(json.dumps(document))
    assert config is not None, problems
    assert not plan_agent(config, "tool").can_resume
    assert not plan_agent(config, "claude").can_resume
    assert plan_agent(config, "codex").can_resume
