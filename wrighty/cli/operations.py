"""The web console's Operations page in the commands' own forms (web/operations.Fleet, which
the desk hands over): `wrighty status --json`'s document, `wrighty providers --json`'s circuits
with `wrighty providers`'s probe column, `wrighty notify pending --json`'s notifications with
the title and text their sinks get, and each agent's spend in `wrighty status`'s words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wrighty.cli.documents import circuit_json, notice_json, status_json
from wrighty.domain.text import printable_line
from wrighty.operator.sentences import spend_text

if TYPE_CHECKING:
    from wrighty.domain.ledger import AgentSpending
    from wrighty.domain.notices import StoredNotice
    from wrighty.services.circuits import CircuitView
    from wrighty.services.status import StatusReport
    from wrighty.web.operations import BudgetRow, CircuitRow, Fleet, NoticeRow


def fleet(report: StatusReport, notices: list[StoredNotice]) -> Fleet:
    from wrighty.web.operations import Fleet

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
    from wrighty.operator.sentences import probe_text
    from wrighty.web.operations import CircuitRow

    return CircuitRow(circuit_json(view), probe_text(view), view.shut)


def budget_row(row: AgentSpending) -> BudgetRow:
    from wrighty.web.operations import BudgetRow

    return BudgetRow(
        row.agent,
        spend_text(row.period),
        row.limit.describe(),
        spend_text(row.last_day),
        None if row.hold is None else row.hold.reason(),
    )


def notice_row(stored: StoredNotice) -> NoticeRow:
    from wrighty.web.operations import NoticeRow

    title, text = stored.notice.text()
    return NoticeRow(notice_json(stored), title, text)
