"""What every command group shares: the one-line errors, the common options, the context and
the console.

Everything here is cheap to import: the command modules import it at start-up, before any
command is chosen (see wrighty/cli/app.py).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

try:  # typer 0.2x ships its own copy of click
    from typer._click.exceptions import NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover - older typer, on click itself
    from click.exceptions import NoArgsIsHelpError, UsageError  # type: ignore[no-redef,import-not-found,assignment,unused-ignore]

from wrighty.domain.model import MAX_ITEM_ID
from wrighty.domain.text import printable_line
from wrighty.errors import WrightyError, bounded_message
from wrighty.operator.context import AppContext

if TYPE_CHECKING:
    from pathlib import Path

    from wrighty.cli.render import OutputConsole
    from wrighty.config import LoadedConfig

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _refuse(message: str, exit_code: int = EXIT_USAGE) -> NoReturn:
    """One line on stderr, with no control character of the user's input left in it."""
    typer.echo(f"wrighty: {printable_line(bounded_message(message))}", err=True)
    raise typer.Exit(exit_code)


def _usage_line(error: UsageError) -> str:
    where = f" (see `{error.ctx.command_path} --help`)" if error.ctx is not None else ""
    return " ".join(error.format_message().split()) + where


class WrightyGroup(typer.core.TyperGroup):
    """Reports a WrightyError or a usage error (an unknown option, a value of the wrong type)
    from any command as one line on stderr with exit code 2."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except NoArgsIsHelpError as error:
            # `wrighty` alone: its help, as `wrighty --help` gives it (rich has printed it
            # already; plain click hands it over as the message).
            if error.format_message().strip():
                typer.echo(error.format_message())
            raise typer.Exit(0) from None
        except UsageError as error:
            _refuse(_usage_line(error))

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except UsageError as error:
            _refuse(_usage_line(error))
        except WrightyError as error:
            _refuse(str(error), error.exit_code)
        except KeyboardInterrupt:
            _refuse("interrupted", EXIT_INTERRUPTED)


JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON (docs/json.md).")]
# Bounded by the stores' 64-bit ids, so a larger number is refused instead of crashing a query.
ItemId = Annotated[int, typer.Argument(metavar="ID", help="The item's id.", min=1, max=MAX_ITEM_ID)]


def app_context(ctx: typer.Context) -> AppContext:
    obj = ctx.find_root().obj
    assert isinstance(obj, AppContext)
    return obj


def file_option(flag: str, path: Path, *, limit: int) -> str:
    """The UTF-8 text of the file an option names (at most ``limit`` bytes), or one line that
    says why it cannot be read."""
    from wrighty.inputs import InputError, read_text_file

    try:
        return read_text_file(path, limit=limit)
    except FileNotFoundError:
        raise WrightyError(f"{flag} {path}: no such file") from None
    except OSError as error:
        why = (error.strerror or type(error).__name__).lower()
        raise WrightyError(f"{flag} {path}: cannot read ({why})") from None
    except InputError as error:
        raise WrightyError(f"{flag} {path}: {error}") from None


def stdin_text(what: str, *, limit: int) -> str:
    """The UTF-8 text piped on standard input (at most ``limit`` bytes), or one line that says
    why it cannot be used (``what``: what the text is, as "the task")."""
    import sys

    from wrighty.inputs import InputError, read_text_stream

    if sys.stdin is None:  # started with standard input closed (`<&-`)
        raise WrightyError(
            f"{what} was to be read from standard input ('-'), but it is closed: "
            "pipe the text in, or give a file"
        )
    try:
        return read_text_stream(sys.stdin.buffer, limit=limit)
    except InputError as error:
        raise WrightyError(f"{what} on standard input {error}") from None


def text_or_file(
    what: str,
    flag: str,
    text: str | None,
    file_flag: str,
    path: Path | None,
    *,
    limit: int,
    required: bool = False,
) -> str | None:
    """A text given as ``flag TEXT`` or as ``file_flag PATH`` (``-``: standard input; at
    most ``limit`` bytes read); None when neither was given (one line when ``required``), one
    line when both were."""
    if (text is not None and path is not None) or (required and text is None and path is None):
        raise WrightyError(f"give the {what} once: {flag} TEXT or {file_flag} PATH ('-' for stdin)")
    if path is None:
        return text
    if str(path) == "-":
        return stdin_text(f"the {what}", limit=limit)
    return file_option(file_flag, path, limit=limit)


def _checked_cost(value: str | None) -> str | None:
    """--max-cost-usd checked while the command line is parsed (so a command wrighty suggests
    is refused by the parser alone when it would be refused at all)."""
    if value is not None:
        from wrighty.operator.forms import MAX_COST_USD, bounded_number

        bounded_number("--max-cost-usd", value, MAX_COST_USD, whole=False)
    return value


def _checked_tokens(value: str | None) -> str | None:
    if value is not None:
        from wrighty.operator.forms import MAX_TOKENS, bounded_number

        bounded_number("--max-tokens", value, MAX_TOKENS, whole=True)
    return value


MaxCostOption = Annotated[
    str | None,
    typer.Option(
        "--max-cost-usd",
        callback=_checked_cost,
        metavar="USD",
        help="The item's budget in US dollars, across all its runs.",
    ),
]
MaxTokensOption = Annotated[
    str | None,
    typer.Option(
        "--max-tokens",
        callback=_checked_tokens,
        metavar="N",
        help="The item's budget in tokens (every kind), across its runs.",
    ),
]


def refuse_unusable_notify_urls(loaded: LoadedConfig) -> None:
    """A command that delivers notifications (a worker, `notify flush`, `notify test`) refuses
    a notification URL Apprise cannot use before it does anything: loading the file alone does
    not ask Apprise (no other command needs it)."""
    from wrighty.config import CONFIG_FILENAME, notify_url_problems

    problems = notify_url_problems(loaded.config.notify)
    if problems:
        raise WrightyError(f"{loaded.path or CONFIG_FILENAME}: {problems[0]}")


@functools.cache
def console() -> OutputConsole:
    """The console for terminal output; rich is loaded by the first command that draws."""
    from wrighty.cli.render import OutputConsole

    return OutputConsole(highlight=False, soft_wrap=False)
