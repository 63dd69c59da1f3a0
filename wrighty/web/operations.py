"""What the Operations page shows (docs/web.md#operations): the fleet in the commands' own
forms (`operator/fleet.Fleet`, which the desk builds), as the plain values its template
takes. Pure: no Starlette, no Jinja2, no store.

Every string is plain text for the template to escape. A notification's message and error
are shown as the outbox holds them: redacted and bounded when the notice was written
(domain/notices.py), as `wrighty notify pending` shows them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wrighty.operator.fleet import Fleet
    from wrighty.services.inbox import BoardSettings

NOT_SET = "not set"
# What of a worker a live Operations page compares: not its heartbeat's age or its clock's
# offset, which change at every beat.
WORKER_KEYS = ("worker_id", "label", "agent", "state", "items", "liveness", "held_reason",
               "waiting_for", "clock_skewed")  # fmt: skip


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


def fleet_digest(fleet: Fleet) -> str:
    """What a live Operations page compares (web/app.py's watcher): the workers, circuits,
    budgets, notifications and the verdict's checks as they stand, not the ages that change
    every second (a problem's message may say one: its check's name is compared)."""
    status = fleet.status
    standing = {
        "verdict": fleet.verdict,
        "problems": [problem["check"] for problem in status["problems"]],
        "warnings": [warning["check"] for warning in status["warnings"]],
        "counts": status["counts"],
        "expired_leases": status["expired_leases"],
        "workers": [[worker[key] for key in WORKER_KEYS] for worker in status["workers"]],
        "circuits": [[row.circuit, row.probe] for row in fleet.circuits],
        "unreadable": fleet.unreadable_circuits,
        "budgets": [asdict(row) for row in fleet.budgets],
        "notices": [
            [row.notice.get(key) for key in ("id", "state", "attempts", "next_attempt_at")]
            for row in fleet.notices
        ],
    }
    text = json.dumps(standing, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
