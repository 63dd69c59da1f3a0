"""How many server connections a wrighty process holds, and what it must do behind a
transaction pooler such as PgBouncer (docs/scale.md, docs/fleet.md#behind-pgbouncer).

A process keeps ``store.poolSize`` connections for its calls (one by default: a call holds one
only for its round trips, never while an agent, git or a check runs), and a worker one more
for its LISTEN. Behind a pooler in transaction mode, each transaction may run on another
server session, so nothing may live in a session: the settings a URL's ``options`` and wrighty
give (its timeouts, a schema) are set in each transaction (``set_config(..., true)``, which a
transaction's end undoes), no statement is prepared on the server, and LISTEN needs a
connection of its own past the pooler (``store.listenUrl``).
"""

from __future__ import annotations

import re

DEFAULT_POOL_SIZE = 1
MAX_POOL_SIZE = 64
POOLERS = ("auto", "transaction", "session", "none")
# What PgBouncer (and poolers like it) answer to a startup parameter they do not pass on.
_REFUSED_PARAMETER = re.compile(r"unsupported startup parameter", re.IGNORECASE)
_SETTING = re.compile(r"(?:-c\s*|--)([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*((?:\\\s|[^\s])*)")


def refused_options(message: str) -> bool:
    """Whether a connection was refused because a pooler does not take startup parameters."""
    return _REFUSED_PARAMETER.search(message) is not None


def settings_of(options: str) -> dict[str, str]:
    """The settings an ``options`` string gives (``-c name=value``, ``--name=value``), in
    order; ValueError naming what else it holds (a pooler could not carry it)."""
    found: dict[str, str] = {}
    rest = options
    for match in _SETTING.finditer(options):
        found[match.group(1)] = match.group(2).replace("\\ ", " ")
        rest = rest.replace(match.group(0), "", 1)
    if rest.strip():
        raise ValueError(
            "its options hold more than -c name=value settings, which cannot be carried into "
            "each transaction behind a pooler"
        )
    return found


def settings_or_none(options: str) -> dict[str, str]:
    """The settings ``options`` gives, or none when it holds anything else."""
    try:
        return settings_of(options)
    except ValueError:
        return {}


def per_transaction(settings: dict[str, str], *, local: bool = True) -> str:
    """One statement that gives the current transaction ``settings`` (set_config's third
    argument, true: for this transaction only; ``local`` false: for the session, as a session
    pooler's LISTEN connection keeps them), quoted as literals."""
    scope = "true" if local else "false"
    calls = ", ".join(f"set_config({_literal(name)}, {_literal(value)}, {scope})"
                      for name, value in settings.items())  # fmt: skip
    return f"SELECT {calls}"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
