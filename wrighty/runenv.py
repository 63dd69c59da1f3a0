"""What the worker gives a run in its environment, and what the commands an agent calls from
inside it (`wrighty finish`, `fail`, `report-usage`) read back (docs/worker.md#the-agents-
environment).

Those commands work from this alone, never from re-reading the project's wrighty.json: a file
half-written while the agent runs must not turn an agent's report into an exit 2.

- ``WRIGHTY_RUN_STORE``: the store the worker uses, as an absolute URL without any password
  (StoreTarget.url). The agent inherits the worker's environment, so PGPASSWORD, PGPASSFILE,
  ~/.pgpass and PGSERVICEFILE work for it as for the worker; a password written only in the
  worker's URL is not handed on.
- ``WRIGHTY_RUN_PRICING``: wrighty.json's `pricing`, as
  ``{"model": [input, output, cache_read, cache_write]}`` (USD per million tokens), for
  `report-usage` to estimate a cost the agent does not give.
- ``WRIGHTY_RUN_SECRET_NAMES``: the names (never the values) of every `agents.<name>.env`
  variable, comma-separated, so that `fail --reason` hides their values as the worker does
  (``run_secrets``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from wrighty.config import MAX_MODEL_NAME as MAX_MODEL_CHARS
from wrighty.config import MAX_PRICE_PER_MTOK
from wrighty.domain.redact import secret_values
from wrighty.domain.usage import Price
from wrighty.errors import StoreError, WrightyError
from wrighty.store import StoreTarget, parse_store_url

STORE_VARIABLE = "WRIGHTY_RUN_STORE"
PRICING_VARIABLE = "WRIGHTY_RUN_PRICING"
SECRET_NAMES_VARIABLE = "WRIGHTY_RUN_SECRET_NAMES"  # noqa: S105 (a name, not a secret)


def run_variables(
    target: StoreTarget,
    pricing: Mapping[str, Price],
    *,
    config_path: Path | None,
    secret_names: Iterable[str] = (),
) -> dict[str, str]:
    """The variables a worker adds to each run's environment (besides the run's own id and
    token): its store, its pricing, the names of the variables whose values are secret, and
    the wrighty.json it runs with (for any other command the agent runs)."""
    variables = {
        **secret_names_variable(secret_names),
        STORE_VARIABLE: target.url(),
        PRICING_VARIABLE: json.dumps(
            {
                model: [price.input, price.output, price.cache_read, price.cache_write]
                for model, price in pricing.items()
            },
            separators=(",", ":"),
        ),
    }
    if config_path is not None:
        variables["WRIGHTY_CONFIG"] = str(config_path)
    return variables


def secret_names_variable(names: Iterable[str]) -> dict[str, str]:
    """``WRIGHTY_RUN_SECRET_NAMES``, naming ``names`` (none: not set)."""
    joined = ",".join(sorted(set(names)))
    return {SECRET_NAMES_VARIABLE: joined} if joined else {}


def run_store(environ: Mapping[str, str]) -> StoreTarget | None:
    """The store the run's worker gave it; None when the run was given none (a run started
    by a wrighty before this one, or a command run by hand)."""
    text = environ.get(STORE_VARIABLE)
    if text is None:
        return None
    if not text.strip():
        raise WrightyError(f"{STORE_VARIABLE} is empty: it names the store the run's worker uses")
    try:
        target = parse_store_url(text, base=Path("/"))
    except StoreError as error:  # its words name no password
        raise WrightyError(f"{STORE_VARIABLE}: {error}") from None
    if target.sqlite_path is not None and not _absolute_sqlite(text):
        raise WrightyError(
            f"{STORE_VARIABLE} must be an absolute store URL "
            "(sqlite:////path/to/wrighty.db or postgresql://...), as the worker writes it"
        )
    return target


def run_secrets(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values a report from inside a run never shows: the environment's credential
    variables and those ``WRIGHTY_RUN_SECRET_NAMES`` names (agents.<name>.env's)."""
    names = [name for name in environ.get(SECRET_NAMES_VARIABLE, "").split(",") if name]
    return secret_values(environ, configured=[{name: environ.get(name, "") for name in names}])


def _absolute_sqlite(text: str) -> bool:
    path = text.strip().removeprefix("sqlite:///")
    return Path(path).is_absolute()


def run_pricing(environ: Mapping[str, str]) -> dict[str, Price]:
    """The pricing the run's worker gave it (none: no estimate)."""
    text = environ.get(PRICING_VARIABLE)
    if text is None:
        return {}
    try:
        document: Any = json.loads(text)
    except ValueError:
        raise WrightyError(f"{PRICING_VARIABLE} is not JSON: {_SHAPE}") from None
    if not isinstance(document, dict):
        raise WrightyError(f"{PRICING_VARIABLE} is not a JSON object: {_SHAPE}")
    return {_model(name): _price(name, entry) for name, entry in document.items()}


_SHAPE = 'give {"MODEL": [input, output, cacheRead, cacheWrite]} in USD per million tokens'


def _model(name: str) -> str:
    if not 1 <= len(name) <= MAX_MODEL_CHARS:
        raise WrightyError(
            f"{PRICING_VARIABLE}: a model name has 1 to {MAX_MODEL_CHARS} characters"
        )
    return name


def _price(name: str, entry: object) -> Price:
    figures = entry if isinstance(entry, list) else None
    if figures is None or len(figures) != 4 or not all(_is_price(x) for x in figures):
        raise WrightyError(
            f"{PRICING_VARIABLE}: the price of {json.dumps(name)[:60]} is not four numbers "
            f"from 0 to {MAX_PRICE_PER_MTOK:g}: {_SHAPE}"
        )
    return Price(*(float(x) for x in figures))


def _is_price(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= MAX_PRICE_PER_MTOK
    )
