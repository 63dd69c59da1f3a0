"""worker.usageFailure with the real Claude Code CLI: a provider that refuses (429, 529) until
it answers, a retry at the backoff, and the same session resumed in the same workspace."""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

import pytest

from tests.vendors.conftest import (
    CIRCUIT_OPEN_MINUTES,
    VendorProject,
    claude_agent,
    held_while_open,
    next_event,
)
from tests.vendors.provider import Provider
from tests.vendors.test_claude import vendor_session_ids

pytestmark = pytest.mark.slow

# Backoff only (Claude Code with an API key reports no reset time): a retry about half a
# second after the refusal, so that the test can wait for it.
USAGE_RETRY = {"action": "retry", "initialRetryMinutes": 0.01, "maxAttempts": 2}


def configured(project: VendorProject, provider: Provider, **worker: Any) -> None:
    project.configure(
        claude_agent(provider, project.home),
        defaultAgent="claude",
        workspaceMode="directory",
        pollSeconds=0.1,
        **worker,
    )


def wait_until_due(shown: dict[str, Any]) -> None:
    due = datetime.fromisoformat(shown["not_before"].replace("Z", "+00:00"))
    time.sleep(max(0.0, due.timestamp() - time.time()) + 0.05)


@pytest.mark.parametrize(
    ("mode", "outcome_class"), [("rate", "rate-limited"), ("overloaded", "provider-unavailable")]
)
def test_a_refused_claude_run_is_retried_and_resumes_its_session(
    vendor_project: VendorProject, provider: Provider, mode: str, outcome_class: str
) -> None:
    provider.mode = mode
    configured(vendor_project, provider, usageFailure=USAGE_RETRY)
    item_id = vendor_project.create("Reply with the single word: done.")
    events, refused = vendor_project.run_once()
    assert refused.returncode == 0, refused.stderr
    shown = vendor_project.show(item_id)
    assert (shown["state"], shown["reason_code"]) == ("retry-scheduled", outcome_class)
    assert shown["runs"][0]["outcome_class"] == outcome_class  # the refused run stays failed
    assert "usage retry 1 of 2 resumes its session" in shown["reason"]
    assert "backoff: the provider named no reset" in shown["reason"]
    assert (shown["usage_retries"], shown["crash_retries"]) == (1, 0)
    assert shown["usage_retry"]["next_due"] == shown["not_before"]
    [scheduled] = [e for e in events if e["event"] == "retry-scheduled"]
    assert (scheduled["usage_retries"], scheduled["reason_code"]) == (1, outcome_class)
    session_id = shown["session"]["session_id"]

    provider.mode = "ok"
    wait_until_due(shown)
    events, worked = vendor_project.run_once()
    assert worked.returncode == 0, worked.stderr
    after = vendor_project.show(item_id)
    assert after["state"] == "done"
    assert [e["session_id"] for e in events if e["event"] == "resumed"] == [session_id]
    first, second = after["runs"]
    assert (second["kind"], second["outcome_class"]) == ("resume", "succeeded")
    assert second["generation"] > first["generation"]
    assert vendor_session_ids(vendor_project, after) == {session_id}
    assert after["session"]["workspace"] == shown["session"]["workspace"]


def test_refusals_past_the_last_usage_retry_need_attention(
    vendor_project: VendorProject, provider: Provider
) -> None:
    provider.mode = "rate"
    configured(vendor_project, provider, usageFailure={**USAGE_RETRY, "maxAttempts": 1})
    item_id = vendor_project.create("Reply with the single word: done.")
    vendor_project.run_once()
    wait_until_due(vendor_project.show(item_id))
    vendor_project.run_once()
    after = vendor_project.show(item_id)
    assert (after["state"], after["reason_code"]) == ("needs-attention", "retries-exhausted")
    assert "refused 2 times, the first run and 1 usage retry" in after["reason"]
    assert after["next_action"] == f"wrighty requeue {item_id} --resume"
    assert [run["outcome_class"] for run in after["runs"]] == ["rate-limited", "rate-limited"]


def test_without_the_policy_a_429_still_needs_attention(
    vendor_project: VendorProject, provider: Provider
) -> None:
    provider.mode = "rate"
    configured(vendor_project, provider)
    item_id = vendor_project.create("Reply with the single word: done.")
    vendor_project.run_once()
    after = vendor_project.show(item_id)
    assert (after["state"], after["reason_code"]) == ("needs-attention", "rate-limited")
    assert after["usage_retries"] == 0


def test_a_refusal_holds_the_queue_until_the_probe_answers(
    vendor_project: VendorProject, provider: Provider
) -> None:
    """Under the policy, the circuit opens: the second item is not launched while it is open;
    at the due time the refused item goes first, as the probe, and once the provider answers
    it, the queue flows again."""
    provider.mode = "rate"
    configured(
        vendor_project,
        provider,
        usageFailure={**USAGE_RETRY, "initialRetryMinutes": CIRCUIT_OPEN_MINUTES},
    )
    first = vendor_project.create("Reply with the single word: done.")
    second = vendor_project.create("Reply with the single word: done.")
    worker = vendor_project.start_worker("--max-items", "2", "--idle-timeout", "60s")
    scheduled = next_event(worker, "retry-scheduled")
    assert scheduled["item_id"] == first
    provider.mode = "ok"
    stdout, _ = worker.communicate(timeout=120)
    events = [json.loads(line) for line in stdout.splitlines()]
    names = [event["event"] for event in events]
    claims = [event["item_id"] for event in events if event["event"] == "claimed"]
    assert claims == [first, second]  # the refused item's claim came before: see `scheduled`
    held_while_open(events, scheduled)
    # The probe is the due retry, then the circuit closes, then the second item runs.
    assert names.index("circuit-half-open") < names.index("claimed") < names.index("circuit-closed")
    probe = next(e for e in events if e["event"] == "circuit-probe")
    assert probe["item_id"] == first
    assert vendor_project.show(first)["state"] == "done"
    shown_second = vendor_project.show(second)
    assert shown_second["state"] == "done"
    [run] = shown_second["runs"]
    resumed = vendor_project.show(first)["runs"][1]
    assert run["started_at"] > resumed["started_at"]  # not launched while the circuit was open
