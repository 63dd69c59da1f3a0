"""`wrighty status --json` without the typer app and the config's models: what monitoring
scripts call every few seconds (entry.py recognises the command line).

It answers only where it gives what the full command would, byte for byte: for a project whose
wrighty.json quick_config.py vouches for, on a store every row of which reads. Anything else
(no wrighty.json, another one, a store that cannot be opened, a row that does not read, any
error) it leaves to the full app, which reads the same things again and says what it says;
this command only reads, so reading twice changes nothing. tests/cli/test_fast_status.py
compares the two.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from wrighty.cli.quick_config import quick_read_settings

if TYPE_CHECKING:
    from wrighty.services.settings import ReadSettings


def status_json_answer(cwd: Path) -> tuple[str, int] | None:
    """What `wrighty status --json` prints in ``cwd`` and its exit status (1: unhealthy), or
    None where the full app must answer."""
    settings = quick_read_settings(cwd, None)
    if settings is None:
        return None
    try:
        return _answer(settings)
    except Exception:  # the full app runs the command again, and reports it as it does
        return None


def _answer(settings: ReadSettings) -> tuple[str, int] | None:
    from wrighty.cli.documents import printed_json
    from wrighty.installation import installation_id
    from wrighty.operator.documents import status_json
    from wrighty.services import status as status_service
    from wrighty.services.clock import MEASURE_ATTEMPTS, StoreClock
    from wrighty.store import open_store, parse_store_url

    store = open_store(parse_store_url(settings.store_url, base=settings.root))
    try:
        clock = StoreClock(store.store_time)
        clock.measure(attempts=MEASURE_ATTEMPTS)
        report = status_service.status_report(
            store,
            now=clock.now(),
            thresholds=settings.thresholds(),
            worker_max_age_seconds=settings.worker_max_age_seconds,
            installation_id=installation_id(),
            default_agent=settings.default_agent,
            ledger=status_service.LedgerScope(
                settings.budgets, settings.default_agent, lifetime=False
            ),
        )
        if store.unreadable_rows():  # the full app tells each on stderr
            return None
    finally:
        store.close()
    return printed_json(status_json(report)) + "\n", 0 if report.healthy else 1
