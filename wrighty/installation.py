"""The installation id: one random id per machine+user, kept in the user's config directory.

It scopes resume affinity (a session's local transcript lives on one installation). It is never
derived from a host name or a user name.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from wrighty.errors import WrightyError
from wrighty.files import link_new, make_private_dirs

_FILENAME = "installation-id"
_PREFIX = "inst-"


def user_config_dir() -> Path:
    plain = plain_config_dir(os.environ, sys.platform)
    if plain is not None:
        return plain
    import platformdirs  # it imports tempfile, then shutil and its compressors: 10-20 ms

    return Path(platformdirs.user_config_dir("wrighty", appauthor=False))


def plain_config_dir(environ: Mapping[str, str], platform: str) -> Path | None:
    """The folder platformdirs names on Linux in the usual cases: an absolute
    XDG_CONFIG_HOME, else an absolute HOME's .config, with `wrighty` at the end; None for
    anything else (another system, a relative or missing variable), which platformdirs
    answers. tests/unit/test_installation.py keeps the two equal."""
    if not platform.startswith("linux"):
        return None
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if xdg.startswith("/"):
        return Path(xdg, "wrighty")
    home = environ.get("HOME", "")
    if xdg or not home.startswith("/"):
        return None
    return Path(home.rstrip("/") or "/", ".config", "wrighty")


def installation_id(config_dir: Path | None = None) -> str:
    """This installation's id, created on first use (safe when several processes race)."""
    directory = config_dir or user_config_dir()
    path = directory / _FILENAME
    existing = _read(path)
    if existing:
        return existing
    import secrets  # only to create the id, once per installation

    try:
        make_private_dirs(directory)
        candidate = directory / f".{_FILENAME}.{os.getpid()}.{secrets.token_hex(4)}"
        descriptor = os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            handle.write(_PREFIX + secrets.token_hex(12) + "\n")
        link_new(candidate, path)  # the first process to get here decides the id
    except OSError as error:
        raise WrightyError(
            f"{directory}: cannot record this installation's id ({error.strerror or error}); "
            "make the directory writable or set XDG_CONFIG_HOME"
        ) from None
    recorded = _read(path)
    if not recorded:
        raise WrightyError(f"{path}: installation id file is empty; delete it and try again")
    return recorded


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip() or None
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise WrightyError(
            f"{path}: cannot read the installation id ({type(error).__name__}); "
            "delete the file to create a new one"
        ) from None
