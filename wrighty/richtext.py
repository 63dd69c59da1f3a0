"""The rich text every renderer (the CLI, the inbox) shares, so that no entry point imports
another's rendering: text from outside wrighty made safe to show (`outside`), and a time as
plain output shows it (`local_time`). The style names are in styles.py."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text

from wrighty.domain.text import printable_line


def outside(text: str, style: str = "") -> Text:
    """Text from outside wrighty (a store, a file, an agent, a vendor's tool) as one line:
    control and invisible characters shown as escapes (`printable_line`), and brackets taken
    as text, not as rich markup."""
    return Text(printable_line(text), style=style)


def local_time(moment: datetime | None) -> str:
    """A time as plain output shows it: local time, to the second; "-" when not set."""
    if moment is None:
        return "-"
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")
