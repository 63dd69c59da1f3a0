"""`wrighty inbox`: the terminal inbox (wrighty/inbox/, on Textual).

This module is the inbox's desk (and the web console's, `wrighty serve`): what it reads and
does, on the store and config of the command line, with the same services and the same words
as the commands (`show`, `requeue`, `cancel`, `release`, `reap`, `edit`, `accept`, `reject`).
Textual is imported only when the inbox starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from wrighty.cli.common import app_context
from wrighty.cli.context import AppContext
from wrighty.domain.board import AttentionOrder
from wrighty.errors import WrightyError

if TYPE_CHECKING:
    from pathlib import Path

    from wrighty.domain.model import Run
    from wrighty.inbox.views import DetailView
    from wrighty.services.diff import Change
    from wrighty.services.inbox import Board, BoardSettings
    from wrighty.services.show import ShowFacts
    from wrighty.services.usage import DailySpend
    from wrighty.store.port import Store
    from wrighty.web.operations import Fleet

# How often the board is read again, at least and at most (seconds).
MIN_INTERVAL_SECONDS = 0.5
MAX_INTERVAL_SECONDS = 3600.0
# How many expired claims one reap from the inbox settles (`wrighty reap`'s default).
REAP_LIMIT = 100


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
    """The inbox's desk on one open store."""

    def __init__(self, app_ctx: AppContext, store: Store, settings: BoardSettings) -> None:
        self.app_ctx = app_ctx
        self.store = store
        self.settings = settings
        self.label = _store_label(app_ctx)

    def board(self, order: AttentionOrder) -> Board:
        from wrighty.services.inbox import read_board

        return read_board(self.store, self.settings, now=self.app_ctx.now(), order=order)

    def detail(self, item_id: int) -> DetailView:
        from wrighty.cli.items import print_show
        from wrighty.config import STATE_DIRNAME
        from wrighty.inbox.views import Collector, DetailView
        from wrighty.services.inbox import log_tail
        from wrighty.services.show import show_facts

        facts = show_facts(self.app_ctx, self.store, item_id)
        shown = Collector()
        print_show(shown, facts)
        runs = facts.detail.runs
        last = max(runs, key=lambda run: run.attempt) if runs else None
        log = problem = None
        if last is not None:
            state_dir = self.app_ctx.config().root / STATE_DIRNAME
            log, problem = log_tail(
                state_dir,
                last,
                installation_id=self.settings.installation_id,
                secrets=self.app_ctx.secrets(),
            )
        session = facts.detail.session
        return DetailView(
            facts.detail.item,
            shown.collected,
            session=session.session_id if session is not None else None,
            last_run=last,
            log=log,
            log_problem=problem,
        )

    def facts(self, item_id: int) -> ShowFacts:
        """What `wrighty show` gathers about the item (NotFoundError for an unknown one)."""
        from wrighty.services.show import show_facts

        return show_facts(self.app_ctx, self.store, item_id)

    def show_text(self, facts: ShowFacts) -> str:
        """`wrighty show`'s text, as the command prints it to a pipe (the web console's)."""
        import io

        from wrighty.cli.items import print_show
        from wrighty.cli.render import OutputConsole

        out = io.StringIO()
        console = OutputConsole(file=out, color_system=None, force_terminal=False, highlight=False)
        print_show(console, facts)
        return out.getvalue()

    def requeue(self, item_id: int, *, resume: bool) -> str:
        from wrighty.cli.items import moved_line
        from wrighty.services.items import requeue_item

        return moved_line(requeue_item(self.store, item_id, resume=resume, now=self.app_ctx.now()))

    def cancel(self, item_id: int) -> str:
        from wrighty.cli.items import moved_line
        from wrighty.services.items import cancel_item

        return moved_line(cancel_item(self.store, item_id, now=self.app_ctx.now()))

    def release(self, item_id: int) -> str:
        from wrighty.cli.items import moved_line
        from wrighty.services.items import release_item

        return moved_line(release_item(self.store, item_id, now=self.app_ctx.now()))

    def reap(self) -> str:
        from wrighty.cli.items import reap_now, reaped_lines

        return "; ".join(reaped_lines(reap_now(self.app_ctx, self.store, limit=REAP_LIMIT)))

    def set_priority(self, item_id: int, priority: int) -> str:
        from wrighty.cli.items import edited_line
        from wrighty.services.items import edit_item

        change = edit_item(self.store, item_id, now=self.app_ctx.now(), priority=priority)
        return edited_line(change)

    def accept(self, item_id: int) -> str:
        from wrighty.cli.review import accept_now, accepted_lines, stays_in_review
        from wrighty.services.integrate import IntegrationError

        try:
            accepted = accept_now(self.app_ctx, self.store, item_id)
        except IntegrationError as failed:
            raise WrightyError(stays_in_review(item_id, failed)) from None
        return "; ".join(accepted_lines(accepted))

    def reject(self, item_id: int, feedback: str) -> str:
        from wrighty.cli.review import reject_now, rejected_line

        return rejected_line(*reject_now(self.app_ctx, self.store, item_id, feedback))

    def verify(self, item_id: int) -> str:
        """`wrighty verify`: its summary line; WrightyError with it when a check failed."""
        from wrighty.cli.verify import verified_line, verify_now

        result = verify_now(self.app_ctx, self.store, item_id)
        line = verified_line(result)
        if not result.passed:
            raise WrightyError(line)
        return line

    def handoff(self, item_id: int, to: str, note: str | None) -> str:
        """`wrighty handoff ID --to AGENT [--note TEXT]`: its line."""
        from wrighty.cli.handoff import handed_line, handoff_now

        return handed_line(*handoff_now(self.app_ctx, self.store, item_id, to, note))

    def change(self, item_id: int, *, stat: bool) -> Change:
        """`wrighty diff [--stat]`'s change (WrightyError with its refusal)."""
        from wrighty.cli.diff import change_now

        return change_now(self.app_ctx, self.store, item_id, stat=stat)

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
        from wrighty.cli.items import ItemOptions, created_line, new_item_of
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
        from wrighty.cli.importing import import_now, imported_lines
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
        from wrighty.cli.operations import fleet
        from wrighty.services.inbox import board_status
        from wrighty.services.notify import undelivered

        report = board_status(self.store, self.settings, now=self.app_ctx.now())
        return fleet(report, undelivered(self.store))

    def reset_circuit(self, name: str) -> str:
        """`wrighty providers reset NAME`, and its line."""
        from wrighty.cli.providers import reset_line
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


def _store_label(app_ctx: AppContext) -> str:
    """The store as the header names it: a SQLite file under the current directory by its
    relative path."""
    target = app_ctx.store_target()
    if target.sqlite_path is not None and target.sqlite_path.is_relative_to(app_ctx.cwd):
        return str(target.sqlite_path.relative_to(app_ctx.cwd))
    return target.describe()


def inbox(
    ctx: typer.Context,
    read_only: Annotated[
        bool,
        typer.Option("--read-only", help="Look, do not act: every action is refused."),
    ] = False,
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            min=MIN_INTERVAL_SECONDS,
            max=MAX_INTERVAL_SECONDS,
            help="Seconds between reads of the store.",
        ),
    ] = 2.0,
) -> None:
    """The items that need a person, live, with the actions one key away (? for the keys)."""
    import sys

    if not (sys.stdin is not None and sys.stdin.isatty() and sys.stdout.isatty()):
        raise WrightyError(
            "wrighty inbox needs a terminal on stdin and stdout; for scripts use "
            "`wrighty list --attention --json` or `wrighty status --json`"
        )
    app_ctx = app_context(ctx)
    settings = board_settings(app_ctx)
    from wrighty.inbox.app import InboxApp

    with app_ctx.store() as store:
        InboxApp(
            OperatorDesk(app_ctx, store, settings), read_only=read_only, interval=interval
        ).run()
