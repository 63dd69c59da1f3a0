"""The local GitHub API, served for each test that asks for it (`github`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.github.fake_api import FakeGitHub, serving


@dataclass
class ServedGitHub:
    fake: FakeGitHub
    url: str


@pytest.fixture
def github() -> Iterator[ServedGitHub]:
    fake = FakeGitHub()
    with serving(fake) as url:
        yield ServedGitHub(fake, url)
