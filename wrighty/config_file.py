"""Where wrighty.json is and what it is called, without its models: the fast read commands
(cli/entry.py) find the file without loading pydantic (wrighty/config/ does)."""

from __future__ import annotations

import os
from pathlib import Path

from wrighty.inputs import MIB

CONFIG_FILENAME = "wrighty.json"
STATE_DIRNAME = ".wrighty"
SCHEMA_FILENAME = "wrighty.schema.json"
DEFAULT_STORE_URL = "sqlite:///.wrighty/wrighty.db"
MAX_CONFIG_BYTES = MIB
MAX_NUMBER_DIGITS = 30


def find_config(start: Path, explicit: Path | None = None) -> Path | None:
    """The config file to use: ``explicit`` if given, else the nearest wrighty.json upward.

    The nearest thing named wrighty.json is the one, whatever it is: a directory, a FIFO or a
    link that leads nowhere is then refused by its read, saying what it is, rather than passed
    over for a file further up."""
    if explicit is not None:
        return explicit
    directory = start.resolve()
    for candidate_dir in (directory, *directory.parents):
        candidate = candidate_dir / CONFIG_FILENAME
        if os.path.lexists(candidate):
            return candidate
    return None
