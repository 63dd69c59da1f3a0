"""What the Operations page shows (docs/web.md#operations): the fleet in the commands' own
forms (`operator/fleet.Fleet`, which the desk builds), as the plain values its template
takes. Pure: no Starlette, no Jinja2, no store.

Every string is plain text for the template to escape. A notification's message and error
are shown as the outbox holds them: redacted and bounded when the notice was written
(domain/notices.py), as `wrighty notify pending` shows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wrighty.operator.fleet import Fleet
    from wrighty.services.inbox import BoardSettings

NOT_SET = "not set"


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
