"""wrighty.json: pydantic models, discovery, loading and problem reports.

The JSON Schema in ``schemas/wrighty.schema.json`` is generated from these models
(``wrighty config schema``); a test keeps the two equal.
"""

from __future__ import annotations

import json
import os
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, time, tzinfo
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError
from pydantic.alias_generators import to_camel

from wrighty.domain.budgets import Budgets
from wrighty.domain.circuits import circuit_name
from wrighty.domain.claims import heartbeat_limit
from wrighty.domain.durations import (
    MAX_ITEM_TIMEOUT_SECONDS,
    MAX_QUEUE_WAIT_SECONDS,
    MAX_WORKER_AGE_SECONDS,
)
from wrighty.domain.health import Thresholds
from wrighty.domain.scheduling import LABEL_PATTERN, ConcurrencyLimits
from wrighty.domain.usage import Limit, Price
from wrighty.errors import ConfigError, StoreError
from wrighty.inputs import MIB, InputError, read_text_file

CONFIG_FILENAME = "wrighty.json"
STATE_DIRNAME = ".wrighty"
SCHEMA_FILENAME = "wrighty.schema.json"
SCHEMA_VERSION: Literal[1] = 1
DEFAULT_STORE_URL = "sqlite:///.wrighty/wrighty.db"
BUILTIN_VENDORS = ("claude", "codex", "gemini", "command")
MAX_CRASH_RETRY_ATTEMPTS = 20
MAX_USAGE_RETRY_ATTEMPTS = 50  # a night of limits
AGENT_NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,39}$"
MAX_CONFIG_BYTES = MIB
MAX_CONFIG_DEPTH = 32  # the deepest real wrighty.json is 4 levels
MAX_NUMBER_DIGITS = 30
MAX_CONCURRENT = 10_000  # a bound for typos (agents.<name>.maxConcurrent, limits.labels)


class _Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        alias_generator=to_camel,
        validate_by_name=False,
        validate_by_alias=True,
    )


class StoreSettings(_Section):
    url: str = Field(
        DEFAULT_STORE_URL,
        description=(
            "Where the state lives: sqlite:///relative/or/absolute.db (relative to this file) "
            "or postgresql://... Overridden by --store and WRIGHTY_STORE."
        ),
    )


class ProcessCrashPolicy(_Section):
    action: Literal["needs-attention", "retry"] = Field(
        "needs-attention",
        description="What a process crash leads to: needs-attention (default) or a bounded retry.",
    )
    initial_retry_minutes: float = Field(
        2, gt=0, le=1440, description="Delay before the first retry, in minutes."
    )
    backoff_multiplier: float = Field(
        2, ge=1, le=100, description="Each further retry waits this many times longer."
    )
    max_retry_minutes: float = Field(
        15, gt=0, le=10080, description="No retry waits longer than this, in minutes."
    )
    max_attempts: int = Field(
        2,
        ge=1,
        le=MAX_CRASH_RETRY_ATTEMPTS,
        description="Retries after the first run (2 means at most 3 runs in all).",
    )


class UsageFailurePolicy(_Section):
    action: Literal["needs-attention", "retry"] = Field(
        "needs-attention",
        description="What a rate-limited or provider-unavailable run leads to: "
        "needs-attention (default) or a bounded retry.",
    )
    initial_retry_minutes: float = Field(
        30,
        gt=0,
        le=1440,
        description="Delay before the first retry when the provider reports no reset, in minutes.",
    )
    backoff_multiplier: float = Field(
        2,
        ge=1,
        le=100,
        description="Each further retry without a reported reset waits this many times longer.",
    )
    max_retry_minutes: float = Field(
        360,
        gt=0,
        le=10080,
        description="No retry waits longer than this, in minutes, counted from the end of the "
        "run, whether a reported reset or the backoff set the wait.",
    )
    max_attempts: int = Field(
        5,
        ge=1,
        le=MAX_USAGE_RETRY_ATTEMPTS,
        description="Usage retries after the first run, on their own counter (crash retries "
        "and requeues do not count).",
    )
    reset_grace_minutes: float = Field(
        2,
        ge=0,
        le=60,
        description="Added to the provider's reported reset before the retry is due, in minutes.",
    )


class WorkerSettings(_Section):
    lease_seconds: float = Field(
        60, gt=0, le=86400, description="How long a claim stays valid without renewal."
    )
    heartbeat_seconds: float = Field(
        20,
        gt=0,
        le=86400,
        description="How often a worker renews its lease; below leaseSeconds less the lease "
        "guard's margin (a quarter of the lease, at most 10 s).",
    )
    item_timeout_minutes: float = Field(
        60,
        gt=0,
        le=MAX_ITEM_TIMEOUT_SECONDS / 60,
        description="Default limit on one run; an item may set its own.",
    )
    poll_seconds: float = Field(
        5, gt=0, le=3600, description="How often an idle worker looks for work."
    )
    wake_ups: bool = Field(
        True,
        description="Whether an idle worker starts new work at once, told by the store "
        "(PostgreSQL LISTEN/NOTIFY, SQLite a local socket), and a retry when it is due, rather "
        "than at its next poll. false: it only polls.",
    )
    concurrency: int = Field(1, ge=1, le=64, description="Items one worker runs at once.")
    default_agent: str = Field("claude", description="Agent used for items that do not name one.")
    max_requeues: int = Field(
        3,
        ge=0,
        le=100,
        description="How often the reaper may hand an item of a lost worker to another one.",
    )
    workspace_mode: Literal["current", "worktree", "directory"] = Field(
        "current",
        description="Where agents work: the project directory (one at a time), a git worktree "
        "per item, or a folder per item.",
    )
    process_crash: ProcessCrashPolicy = Field(default_factory=ProcessCrashPolicy)
    usage_failure: UsageFailurePolicy = Field(
        default_factory=UsageFailurePolicy,
        description="What a run classified rate-limited or provider-unavailable leads to; no "
        "other outcome (never auth, permission, billing, context-limit, agent failure, timeout, "
        "cancellation or fencing). A retry is due at the provider's reported reset plus "
        "resetGraceMinutes, capped at maxRetryMinutes; without a reported reset, after "
        "initialRetryMinutes x backoffMultiplier^(n-1), capped at maxRetryMinutes, with a small "
        "jitter. maxAttempts counts usage retries on their own counter.",
    )
    label: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9._-]{1,40}$",
        description="A name for this project's workers in `wrighty workers` and `status` "
        "(letters, digits, '.', '_', '-'). wrighty never uses host or user names.",
    )
    registry_retention_hours: float = Field(
        24, gt=0, le=8760, description="Forget registered workers silent for this long."
    )


class StatusSettings(_Section):
    """Health thresholds of `wrighty status`; a command-line option overrides each."""

    max_queue_wait_seconds: float | None = Field(
        None,
        gt=0,
        le=MAX_QUEUE_WAIT_SECONDS,
        description="Unhealthy when an item has waited longer than this.",
    )
    min_workers: int | None = Field(
        None, ge=0, le=10000, description="Unhealthy with fewer live workers than this."
    )
    worker_max_age_seconds: float = Field(
        60,
        gt=0,
        le=MAX_WORKER_AGE_SECONDS,
        description="A worker is live if its heartbeat is this recent.",
    )
    max_expired_leases: int | None = Field(
        None, ge=0, description="Unhealthy with more running items whose lease expired."
    )
    max_needs_attention: int | None = Field(
        None, ge=0, description="Unhealthy with more items waiting for a person."
    )
    max_open_circuits: int | None = Field(
        None,
        ge=0,
        le=10000,
        description="Unhealthy with more provider circuits open or half-open than this.",
    )
    max_notify_age_seconds: float | None = Field(
        None,
        gt=0,
        le=MAX_QUEUE_WAIT_SECONDS,
        description="Unhealthy when an undelivered notification (notify) is older than this.",
    )


MAX_BUDGET_USD = 1_000_000  # a bound for typos, not a spending policy
MAX_BUDGET_TOKENS = 10**12
MAX_PRICE_PER_MTOK = 10_000
MAX_MODEL_NAME = 200  # characters of a `pricing` key


class BudgetLimit(_Section):
    """A budget's bounds; either or both. A run's spend counts every token kind."""

    max_cost_usd: float | None = Field(
        None,
        gt=0,
        le=MAX_BUDGET_USD,
        description="Spend at most this many US dollars (the vendor's reported cost, or the "
        "estimate from `pricing`; a run whose cost is unknown counts only its tokens).",
    )
    max_tokens: int | None = Field(
        None,
        gt=0,
        le=MAX_BUDGET_TOKENS,
        description="Spend at most this many tokens: input, output, cache read and write.",
    )


class BudgetSettings(_Section):
    per_item: BudgetLimit = Field(
        default_factory=BudgetLimit,
        description="Each item's budget across all its runs; `create --max-cost-usd` / "
        "`--max-tokens` override it for one item. Past it, the run is stopped and the item "
        "goes to needs-attention (budget-exceeded) with its session kept.",
    )
    per_day: dict[str, BudgetLimit] = Field(
        default_factory=dict,
        description='Each agent\'s budget per day, keyed by agent name; "*" for every agent '
        "without an entry of its own (each agent counted separately). A spent budget holds "
        "the agent's items queued until the next day.",
    )
    day_starts_at: str = Field(
        "00:00",
        pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$",
        description="When a budget day begins, as HH:MM in timeZone.",
    )
    time_zone: str = Field(
        "UTC", description="The IANA time zone of dayStartsAt, such as Europe/Berlin."
    )


class ModelPrice(_Section):
    """US dollars per million tokens of each kind."""

    input_per_mtok: float = Field(..., ge=0, le=MAX_PRICE_PER_MTOK)
    output_per_mtok: float = Field(..., ge=0, le=MAX_PRICE_PER_MTOK)
    cache_read_per_mtok: float = Field(0, ge=0, le=MAX_PRICE_PER_MTOK)
    cache_write_per_mtok: float = Field(0, ge=0, le=MAX_PRICE_PER_MTOK)


NotifyEvent = Literal[
    "needs-attention", "retries-exhausted", "budget-exceeded", "circuit-open", "worker-lost",
    "retry-scheduled", "done", "worker-quiet",
]  # fmt: skip
_DEFAULT_NOTIFY_EVENTS: tuple[NotifyEvent, ...] = (
    "needs-attention", "retries-exhausted", "budget-exceeded", "circuit-open", "worker-lost",
)  # fmt: skip
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
DEFAULT_COMMAND_TIMEOUT_SECONDS = 30
EMPTY_PROGRAM = 'is empty: name the program to run, as in ["/usr/local/bin/notify-me"]'
MAX_COMMAND_TIMEOUT_SECONDS = 600


class _SinkFilter(_Section):
    events: list[NotifyEvent] | None = Field(
        None, description="The events this sink gets (default: notify.events)."
    )
    reason_codes: list[str] | None = Field(
        None,
        description="Only items with one of these reason codes (events without an item, such "
        "as circuit-open, always pass).",
    )


class UrlSink(_SinkFilter):
    url: str | None = Field(
        None, description="An Apprise URL (slack://, ntfy://, mailto://, json://, ...)."
    )
    env: str | None = Field(
        None,
        pattern=ENV_NAME_PATTERN,
        description="The environment variable that holds the URL (keeps tokens out of the file).",
    )


class CommandSink(_SinkFilter):
    argv: list[str] = Field(
        ..., min_length=1, description="The program and its arguments; the event as JSON on stdin."
    )
    timeout_seconds: float = Field(
        DEFAULT_COMMAND_TIMEOUT_SECONDS,
        gt=0,
        le=MAX_COMMAND_TIMEOUT_SECONDS,
        description="How long one delivery may take before it counts as failed.",
    )


def _entry_kind(value: Any) -> str | None:
    """Which form a sink entry takes (None: neither, refused as such)."""
    if isinstance(value, dict | BaseModel):
        return "object"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return None


# A sink is written as a string (an argv: a list) or as an object with a filter; the form is
# chosen by the JSON type, so that a mistake is reported against the form that was written.
UrlEntry = Annotated[
    Annotated[str, Tag("string")] | Annotated[UrlSink, Tag("object")],
    Discriminator(
        _entry_kind,
        custom_error_type="sink_form",
        custom_error_message="must be an Apprise URL (a string) or an object with url or env",
    ),
]
CommandEntry = Annotated[
    Annotated[list[str], Field(min_length=1), Tag("list")] | Annotated[CommandSink, Tag("object")],
    Discriminator(
        _entry_kind,
        custom_error_type="sink_form",
        custom_error_message="must be an argv (a list of strings) or an object with argv",
    ),
]
# Where the form's tag sits in a problem's location (it is left out of the JSON path).
_SINK_TAG_AT = {("notify", "urls"): 3, ("notify", "command"): 2}


class NotifySettings(_Section):
    urls: list[UrlEntry] = Field(
        default_factory=list,
        description="Apprise URLs, as strings or objects with url (or env) and a filter.",
    )
    command: CommandEntry | None = Field(
        None, description="A program (argv, no shell) that gets each event as JSON on stdin."
    )
    events: list[NotifyEvent] = Field(
        default_factory=lambda: list(_DEFAULT_NOTIFY_EVENTS),
        description="The events a sink gets unless it names its own.",
    )
    max_attempts: int = Field(
        8, ge=1, le=50, description="Delivery attempts of one event before it is given up."
    )
    retention_hours: float = Field(
        168, gt=0, le=24 * 365, description="How long delivered events are kept."
    )

    @property
    def enabled(self) -> bool:
        """Whether any sink is configured (otherwise nothing is written to the outbox)."""
        return bool(self.urls) or self.command is not None


class AgentSettings(_Section):
    adapter: Literal["claude", "codex", "gemini", "command"] | None = Field(
        None, description="Which adapter runs this agent; defaults to the agent's name."
    )
    executable: str | None = Field(
        None, description="Program to start; defaults to the vendor's usual command on PATH."
    )
    args: list[str] = Field(
        default_factory=list, description="Extra arguments after wrighty's own."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment variables added for the agent."
    )
    command: list[str] | None = Field(
        None, description="command adapter: the program and its arguments (argv, no shell)."
    )
    resume_command: list[str] | None = Field(
        None, description="command adapter: argv that resumes a run's session, if it can."
    )
    permission: Literal["workspace", "full"] = Field(
        "workspace",
        description="Vendor adapters: what the agent may do unasked. workspace: edit files in "
        "its workspace; full: everything (the vendor's bypass flag). Opt in with care.",
    )
    resume: bool = Field(
        True, description="Whether a retry may resume the recorded session (false: never)."
    )
    account: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9._@-]{1,80}$",
        description="A label for the provider account this agent uses. Under "
        "worker.usageFailure, agents that name the same account share one provider circuit, "
        "across installations: a refusal stops them all until the reset. Without it, each agent "
        "of each installation has its own. A label only: never a key or a secret.",
    )

    max_concurrent: int | None = Field(
        None,
        ge=1,
        le=MAX_CONCURRENT,
        description="At most this many of this agent's items run at once, across every worker "
        "and installation on the store (checked inside the claim). Without it: no limit but "
        "the workers' slots.",
    )

    def adapter_for(self, name: str) -> str:
        return self.adapter or name


class LabelLimit(_Section):
    max_concurrent: int = Field(
        ...,
        ge=1,
        le=MAX_CONCURRENT,
        description="At most this many items with the label run at once, across every worker "
        "and installation on the store (checked inside the claim).",
    )


class LimitSettings(_Section):
    labels: dict[str, LabelLimit] = Field(
        default_factory=dict,
        description="Concurrency limits by item label (`create --label`), keyed by label; an "
        "item with several labels waits while any of its limits is reached.",
        json_schema_extra={"propertyNames": {"pattern": LABEL_PATTERN}},
    )


class WrightyConfig(_Section):
    schema_uri: str | None = Field(None, alias="$schema", description="Editor schema hint.")
    schema_version: Literal[1] = Field(SCHEMA_VERSION, description="Version of this file's layout.")
    store: StoreSettings = Field(default_factory=StoreSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    status: StatusSettings = Field(default_factory=StatusSettings)
    agents: dict[str, AgentSettings] = Field(
        default_factory=dict,
        description="Per-agent settings, keyed by the name items use.",
        json_schema_extra={"propertyNames": {"pattern": AGENT_NAME_PATTERN}},
    )
    budgets: BudgetSettings = Field(default_factory=BudgetSettings)
    limits: LimitSettings = Field(
        default_factory=LimitSettings,
        description="Concurrency limits beyond each agent's own (agents.<name>.maxConcurrent).",
    )
    notify: NotifySettings = Field(default_factory=NotifySettings)
    pricing: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description='Estimated prices by model name ("*" for any other), for runs whose '
        "vendor reports no cost; such costs are labelled estimated. wrighty ships no price "
        "list: prices change.",
        json_schema_extra={"propertyNames": {"minLength": 1, "maxLength": MAX_MODEL_NAME}},
    )

    def agent_names(self) -> list[str]:
        return sorted(set(BUILTIN_VENDORS) | set(self.agents))


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config file: where (a JSON path) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass(frozen=True)
class LoadedConfig:
    path: Path | None
    config: WrightyConfig

    @property
    def root(self) -> Path:
        """The project directory: where wrighty.json lives (or the cwd without one)."""
        return self.path.parent if self.path else Path.cwd()


def config_json_schema() -> dict[str, Any]:
    schema = WrightyConfig.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://wrighty.invalid/schemas/wrighty.schema.json",
        **schema,
    }


def find_config(start: Path, explicit: Path | None = None) -> Path | None:
    """The config file to use: ``explicit`` if given, else the nearest wrighty.json upward.

    The nearest thing named wrighty.json is the one, whatever it is: a directory, a FIFO or a
    link that leads nowhere is then refused by its read, saying what it is, rather than passed
    over for a file further up."""
    if explicit is not None:
        return explicit
    directory = start.resolve()
    for candidate_dir in (directory, *directory.parents):
        candidate = candidate_dir / CONFIG_FILENAME
        if os.path.lexists(candidate):
            return candidate
    return None


def check_config_text(
    text: str, *, deep: bool = False
) -> tuple[WrightyConfig | None, list[Problem]]:
    """Validate wrighty.json contents; every problem found, with its JSON path. ``deep`` also
    asks Apprise whether it can use each notification URL (`config validate`, a worker's
    start): that loads Apprise, which no other command needs."""
    try:
        data = json.loads(
            text,
            object_pairs_hook=_refuse_duplicate_keys,
            parse_int=_bounded_int,
            parse_constant=_refuse_constant,
        )
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        return None, [Problem("", f"invalid JSON at {where}: {error.msg}")]
    except _DuplicateKeyError as error:
        return None, [Problem("", f"duplicate key {json.dumps(error.args[0])}")]
    except _UnreadableValueError as error:
        return None, [Problem("", str(error))]
    except RecursionError:
        return None, [Problem("", _too_deep())]
    if not isinstance(data, dict):
        return None, [Problem("", "must be a JSON object")]
    if _depth(data) > MAX_CONFIG_DEPTH:
        return None, [Problem("", _too_deep())]
    try:
        config = WrightyConfig.model_validate(data)
    except ValidationError as error:
        return None, [_problem_from(detail) for detail in error.errors()]
    problems = _store_url_problems(config.store.url) + _cross_checks(config)
    if deep:
        problems.extend(notify_url_problems(config.notify))
    return (None if problems else config), problems


def _store_url_problems(url: str) -> list[Problem]:
    """The check of the store URL that opening a store makes, opening nothing."""
    from wrighty.store import parse_store_url  # loaded only where a config is checked

    try:
        parse_store_url(url, base=Path())
    except StoreError as error:
        return [Problem("store.url", str(error))]
    return []


def read_config_text(path: Path) -> str:
    """The text of the config file at ``path``; ConfigError saying why it cannot be read."""
    try:
        return read_text_file(path, limit=MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file; create one with `wrighty init`") from None
    except PermissionError:
        raise ConfigError(
            f"{path}: cannot read config (permission denied); fix its permissions"
        ) from None
    except OSError as error:
        why = (error.strerror or type(error).__name__).lower()
        raise ConfigError(f"{path}: cannot read config ({why})") from None
    except InputError as error:
        raise ConfigError(f"{path}: {error}") from None


def load_config(path: Path) -> LoadedConfig:
    """The validated config at ``path``; ConfigError naming the file and first problem."""
    config, problems = check_config_text(read_config_text(path))
    if config is None:
        more = len(problems) - 1
        suffix = f" (and {more} more; `wrighty config validate` lists them)" if more else ""
        raise ConfigError(f"{path}: {problems[0]}{suffix}")
    return LoadedConfig(path=path.resolve(), config=config)


def default_config_document() -> dict[str, Any]:
    """What `wrighty init` writes: the schema hint, the version and the default sections."""
    return {
        "$schema": f"./{STATE_DIRNAME}/{SCHEMA_FILENAME}",
        "schemaVersion": SCHEMA_VERSION,
        "store": {"url": DEFAULT_STORE_URL},
        "worker": _whole_numbers_as_int(WorkerSettings().model_dump(by_alias=True, mode="json")),
        "agents": {},
    }


def _whole_numbers_as_int(value: Any) -> Any:
    """60.0 -> 60, recursively, so that the written file reads as a person would write it."""
    if isinstance(value, dict):
        return {key: _whole_numbers_as_int(item) for key, item in value.items()}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# ---------------------------------------------------------------------------------------------
# Problem reports


class _DuplicateKeyError(ValueError):
    pass


class _UnreadableValueError(ValueError):
    pass


def _bounded_int(text: str) -> int:
    # Python refuses to parse very long integers (and slowly); no setting needs more digits.
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise _UnreadableValueError(
            f"a number has {len(text.lstrip('-'))} digits; numbers in {CONFIG_FILENAME} have "
            f"at most {MAX_NUMBER_DIGITS}"
        )
    return int(text)


def _refuse_constant(text: str) -> Any:
    raise _UnreadableValueError(f"{text} is not a JSON number; write a number such as 60")


def _depth(value: Any) -> int:
    """How deeply ``value`` nests (a scalar: 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(current, dict):
            stack.extend((child, level + 1) for child in current.values())
        elif isinstance(current, list):
            stack.extend((child, level + 1) for child in current)
    return deepest


def _too_deep() -> str:
    return f"nested more than {MAX_CONFIG_DEPTH} levels deep; this is not a {CONFIG_FILENAME}"


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


_BOUND_WORDS = {
    "greater_than": (">", "gt"),
    "greater_than_equal": (">=", "ge"),
    "less_than": ("<", "lt"),
    "less_than_equal": ("<=", "le"),
}


_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")


def json_path(*parts: str | int) -> str:
    """Where a value is, as `agents.claude.args.0`; a key that is not a plain name is written
    as a JSON string (`agents["a b"]`), so that no key can break the line or hide in it."""
    path = ""
    for part in parts:
        if isinstance(part, str) and not _PLAIN_KEY.fullmatch(part):
            path += f"[{json.dumps(part)}]"
        else:
            path += f"{'.' if path else ''}{part}"
    return path


def _without_sink_tag(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """A location inside a sink entry, without the tag of the form it was written in."""
    at = _SINK_TAG_AT.get(loc[:2])
    if at is not None and len(loc) > at and loc[at] in ("string", "list", "object"):
        return loc[:at] + loc[at + 1 :]
    return loc


def _problem_from(detail: Mapping[str, Any]) -> Problem:
    loc = _without_sink_tag(tuple(detail["loc"]))
    path = json_path(*loc)
    kind = detail["type"]
    context = detail.get("ctx") or {}
    if kind in _BOUND_WORDS:
        symbol, key = _BOUND_WORDS[kind]
        message = f"must be {symbol} {_number(context[key])}{_got(detail.get('input'), loc)}"
    elif kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1])
        message = "unknown key" + (f" (allowed here: {', '.join(allowed)})" if allowed else "")
    elif kind == "missing":
        message = "is required"
    elif kind == "too_short" and loc[:2] == ("notify", "command"):
        message = EMPTY_PROGRAM
    elif kind in ("model_type", "dict_type"):
        message = "must be an object" + _got(detail.get("input"), loc)
    elif kind == "literal_error" and loc == ("schemaVersion",):
        message = (
            f"this wrighty understands version {SCHEMA_VERSION}"
            f"{_got(detail.get('input'), loc)}; upgrade wrighty or fix the file"
        )
    else:
        message = str(detail["msg"]).replace("Input should be", "must be")
        message += _got(detail.get("input"), loc)
    return Problem(path, message)


def _number(value: float) -> str:
    return f"{value:g}"


MAX_ECHOED_STRING = 40


def _got(value: object, loc: tuple[Any, ...]) -> str:
    """What the file holds at ``loc``, for the message: numbers and booleans as they are,
    other values by their JSON type. A string is echoed (JSON-escaped) only when it is short
    and outside `agents`, whose env values, arguments and commands may carry secrets."""
    if isinstance(value, bool):
        return f" (got {str(value).lower()})"
    if isinstance(value, int):
        return f" (got {value})"
    if isinstance(value, float):
        return f" (got {value!r})"
    if isinstance(value, str):
        if not _may_hold_secrets(loc) and len(value) <= MAX_ECHOED_STRING:
            return f" (got the string {json.dumps(value)})"
        return " (got a string)"
    kinds = {type(None): "null", list: "a list", dict: "an object"}
    kind = kinds.get(type(value))
    return f" (got {kind})" if kind else ""


def _may_hold_secrets(loc: tuple[Any, ...]) -> bool:
    """`agents` (env values, arguments, commands) and the notify sinks (URLs carry tokens)."""
    return loc[:1] == ("agents",) or loc[:2] in (("notify", "urls"), ("notify", "command"))


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys a model accepts at ``loc``, for 'unknown key' messages."""
    target: Any = WrightyConfig
    for part in loc:
        target = _unwrap_optional(target)
        if isinstance(target, type) and issubclass(target, BaseModel):
            field = next(
                (f for name, f in target.model_fields.items() if _alias(target, name) == part),
                None,
            )
            if field is None:
                return []
            target = field.annotation
        elif typing.get_origin(target) is dict:
            target = typing.get_args(target)[1]
        elif typing.get_origin(target) is list and isinstance(part, int):
            target = typing.get_args(target)[0]
        else:
            return []
    target = _model_in(_unwrap_optional(target))
    if isinstance(target, type) and issubclass(target, BaseModel):
        return [_alias(target, name) for name in target.model_fields]
    return []


def _model_in(annotation: Any) -> Any:
    """The model of a sink entry (a string or a model, told apart by a discriminator)."""
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for option in typing.get_args(annotation):
            inner = typing.get_args(option)[0] if typing.get_origin(option) is Annotated else option
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                return inner
    return annotation


def _alias(model: type[BaseModel], name: str) -> str:
    return model.model_fields[name].alias or name


def _unwrap_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(options) == 1:
            return options[0]
    return annotation


def _unpassable_text(name: str, agent: AgentSettings) -> list[Problem]:
    """Values no program can be given: a NUL byte in an argument or an environment value, an
    environment name that is empty or holds '=' (it would set another variable)."""
    problems = []
    texts: list[tuple[tuple[str | int, ...], str]] = [(("executable",), agent.executable or "")]
    for key, argv in (("args", agent.args), ("command", agent.command),
                      ("resumeCommand", agent.resume_command)):  # fmt: skip
        texts += [((key, index), arg) for index, arg in enumerate(argv or [])]
    texts += [(("env", variable), value) for variable, value in agent.env.items()]
    for where, text in texts:
        if "\x00" in text:
            problems.append(Problem(json_path("agents", name, *where), "holds a NUL byte"))
    for variable in agent.env:
        if not variable or "=" in variable or "\x00" in variable:
            problems.append(
                Problem(
                    json_path("agents", name, "env", variable),
                    "is not an environment variable name (empty, or holds '=' or NUL)",
                )
            )
    return problems


def _retry_window_problems(worker: WorkerSettings) -> list[Problem]:
    """A retry policy whose first wait is longer than its longest one."""
    policies: tuple[tuple[str, ProcessCrashPolicy | UsageFailurePolicy], ...] = (
        ("processCrash", worker.process_crash),
        ("usageFailure", worker.usage_failure),
    )
    return [
        Problem(
            f"worker.{key}.maxRetryMinutes",
            f"must be >= initialRetryMinutes ({_number(policy.initial_retry_minutes)})"
            f" (got {_number(policy.max_retry_minutes)})",
        )
        for key, policy in policies
        if policy.max_retry_minutes < policy.initial_retry_minutes
    ]


def _cross_checks(config: WrightyConfig) -> list[Problem]:
    """Rules that relate one setting to another."""
    problems: list[Problem] = []
    worker = config.worker
    limit = heartbeat_limit(worker.lease_seconds)
    if worker.heartbeat_seconds >= limit:
        margin = worker.lease_seconds - limit
        problems.append(
            Problem(
                "worker.heartbeatSeconds",
                f"must be < {_number(limit)}: worker.leaseSeconds ({_number(worker.lease_seconds)})"
                f" less the lease guard's margin ({_number(margin)}, docs/claims.md)"
                f" (got {_number(worker.heartbeat_seconds)})",
            )
        )
    problems.extend(_retry_window_problems(worker))
    for name, agent in config.agents.items():
        problems.extend(_unpassable_text(name, agent))
        if not re.fullmatch(AGENT_NAME_PATTERN, name):
            problems.append(
                Problem(
                    json_path("agents", name),
                    "agent names use lowercase letters, digits, '-' and '_', "
                    "starting with a letter",
                )
            )
        elif agent.adapter is None and name not in BUILTIN_VENDORS:
            problems.append(
                Problem(
                    json_path("agents", name, "adapter"),
                    f"is required for an agent not named after an adapter "
                    f"({', '.join(BUILTIN_VENDORS)})",
                )
            )
        elif agent.adapter_for(name) == "command" and not agent.command:
            problems.append(
                Problem(json_path("agents", name, "command"), "is required by the command adapter")
            )
        elif agent.adapter_for(name) == "command" and "permission" in agent.model_fields_set:
            problems.append(
                Problem(
                    json_path("agents", name, "permission"),
                    "applies only to the vendor adapters (claude, codex, gemini)",
                )
            )
        elif agent.adapter_for(name) != "command":
            problems.extend(
                Problem(json_path("agents", name, key), "applies only to the command adapter")
                for key, value in (
                    ("command", agent.command),
                    ("resumeCommand", agent.resume_command),
                )
                if value is not None
            )
    problems.extend(_budget_problems(config))
    problems.extend(
        Problem(
            json_path("limits", "labels", label),
            "labels use lowercase letters, digits, '-' and '_', starting with a letter "
            "(at most 40 characters)",
        )
        for label in config.limits.labels
        if not re.fullmatch(LABEL_PATTERN, label)
    )
    problems.extend(_notify_shape_problems(config.notify))
    if worker.default_agent not in config.agent_names():
        problems.append(
            Problem(
                "worker.defaultAgent",
                f"unknown agent {worker.default_agent!r} "
                f"(known: {', '.join(config.agent_names())})",
            )
        )
    return problems


def _budget_problems(config: WrightyConfig) -> list[Problem]:
    problems: list[Problem] = []
    known = set(config.agent_names()) | {"*"}
    problems.extend(
        Problem(
            json_path("budgets", "perDay", name),
            f'unknown agent {name!r} (known: {", ".join(config.agent_names())}, or "*")',
        )
        for name in config.budgets.per_day
        if name not in known
    )
    zone = config.budgets.time_zone
    try:
        zone_named(zone)
    except ValueError:
        # The name as the other problems echo a value: short ones only, JSON-escaped.
        problems.append(
            Problem(
                "budgets.timeZone",
                f"unknown time zone{_got(zone, ('budgets', 'timeZone'))}; "
                "use an IANA name such as Europe/Berlin",
            )
        )
    # The JSON Schema's propertyNames for `pricing`, which the model alone does not check.
    problems.extend(
        Problem(json_path("pricing", model), "a model name has 1 to 200 characters")
        for model in config.pricing
        if not 1 <= len(model) <= MAX_MODEL_NAME
    )
    return problems


def _notify_shape_problems(notify: NotifySettings) -> list[Problem]:
    """A URL sink names its URL or its variable, one of the two; an argv can be passed."""
    problems: list[Problem] = [
        Problem(json_path("notify", "urls", index), "give url or env, one of the two")
        for index, entry in enumerate(notify.urls)
        if isinstance(entry, UrlSink) and (entry.url is None) == (entry.env is None)
    ]
    command = notify.command
    argv = command.argv if isinstance(command, CommandSink) else command
    for index, arg in enumerate(argv or []):
        where = json_path("notify", "command", *(("argv",) if isinstance(command, CommandSink)
                                                 else ()), index)  # fmt: skip
        if "\x00" in arg:
            problems.append(Problem(where, "holds a NUL byte"))
        elif index == 0 and not arg:
            problems.append(Problem(where, EMPTY_PROGRAM))
    return problems


def notify_url_problems(notify: NotifySettings) -> list[Problem]:
    """Whether Apprise can use each URL written in the file (a URL from the environment is
    read, and checked, when it is used). Apprise is imported only when there are such URLs."""
    problems: list[Problem] = []
    for index, entry in enumerate(notify.urls):
        url = entry if isinstance(entry, str) else entry.url
        if url is not None:
            problem = apprise_url_problem(url)
            if problem is not None:
                problems.append(Problem(json_path("notify", "urls", index), problem))
    return problems


_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,31})://")
# A plugin's page on Apprise's site: shown as the place to check a URL (it is Apprise's, not
# the user's: no part of the URL).
_GUIDE = re.compile(r"https://[a-z0-9.-]+/[A-Za-z0-9/_.-]*")


def url_scheme(url: str) -> str | None:
    """The scheme of a sink's URL, lowercase (None: it has none). The one part of a URL that
    messages show: the rest may be a token."""
    found = _URL_SCHEME.match(url)
    return found.group(1).lower() if found else None


def apprise_url_problem(url: str) -> str | None:
    """Why Apprise cannot use ``url`` (None: it can), without quoting any of it but its
    scheme. A service that Apprise knows but cannot run on this machine (a desktop without
    its libraries) is no problem here: the machine that delivers may have them."""
    scheme = url_scheme(url)
    if scheme is None:
        return "is not an Apprise URL: it needs a scheme such as slack://, ntfy:// or json://"
    import logging  # loaded with Apprise, only when the file has URLs to check

    import apprise
    from apprise.utils.parse import parse_urls

    logging.getLogger("apprise").propagate = False  # it may quote the URL
    if len(parse_urls(url)) != 1:  # type: ignore[no-untyped-call]
        return "holds more than one URL: give each its own entry"
    parsed = apprise.plugins.url_to_dict(url)  # type: ignore[no-untyped-call]
    manager = apprise.manager_plugins.NotificationManager()  # type: ignore[no-untyped-call]
    if parsed is None or parsed.get("schema") not in manager:
        return f"Apprise cannot read this {scheme}:// URL (an unknown service, or no host)"
    plugin = manager[parsed["schema"]]
    if not plugin.enabled:
        return None
    try:
        apprise.Apprise.instantiate(url, suppress_exceptions=False)
    except Exception:
        # Not its words: Apprise decodes the URL, and its message may quote a token in any
        # encoding (docs/notifications.md#secrets).
        guide = getattr(plugin, "setup_url", None)
        see = f"; see {guide}" if isinstance(guide, str) and _GUIDE.fullmatch(guide) else ""
        return f"Apprise cannot use this {scheme}:// URL: it refused a token or an option{see}"
    return None


def zone_named(name: str) -> tzinfo:
    """The IANA zone ``name`` (ValueError, saying so, when this machine knows none)."""
    if name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"unknown time zone {name!r} (use an IANA name such as Europe/Berlin)"
        ) from None


def budgets_of(config: WrightyConfig) -> Budgets:
    """The budgets wrighty.json sets, as the domain reads them (after validation)."""
    settings = config.budgets
    hour, minute = (int(part) for part in settings.day_starts_at.split(":"))
    return Budgets(
        per_item=_limit(settings.per_item),
        per_day={name: _limit(limit) for name, limit in settings.per_day.items()},
        day_starts_at=time(hour, minute),
        time_zone=zone_named(settings.time_zone),
    )


def _limit(settings: BudgetLimit) -> Limit:
    return Limit(settings.max_cost_usd, settings.max_tokens)


def thresholds_of(config: WrightyConfig) -> Thresholds:
    """The health thresholds status.* sets (`wrighty status`'s options override each)."""
    settings = config.status
    return Thresholds(
        max_queue_wait_seconds=settings.max_queue_wait_seconds,
        min_workers=settings.min_workers,
        max_expired_leases=settings.max_expired_leases,
        max_needs_attention=settings.max_needs_attention,
        max_open_circuits=settings.max_open_circuits,
        max_notify_age_seconds=settings.max_notify_age_seconds,
    )


def agent_circuit(config: WrightyConfig, agent: str, *, installation_id: str) -> str | None:
    """The provider circuit that can hold ``agent``'s items back: only under a usage policy
    that retries (docs/usage-limits.md); None otherwise."""
    if config.worker.usage_failure.action != "retry":
        return None
    settings = config.agents.get(agent)
    account = settings.account if settings is not None else None
    return circuit_name(agent, account=account, installation_id=installation_id)


def limits_of(config: WrightyConfig) -> ConcurrencyLimits:
    """The concurrency limits wrighty.json sets (after validation), as a claim carries them."""
    return ConcurrencyLimits(
        agents={
            name: agent.max_concurrent
            for name, agent in sorted(config.agents.items())
            if agent.max_concurrent is not None
        },
        labels={
            label: limit.max_concurrent for label, limit in sorted(config.limits.labels.items())
        },
    )


def pricing_of(config: WrightyConfig) -> dict[str, Price]:
    return {
        model: Price(p.input_per_mtok, p.output_per_mtok, p.cache_read_per_mtok,
                     p.cache_write_per_mtok)
        for model, p in config.pricing.items()
    }  # fmt: skip
