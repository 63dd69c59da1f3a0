"""What the Operations page shows (docs/web.md#operations): the fleet in the commands' own
forms (`Fleet`, which the desk builds: `wrighty status --json`'s document, `wrighty providers
--json`'s circuits, `wrighty notify pending --json`'s notifications, `wrighty status`'s spend
lines), so that the page and the commands say the same thing by the same rules; and the plain
values its template takes. Pure: no Starlette, no Jinja2, no store.

Every string is plain text for the template to escape. A notification's message and error
are shown as the outbox holds them: redacted and bounded when the notice was written
(domain/notices.py), as `wrighty notify pending` shows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wrighty.domain.text import first_unprintable_in_line

if TYPE_CHECKING:
    from wrighty.services.inbox import BoardSettings

NOT_SET = "not set"
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


@dataclass(frozen=True)
class Setting:
    name: str
    value: str


def _number(value: float) -> str:
    """A threshold as `wrighty status --json` has it, a whole one without its ``.0``."""
    return str(int(value)) if float(value).is_integer() else str(value)


def operations_values(fleet: Fleet, settings: BoardSettings) -> dict[str, Any]:
    """The page's values: ``report`` is `wrighty status --json`'s document."""
    limits = settings.limits
    return {
        "report": fleet.status,
        "verdict": fleet.verdict,
        "thresholds": [
            Setting(name, NOT_SET if value is None else _number(value))
            for name, value in fleet.status["thresholds"].items()
        ],
        "circuits": fleet.circuits,
        "unreadable_circuits": fleet.unreadable_circuits,
        "budgets": fleet.budgets,
        "notices": fleet.notices,
        "per_item_budget": settings.budgets.per_item.describe(),
        "concurrency": [
            *(Setting(f"agent {name}", str(most)) for name, most in limits.agents.items()),
            *(Setting(f"label {name}", str(most)) for name, most in limits.labels.items()),
        ],
    }
