"""The fleet as plain values (`Fleet`): what the Operations page shows, and any entry point
may, in the commands' own forms: `wrighty status --json`'s document, `wrighty providers
--json`'s circuits with `wrighty providers`'s probe column, `wrighty notify pending --json`'s
notifications with the title and text their sinks get, and each agent's spend in `wrighty
status`'s words; so that every entry point and the commands say the same thing by the same
rules. Every string is plain text for its renderer to escape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wrighty.domain.text import first_unprintable_in_line, printable_line
from wrighty.operator.documents import circuit_json, notice_json, status_json
from wrighty.operator.sentences import probe_text, spend_text

if TYPE_CHECKING:
    from wrighty.domain.ledger import AgentSpending
    from wrighty.domain.outbox import StoredNotice
    from wrighty.services.circuits import CircuitView
    from wrighty.services.status import StatusReport

# The longest circuit name a reset's URL may carry (names are `account:NAME` or
# `agent:NAME@INSTALLATION`, from wrighty.json and the installation id).
MAX_CIRCUIT_NAME_CHARS = 512


def parse_circuit_name(text: str) -> str | None:
    """A circuit's name from a URL: one printable line of at most MAX_CIRCUIT_NAME_CHARS
    (no name the commands could write is anything else); None otherwise."""
    if not (0 < len(text) <= MAX_CIRCUIT_NAME_CHARS) or first_unprintable_in_line(text):
        return None
    return text


@dataclass(frozen=True)
class CircuitRow:
    """A provider circuit as `wrighty providers --json` lists it, who holds its probe (as
    `wrighty providers` says it), and whether it is open or half-open."""

    circuit: dict[str, Any]
    probe: str
    shut: bool

    @property
    def resettable(self) -> bool:
        """Whether the page offers its reset: it is shut, and its name fits in our URL (one
        that does not is reset with `wrighty providers reset`)."""
        return self.shut and parse_circuit_name(self.circuit["name"]) is not None


@dataclass(frozen=True)
class NoticeRow:
    """A notification as `wrighty notify pending --json` lists it, with the title and text
    its sinks get."""

    notice: dict[str, Any]
    title: str
    text: str


@dataclass(frozen=True)
class BudgetRow:
    """An agent's spend as `wrighty status` says it: in the budget day, against its budget,
    in the last 24 hours, and the hold on its new runs when the budget is spent."""

    agent: str
    period: str
    limit: str
    last_day: str
    hold: str | None


@dataclass(frozen=True)
class Fleet:
    """The fleet as the commands give it (the desk's `fleet`)."""

    status: dict[str, Any]  # `wrighty status --json`
    verdict: str  # healthy, unhealthy, no thresholds set
    circuits: list[CircuitRow] = field(default_factory=list)
    unreadable_circuits: list[str] = field(default_factory=list)
    budgets: list[BudgetRow] = field(default_factory=list)
    notices: list[NoticeRow] = field(default_factory=list)


def fleet(report: StatusReport, notices: list[StoredNotice]) -> Fleet:

    spending = report.spending
    return Fleet(
        status=status_json(report),
        verdict=report.verdict.value,
        circuits=[circuit_row(view) for view in report.circuits],
        unreadable_circuits=[
            printable_line(str(error)) for error in getattr(report.circuits, "unreadable", ())
        ],
        budgets=[budget_row(row) for row in spending.agents] if spending is not None else [],
        notices=[notice_row(stored) for stored in notices],
    )


def circuit_row(view: CircuitView) -> CircuitRow:

    return CircuitRow(circuit_json(view), probe_text(view), view.shut)


def budget_row(row: AgentSpending) -> BudgetRow:

    return BudgetRow(
        row.agent,
        spend_text(row.period),
        row.limit.describe(),
        spend_text(row.last_day),
        None if row.hold is None else row.hold.reason(),
    )


def notice_row(stored: StoredNotice) -> NoticeRow:

    title, text = stored.notice.text()
    return NoticeRow(notice_json(stored), title, text)
