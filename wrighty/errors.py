"""The one exception family a user can cause.

Anything raised as a ``WrightyError`` is reported as one line on stderr with exit code 2;
every other exception is a bug and keeps its traceback.
"""

# The longest message a refusal says: one that quotes a runaway input (a 3,000-character
# --agent) keeps its start and its end (how to fix it), with what was cut between.
MAX_MESSAGE_CHARS = 1000
_KEPT_END_CHARS = 300


class WrightyError(Exception):
    """Bad input or an unusable environment: the message says what, where and how to fix;
    bounded (MAX_MESSAGE_CHARS), whatever input it quotes."""

    exit_code = 2

    def __str__(self) -> str:
        return bounded_message(super().__str__())


def bounded_message(text: str) -> str:
    """``text``, or its start and end with a mark of what was cut when it is longer than
    MAX_MESSAGE_CHARS."""
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    cut = len(text) - MAX_MESSAGE_CHARS
    head = MAX_MESSAGE_CHARS - _KEPT_END_CHARS
    return f"{text[:head]} …[{cut} characters cut]… {text[-_KEPT_END_CHARS:]}"


class ConfigError(WrightyError):
    """wrighty.json is missing, malformed or invalid."""


class StoreError(WrightyError):
    """The state store cannot be opened, read or written."""


class NoListening(StoreError):
    """The store cannot tell a worker of new work here (behind a transaction pooler without
    store.listenUrl): the worker polls, and does not try again."""


class NotFoundError(WrightyError):
    """An item id that does not exist."""


class IllegalTransitionError(WrightyError):
    """A state change that the item's current state does not allow."""


class ConflictError(WrightyError):
    """The item kept changing underneath an operator command."""


class AlreadyImported(WrightyError):
    """An item already has this import key: another `wrighty import` of the file made it first."""

    def __init__(self, key: str) -> None:
        super().__init__(f"an item was already imported as {key!r}")
        self.key = key


class UnreadableError(WrightyError):
    """A value read back from the store does not read (docs/storage.md): a time that is not a
    time, a priority out of range, JSON that does not parse, a number that is not finite.

    It names the row (``what`` and ``key``: ``item 1``, ``run r-..``, ``notice n-..``,
    ``circuit claude``) and the field; ``item_id`` is the item the row belongs to, if any. The
    message carries the value only neutralised and shortened.
    """

    def __init__(
        self, what: str, key: object, field: str, problem: str, *, item_id: int | None = None
    ) -> None:
        self.what = what
        self.key = str(key)
        self.field = field
        self.problem = problem
        self.item_id = item_id
        super().__init__(f"{what} {key}: its {field} does not read ({problem})")

    @property
    def row(self) -> str:
        """The row, as a person names it: ``item 1``."""
        return f"{self.what} {self.key}"
