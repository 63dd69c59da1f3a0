"""The desk: what every entry point reads and does, on one open store (`Desk`), and the one
that does it with the commands' services, settings and words (`OperatorDesk`): the inbox's,
the web console's (`wrighty serve`), and next a tracker's or a chat's. Each action returns the
line its command prints, or raises the WrightyError whose one line the command would print.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from wrighty.errors import WrightyError

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from wrighty.domain.board import AttentionOrder
    from wrighty.domain.model import Run
    from wrighty.domain.morning import Morning
    from wrighty.domain.review import Readiness
    from wrighty.operator.context import AppContext
    from wrighty.operator.fleet import Fleet
    from wrighty.services.diff import Change
    from wrighty.services.inbox import Board, BoardSettings
    from wrighty.services.show import ShowFacts
    from wrighty.services.usage import DailySpend
    from wrighty.store.port import Store

# How many expired claims one reap from the inbox settles (`wrighty reap`'s default).
REAP_LIMIT = 100


@dataclass(frozen=True)
class ItemLook:
    """An item as a person looks at it: what `wrighty show` reports, and the tail of its last
    run's log here (or why there is none)."""

    facts: ShowFacts
    last_run: Run | None = None
    log: str | None = None
    log_problem: str | None = None

    @property
    def session(self) -> str | None:
        """The vendor's session id, when one is recorded."""
        session = self.facts.detail.session
        return session.session_id if session is not None else None


class Desk(Protocol):
    """What an entry point reads and does, on one open store."""

    settings: BoardSettings
    label: str  # the store, as a header names it

    def board(self, order: AttentionOrder) -> Board: ...

    def facts(self, item_id: int) -> ShowFacts: ...

    def look(self, item_id: int) -> ItemLook: ...

    def queue(self, item_id: int) -> str: ...

    def requeue(self, item_id: int, *, resume: bool) -> str: ...

    def cancel(self, item_id: int) -> str: ...

    def release(self, item_id: int) -> str: ...

    def reap(self) -> str: ...

    def set_priority(self, item_id: int, priority: int) -> str: ...

    def accept(self, item_id: int) -> str: ...

    def ready(self) -> Readiness: ...

    def accept_ready(self, confirmed: Sequence[int]) -> str: ...

    def reject(self, item_id: int, feedback: str) -> str: ...

    def verify(self, item_id: int) -> str: ...

    def handoff(self, item_id: int, to: str, note: str | None) -> str: ...

    def change(self, item_id: int, *, stat: bool, since: str | None = None) -> Change: ...

    def last_run_logs(self, item_id: int) -> tuple[Run, Path | None, str | None]: ...

    def secrets(self) -> tuple[str, ...]: ...

    def run_outcome(self, run_id: str) -> str | None: ...

    def agent_names(self) -> list[str]: ...

    def handoff_choices(self) -> list[str]: ...

    def create(
        self,
        *,
        title: str,
        body: str,
        agent: str | None,
        priority: str | None,
        labels: tuple[str, ...],
        after: tuple[int, ...],
        verify: tuple[str, ...],
        no_verify: bool,
        queue: bool,
    ) -> tuple[int, str]: ...

    def import_markdown(
        self, text: str, *, source: str, queue: bool, dry_run: bool
    ) -> tuple[list[str], list[int | None]]: ...

    def fleet(self) -> Fleet: ...

    def reset_circuit(self, name: str) -> str: ...

    def spend(self, days: int) -> DailySpend: ...

    def now(self) -> datetime: ...

    def morning(self, since: datetime) -> Morning: ...


def board_settings(app_ctx: AppContext) -> BoardSettings:
    """What the board reads under, from wrighty.json (its defaults without one)."""
    from wrighty.config import agent_circuit, budgets_of, limits_of, thresholds_of
    from wrighty.installation import installation_id
    from wrighty.services.inbox import BoardSettings

    config = app_ctx.config().config
    here = installation_id()
    circuits = {}
    for name in sorted({*config.agents, config.worker.default_agent}):
        circuit = agent_circuit(config, name, installation_id=here)
        if circuit is not None:
            circuits[name] = circuit
    return BoardSettings(
        installation_id=here,
        default_agent=config.worker.default_agent,
        thresholds=thresholds_of(config),
        worker_max_age_seconds=config.status.worker_max_age_seconds,
        budgets=budgets_of(config),
        limits=limits_of(config),
        circuits=circuits,
    )


class OperatorDesk:
    """The desk on one open store, with the commands' services, settings and words."""

    def __init__(self, app_ctx: AppContext, store: Store, settings: BoardSettings) -> None:
        self.app_ctx = app_ctx
        self.store = store
        self.settings = settings
        self.label = _store_label(app_ctx)

    def board(self, order: AttentionOrder) -> Board:
        from wrighty.services.inbox import read_board

        return read_board(self.store, self.settings, now=self.app_ctx.now(), order=order)

    def look(self, item_id: int) -> ItemLook:
        """What `wrighty show` reports about the item, and its last run's log here."""
        from wrighty.config import STATE_DIRNAME
        from wrighty.services.inbox import log_tail

        facts = self.facts(item_id)
        runs = facts.detail.runs
        last = max(runs, key=lambda run: run.attempt) if runs else None
        if last is None:
            return ItemLook(facts)
        state_dir = self.app_ctx.config().root / STATE_DIRNAME
        log, problem = log_tail(
            state_dir, last, installation_id=self.settings.installation_id,
            secrets=self.app_ctx.secrets(),
        )  # fmt: skip
        return ItemLook(facts, last, log, problem)

    def facts(self, item_id: int) -> ShowFacts:
        """What `wrighty show` gathers about the item (NotFoundError for an unknown one)."""
        from wrighty.services.show import show_facts

        return show_facts(self.app_ctx, self.store, item_id)

    def queue(self, item_id: int) -> str:
        """`wrighty queue ID`: todo -> queued, and its line."""
        from wrighty.operator.sentences import moved_line
        from wrighty.services.items import queue_item

        return moved_line(queue_item(self.store, item_id, now=self.app_ctx.now()))

    def requeue(self, item_id: int, *, resume: bool) -> str:
        from wrighty.operator.sentences import moved_line
        from wrighty.services.items import requeue_item

        return moved_line(requeue_item(self.store, item_id, resume=resume, now=self.app_ctx.now()))

    def cancel(self, item_id: int) -> str:
        from wrighty.operator.sentences import moved_line
        from wrighty.services.items import cancel_item

        return moved_line(cancel_item(self.store, item_id, now=self.app_ctx.now()))

    def release(self, item_id: int) -> str:
        from wrighty.operator.sentences import moved_line
        from wrighty.services.items import release_item

        return moved_line(release_item(self.store, item_id, now=self.app_ctx.now()))

    def reap(self) -> str:
        from wrighty.operator.actions import reap_now
        from wrighty.operator.sentences import reaped_lines

        return "; ".join(reaped_lines(reap_now(self.app_ctx, self.store, limit=REAP_LIMIT)))

    def set_priority(self, item_id: int, priority: int) -> str:
        from wrighty.operator.sentences import edited_line
        from wrighty.services.items import edit_item

        change = edit_item(self.store, item_id, now=self.app_ctx.now(), priority=priority)
        return edited_line(change)

    def accept(self, item_id: int) -> str:
        from wrighty.operator.actions import NotIntegrated, accept_now
        from wrighty.operator.sentences import accepted_lines, stays_in_review

        try:
            accepted = accept_now(self.app_ctx, self.store, item_id)
        except NotIntegrated as failed:
            raise WrightyError(stays_in_review(failed.item_id, failed.error)) from None
        return "; ".join(accepted_lines(accepted))

    def ready(self) -> Readiness:
        """The items in review accept all ready would take, in its order, and why each of
        the others waits (`wrighty accept --all --dry-run`)."""
        from wrighty.services.review import ready_items

        return ready_items(self.store)

    def accept_ready(self, confirmed: Sequence[int]) -> str:
        """`wrighty accept --all`, for the ready items a person was shown and confirmed
        (``confirmed``): refused, with nothing accepted, when one of them has moved since; a
        worker lands each (docs/landing.md#accepting-every-ready-item)."""
        from wrighty.operator.actions import NotIntegrated, accept_many_now, ready_ids
        from wrighty.operator.sentences import accepted_line, stays_in_review

        ids = ready_ids(self.store, confirmed)
        try:
            accepted = accept_many_now(self.app_ctx, self.store, ids)
        except NotIntegrated as failed:
            said = [accepted_line(one) for one in failed.accepted]
            raise WrightyError(
                "; ".join([*said, stays_in_review(failed.item_id, failed.error)])
            ) from None
        return "; ".join(accepted_line(one) for one in accepted)

    def reject(self, item_id: int, feedback: str) -> str:
        from wrighty.operator.actions import reject_now
        from wrighty.operator.sentences import rejected_line

        return rejected_line(*reject_now(self.app_ctx, self.store, item_id, feedback))

    def verify(self, item_id: int) -> str:
        """`wrighty verify`: its summary line; WrightyError with it when a check failed."""
        from wrighty.operator.actions import verify_now
        from wrighty.operator.sentences import verified_line

        result = verify_now(self.app_ctx, self.store, item_id)
        line = verified_line(result)
        if not result.passed:
            raise WrightyError(line)
        return line

    def handoff(self, item_id: int, to: str, note: str | None) -> str:
        """`wrighty handoff ID --to AGENT [--note TEXT]`: its line."""
        from wrighty.operator.actions import handoff_now
        from wrighty.operator.sentences import handed_line

        return handed_line(*handoff_now(self.app_ctx, self.store, item_id, to, note))

    def change(self, item_id: int, *, stat: bool, since: str | None = None) -> Change:
        """`wrighty diff [--stat]`'s change (WrightyError with its refusal); ``since``: the
        change since that commit (a person's last review) instead of since its base."""
        from wrighty.operator.actions import change_now

        return change_now(self.app_ctx, self.store, item_id, stat=stat, since=since)

    def secrets(self) -> tuple[str, ...]:
        """The values no log or page shows (AppContext.secrets)."""
        return self.app_ctx.secrets()

    def last_run_logs(self, item_id: int) -> tuple[Run, Path | None, str | None]:
        """The item's last run, the folder of its log files here, and why this machine has
        none (None: it has them, or will once its agent writes); NotFoundError for an item
        with no run, as `wrighty logs` says it."""
        from wrighty.config import STATE_DIRNAME
        from wrighty.services.items import find_run
        from wrighty.services.runlogs import logs_problem, run_log_dir

        run = find_run(self.store, item_id, None)
        log_dir = run_log_dir(self.app_ctx.config().root / STATE_DIRNAME, run)
        problem = logs_problem(run, log_dir, installation_id=self.settings.installation_id)
        return run, (None if problem else log_dir), problem

    def run_outcome(self, run_id: str) -> str | None:
        """None while the run is open; how it ended once it has (its outcome class)."""
        from wrighty.services.items import get_run

        run = get_run(self.store, run_id)
        if run is None or run.ended_at is not None:
            ended = run.outcome_class if run is not None else None
            return ended.value if ended is not None else "ended"
        return None

    def agent_names(self) -> list[str]:
        """The agents an item may name (wrighty.json's and the built-in ones)."""
        return list(self.app_ctx.config().config.agent_names())

    def handoff_choices(self) -> list[str]:
        """The agents an item may be handed to from here: configured in wrighty.json, and
        their program found on this machine (agents.offered_agents)."""
        from wrighty.agents import offered_agents

        loaded = self.app_ctx.config()
        return offered_agents(loaded.config, project_root=loaded.root)

    def create(
        self,
        *,
        title: str,
        body: str,
        agent: str | None,
        priority: str | None,
        labels: tuple[str, ...],
        after: tuple[int, ...],
        verify: tuple[str, ...],
        no_verify: bool,
        queue: bool,
    ) -> tuple[int, str]:
        """`wrighty create` with these options and this task: the new item's id and the
        command's line."""
        from wrighty.operator.forms import ItemOptions, new_item_of
        from wrighty.operator.sentences import created_line
        from wrighty.services.items import create_item

        options = ItemOptions(
            title=title, agent=agent, priority=priority, labels=labels, after=after,
            verify=verify, no_verify=no_verify, queue=queue,
        )  # fmt: skip
        new = new_item_of(self.app_ctx.config().config, options, lambda: body)
        item = create_item(self.store, new, now=self.app_ctx.now())
        return item.id, created_line(item, new)

    def import_markdown(
        self, text: str, *, source: str, queue: bool, dry_run: bool
    ) -> tuple[list[str], list[int | None]]:
        """`wrighty import` of a file named ``source`` holding ``text``: the command's lines
        (one per section, the counts last) and each section's item (None: one a dry run
        would make)."""
        from wrighty.operator.actions import import_now
        from wrighty.operator.sentences import imported_lines
        from wrighty.services.importing import MarkdownSource

        try:
            markdown = MarkdownSource.read(source, text)
            results = import_now(self.app_ctx, self.store, markdown, queue=queue, dry_run=dry_run)
        except WrightyError as error:
            raise WrightyError(f"{source}: {error}") from None
        return imported_lines(results, dry_run=dry_run), [r.item_id for r in results]

    # The web console's Operations and Spend pages (docs/web.md).

    def fleet(self) -> Fleet:
        """`wrighty status`'s report (workers, provider circuits, spend, outbox, verdict) and
        `wrighty notify pending`'s notifications, in the commands' forms."""
        from wrighty.operator.fleet import fleet
        from wrighty.services.inbox import board_status
        from wrighty.services.notify import undelivered

        report = board_status(self.store, self.settings, now=self.app_ctx.now())
        return fleet(report, undelivered(self.store))

    def reset_circuit(self, name: str) -> str:
        """`wrighty providers reset NAME`, and its line."""
        from wrighty.operator.sentences import reset_line
        from wrighty.services.circuits import reset_circuit

        return reset_line(name, reset_circuit(self.store, name, now=self.app_ctx.now()))

    def spend(self, days: int) -> DailySpend:
        """`wrighty usage --by day` and `--by agent` over the last ``days`` budget days."""
        from wrighty.services.usage import daily_spend

        settings = self.settings
        return daily_spend(
            self.store,
            days=days,
            now=self.app_ctx.now(),
            budgets=settings.budgets,
            default_agent=settings.default_agent,
        )

    # The console's "Since you last looked" page (docs/web.md#since-you-last-looked).

    def now(self) -> datetime:
        """The fleet's time (the clock the store's events are written by)."""
        return self.app_ctx.now()

    def morning(self, since: datetime) -> Morning:
        """What moved since ``since``, grouped as `wrighty list --since` and the morning
        digest see it (domain/morning.morning_of)."""
        from wrighty.domain.morning import morning_of

        return morning_of(self.store.list_items_moved_since(since), since)


def _store_label(app_ctx: AppContext) -> str:
    """The store as the header names it: a SQLite file under the current directory by its
    relative path."""
    target = app_ctx.store_target()
    if target.sqlite_path is not None and target.sqlite_path.is_relative_to(app_ctx.cwd):
        return str(target.sqlite_path.relative_to(app_ctx.cwd))
    return target.describe()
