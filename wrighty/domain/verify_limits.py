"""Verification's bounds and defaults (docs/verify.md), apart from verify.py so that reading
wrighty.json loads no more than these numbers."""

from __future__ import annotations

MAX_CHECKS = 20
MAX_FIX_TURNS = 10
DEFAULT_FIX_TURNS = 2
MIN_FEEDBACK_BYTES = 1_000
MAX_FEEDBACK_BYTES = 100_000
DEFAULT_FEEDBACK_BYTES = 12_000
MIN_CHECK_TIMEOUT_SECONDS = 1.0
DEFAULT_CHECK_TIMEOUT_SECONDS = 20 * 60.0
