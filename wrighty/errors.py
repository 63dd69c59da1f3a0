"""The one exception family a user can cause.

Anything raised as a ``WrightyError`` is reported as one line on stderr with exit code 2;
every other exception is a bug and keeps its traceback.
"""


class WrightyError(Exception):
    """Bad input or an unusable environment: the message says what, where and how to fix."""

    exit_code = 2


class ConfigError(WrightyError):
    """wrighty.json is missing, malformed or invalid."""


class StoreError(WrightyError):
    """The state store cannot be opened, read or written."""


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
