"""`--json`'s printing: a document of `operator/documents.py` on standard output (no rich
here: a command that prints JSON does not load the terminal rendering)."""

from __future__ import annotations

from wrighty.domain.text import json_printable
from wrighty.operator.documents import json_text


def print_json(document: object) -> None:
    """``document`` on standard output as indented JSON, unsafe characters escaped."""
    import typer  # not for the fast `status --json` (entry.py), which prints it itself

    typer.echo(printed_json(document))


def printed_json(document: object) -> str:
    """``document`` as `--json` prints it: indented JSON, unsafe characters escaped."""
    return json_printable(json_text(document, indent=2))
