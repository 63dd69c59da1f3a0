"""The inbox's log tail (services/runlogs.tail_output): what it keeps, and its count of what it
left out."""

from __future__ import annotations

import re
from pathlib import Path

from wrighty.services.runlogs import tail_output

SECRET = "sk-ant-api03-" + "Q" * 40


def test_a_long_log_keeps_its_end_and_counts_every_byte_before_it(tmp_path: Path) -> None:
    lines = [f"line {n:06d}\n" for n in range(50_000)]  # 600,000 bytes
    (tmp_path / "stdout.log").write_text("".join(lines))
    text = tail_output(tmp_path, chars=1200, final=True)
    head, kept = text.split("\n", 1)
    found = re.fullmatch(r"…\[truncated (\d+) bytes\]", head)
    assert found is not None
    assert kept.endswith("line 049999")
    assert int(found.group(1)) + len(kept) + 1 == 600_000  # the newline rstrip took


def test_a_secret_that_straddles_the_cut_is_redacted_whole(tmp_path: Path) -> None:
    # The cut falls inside the secret: its tail alone must not show.
    (tmp_path / "stdout.log").write_text("x" * 100_000 + f"\nkey {SECRET}\ndone\n")
    text = tail_output(tmp_path, chars=30, final=True)
    assert "Q" * 10 not in text
    assert text.endswith("done")


def test_stderr_follows_under_its_own_line(tmp_path: Path) -> None:
    (tmp_path / "stdout.log").write_text("out\n")
    (tmp_path / "stderr.log").write_text("err\n")
    assert tail_output(tmp_path, chars=100, final=True) == "out\n── stderr ──\nerr"
