"""Fixtures the integration tests share with the unit tests."""

from tests.unit.test_notify_sinks import receiver  # noqa: F401  (a local HTTP sink)
