"""The installation id's folder is platformdirs' wherever installation.py names it without
platformdirs (a read command then does not import it)."""

from __future__ import annotations

import sys
from pathlib import Path

import platformdirs
import pytest

from wrighty.installation import plain_config_dir

ENVIRONMENTS = [
    {"XDG_CONFIG_HOME": "/srv/config", "HOME": "/home/ann"},
    {"XDG_CONFIG_HOME": "/srv//config/", "HOME": "/home/ann"},
    {"XDG_CONFIG_HOME": "relative/config", "HOME": "/home/ann"},
    {"XDG_CONFIG_HOME": "", "HOME": "/home/ann"},
    {"HOME": "/home/ann"},
    {"HOME": "/home/ann/"},
    {"HOME": "/"},
    {"HOME": "relative"},
    {},
]


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="named without platformdirs on Linux"
)
@pytest.mark.parametrize("environ", ENVIRONMENTS, ids=repr)
def test_the_plain_folder_is_platformdirs(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str]
) -> None:
    for name in ("XDG_CONFIG_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    plain = plain_config_dir(environ, sys.platform)
    if plain is None:
        return  # platformdirs answers
    assert plain == Path(platformdirs.user_config_dir("wrighty", appauthor=False))


def test_other_systems_ask_platformdirs() -> None:
    assert plain_config_dir({"HOME": "/Users/ann"}, "darwin") is None
    assert plain_config_dir({"HOME": "/home/ann"}, "linux") == Path("/home/ann/.config/wrighty")
